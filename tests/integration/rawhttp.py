"""Hand-made S3 requests for request shapes the Python SDKs here will not produce (aws-chunked
bodies with trailers, exact header sets of other SDKs): one request per fresh connection,
headers sent in the order given, the answer parsed into (status, headers, body)."""
import socket
import urllib.parse
import xml.etree.ElementTree as ET

import sigv4


def send(port, method, target, headers, body=b"", host_header=None, interim=None):
    """One request; `headers` a list of (name, value). Content-Length is added for a body
    unless a header already sets it. With `Expect: 100-continue` among the headers the body
    is sent only after the server's 100 Continue (as botocore and the AWS SDKs do); a final
    answer instead is the answer, the body never sent. `interim` (a list) receives the
    status of each interim answer seen."""
    lines = [f"{method} {target} HTTP/1.1"]
    names = {k.lower(): v for k, v in headers}
    if "host" not in names:
        lines.append(f"Host: {host_header or f'127.0.0.1:{port}'}")
    lines += [f"{k}: {v}" for k, v in headers]
    lines.append("Connection: close")
    if (body or method in ("PUT", "POST")) and "content-length" not in names and \
            "transfer-encoding" not in names:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    expect = str(names.get("expect", "")).lower() == "100-continue" and body
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head if expect else head + body)
        raw = b""
        if expect:
            while b"\r\n\r\n" not in raw:
                b = s.recv(65536)
                if not b:
                    break
                raw += b
            if raw.startswith(b"HTTP/1.1 100"):
                if interim is not None:
                    interim.append(100)
                raw = raw.partition(b"\r\n\r\n")[2]
                s.sendall(body)
        while True:
            b = s.recv(65536)
            if not b:
                break
            raw += b
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    resp_headers = {}
    for line in header_lines:
        if ":" in line:
            k, v = line.split(":", 1)
            resp_headers.setdefault(k.strip().lower(), v.strip())
    return int(status_line.split()[1]), resp_headers, rest


def signed(server, method, path, query="", headers=None, body=b"", payload_hash=None,
           host=None):
    """Sends a SigV4 header-signed request (every header given is signed). `path` is sent as
    given (percent-encoded where needed) and signed decoded, as sigv4.sign expects."""
    host = host or f"127.0.0.1:{server.port}"
    h = sigv4.sign(method, host, urllib.parse.unquote(path), query, headers or {}, body,
                   server.access_key, server.secret_key, payload_hash=payload_hash)
    target = path + ("?" + query if query else "")
    return send(server.port, method, target, list(h.items()), body)


def aws_chunked(payload, chunk_bytes, trailer=None):
    """An unsigned aws-chunked body (STREAMING-UNSIGNED-PAYLOAD-TRAILER framing): hex size
    CRLF data CRLF per chunk, "0" CRLF, then the trailer lines and an empty line."""
    out = b""
    for i in range(0, len(payload), chunk_bytes):
        piece = payload[i:i + chunk_bytes]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    out += b"0\r\n"
    for name, value in (trailer or []):
        out += f"{name}:{value}\r\n".encode()
    return out + b"\r\n"


def error_code(body):
    root = ET.fromstring(body)
    assert root.tag == "Error", body
    return root.findtext("Code"), root.findtext("ArgumentName")


def assert_not_stored(server, bucket, key):
    """Nothing is stored under `key`: a signed GET answers 404 NoSuchKey. A server that crashed
    (no connection, no answer) or answered anything else (a 500, a 403) fails the test."""
    status, _, body = signed(server, "GET", f"/{bucket}/{urllib.parse.quote(key)}")
    assert status == 404, (f"{key} answered {status}", body[:500])
    assert error_code(body)[0] == "NoSuchKey", body[:500]


def signed_streaming(server, method, path, payload, chunk_bytes, query="", headers=None,
                     trailer=None, tamper=None):
    """A header-signed request with an aws-chunked body whose chunks are signed
    (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) and, with `trailer` ((name, value)), a signed
    checksum trailer (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER); sigv4.signed_chunks."""
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc)
    mode = ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" if trailer
            else "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
    h = dict(headers or {})
    h["content-encoding"] = "aws-chunked"
    h["x-amz-decoded-content-length"] = str(len(payload))
    if trailer:
        h["x-amz-trailer"] = trailer[0]
    host = f"127.0.0.1:{server.port}"
    out = sigv4.sign(method, host, urllib.parse.unquote(path), query, h, b"",
                     server.access_key, server.secret_key, now=now, payload_hash=mode)
    seed = out["Authorization"].rsplit("Signature=", 1)[1]
    date = now.strftime("%Y%m%d")
    body = sigv4.signed_chunks(payload, chunk_bytes, sigv4.signing_key(server.secret_key, date),
                               out["x-amz-date"], f"{date}/us-east-1/s3/aws4_request", seed,
                               trailer=trailer, tamper=tamper)
    target = path + ("?" + query if query else "")
    return send(server.port, method, target, list(out.items()), body)


def _proc_tcp_queues(local, remote):
    """(tx_queue, rx_queue) of the IPv4 socket bound to `local` and connected to `remote`
    ((ip, port) pairs) from /proc/net/tcp, or None when there is no such socket."""
    def hexaddr(addr):
        ip, port = addr
        return socket.inet_aton(ip)[::-1].hex().upper() + f":{port:04X}"

    want_local, want_remote = hexaddr(local), hexaddr(remote)
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == want_local and fields[2] == want_remote:
                tx, rx = fields[4].split(":")
                return int(tx, 16), int(rx, 16)
    return None


def wait_read_by_server(sock, deadline_s=60):
    """Waits until the server process has read every byte sent on `sock` (a loopback
    connection): nothing unacknowledged on our side, nothing unread in the server socket's
    receive queue (/proc/net/tcp). The state a test means by "the server has taken in what
    was sent", without guessing a pause."""
    import time
    local, remote = sock.getsockname(), sock.getpeername()
    deadline = time.monotonic() + deadline_s
    while True:
        ours, theirs = _proc_tcp_queues(local, remote), _proc_tcp_queues(remote, local)
        if ours is not None and theirs is not None and ours[0] == 0 and theirs[1] == 0:
            return
        assert time.monotonic() < deadline, f"server has not read what was sent: {ours} {theirs}"
        time.sleep(0.01)
