"""curl and raw HTTP against the gateway: operations endpoints, auth failures, malformed
HTTP (oversize headers, bad chunk sizes, truncated bodies, trickling clients), keep-alive,
100-continue, chunked transfer, and that the server keeps serving others throughout."""
import datetime
import json
import select
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import sigv4
from rawhttp import assert_not_stored


def curl(*args):
    r = subprocess.run(["curl", "-s", "-S", "-o", "-", "-w", "\n%{http_code}", *args],
                       capture_output=True, timeout=60)
    out = r.stdout.decode(errors="replace")
    body, _, code = out.rpartition("\n")
    return int(code or 0), body


def raw(server, data):
    """Sends raw bytes, returns everything the server answers until it closes (until_closed:
    a server that neither answers nor closes fails the test)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(data)
        return until_closed(s)


def until_closed(sock, deadline_s=60):
    """Everything the server sends on `sock` until it closes the connection (FIN, or a reset
    after its answer). Fails when it neither answers nor closes within `deadline_s`: a server
    that hangs on the input must not pass as one that closed."""
    sock.settimeout(deadline_s)
    chunks = []
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                break
            chunks.append(b)
    except ConnectionResetError:
        pass
    except socket.timeout:
        pytest.fail(f"the server neither answered nor closed within {deadline_s} s; it sent "
                    f"{b''.join(chunks)[:300]!r}")
    return b"".join(chunks)


def signed(server, method, path, query="", body=b"", headers=None, **kw):
    h = sigv4.sign(method, f"127.0.0.1:{server.port}", path, query, headers or {}, body,
                   server.access_key, server.secret_key, **kw)
    return h


def request_bytes(method, path, headers, body=b"", query=""):
    target = path + ("?" + query if query else "")
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def still_serving(server):
    code, body = curl(server.endpoint + "/healthz")
    assert code == 200 and body == "ok\n"


def test_health_ready_stats_metrics(server):
    assert curl(server.endpoint + "/healthz") == (200, "ok\n")
    assert curl(server.endpoint + "/readyz")[0] == 200
    code, body = curl(server.endpoint + "/stats")
    assert code == 200
    stats = json.loads(body)
    assert stats["store"]["ok"] is True
    assert "connections" in stats and "config" in stats
    assert "secret" not in body.lower()
    code, text = curl(server.endpoint + "/metrics")
    assert code == 200
    assert 'oc_gateway_requests_total{op="ListBuckets"}' in text
    assert "oc_gateway_request_duration_seconds_bucket" in text


def test_anonymous_refused(server, made_bucket):
    code, body = curl(server.endpoint + "/")
    assert code == 403 and "<Code>AccessDenied</Code>" in body
    code, body = curl(f"{server.endpoint}/{made_bucket}/k")
    assert code == 403 and "<Code>AccessDenied</Code>" in body
    assert "<RequestId>" in body


def test_bad_signature(server):
    h = signed(server, "GET", "/")
    h["Authorization"] = h["Authorization"][:-4] + "0000"
    code, body = curl(server.endpoint + "/", *sum([["-H", f"{k}: {v}"] for k, v in h.items()], []))
    assert code == 403 and "<Code>SignatureDoesNotMatch</Code>" in body


def test_good_signature_by_hand(server):
    h = signed(server, "GET", "/")
    code, body = curl(server.endpoint + "/", *sum([["-H", f"{k}: {v}"] for k, v in h.items()], []))
    assert code == 200 and "ListAllMyBucketsResult" in body


def test_skewed_clock(server):
    skewed = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    h = signed(server, "GET", "/", now=skewed)
    code, body = curl(server.endpoint + "/", *sum([["-H", f"{k}: {v}"] for k, v in h.items()], []))
    assert code == 403 and "<Code>RequestTimeTooSkewed</Code>" in body


def test_expired_presigned_url(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="e", Body=b"x")
    host = f"127.0.0.1:{server.port}"
    now = datetime.datetime.now(datetime.timezone.utc)

    def url(signed_at, expires):
        return f"http://{host}" + sigv4.presign("GET", host, f"/{made_bucket}/e",
                                                 server.access_key, server.secret_key, expires,
                                                 now=signed_at)

    assert curl(url(now, 60)) == (200, "x")
    # Signed two minutes ago for 60 seconds: expired, whatever the clock does meanwhile.
    code, body = curl(url(now - datetime.timedelta(minutes=2), 60))
    assert code == 403 and "<Code>AccessDenied</Code>" in body


def test_malformed_xml_and_entity_too_large(server, made_bucket):
    body = b"<Delete><Object><Key>a</Key></Object>"  # unterminated
    h = signed(server, "POST", f"/{made_bucket}", "delete=", body)
    out = raw(server, request_bytes("POST", f"/{made_bucket}", {**h, "Content-Length": len(body),
                                                               "Connection": "close"},
                                    body, query="delete="))
    assert b" 400 " in out.split(b"\r\n")[0] and b"<Code>MalformedXML</Code>" in out
    # A declared body over max_object_bytes (256 MiB in the test config) is refused before
    # any byte is read, and 100 Continue is never sent.
    h = signed(server, "PUT", f"/{made_bucket}/huge", payload_hash="UNSIGNED-PAYLOAD")
    out = raw(server, request_bytes("PUT", f"/{made_bucket}/huge",
                                    {**h, "Content-Length": 1 << 30, "Expect": "100-continue"}))
    assert b"100 Continue" not in out
    assert b"<Code>EntityTooLarge</Code>" in out
    still_serving(server)


def test_keep_alive_and_100_continue(server, made_bucket):
    body = b"q" * 1000
    h = signed(server, "PUT", f"/{made_bucket}/ka", body=body)
    req = request_bytes("PUT", f"/{made_bucket}/ka", {**h, "Content-Length": len(body),
                                                      "Expect": "100-continue"})
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(req)
        first = s.recv(4096)
        assert first.startswith(b"HTTP/1.1 100 Continue")
        s.sendall(body)
        resp = b""
        while b"\r\n\r\n" not in resp:
            resp += s.recv(4096)
        assert resp.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        # The same connection serves a second request.
        h2 = signed(server, "GET", f"/{made_bucket}/ka")
        s.sendall(request_bytes("GET", f"/{made_bucket}/ka", h2))
        resp = b""
        while not resp.endswith(body):
            chunk = s.recv(65536)
            assert chunk
            resp += chunk
        assert resp.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"


def test_chunked_transfer_encoding_put(server, made_bucket):
    body = b"chunked-body-" * 100
    h = signed(server, "PUT", f"/{made_bucket}/ch", payload_hash="UNSIGNED-PAYLOAD")
    chunks = b""
    for i in range(0, len(body), 300):
        piece = body[i:i + 300]
        chunks += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    chunks += b"0\r\n\r\n"
    out = raw(server, request_bytes("PUT", f"/{made_bucket}/ch",
                                    {**h, "Transfer-Encoding": "chunked", "Connection": "close"},
                                    chunks))
    assert out.split(b"\r\n")[0] == b"HTTP/1.1 200 OK", out
    assert server.boto3().get_object(Bucket=made_bucket, Key="ch")["Body"].read() == body


def test_oversize_headers(server):
    out = raw(server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (64 << 10) + b"\r\n\r\n")
    assert out == b"" or out.split(b"\r\n")[0].startswith(b"HTTP/1.1 400")
    still_serving(server)


def test_bad_chunk_size(server, made_bucket):
    h = signed(server, "PUT", f"/{made_bucket}/badchunk", payload_hash="UNSIGNED-PAYLOAD")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(request_bytes("PUT", f"/{made_bucket}/badchunk",
                                {**h, "Transfer-Encoding": "chunked"}, b"zz\r\nabc\r\n0\r\n\r\n"))
        out = until_closed(s)
    # The framing is broken, so the connection cannot be reused: a 400 then a close.
    assert out.split(b"\r\n")[0] == b"HTTP/1.1 400 Bad Request", out
    still_serving(server)
    assert_not_stored(server, made_bucket, "badchunk")


def test_truncated_body_is_not_visible(server, made_bucket):
    body = b"t" * 10000
    h = signed(server, "PUT", f"/{made_bucket}/trunc", payload_hash="UNSIGNED-PAYLOAD")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(request_bytes("PUT", f"/{made_bucket}/trunc", {**h, "Content-Length": len(body)},
                                body[:5000]))
        s.shutdown(socket.SHUT_WR)  # the client goes away mid-body
        # The server sees the end of the stream mid-body: it must give up the request and
        # close (waited for, not assumed after a pause), before anything is looked at.
        until_closed(s)
    still_serving(server)
    assert_not_stored(server, made_bucket, "trunc")


def test_signed_payload_mismatch(server, made_bucket):
    body = b"actual body"
    h = signed(server, "PUT", f"/{made_bucket}/sha", body=b"another body")
    out = raw(server, request_bytes("PUT", f"/{made_bucket}/sha",
                                    {**h, "Content-Length": len(body), "Connection": "close"}, body))
    assert out.split(b"\r\n")[0] == b"HTTP/1.1 400 Bad Request", out
    assert b"<Code>XAmzContentSHA256Mismatch</Code>" in out
    assert_not_stored(server, made_bucket, "sha")


def test_trickling_header_is_cut_off(server):
    """A client sending its header a byte every 0.1 s cannot hold the connection past the
    header timeout (header_timeout = 3s in the test config): the server closes it (after an
    error answer or none) while the client is still trickling. The client's pace is the
    behaviour under test; what the test waits for is the server's close, on a budget of 300
    bytes (30 s, ten times the timeout) after which the header would still be unfinished."""
    header = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 300
    answer = b""
    closed = False
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        for b in header:
            try:
                s.sendall(bytes([b]))
                readable, _, _ = select.select([s], [], [], 0.1)
                if readable:
                    got = s.recv(65536)
                    answer += got
                    closed = got == b""
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            if closed:
                break
    assert closed, "the server waited for a header trickled over 30 s"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:300]
    still_serving(server)


def test_trickling_body_is_cut_off(server, made_bucket):
    """A body arriving slower than stream_piece_bytes per read_timeout (2s) is cut off, and
    nothing of it becomes visible."""
    h = signed(server, "PUT", f"/{made_bucket}/slow", payload_hash="UNSIGNED-PAYLOAD")
    start = time.time()
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
        s.sendall(request_bytes("PUT", f"/{made_bucket}/slow", {**h, "Content-Length": 1 << 20}))
        closed = False
        while time.time() - start < 12:
            try:
                s.sendall(b"x" * 100)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.2)
    assert closed
    still_serving(server)
    assert_not_stored(server, made_bucket, "slow")


def test_request_ids(server):
    code, _ = curl(server.endpoint + "/healthz")
    out = subprocess.run(["curl", "-s", "-D", "-", "-o", "/dev/null", server.endpoint + "/"],
                         capture_output=True).stdout.decode()
    ids = [l.split(":", 1)[1].strip() for l in out.splitlines()
           if l.lower().startswith("x-amz-request-id")]
    assert len(ids) == 1 and len(ids[0]) == 16


def test_client_that_leaves_mid_download(server, made_bucket):
    # 16 MiB streams in many pieces (the next read overlaps the current write); a client that
    # reads a little and hangs up must not disturb the server or the object.
    data = bytes(range(256)) * (64 * 1024)
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="big", Body=data)
    for _ in range(3):
        h = signed(server, "GET", f"/{made_bucket}/big")
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(request_bytes("GET", f"/{made_bucket}/big", h))
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
    still_serving(server)
    assert s3.get_object(Bucket=made_bucket, Key="big")["Body"].read() == data
    ranged = s3.get_object(Bucket=made_bucket, Key="big", Range="bytes=100-1500000")
    assert ranged["Body"].read() == data[100:1500001]
