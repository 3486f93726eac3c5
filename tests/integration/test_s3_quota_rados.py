"""The bucket-quota tests of test_s3_quota.py (issue 31) on `objectcache serve` over RADOS
(`[storage] backend = "rados"`), imported unchanged so both backends meet the same assertions;
after every test the buckets the server lists must be exactly the bucket registry in the
namespace, read through librados (rados_twin.py).

And what only a shared pool has: two `objectcache serve` over one namespace, each with
`recount_interval = "1s"`. What one writes into a quota bucket, the other counts at its next
recount and enforces: its /stats shows the other's bytes within a deadline, and then refuses a
PutObject that would only have fitted in its own stale view
(docs/decisions/bucket-quotas.md, "RADOS: several servers")."""
import json
import time
import urllib.request

import pytest
from botocore.exceptions import ClientError

from conftest import RadosNamespace, rados_config, running_server
from rados_twin import twin_fixtures
from test_s3_compat import code_of, status_of
from test_s3_quota import (QUOTA_CONFIG,  # noqa: F401
                           test_aws_cli_put_over_max_objects,
                           test_chunked_put_is_refused_once_it_cannot_fit,
                           test_copy_into_a_quota_bucket_is_checked,
                           test_multipart_parts_count_and_completion_checks_objects,
                           test_put_over_max_bytes_is_403_quota_exceeded,
                           test_stats_show_limits_and_usage, workdir)

namespace, server, buckets_live_in_rados = twin_fixtures("it-quota", extra_config=QUOTA_CONFIG)

SHARED_CONFIG = ('[quota]\nbuckets = { "qt-shared" = { max_bytes = 300000 } }\n'
                 'recount_interval = "1s"\n')
DEADLINE_S = 30


def used_bytes(srv, bucket):
    with urllib.request.urlopen(f"{srv.endpoint}/stats", timeout=10) as r:
        return json.loads(r.read())["store"][f"quota.{bucket}.used_bytes"]


@pytest.fixture(scope="module")
def peers():
    ns = RadosNamespace("it-quota-peers")
    config = SHARED_CONFIG + rados_config(ns.name)
    with running_server("oc-it-qpeer-a-", extra_config=config) as a, \
            running_server("oc-it-qpeer-b-", extra_config=config) as b:
        yield a, b
    ns.close()


def test_a_peer_counts_what_the_other_wrote(peers):
    a, b = peers
    bucket = "qt-shared"
    a.boto3().create_bucket(Bucket=bucket)
    a.boto3().put_object(Bucket=bucket, Key="from-a", Body=b"a" * 200_000)
    assert used_bytes(a, bucket) == 200_000
    deadline = time.monotonic() + DEADLINE_S
    while used_bytes(b, bucket) != 200_000:
        assert time.monotonic() < deadline, f"b never counted a's bytes: {used_bytes(b, bucket)}"
        time.sleep(0.2)
    # b's own view now has a's object: 200,000 more would be 400,000 > 300,000.
    with pytest.raises(ClientError) as e:
        b.boto3().put_object(Bucket=bucket, Key="from-b", Body=b"b" * 200_000)
    assert (status_of(e), code_of(e)) == (403, "QuotaExceeded")
    # A delete through b is seen by a at its next recount, and a takes the bytes again.
    b.boto3().delete_object(Bucket=bucket, Key="from-a")
    deadline = time.monotonic() + DEADLINE_S
    while used_bytes(a, bucket) != 0:
        assert time.monotonic() < deadline, "a never counted b's delete"
        time.sleep(0.2)
    a.boto3().put_object(Bucket=bucket, Key="again", Body=b"c" * 300_000)
