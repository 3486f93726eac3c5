"""README, "The binaries": SIGTERM stops accepting, finishes in-flight requests and exits 0.
Over the embedded store (`objectcache serve`) and the remote one (SIGTERM to `oc-gateway` in
front of a running `oc-storage-server`):

- a large GET whose reader has stopped reading (the answer cannot fit in the socket buffers,
  so the gateway is blocked mid-body when the signal comes) and a PUT whose sender stopped
  half-way through the body (after 100 Continue: the gateway is reading it) are both in
  flight when SIGTERM arrives;
- once the listening socket is closed (a connect is refused, waited for with a deadline), the
  gateway is still running, the PUT's sender sends the rest and the GET's reader reads on;
- both complete byte-exact (the PUT's ETag is the MD5 of the bytes and, after a restart, the
  object reads back equal), and the gateway then exits 0.

A request still running when the grace (30 s) is over is cut off, and the exit is still 0."""
import hashlib
import os
import socket
import time

import pytest

import sigv4
from conftest import Server, modes, running_server

MiB = 1 << 20
GET_BYTES = 32 * MiB  # far more than the loopback socket buffers on both sides hold
PUT_BYTES = 16 * MiB
DEADLINE_S = 60


class PatientServer(Server):
    """The conftest server with long timeouts: the paused reader and sender must not be cut
    off by read_timeout while the test waits for the listening socket to close."""

    def __init__(self, mode, root, **kw):
        super().__init__(mode, root, **kw)
        with open(self.config) as f:
            text = f.read()
        for key in ("read_timeout", "idle_timeout", "header_timeout"):
            start = text.index(key + " = ")
            end = text.index("\n", start)
            text = text[:start] + f'{key} = "60s"' + text[end:]
        with open(self.config, "w") as f:
            f.write(text)


def read_head(sock):
    """Reads up to the end of one response header; returns (status, headers, bytes after)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"connection closed before a header: {data!r}"
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = {}
    for line in lines:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(status_line.split()[1]), headers, rest


def read_exactly(sock, n, have=b""):
    out = bytearray(have)
    while len(out) < n:
        piece = sock.recv(min(1 << 20, n - len(out)))
        assert piece, f"connection closed after {len(out)} of {n} bytes"
        out += piece
    return bytes(out)


def request_head(server, method, path, body, extra):
    """A header block signed over `body` (x-amz-content-sha256 its SHA-256); `extra` headers
    are sent unsigned after the signed ones."""
    h = sigv4.sign(method, f"127.0.0.1:{server.port}", path, "", {}, body, server.access_key,
                   server.secret_key)
    lines = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in h.items()]
    lines += [f"{k}: {v}" for k, v in extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(port, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(DEADLINE_S)
    s.connect(("127.0.0.1", port))
    return s


def wait_until_refused(port, proc):
    """Returns once a connect to `port` is refused (the gateway closed its listening socket);
    fails after DEADLINE_S or if the process exited first."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"gateway exited ({proc.returncode}) with requests in flight"
        try:
            probe = socket.create_connection(("127.0.0.1", port), timeout=5)
        except ConnectionRefusedError:
            return
        probe.close()  # accepted before the close, or still listening: try again
        time.sleep(0.01)
    pytest.fail(f"the gateway still accepted connections {DEADLINE_S} s after SIGTERM")


@pytest.mark.parametrize("mode", modes())
def test_sigterm_finishes_in_flight_get_and_put(mode):
    with running_server("oc-it-shutdown-", mode, make=PatientServer) as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="drain")
        big = os.urandom(GET_BYTES)
        s3.put_object(Bucket="drain", Key="big", Body=big)
        upload = os.urandom(PUT_BYTES)

        # The GET: header and the first MiB read, then the reader stops.
        get = connect(srv.port, rcvbuf=64 << 10)
        get.sendall(request_head(srv, "GET", "/drain/big", b"", [("Connection", "close")]))
        status, headers, got = read_head(get)
        assert status == 200 and int(headers["content-length"]) == GET_BYTES, headers
        got = read_exactly(get, MiB, got)

        # The PUT: 100 Continue received (auth passed, the writer is open), half the body sent.
        put = connect(srv.port)
        put.sendall(request_head(srv, "PUT", "/drain/up", upload,
                                 [("Content-Length", str(PUT_BYTES)),
                                  ("Expect", "100-continue"), ("Connection", "close")]))
        status, _, rest = read_head(put)
        assert status == 100 and rest == b""
        put.sendall(upload[:PUT_BYTES // 2])

        gateway = srv.procs[0]
        gateway.terminate()  # SIGTERM
        wait_until_refused(srv.port, gateway)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        assert gateway.poll() is None, "the gateway exited with two requests in flight"

        put.sendall(upload[PUT_BYTES // 2:])
        status, headers, reply = read_head(put)
        assert status == 200, reply
        assert headers["etag"] == '"' + hashlib.md5(upload).hexdigest() + '"'
        put.close()

        got = read_exactly(get, GET_BYTES, got)
        assert hashlib.sha256(got).digest() == hashlib.sha256(big).digest()
        assert get.recv(1) == b"", "bytes after the announced length"
        get.close()

        assert gateway.wait(timeout=DEADLINE_S) == 0
        # Restart (in remote mode the storage server stops too, exit 0) and read the PUT back.
        assert all(code == 0 for code in srv.stop())
        srv.start()
        assert srv.boto3().get_object(Bucket="drain", Key="up")["Body"].read() == upload


def test_a_request_still_running_after_the_grace_is_cut_off_and_exit_is_0():
    """A reader that never reads on: the gateway waits out its grace (kShutdownGrace, 30 s),
    then closes that connection and still exits 0 (it aborted on a double free before)."""
    with running_server("oc-it-shutdown-", "embedded", make=PatientServer) as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="stall")
        s3.put_object(Bucket="stall", Key="big", Body=os.urandom(GET_BYTES))
        get = connect(srv.port, rcvbuf=64 << 10)
        get.sendall(request_head(srv, "GET", "/stall/big", b"", [("Connection", "close")]))
        status, _, got = read_head(get)
        assert status == 200
        got = read_exactly(get, MiB, got)

        gateway = srv.procs[0]
        gateway.terminate()  # SIGTERM
        wait_until_refused(srv.port, gateway)
        assert gateway.wait(timeout=DEADLINE_S + 30) == 0
        received = len(got)
        try:
            while piece := get.recv(1 << 20):
                received += len(piece)
        except ConnectionResetError:
            pass
        assert received < GET_BYTES, "the stalled answer was not cut off"
        get.close()
