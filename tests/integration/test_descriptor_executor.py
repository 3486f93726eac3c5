"""The descriptor executor (docs/decisions/one-bounded-executor.md):
body-delivered descriptor GETs and PUTs run on a bounded set of workers ([kv]
descriptor_threads), so many of them at once do not grow the server's threads; one more than
the workers is answered 503 SlowDown (well-formed XML, Retry-After) before anything is read or
stored, and succeeds when retried after the others ended.

Requests are held open on purpose (a GET whose body is not read, a PUT whose body is not sent
yet), so each one occupies its worker while the test looks at the server: no timing."""
import os
import shutil
import socket
import tempfile
import time
import xml.etree.ElementTree as ET

import pytest

import sigv4
from conftest import Server
from test_soak import proc_status

WORKERS = 4
LAYERS = 4
LAYER_BYTES = 1 << 20
N = 8
CHUNK = LAYERS * LAYER_BYTES  # 4 MiB per chunk object
PAYLOAD = N * CHUNK  # 32 MiB: far more than the server's pipe and the sockets' buffers hold
# Receive buffer of the test's sockets: small, so an unread body stays in the server's pipe.
RCVBUF = 64 << 10


@pytest.fixture(scope="module")
def small_server():
    root = tempfile.mkdtemp(prefix="oc-exec-")
    srv = Server("embedded", root)
    # Not conftest's short timeouts: a held response must survive the test's own pauses (a
    # write waits up to read_timeout for the client to read).
    with open(srv.config, "w") as f:
        # No admission queue: these tests are about the workers' bound (test_admission.py
        # covers the queue).
        f.write(f'[gateway]\nread_timeout = "60s"\n\n[kv]\ndescriptor_threads = {WORKERS}\n'
                'admission_queue = 0\n')
    srv.start()
    yield srv
    codes = srv.stop()
    log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
    shutil.rmtree(root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"


def names(tag):
    return [f"exec/{tag}/c{j}" for j in range(N)]


def descriptor_headers(keys):
    return {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
            "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
            "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}


def body_of(seed):
    return b"".join(bytes([(seed * 31 + j) & 0xff]) * CHUNK for j in range(N))


def request_bytes(method, target, headers):
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Held:
    """A descriptor request on its own connection, sent up to where the server has admitted it
    (GET: the response header; PUT: 100 Continue) or refused it (the final answer)."""

    def __init__(self, srv, bucket, method, keys, body=b""):
        self.srv, self.method, self.body = srv, method, body
        headers = descriptor_headers(keys)
        if method == "PUT":
            headers["expect"] = "100-continue"
        h = sigv4.sign(method, f"127.0.0.1:{srv.port}", f"/{bucket}", "objectcache=", headers,
                       body, srv.access_key, srv.secret_key)
        h["Content-Length"] = str(len(body))
        self.sock = socket.socket()
        if RCVBUF:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.settimeout(60)
        self.sock.connect(("127.0.0.1", srv.port))
        self.sock.sendall(request_bytes(method, f"/{bucket}?objectcache=", h))
        self.buf = b""
        self.status, self.headers = self.read_head()

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            data = self.sock.recv(65536)
            assert data, "connection closed before a response header"
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip()
                   for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
        return int(lines[0].split()[1]), headers

    def admitted(self):
        return self.status in (100, 200)

    def read_exactly(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(1 << 20)
            assert data, f"body ended after {len(self.buf)} of {n} bytes"
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def finish(self):
        """Completes an admitted request: (status, body)."""
        if self.method == "PUT":
            self.sock.sendall(self.body)
            self.status, self.headers = self.read_head()
        body = self.read_exactly(int(self.headers.get("content-length", "0")))
        self.sock.close()
        return self.status, body

    def error(self):
        """A refused request's XML error body (read whole)."""
        body = self.read_exactly(int(self.headers["content-length"]))
        self.sock.close()
        return ET.fromstring(body)


def admitted(srv, bucket, method, keys, body=b"", attempts=100):
    """A request held open once admitted, retried on 503 SlowDown after its Retry-After (a
    worker is free again only once its previous task returned, just after that task's answer
    went out)."""
    for _ in range(attempts):
        r = Held(srv, bucket, method, keys, body)
        if r.admitted():
            return r
        assert r.status == 503 and r.error().findtext("Code") == "SlowDown"
        time.sleep(int(r.headers["retry-after"]) / 10)  # a tenth: keep the test short
    raise AssertionError(f"descriptor {method} still refused after retries")


def put(srv, bucket, keys, body):
    """A descriptor PUT, retried on 503 SlowDown as S3 clients do."""
    status, answer = admitted(srv, bucket, "PUT", keys, body).finish()
    assert status == 200, answer


def get(srv, bucket, keys):
    status, body = admitted(srv, bucket, "GET", keys).finish()
    assert status == 200
    return body


def stored(srv, bucket, keys):
    s3 = srv.boto3()
    out = []
    for k in keys:
        try:
            out.append(s3.head_object(Bucket=bucket, Key=k)["ContentLength"])
        except s3.exceptions.ClientError:
            out.append(None)
    return out


def test_full_executor_answers_slow_down_and_stores_nothing(small_server):
    srv = small_server
    bucket = "exec-full"
    srv.boto3().create_bucket(Bucket=bucket)
    keys = names("stored")
    put(srv, bucket, keys, body_of(1))
    # WORKERS body-delivered GETs whose bodies nobody reads: each holds its worker.
    held = [admitted(srv, bucket, "GET", keys) for _ in range(WORKERS)]
    assert [h.status for h in held] == [200] * WORKERS
    # One more descriptor PUT: refused before anything is read or stored.
    new_keys = names("refused")
    refused = Held(srv, bucket, "PUT", new_keys, body_of(2))
    assert refused.status == 503
    assert refused.headers["retry-after"] == "1"
    error = refused.error()  # well-formed XML
    assert error.tag == "Error"
    assert error.findtext("Code") == "SlowDown"
    assert error.findtext("RequestId")
    # And one more GET, refused the same way.
    extra = Held(srv, bucket, "GET", keys)
    assert extra.status == 503 and extra.error().findtext("Code") == "SlowDown"
    assert stored(srv, bucket, new_keys) == [None] * N
    # The held readers go away; their workers come back and the retried PUT is stored.
    for h in held:
        h.sock.close()
    put(srv, bucket, new_keys, body_of(2))
    assert stored(srv, bucket, new_keys) == [CHUNK] * N
    assert get(srv, bucket, new_keys) == get_layer_major(body_of(2))
    assert srv.alive()


def test_many_concurrent_requests_complete_with_bounded_threads(small_server):
    srv = small_server
    bucket = "exec-threads"
    srv.boto3().create_bucket(Bucket=bucket)
    keys = names("src")
    put(srv, bucket, keys, body_of(3))
    assert get(srv, bucket, keys) is not None
    pid = srv.procs[0].pid
    threads0, _ = proc_status(pid)
    # Far more requests than workers, all at once: GETs left unread, PUTs waiting to send.
    gets = [Held(srv, bucket, "GET", keys) for _ in range(16)]
    puts = [Held(srv, bucket, "PUT", names(f"p{i}"), body_of(10 + i)) for i in range(8)]
    running = [r for r in gets + puts if r.admitted()]
    threads, _ = proc_status(pid)
    # A thread per request would be 24 more; the executor's workers were already running.
    assert threads <= threads0 + 4, f"threads {threads0} -> {threads} with 24 requests open"
    assert len(running) <= WORKERS
    # Every request completes: the admitted ones now, the refused ones retried after.
    want = get_layer_major(body_of(3))
    for r in running:
        status, body = r.finish()
        assert status == 200
        if r.method == "GET":
            assert body == want
    for r in gets + puts:
        if not r.admitted():
            assert r.status == 503 and r.error().findtext("Code") == "SlowDown"
    for i, r in enumerate(puts):
        if not r.admitted():
            put(srv, bucket, names(f"p{i}"), body_of(10 + i))
    for i in range(8):
        assert get(srv, bucket, names(f"p{i}")) == get_layer_major(body_of(10 + i))


def get_layer_major(chunk_major):
    """The body of a layer-major descriptor GET of all N chunks stored as `chunk_major`."""
    out = []
    for layer in range(LAYERS):
        for j in range(N):
            start = j * CHUNK + layer * LAYER_BYTES
            out.append(chunk_major[start:start + LAYER_BYTES])
    return b"".join(out)
