"""Soak under hostile load (issue 13): for OC_SOAK_SECONDS (default 60) legitimate clients
PUT and GET objects with boto3 and fetch KV layers with descriptor GETs (`oc get-layers`, UCX
shared memory and HTTP body) while a hostile client mixes in bad signatures, truncated bodies,
garbage data-plane targets, oversized headers, raw garbage and bursts of idle sockets.

It passes when every legitimate request succeeded byte-exact, every hostile one got the answer
its case requires (an S3 error with the right status, then a close: Hostile says which per
case; a hostile request left hanging, or closed without an answer, fails), and afterwards the
server's thread count and resident memory are back at the level that a 20 s warm-up of the
same load reached (its peak RSS)."""
import json
import os
import random
import shutil
import socket
import tempfile
import threading
import time
import urllib.request

import pytest

import sigv4
from conftest import Server
from test_objectcache import OC, client_env, expected_payload, get_layers, key_args, put_chunks

pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

SOAK_SECONDS = float(os.environ.get("OC_SOAK_SECONDS", "60"))
KV_SHAPE = dict(n=8, n_layers=4, s=65536, g=16)  # 2 MiB per descriptor GET
KV_SEED = 11


def proc_status(pid):
    """(threads, resident anonymous bytes) of a process, from /proc/<pid>/status. Only
    anonymous memory (heap, caches, arenas) can leak: the pages of mapped data files are page
    cache, resident while reads touch them and reclaimable, and grow with the data stored."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value.split()
    return int(fields["Threads"][0]), int(fields["RssAnon"][0]) * 1024


class Answer:
    """What the server did with one hostile request: `status` and `code` (the S3 error code)
    of its answer, or neither when it closed the connection without one."""

    def __init__(self, raw):
        self.raw = raw
        head, _, body = raw.partition(b"\r\n\r\n")
        line = head.split(b"\r\n", 1)[0].split()
        self.status = int(line[1]) if len(line) >= 2 and line[1].isdigit() else None
        self.code = None
        if b"<Code>" in body:
            self.code = body.split(b"<Code>", 1)[1].split(b"</Code>", 1)[0].decode()

    def __repr__(self):
        return f"status={self.status} code={self.code} answer={self.raw[:200]!r}"


class Hang(Exception):
    """The server neither answered nor closed: the one outcome a hostile request may not have."""


class Hostile:
    """Requests a hostile client sends. Each returns (ok, Answer): ok when the server answered
    as this case requires, written beside it: every case here can be answered (each request
    asks to close after its answer; a half-closed client still reads), so each requires an
    S3 error with its status, then a close. No case may hang: every request asks to close after
    its answer, and the server must answer or close within ANSWER_DEADLINE_S, ten times the
    longest timeout of the test config (header_timeout = 3s), so a slow machine is no excuse."""

    ANSWER_DEADLINE_S = 30.0

    def __init__(self, server, bucket):
        self.server = server
        self.bucket = bucket
        self.host = f"127.0.0.1:{server.port}"

    def exchange(self, data, half_close=False):
        """Sends `data`, (half_close) ends the stream, reads until the server closes. A reset
        ends the answer as a close does (the server may close with request bytes unread); no
        answer and no close within the deadline raises Hang."""
        with socket.create_connection(("127.0.0.1", self.server.port),
                                      timeout=self.ANSWER_DEADLINE_S) as s:
            try:
                s.sendall(data)
                if half_close:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server refused early and closed; its answer may still be read
            chunks = []
            try:
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    chunks.append(b)
            except ConnectionResetError:
                pass
            except socket.timeout:
                raise Hang(f"no answer and no close in {self.ANSWER_DEADLINE_S} s after "
                           f"{b''.join(chunks)[:200]!r}") from None
            return Answer(b"".join(chunks))

    def request(self, method, path, query, headers, body=b""):
        target = path + ("?" + query if query else "")
        lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    def signed(self, method, path, query, headers, body=b"", payload_hash=None):
        return sigv4.sign(method, self.host, path, query, headers, body, self.server.access_key,
                          self.server.secret_key, payload_hash=payload_hash)

    def bad_signature(self):
        """S3: 403 SignatureDoesNotMatch."""
        h = self.signed("PUT", f"/{self.bucket}/hostile-sig", "", {}, b"x" * 100)
        h["Authorization"] = h["Authorization"][:-4] + "0000"
        h["Content-Length"] = "100"
        a = self.exchange(self.request("PUT", f"/{self.bucket}/hostile-sig", "", h, b"x" * 100))
        return (a.status, a.code) == (403, "SignatureDoesNotMatch"), a

    def truncated_body(self):
        """A PUT declaring 1 MiB that ends its stream (a half-close) after 4 KiB: 400
        IncompleteBody, as S3 answers. The client still reads, so an answer can reach it: a
        close without one is a failure here, and so is waiting for the rest of the body."""
        body = b"y" * 4096
        h = self.signed("PUT", f"/{self.bucket}/hostile-trunc", "", {}, b"",
                        payload_hash="UNSIGNED-PAYLOAD")
        h["Content-Length"] = str(1 << 20)
        a = self.exchange(self.request("PUT", f"/{self.bucket}/hostile-trunc", "", h, body),
                          half_close=True)
        return (a.status, a.code) == (400, "IncompleteBody"), a

    def garbage_target(self):
        """A descriptor GET naming a data-plane connection and rkey the server never issued:
        400 InvalidArgument (the target is refused before UCX sees it)."""
        rng = random.Random()
        fields = {"x-oc-version": "1", "x-oc-key-prefix": "soak/",
                  "x-oc-chunk-hashes": "00" * 16, "x-oc-num-layers": "4",
                  "x-oc-chunk-tokens": "16", "x-oc-layer-bytes": "65536",
                  "x-oc-target-connection": bytes(rng.getrandbits(8) for _ in range(16)).hex(),
                  "x-oc-target-rkey": bytes(rng.getrandbits(8) for _ in range(64)).hex(),
                  "x-oc-target-address": "4096", "x-oc-target-length": str(1 << 20)}
        h = self.signed("GET", f"/{self.bucket}", "objectcache=", fields, b"")
        a = self.exchange(self.request("GET", f"/{self.bucket}", "objectcache=", h))
        return (a.status, a.code) == (400, "InvalidArgument"), a

    def oversized_header(self):
        """One header field over 64 KiB (the HTTP parser's limit per field), under the raised
        max_header_bytes: 400 RequestHeaderSectionTooLarge, as S3 answers a header too large."""
        h = {"Host": self.host, "x-amz-meta-big": "z" * (70 << 10)}
        a = self.exchange(self.request("GET", f"/{self.bucket}/k", "", h))
        return (a.status, a.code) == (400, "RequestHeaderSectionTooLarge"), a

    def garbage_bytes(self):
        """Random bytes that are no HTTP request line: 400 with an S3 error body (which code
        depends on where the parser gives up) and a close: the framing is lost, so the
        connection cannot serve another request."""
        a = self.exchange(os.urandom(2048) + b"\r\n\r\n", half_close=True)
        return a.status == 400 and a.code is not None, a

    def idle_burst(self, count=300):
        """300 connections that never send a byte: held while a request on a new connection
        (queued behind them all) is answered 200, so they cost the server no service."""
        socks = []
        try:
            for _ in range(count):
                socks.append(socket.create_connection(("127.0.0.1", self.server.port),
                                                      timeout=self.ANSWER_DEADLINE_S))
            a = self.exchange(self.request("GET", "/healthz", "", {"Host": self.host}))
            return a.status == 200, a
        finally:
            for s in socks:
                s.close()

    def all(self):
        return [self.bad_signature, self.truncated_body, self.garbage_target,
                self.oversized_header, self.garbage_bytes, self.idle_burst]


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = {}
        self.failures = []

    def record(self, kind, ok, detail=""):
        with self.lock:
            self.ok[kind] = self.ok.get(kind, 0) + (1 if ok else 0)
            if not ok:
                self.failures.append(f"{kind}: {detail}")


def s3_client(server, counts, worker, deadline):
    """PUT then GET objects of its own keys; every GET must return the last PUT's bytes."""
    s3 = server.boto3()
    rng = random.Random(worker)
    while time.time() < deadline:
        key = f"soak-{worker}-{rng.randrange(4)}"
        body = os.urandom(rng.choice([1 << 10, 64 << 10, 512 << 10]))
        try:
            s3.put_object(Bucket=server.soak_bucket, Key=key, Body=body)
            got = s3.get_object(Bucket=server.soak_bucket, Key=key)["Body"].read()
            counts.record("s3", got == body, f"{key}: {len(got)} bytes, want {len(body)}")
        except Exception as e:  # a legitimate request must not fail
            counts.record("s3", False, repr(e))


def kv_client(server, counts, tmp, deadline, keys, want):
    i = 0
    while time.time() < deadline:
        via = ("ucx", "http")[i % 2]
        i += 1
        d = os.path.join(tmp, f"kv-{i}")
        os.makedirs(d)
        try:
            p, layers, summary, data = get_layers(server, server.soak_bucket, d, keys,
                                                  KV_SHAPE["n_layers"], KV_SHAPE["s"],
                                                  "kv_l2td", "layer-major", via, check=False)
            ok = p.returncode == 0 and data == want
            counts.record("kv-" + via, ok, p.stderr.decode(errors="replace")[-500:])
        except Exception as e:
            counts.record("kv-" + via, False, repr(e))
        shutil.rmtree(d, ignore_errors=True)


def hostile_client(hostile, counts, deadline):
    """Each hostile request must get the answer its case requires; a hang, a refused
    connection (the server is gone) or any other error is a failure."""
    actions = hostile.all()
    i = 0
    while time.time() < deadline:
        action = actions[i % len(actions)]
        i += 1
        try:
            ok, answer = action()
            counts.record("hostile-" + action.__name__, ok, f"unexpected answer: {answer}")
        except (Hang, OSError) as e:
            counts.record("hostile-" + action.__name__, False, repr(e))


def wait_connections_closed(server, deadline_s=60):
    """Waits until /stats shows one open connection (its own)."""
    deadline = time.monotonic() + deadline_s
    while True:
        with urllib.request.urlopen(server.endpoint + "/stats", timeout=10) as r:
            open_now = json.loads(r.read())["connections"]["open"]
        if open_now <= 1:
            return
        assert time.monotonic() < deadline, f"{open_now} connections still open"
        time.sleep(0.1)


def settle(pid, baseline, timeout_s=30):
    """Waits for the thread count and RSS to come back near `baseline`; the last reading."""
    threads0, rss0 = baseline
    deadline = time.time() + timeout_s
    while True:
        threads, rss = proc_status(pid)
        if threads <= threads0 and rss <= rss0 * 1.25 + (64 << 20):
            return threads, rss
        if time.time() > deadline:
            return threads, rss
        time.sleep(0.5)


def test_soak_legitimate_clients_beside_hostile_ones():
    root = tempfile.mkdtemp(prefix="oc-it-soak-")
    # A small block cache, so that the cache fills during the warm-up and what grows after it
    # is what the requests leave behind.
    server = Server("embedded", root, '\n[storage]\nblock_cache_bytes = "16MiB"\n')
    # Raised header limits: a single header value over 64 KiB must still be refused cleanly.
    with open(server.config) as f:
        text = f.read()
    with open(server.config, "w") as f:
        f.write(text.replace('max_header_bytes = "16KiB"', 'max_header_bytes = "256KiB"'))
    server.start()
    try:
        tmp = os.path.join(root, "tmp")
        os.makedirs(tmp)
        server.soak_bucket = "soak"
        server.boto3().create_bucket(Bucket=server.soak_bucket)
        n, n_layers, s, g = (KV_SHAPE[k] for k in ("n", "n_layers", "s", "g"))
        keys = key_args("compact", tmp, n, g, "soak-kv/")
        put_chunks(server, server.soak_bucket, tmp, keys, n, n_layers, s, "kv_l2td", KV_SEED)
        want = expected_payload(n, n, n_layers, s, "layer-major", KV_SEED)
        hostile = Hostile(server, server.soak_bucket)
        pid = server.procs[0].pid

        def run_phase(seconds):
            """Runs every client for `seconds`; their counts and the peak RSS seen meanwhile."""
            counts = Counts()
            deadline = time.time() + seconds
            peak = [0]

            def sample():
                while time.time() < deadline:
                    peak[0] = max(peak[0], proc_status(pid)[1])
                    time.sleep(0.25)
            workers = [threading.Thread(target=s3_client, args=(server, counts, w, deadline))
                       for w in range(2)]
            workers.append(threading.Thread(target=kv_client,
                                            args=(server, counts, tmp, deadline, keys, want)))
            workers.append(threading.Thread(target=hostile_client,
                                            args=(hostile, counts, deadline)))
            workers.append(threading.Thread(target=sample))
            for t in workers:
                t.start()
            for t in workers:
                t.join()
            return counts, peak[0]

        # The warm-up runs every kind of request many times, so lazily started threads exist
        # and the memory that steady load uses (memtables, caches, allocator arenas) has been
        # touched: its peak is the level the server must come back to.
        warm, warm_peak = run_phase(20)
        assert not warm.failures, warm.failures[:10]
        # The warm-up's connections close (idle_timeout = 3s closes any a client kept): wait
        # for the state, only the /stats request's own connection open.
        wait_connections_closed(server)
        baseline = (proc_status(pid)[0], warm_peak)
        counts, _ = run_phase(SOAK_SECONDS)
        assert server.alive()
        assert not counts.failures, counts.failures[:10]
        kinds = ["s3", "kv-ucx", "kv-http"] + ["hostile-" + a.__name__ for a in hostile.all()]
        for kind in kinds:
            assert counts.ok.get(kind, 0) > 0, (kind, counts.ok)
        threads, rss = settle(pid, baseline)
        assert threads <= baseline[0], f"threads {threads}, {baseline[0]} before"
        assert rss <= baseline[1] * 1.25 + (64 << 20), f"rss {rss}, {baseline[1]} before"
        print(f"soak: {counts.ok}; threads {baseline[0]} -> {threads}; "
              f"rss {baseline[1] >> 20} -> {rss >> 20} MiB")
    finally:
        codes = server.stop()
        log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
        shutil.rmtree(root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"
