"""Faults of a replicated cluster under load (issue 33, "A replicated cluster, and faults";
docs/design.md "RADOS mapping", what an operator can expect when an OSD fails).

The tests share one throw-away cluster of three memstore OSDs (`tools/ceph-test-cluster up
--osds 3`: pool size 3, min_size 2, heartbeats shortened, started by this file, not the CTest
fixture). The first runs one `objectcache serve` over it and a mixed load from threads (descriptor PUTs and GETs through the objectcache package,
plain S3 PUT/GET and one multipart upload through boto3), and while it runs:

- kills an OSD with SIGKILL, waits until the monitor marks it down, starts it again (a memstore
  OSD comes back empty, like a replaced disk) and waits until recovery has made every PG
  active+clean, with the load and its reads going on throughout;
- kills the monitor with SIGKILL and starts it again;
- sets the cluster's full ratio tiny: writes get 507 InsufficientStorage, reads and deletes go
  on, writes resume when it is restored;
- kills one of two `objectcache serve` peers over the pool with SIGKILL in the middle of a
  large PUT: the other keeps serving, and the data objects the dead one wrote without a commit
  are removed by the orphan scrub of the GC leader.

What clients see in the first is asserted: no request fails (librados resends an op to the new primary once
the OSD map marks the OSD down; a request stalls for that long, bounded by [rados] op_timeout),
and afterwards every acknowledged chunk and object reads back byte-exact, through the running
server and through a fresh one. The cluster is stopped by the PIDs it recorded, whatever
happens."""
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

import pyclient_util as pu
from conftest import Server, running_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
CLUSTER = os.path.join(ROOT, "tools", "ceph-test-cluster")
OP_TIMEOUT_S = 30  # the server's [rados] op_timeout: no request may stall longer (+ slack)
DOWN_DEADLINE_S = 60  # the monitor marks a killed OSD down (seconds here: refused connections)
CLEAN_DEADLINE_S = 240  # recovery of a returned memstore OSD on a busy 2-core machine
N, LAYERS, S = 8, 4, 16 << 10  # one descriptor PUT: 8 chunks of 4 layers of 16 KiB
PART = 5 << 20
PAUSE_S = 0.05  # between one thread's requests: a steady load, not a flood of memstore RAM


def ceph(conf, *args, timeout=60):
    r = subprocess.run(["ceph", "-c", conf, "--connect-timeout", "20", *args],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


@contextlib.contextmanager
def cluster(osds=3):
    """A started cluster's directory; always brought down (by its recorded PIDs)."""
    root = tempfile.mkdtemp(prefix="oc-faults-")
    d = os.path.join(root, "ceph")
    try:
        r = subprocess.run([CLUSTER, "up", "--osds", str(osds), d], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        yield d
    finally:
        subprocess.run([CLUSTER, "down", d], capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def pid_of(d, name):
    with open(os.path.join(d, "pids")) as f:
        for line in f:
            n, pid = line.split()
            if n == name:
                return int(pid)
    raise AssertionError(f"{name} not in {d}/pids")


def kill9(d, name):
    """SIGKILL a daemon of the cluster and wait until it is gone (or an unreaped zombie)."""
    pid = pid_of(d, name)
    os.kill(pid, signal.SIGKILL)

    def gone():
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    wait_for(f"{name} gone", gone, 30)


def start_again(d, name):
    r = subprocess.run([CLUSTER, "start", d, name], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


T0 = time.monotonic()


def wait_for(what, predicate, deadline_s):
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() < t0 + deadline_s, f"not {what} after {deadline_s} s"
        time.sleep(0.5)
    print(f"[{time.monotonic() - T0:6.1f} s] {what} (waited {time.monotonic() - t0:.1f} s)")


def osds_up(conf):
    return json.loads(ceph(conf, "osd", "stat", "--format", "json"))["num_up_osds"]


def all_clean(conf):
    pgs = json.loads(ceph(conf, "pg", "stat", "--format", "json"))
    summary = pgs.get("pg_summary", pgs)
    states = summary.get("num_pg_by_state", [])
    total = summary.get("num_pgs", 0)
    clean = sum(s["num"] for s in states if s["name"] == "active+clean")
    return total > 0 and clean == total


def server_config(conf, namespace, extra=""):
    return (f'\n[storage]\nbackend = "rados"\n[rados]\nconf_file = "{conf}"\n'
            f'client_name = "client.admin"\npool = "oc-test"\nnamespace = "{namespace}"\n'
            f'connect_timeout = "10s"\nop_timeout = "{OP_TIMEOUT_S}s"\n'
            'object_extent_bytes = "64KiB"\nmax_chunk_object_bytes = "64KiB"\n' + extra)


@pytest.fixture(scope="module")
def cluster3():
    with cluster(3) as d:
        yield d


class Load:
    """Threads that write and read until stopped, recording every acknowledged write, every
    failure and the slowest request."""

    def __init__(self, srv, bucket):
        self.srv, self.bucket = srv, bucket
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.chunk_sets = []  # (descriptor, data) acknowledged
        self.objects = {}  # key -> sha256 of an acknowledged PUT
        self.failures = []  # (thread, when, error)
        self.slowest = 0.0
        self.counts = {"put_chunks": 0, "get_layers": 0, "put": 0, "get": 0}
        self.threads = [threading.Thread(target=self._guard, args=(f,), name=f.__name__)
                        for f in (self.put_chunks, self.get_layers, self.plain, self.plain)]

    def _guard(self, body):
        try:
            body()
        except Exception as e:  # recorded, then asserted empty by the test
            self.failure(body.__name__, e)

    def failure(self, name, e):
        with self.lock:
            self.failures.append((name, time.monotonic(), repr(e)))

    def timed(self, kind, fn):
        t0 = time.monotonic()
        out = fn()
        with self.lock:
            self.slowest = max(self.slowest, time.monotonic() - t0)
            self.counts[kind] += 1
        return out

    def put_chunks(self):
        client = pu.client(self.srv)
        i = 0
        while not self.stop.wait(PAUSE_S):
            i += 1
            d = pu.oc.Descriptor(pu.keys("compact", N, 16, "", start=i * N * 16)[0],
                                 layers=LAYERS, layer_bytes=S, chunk_tokens=16)
            data = pu.chunks(N, LAYERS, S, seed=i)
            try:
                self.timed("put_chunks",
                           lambda: client.put_chunks(self.bucket, d, data).raise_for_status())
            except Exception as e:
                self.failure("put_chunks", e)
                continue
            with self.lock:
                self.chunk_sets.append((d, data))
        client.close()

    def get_layers(self):
        client = pu.client(self.srv)
        rng = random.Random(1)
        while not self.stop.is_set():
            with self.lock:
                sets = list(self.chunk_sets)
            if not sets:
                time.sleep(0.05)
                continue
            d, data = rng.choice(sets)
            out = np.empty(N * LAYERS * S, dtype=np.uint8)
            try:
                info = self.timed("get_layers",
                                  lambda: client.get_layers(self.bucket, d, out).wait())
            except Exception as e:
                self.failure("get_layers", e)
                continue
            if info.matched != N or not np.array_equal(out, pu.expected(data, N, N,
                                                                        "layer-major")):
                self.failure("get_layers", AssertionError(f"not byte-exact (matched "
                                                          f"{info.matched})"))
        client.close()

    def plain(self):
        s3 = self.srv.boto3()
        me = threading.current_thread().ident
        i = 0
        while not self.stop.wait(PAUSE_S):
            i += 1
            key = f"plain/{me}/{i % 20}"
            body = os.urandom(random.randint(1, 256 << 10))
            try:
                self.timed("put", lambda: s3.put_object(Bucket=self.bucket, Key=key, Body=body))
                with self.lock:
                    self.objects[key] = hashlib.sha256(body).hexdigest()
                got = self.timed("get", lambda: s3.get_object(Bucket=self.bucket,
                                                              Key=key)["Body"].read())
                if hashlib.sha256(got).hexdigest() != hashlib.sha256(body).hexdigest():
                    self.failure("plain", AssertionError(f"{key} not byte-exact"))
            except Exception as e:
                self.failure("plain", e)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=OP_TIMEOUT_S * 3)
            assert not t.is_alive(), f"load thread {t.name} hung"

    def running(self, kind, at_least):
        """Waits until `kind` completed `at_least` more requests (the load is really running)."""
        with self.lock:
            goal = self.counts[kind] + at_least
        wait_for(f"{at_least} more {kind}", lambda: self.counts[kind] >= goal, 120)


def multipart_start(s3, bucket, key):
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts, bodies = [], []
    return upload, parts, bodies


def upload_part(s3, bucket, key, upload, parts, bodies):
    body = os.urandom(PART)
    n = len(parts) + 1
    etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=n,
                          Body=body)["ETag"]
    parts.append({"ETag": etag, "PartNumber": n})
    bodies.append(body)


def check_everything(srv, bucket, load, multipart_key, multipart_body):
    """Every acknowledged chunk set and object, byte-exact, through `srv`."""
    client = pu.client(srv)
    for d, data in load.chunk_sets:
        out = np.empty(N * LAYERS * S, dtype=np.uint8)
        info = client.get_layers(bucket, d, out).wait()
        assert info.matched == N
        assert np.array_equal(out, pu.expected(data, N, N, "layer-major"))
    client.close()
    s3 = srv.boto3()
    for key, digest in load.objects.items():
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert hashlib.sha256(got).hexdigest() == digest, key
    got = s3.get_object(Bucket=bucket, Key=multipart_key)["Body"].read()
    assert got == multipart_body


def test_osd_killed_and_back_then_monitor_restart_under_load(cluster3):
    d = cluster3
    conf = os.path.join(d, "ceph.conf")
    namespace = f"faults-{os.getpid()}"
    extra = server_config(conf, namespace)
    with running_server("oc-faults-", extra_config=extra) as srv:
        bucket = "faults"
        srv.boto3().create_bucket(Bucket=bucket)
        s3 = srv.boto3()
        mp_key = "multipart/object"
        upload, parts, bodies = multipart_start(s3, bucket, mp_key)
        with Load(srv, bucket) as load:
            load.running("put_chunks", 3)
            upload_part(s3, bucket, mp_key, upload, parts, bodies)

            # An OSD dies mid-load: marked down in seconds, the load goes on.
            victim = "osd.1"
            kill9(d, victim)
            upload_part(s3, bucket, mp_key, upload, parts, bodies)
            wait_for("2 OSDs up", lambda: osds_up(conf) == 2, DOWN_DEADLINE_S)
            load.running("put_chunks", 5)
            load.running("get_layers", 5)

            # It returns (empty: memstore) and recovery refills it while reads go on.
            start_again(d, victim)
            wait_for("3 OSDs up", lambda: osds_up(conf) == 3, DOWN_DEADLINE_S)
            upload_part(s3, bucket, mp_key, upload, parts, bodies)
            wait_for("every PG active+clean", lambda: all_clean(conf), CLEAN_DEADLINE_S)
            load.running("get_layers", 5)

            # The monitor dies and returns: OSD I/O does not need it meanwhile.
            kill9(d, "mon.a")
            load.running("put_chunks", 3)
            load.running("get", 3)
            start_again(d, "mon.a")
            wait_for("the monitor answering", lambda: osds_up(conf) == 3, 120)
            load.running("put_chunks", 3)
        s3.complete_multipart_upload(Bucket=bucket, Key=mp_key, UploadId=upload,
                                     MultipartUpload={"Parts": parts})

        assert not load.failures, load.failures[:10]
        assert load.slowest <= OP_TIMEOUT_S + 10, load.slowest
        assert load.chunk_sets and load.objects
        check_everything(srv, bucket, load, mp_key, b"".join(bodies))

    # Nothing lives only in the first server: a fresh one over the pool reads it all.
    with running_server("oc-faults-", extra_config=extra) as fresh:
        check_everything(fresh, bucket, load, mp_key, b"".join(bodies))
    print(f"load: {load.counts}, slowest request {load.slowest:.2f} s")


def start_put(srv, bucket, key, size, first):
    """A presigned PUT of `size` bytes that sends only the first `first` (the server is in the
    middle of it); the open socket."""
    import socket
    import sigv4
    host = f"127.0.0.1:{srv.port}"
    target = sigv4.presign("PUT", host, f"/{bucket}/{key}", srv.access_key, srv.secret_key, 600)
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    sock.sendall(f"PUT {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n\r\n"
                 .encode())
    sock.sendall(os.urandom(first))
    return sock


def data_objects(conf, namespace):
    import rados
    cluster = rados.Rados(conffile=conf, rados_id="admin")
    cluster.connect(timeout=10)
    try:
        io = cluster.open_ioctx("oc-test")
        io.set_namespace(namespace)
        names = sorted(o.key for o in io.list_objects() if o.key.startswith("oc.d."))
        io.close()
        return names
    finally:
        cluster.shutdown()


def test_peer_killed_mid_put_other_serves_scrub_collects(cluster3):
    conf = os.path.join(cluster3, "ceph.conf")
    namespace = f"peers-{os.getpid()}"
    # The first peer leads the GC; its first orphan scrub runs a minute after it takes the lead.
    leader_cfg = server_config(conf, namespace, 'gc = true\norphan_min_age = "1s"\n')
    other_cfg = server_config(conf, namespace, "gc = false\n")
    bucket = "peers"
    with running_server("oc-peer-a-", extra_config=leader_cfg) as a:
        root = tempfile.mkdtemp(prefix="oc-peer-b-")
        b = Server("embedded", root, extra_config=other_cfg)
        b.start()
        try:
            a.boto3().create_bucket(Bucket=bucket)
            a.boto3().put_object(Bucket=bucket, Key="kept", Body=b"kept by A")
            before = set(data_objects(conf, namespace))
            sock = start_put(b, bucket, "half", 32 << 20, 8 << 20)
            wait_for("B's uncommitted data objects in the pool",
                     lambda: len(set(data_objects(conf, namespace)) - before) > 1, 60)
            b.kill9()
            sock.close()
            orphans = set(data_objects(conf, namespace)) - before

            # A keeps serving: reads, writes, lists; the half-written key does not exist.
            s3 = a.boto3()
            assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"kept by A"
            s3.put_object(Bucket=bucket, Key="after", Body=b"after the peer died")
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
            assert keys == ["after", "kept"], keys

            # The leader's scrub removes what only the dead peer's PUT wrote.
            wait_for(f"the orphan scrub ({len(orphans)} orphans)",
                     lambda: not orphans & set(data_objects(conf, namespace)), 150)
            assert s3.get_object(Bucket=bucket, Key="after")["Body"].read() == \
                b"after the peer died"
            assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"kept by A"
        finally:
            b.kill9()
            shutil.rmtree(root, ignore_errors=True)



def test_cluster_full_ratio_refuses_writes_keeps_reads(cluster3):
    """A cluster past its full ratio (set tiny here; the mgr reports the OSDs' usage): every
    write is refused with 507 InsufficientStorage, reads and deletes go on, nothing
    acknowledged is lost, and writes resume once the ratio is back."""
    import xml.etree.ElementTree as ET
    import rawhttp
    conf = os.path.join(cluster3, "ceph.conf")
    extra = server_config(conf, f"full-{os.getpid()}")
    with running_server("oc-full-", extra_config=extra) as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="full")
        acked = {f"o{i}": os.urandom(64 << 10) for i in range(8)}
        for key, body in acked.items():
            s3.put_object(Bucket="full", Key=key, Body=body)
        # The ratios must stay ordered (nearfull < backfillfull < full) or the monitor only warns.
        ceph(conf, "osd", "set-nearfull-ratio", "0.00005")
        ceph(conf, "osd", "set-backfillfull-ratio", "0.00008")
        ceph(conf, "osd", "set-full-ratio", "0.0001")
        try:
            attempts = []

            def refused():
                # Until the full flag reaches the OSDs writes succeed: each try a new key.
                attempts.append(f"late{len(attempts)}")
                status, _, body = rawhttp.signed(srv, "PUT", f"/full/{attempts[-1]}", body=b"l")
                if status == 200:
                    return False
                assert status == 507, (status, body[:500])
                assert ET.fromstring(body).findtext("Code") == "InsufficientStorage", body
                return True
            wait_for("a write refused by the full cluster", refused, 120)
            rawhttp.assert_not_stored(srv, "full", attempts[-1])
            status, _, body = rawhttp.signed(srv, "PUT", "/full/late", body=b"late")
            assert status == 507, (status, body[:500])
            for key, body in acked.items():
                assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body
            s3.delete_object(Bucket="full", Key="o0")  # deletes pass a full cluster
            del acked["o0"]
        finally:
            ceph(conf, "osd", "set-full-ratio", "0.95")
            ceph(conf, "osd", "set-backfillfull-ratio", "0.90")
            ceph(conf, "osd", "set-nearfull-ratio", "0.85")
        wait_for("writes resumed", lambda: rawhttp.signed(
            srv, "PUT", "/full/after", body=b"after")[0] == 200, 120)
        for key, body in acked.items():
            assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body
