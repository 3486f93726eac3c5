"""Descriptor GETs whose clients never read the answer (docs/design.md, "Delivery": a slow
reader costs its own connection, not the service), sent raw over sockets to a real server in
both modes (`objectcache serve`, and oc-gateway + oc-storage-server) with the default timeouts
and executor size ([kv] descriptor_threads: 16 per core, at least 16).

100 clients send signed descriptor GETs for 8 MiB payloads answered over the HTTP body (no
data-plane target) and never read a byte; once they fill the descriptor executor, a
legitimate descriptor GET must still be answered, byte-exact, within a generous deadline (the
test asserts that it succeeds, not how fast), plain S3 GETs keep working, and the server's
resident memory grows by no more than the design's bound: the executor's staging (4 MiB per
worker) plus the per-connection buffers, whatever the number of stalled readers. Before the
fix the stalled readers held every worker until the gateway's 30 s write timeout, and the
legitimate GET was answered 503 SlowDown at the 10 s admission deadline."""
import array
import fcntl
import math
import os
import socket
import termios
import threading
import time

import pytest

import sigv4
from conftest import modes, running_server
from test_soak import proc_status

ATTACKERS = 100
LAYERS = 8
LAYER_BYTES = 128 << 10
N = 8
CHUNK = LAYERS * LAYER_BYTES  # 1 MiB per chunk object
PAYLOAD = N * CHUNK  # 8 MiB per descriptor GET
# Receive buffer of an attacker's socket: small, so its unread answer stays in the server.
ATTACK_RCVBUF = 16 << 10
# Staging of one body-delivered descriptor GET (gateway/src/handlers/objectcache_handlers.cc:
# 4 x 1 MiB) and of one relayed call on the storage server (rpc/server_kv_streams.h).
STAGING_PER_GET = 4 << 20
# A connection's own buffers in the gateway: the body piece (stream_piece_bytes, 256 KiB) and
# the header buffer (max_header_bytes + 64 KiB); rounded up for the allocator and the stream.
PER_CONNECTION = 1 << 20
# Allocator and thread slack on top of the bound.
SLACK = 64 << 20
DEADLINE_S = 30


def usable_cores():
    """The cores the server may use, as oc::UsableCores counts them: the affinity mask, capped
    by a cgroup v2 CPU quota."""
    cores = len(os.sched_getaffinity(0))
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


def descriptor_threads():
    """The default [kv] descriptor_threads: 16 per usable core, at least 16."""
    return max(16, 16 * usable_cores())


@pytest.fixture(scope="module", params=modes())
def default_server(request):
    def make(mode, root):
        from conftest import Server
        srv = Server(mode, root)
        # The gateway's default write timeout, not conftest's 2 s one (which would close the
        # stalled readers long before the admission deadline and hide the defect).
        with open(srv.config, "w") as f:
            f.write('[gateway]\nread_timeout = "30s"\n')
        return srv
    with running_server("oc-slowreader-", request.param, make=make) as srv:
        yield srv


def descriptor_headers(keys):
    return {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
            "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
            "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}


def request_bytes(method, target, headers, body=b""):
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed(server, method, bucket, keys, body=b""):
    h = sigv4.sign(method, f"127.0.0.1:{server.port}", f"/{bucket}", "objectcache=",
                   descriptor_headers(keys), body, server.access_key, server.secret_key)
    h["Content-Length"] = str(len(body))
    return request_bytes(method, f"/{bucket}?objectcache=", h, body)


def read_answer(sock, deadline):
    """(status, headers, body) of one answer, read whole before `deadline`."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        data = sock.recv(1 << 20)
        assert data, "connection closed before a response header"
        buf += data
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip()
               for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
    want = int(headers.get("content-length", "0"))
    parts = [body]
    got = len(body)
    while got < want:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        data = sock.recv(1 << 20)
        assert data, f"body ended after {got} of {want} bytes"
        parts.append(data)
        got += len(data)
    return int(lines[0].split()[1]), headers, b"".join(parts)


def put_chunks(server, bucket, keys, body):
    with socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S) as s:
        s.sendall(signed(server, "PUT", bucket, keys, body))
        status, _, answer = read_answer(s, time.monotonic() + DEADLINE_S)
    assert status == 200, answer[:2000]


def layer_major(chunks):
    """The body of a layer-major descriptor GET of `chunks` (each stored kv_l2td)."""
    return b"".join(c[layer * LAYER_BYTES:(layer + 1) * LAYER_BYTES]
                    for layer in range(LAYERS) for c in chunks)


def pending_bytes(sock):
    """Bytes the server sent that this socket holds unread (FIONREAD): nothing is consumed."""
    n = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, n)
    return n[0]


class RssSampler:
    """The highest anonymous resident memory of the server's processes while it runs."""

    def __init__(self, pids):
        self.pids = pids
        self.base = {pid: proc_status(pid)[1] for pid in pids}
        self.peak = dict(self.base)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.02):
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], proc_status(pid)[1])

    def growth(self):
        self.stop.set()
        self.thread.join()
        return {pid: self.peak[pid] - self.base[pid] for pid in self.pids}


def test_stalled_body_readers_do_not_starve_other_descriptor_gets(default_server):
    srv = default_server
    bucket = "slow-readers"
    s3 = srv.boto3()
    s3.create_bucket(Bucket=bucket)
    keys = [f"stalled/c{j}" for j in range(N)]
    chunks = [os.urandom(CHUNK) for _ in range(N)]
    put_chunks(srv, bucket, keys, b"".join(chunks))
    plain = os.urandom(3 << 20)
    s3.put_object(Bucket=bucket, Key="plain", Body=plain)
    want = layer_major(chunks)
    # Warm the server (the first descriptor GET opens what later ones reuse) before the
    # memory baseline.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE_S) as s:
        s.sendall(signed(srv, "GET", bucket, keys))
        status, _, body = read_answer(s, time.monotonic() + DEADLINE_S)
    assert status == 200 and body == want

    workers = descriptor_threads()
    assert ATTACKERS > workers, "more stalled readers than the executor's workers"
    sampler = RssSampler([p.pid for p in srv.procs])
    attackers = []
    try:
        request = signed(srv, "GET", bucket, keys)
        for _ in range(ATTACKERS):
            a = socket.socket()
            a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, ATTACK_RCVBUF)
            a.connect(("127.0.0.1", srv.port))
            a.sendall(request)
            attackers.append(a)
        # State, not time: every worker is running an attacker's GET (its answer has begun
        # arriving at a socket that never reads it).
        deadline = time.monotonic() + DEADLINE_S
        while sum(1 for a in attackers if pending_bytes(a) > 0) < workers:
            assert time.monotonic() < deadline, "the attackers' GETs were not started"
            time.sleep(0.02)

        # A legitimate descriptor GET, sent once: answered in full, byte-exact.
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE_S) as s:
            s.sendall(signed(srv, "GET", bucket, keys))
            status, headers, body = read_answer(s, start + DEADLINE_S)
        assert status == 200, (headers, body[:2000])
        assert headers["x-oc-matched-chunks"] == str(N)
        assert body == want
        # Plain S3 GETs keep working beside them.
        assert s3.get_object(Bucket=bucket, Key="plain")["Body"].read() == plain
        legit_s = time.monotonic() - start
    finally:
        growth = sampler.growth()
        for a in attackers:
            a.close()
    # Memory: what the design bounds, not one 8 MiB answer (or its staging) per stalled reader.
    bound = workers * STAGING_PER_GET + (ATTACKERS + 2) * PER_CONNECTION + SLACK
    print(f"mode={srv.mode} legitimate GET answered after {legit_s:.1f}s; "
          f"anonymous RSS growth MiB {[g >> 20 for g in growth.values()]}, "
          f"bound {bound >> 20} MiB")
    for pid, grew in growth.items():
        assert grew <= bound, f"pid {pid} grew {grew >> 20} MiB (bound {bound >> 20} MiB)"
    assert srv.alive()
