"""Durability and shutdown: kill -9 after an acknowledged PUT, restart, GET returns it;
SIGTERM exits 0 after finishing what is in flight."""
import os
import shutil
import tempfile

import pytest

from conftest import Server, modes


@pytest.fixture(params=modes())
def fresh(request):
    root = tempfile.mkdtemp(prefix="oc-crash-")
    srv = Server(request.param, root)
    yield srv
    srv.kill9()
    shutil.rmtree(root, ignore_errors=True)


def test_kill9_after_acknowledged_put(fresh):
    fresh.start()
    s3 = fresh.boto3()
    s3.create_bucket(Bucket="durable")
    body = os.urandom(300000)
    s3.put_object(Bucket="durable", Key="k", Body=body)
    fresh.kill9()
    fresh.start()
    assert fresh.boto3().get_object(Bucket="durable", Key="k")["Body"].read() == body
    codes = fresh.stop()
    assert codes and all(c == 0 for c in codes)


def test_sigterm_exits_zero(fresh):
    fresh.start()
    fresh.boto3().list_buckets()
    codes = fresh.stop()
    assert codes and all(c == 0 for c in codes)
