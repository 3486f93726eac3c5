"""A full pool on RADOS (issue 31; docs/decisions/full-disk.md): a pool at its quota
(`ceph osd pool set-quota <pool> max_bytes`, which the OSDs answer -EDQUOT) refuses every
write with 507 InsufficientStorage and S3 error XML, reads keep working byte-exact, a delete
still goes through, and writes resume without a restart once the quota is lifted (measured).

Runs on the throw-away test cluster (the `rados_cluster` fixture), in a pool of its own so
the quota touches no other test. Ceph enforces pool quotas from the usage the manager
reports: the fixture starts no ceph-mgr, so this test starts one without Python modules
(stopped by PID at the end) when none is active. It fails, never skips, without the cluster."""
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

import rawhttp
from conftest import rados_config, rados_target, running_server

QUOTA_BYTES = 4 << 20
OBJECT_BYTES = 128 << 10
FILL_DEADLINE_S = 120  # Ceph marks the pool full a few seconds after usage passes the quota
RESUME_DEADLINE_S = 60


def ceph(conf, *args):
    r = subprocess.run(["ceph", "-c", conf, "--connect-timeout", "20", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


@contextlib.contextmanager
def manager(conf):
    """An active ceph-mgr: the cluster's own, or one started here and stopped by PID."""
    if json.loads(ceph(conf, "mgr", "stat", "--format", "json")).get("available"):
        yield
        return
    root = tempfile.mkdtemp(prefix="oc-mgr-")
    name = f"ocfull{os.getpid()}"
    os.mkdir(os.path.join(root, "data"))
    os.mkdir(os.path.join(root, "modules"))
    # No Python modules: the usage digest that quotas need is the manager's own C++ part, and
    # loading every module takes a minute on a busy 2-core machine (it is active in ~1 s).
    proc = subprocess.Popen(
        ["ceph-mgr", "-f", "-c", conf, "-i", name, "--mgr-data", os.path.join(root, "data"),
         "--mgr-module-path", os.path.join(root, "modules"),
         "--log-file", os.path.join(root, "mgr.log"),
         "--admin-socket", os.path.join(root, "mgr.asok"),
         "--pid-file", os.path.join(root, "mgr.pid")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not json.loads(ceph(conf, "mgr", "stat", "--format", "json")).get("available"):
            assert proc.poll() is None, f"ceph-mgr exited with {proc.returncode}"
            assert time.monotonic() < deadline, "ceph-mgr did not become active"
            time.sleep(0.5)
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def pool(conf):
    name = f"oc-full-{secrets.token_hex(4)}"
    ceph(conf, "osd", "pool", "create", name, "8")
    ceph(conf, "osd", "pool", "application", "enable", name, "objectcache")
    try:
        yield name
    finally:
        ceph(conf, "osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")


def body_of(i):
    return bytes([i % 251]) * OBJECT_BYTES


def test_pool_at_its_quota_answers_507_and_resumes_when_lifted():
    conf, _ = rados_target()
    with manager(conf), pool(conf) as name:
        extra = rados_config(f"full-{secrets.token_hex(4)}", pool=name)
        with running_server("oc-fullpool-", "embedded", extra_config=extra) as srv:
            s3 = srv.boto3()
            s3.create_bucket(Bucket="quota")
            ceph(conf, "osd", "pool", "set-quota", name, "max_bytes", str(QUOTA_BYTES))
            acked = []
            start = time.monotonic()
            while True:
                i = len(acked)
                status, _, body = rawhttp.signed(srv, "PUT", f"/quota/o{i}", body=body_of(i))
                if status == 200:
                    acked.append(i)
                    assert time.monotonic() - start < FILL_DEADLINE_S, (
                        f"{len(acked)} PUTs over a {QUOTA_BYTES} B quota were never refused")
                    continue
                assert status == 507, (status, body[:500])
                err = ET.fromstring(body)
                assert err.findtext("Code") == "InsufficientStorage", body
                assert err.findtext("RequestId") and err.findtext("Resource"), body
                break
            filled_s = time.monotonic() - start
            rawhttp.assert_not_stored(srv, "quota", f"o{len(acked)}")
            status, _, body = rawhttp.signed(srv, "PUT", "/quota/copy",
                                             headers={"x-amz-copy-source": "/quota/o1"})
            assert status == 507, (status, body[:500])
            for i in acked:
                assert s3.get_object(Bucket="quota", Key=f"o{i}")["Body"].read() == body_of(i)
            # Deletes pass a full pool (the io context is full-try).
            s3.delete_object(Bucket="quota", Key="o0")

            lifted = time.monotonic()
            ceph(conf, "osd", "pool", "set-quota", name, "max_bytes", "0")
            while True:
                status, _, body = rawhttp.signed(srv, "PUT", "/quota/after", body=body_of(7))
                if status == 200:
                    break
                assert status == 507, (status, body[:500])
                assert time.monotonic() - lifted < RESUME_DEADLINE_S, "writes never resumed"
                time.sleep(0.2)
            print(f"\nfull pool: {len(acked)} objects of {OBJECT_BYTES} B acknowledged over a "
                  f"{QUOTA_BYTES} B quota in {filled_s:.1f} s before the first 507; writes "
                  f"resumed {time.monotonic() - lifted:.2f} s after the quota was lifted")
            for i in acked[1:]:
                assert s3.get_object(Bucket="quota", Key=f"o{i}")["Body"].read() == body_of(i)
            assert s3.get_object(Bucket="quota", Key="after")["Body"].read() == body_of(7)
