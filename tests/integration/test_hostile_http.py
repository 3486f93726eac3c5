"""Hostile HTTP input against a real `objectcache serve` over raw sockets (issue 13, "Trust
boundary"): a header field over 64 KiB under raised limits, thousands of idle and slowloris
connections (also under a low open-file limit), object keys that are not UTF-8, and listing
and error bodies that must stay well-formed XML whatever bytes the request held. After each,
the server must still be alive and serve an ordinary signed client."""
import datetime
import hashlib
import hmac
import json
import os
import re
import resource
import shutil
import socket
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from conftest import Server

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
REPLACEMENT = "\ufffd"

# header_timeout is long on purpose: the idle-connection tests must pass because idle
# connections are shed at the limit, not because they time out meanwhile.
CONFIG = """
[gateway]
read_timeout = "5s"
idle_timeout = "30s"
header_timeout = "30s"
max_header_bytes = "256KiB"
max_object_bytes = "64MiB"
"""


def raise_fd_limit(want):
    """This process holds thousands of sockets: raise its own open-file limit to `want`, the
    hard one too when it is lower (root, or CAP_SYS_RESOURCE, may). Where that is refused the
    test fails, naming the limit: a connection-exhaustion test that did not run is not a pass."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return
    new_hard = hard if hard == resource.RLIM_INFINITY or hard >= want else want
    refused = None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, new_hard))
    except (ValueError, OSError) as e:
        refused = e
    if refused is not None:
        pytest.fail(f"cannot raise the open-file limit (soft {soft}, hard {hard}) to the {want} "
                    f"this test needs: {refused}; run it where `ulimit -n {want}` is allowed",
                    pytrace=False)


class HostileServer(Server):
    """An embedded `objectcache serve` with CONFIG (and optionally a hard open-file limit)."""

    def __init__(self, root, nofile=None):
        super().__init__("embedded", root)
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.nofile = nofile

    def start(self):
        if self.nofile is None:
            return super().start()
        import subprocess
        from conftest import wait_healthy
        nofile = self.nofile

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        cmd = [os.environ["OC_OBJECTCACHE_BIN"], "serve", "--config", self.config,
               "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}"]
        self.procs = [subprocess.Popen(cmd, env=self.env(), stdout=self.log, stderr=self.log,
                                       preexec_fn=limit)]
        wait_healthy(self.endpoint, self.procs[0])

    def log_bytes(self):
        self.log.flush()
        with open(os.path.join(self.root, "server.log"), "rb") as f:
            return f.read()


def start_server(nofile=None):
    root = tempfile.mkdtemp(prefix="oc-hostile-")
    srv = HostileServer(root, nofile)
    srv.start()
    return srv


def stop_server(srv):
    codes = srv.stop()
    log = srv.log_bytes().decode(errors="replace")
    shutil.rmtree(srv.root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"


@pytest.fixture(scope="module")
def hostile():
    srv = start_server()
    yield srv
    stop_server(srv)


# --- A SigV4 signer over bytes: paths, query values and header values may be any bytes ---

def q(b):
    return urllib.parse.quote(b, safe=b"-_.~")


def signed_request(srv, method, path, query=(), headers=None, body=b""):
    """The raw bytes of a signed request. `path` is the decoded path (bytes); `query` a list of
    (name, value) bytes pairs; header values are bytes. Signed as the gateway verifies: the
    path and query percent-encoded once, header values byte for byte."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    hdrs = {k.lower(): v for k, v in (headers or {}).items()}
    hdrs["host"] = f"127.0.0.1:{srv.port}".encode()
    hdrs["x-amz-date"] = amz_date.encode()
    hdrs["x-amz-content-sha256"] = payload.encode()
    names = sorted(hdrs)
    canon_headers = b"".join(n.encode() + b":" + hdrs[n].strip() + b"\n" for n in names)
    canon_query = "&".join(sorted(f"{q(k)}={q(v)}" for k, v in query))
    canon_path = urllib.parse.quote(path, safe=b"/-_.~")
    creq = b"\n".join([method.encode(), canon_path.encode(), canon_query.encode(), canon_headers,
                       ";".join(names).encode(), payload.encode()])
    scope = f"{date}/us-east-1/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq).hexdigest()])
    key = ("AWS4" + srv.secret_key).encode()
    for part in (date, "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    hdrs["authorization"] = (f"AWS4-HMAC-SHA256 Credential={srv.access_key}/{scope}, "
                             f"SignedHeaders={';'.join(names)}, Signature={sig}").encode()
    hdrs["content-length"] = str(len(body)).encode()
    hdrs["connection"] = b"close"
    target = canon_path + ("?" + canon_query if canon_query else "")
    lines = [f"{method} {target} HTTP/1.1".encode()]
    lines += [n.encode() + b": " + v for n, v in hdrs.items()]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def exchange(srv, data, timeout=15):
    """Sends `data` (a request asking to close after it), reads until the server closes;
    (status, headers text, body bytes)."""
    line, sep, rest = data.partition(b"\r\n")
    if b"\r\nconnection: close" not in data.lower():
        data = line + sep + b"Connection: close\r\n" + rest
    with socket.create_connection(("127.0.0.1", srv.port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
    out = b"".join(chunks)
    head, _, body = out.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return status, head.decode("latin-1"), body


def well_formed(body):
    """Parses `body` with expat (strict XML 1.0); the root element."""
    assert body, "empty body"
    return ET.fromstring(body)


def error_code(body):
    return well_formed(body).findtext("Code")


def boto(srv, read_timeout=10):
    import boto3
    from botocore.config import Config
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"},
                 retries={"max_attempts": 1}, connect_timeout=5, read_timeout=read_timeout)
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=srv.access_key,
                        aws_secret_access_key=srv.secret_key, region_name="us-east-1",
                        config=cfg)


def serves_a_client(srv, bucket):
    """An ordinary client: create (or reuse) a bucket, PUT, GET."""
    s3 = boto(srv)
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    s3.put_object(Bucket=bucket, Key="hello", Body=b"world")
    assert s3.get_object(Bucket=bucket, Key="hello")["Body"].read() == b"world"


def stats(srv):
    with urllib.request.urlopen(srv.endpoint + "/stats", timeout=10) as r:
        return json.loads(r.read())


def wait_taken_in(srv, n, deadline_s=120):
    """Waits until the server has accepted at least `n` connections (those still open, those
    it shed and those it refused, as /stats counts them; the /stats request's own connection
    among the open ones): the state the connection-exhaustion checks are about, whatever the
    load on the machine. Fails after `deadline_s`. Returns the last "connections" reading."""
    deadline = time.monotonic() + deadline_s
    while True:
        c = stats(srv)["connections"]
        if c["open"] + c["shed"] + c["refused"] >= n:
            return c
        assert time.monotonic() < deadline, f"server took in {c}, not {n} connections"
        time.sleep(0.05)


# --- 1. A header field Beast cannot store ---

def test_field_over_64k_with_raised_limits_is_refused_and_server_lives(hostile):
    for name, value in [(b"x-oc-chunk-names", b"a" * 70000),
                        (b"x-oc-key-prefix", b"b" * 65534),
                        (b"x-" + b"n" * 66000, b"v")]:
        status, _, body = exchange(hostile, b"GET /b/k HTTP/1.1\r\nHost: h\r\n" + name + b": " +
                                   value + b"\r\n\r\n")
        assert status == 400, body
        assert error_code(body) == "RequestHeaderSectionTooLarge"
        assert hostile.alive()
    # A field just under Beast's limit is an ordinary header: stored and returned on GET.
    meta = b"m" * 65000
    status, _, body = exchange(hostile, signed_request(
        hostile, "PUT", b"/big-meta", headers={}))
    assert status == 200, body
    status, _, body = exchange(hostile, signed_request(
        hostile, "PUT", b"/big-meta/k", headers={"x-amz-meta-big": meta}, body=b"x"))
    assert status == 200, body
    status, head, _ = exchange(hostile, signed_request(hostile, "HEAD", b"/big-meta/k"))
    assert status == 200 and len(head) > 65000
    assert hostile.alive()
    serves_a_client(hostile, "after-big-field")


# --- 2. Idle and slow connections ---

def open_idle(srv, n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(10)
        s.connect(("127.0.0.1", srv.port))
        socks.append(s)
    return socks


class Slowloris:
    """Connections that send a header a byte every `every_s` seconds and never finish it."""

    def __init__(self, srv, n, every_s=1.0):
        self.socks = open_idle(srv, n)
        self.every_s = every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        payload = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 10000
        i = 0
        while not self.stop.wait(self.every_s):
            for s in self.socks:
                try:
                    s.send(payload[i:i + 1])
                except OSError:
                    pass
            i += 1

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def test_idle_and_slowloris_connections_do_not_starve_clients(hostile):
    raise_fd_limit(4096)
    before = stats(hostile)["connections"]
    slow = Slowloris(hostile, 8)
    idle = open_idle(hostile, 2500)  # more than max_connections (1024, the default)
    try:
        wait_taken_in(hostile, before["open"] + before["shed"] + before["refused"] + 8 + 2500)
        serves_a_client(hostile, "amid-idle")
        serves_a_client(hostile, "amid-idle")
        connections = stats(hostile)["connections"]
        assert connections["shed"] > 0
        assert connections["open"] <= 1024 + 64
    finally:
        for s in idle:
            s.close()
        slow.close()
    assert hostile.alive()


def test_out_of_descriptors_sheds_instead_of_stalling():
    """Under a hard open-file limit of 512 the default max_connections (1024) cannot be reached:
    the server caps connections below the descriptor limit and sheds idle ones, instead of
    failing accepts with EMFILE until an idle connection times out."""
    raise_fd_limit(4096)
    srv = start_server(nofile=512)
    try:
        idle = open_idle(srv, 1500)
        try:
            wait_taken_in(srv, 1500)
            serves_a_client(srv, "no-fds")
            assert stats(srv)["connections"]["shed"] > 0
        finally:
            for s in idle:
                s.close()
        assert srv.alive()
        assert b"open-file limit 512" in srv.log_bytes()
    finally:
        stop_server(srv)


# --- 3. Keys that are not UTF-8 ---

# Not UTF-8 (a stray byte, encoded surrogates, an overlong '/', past U+10FFFF, truncated), and
# NUL, which the store's key encoding reserves.
BAD_KEYS = [b"k\xff", b"k\xed\xa0\x80", b"k\xed\xbf\xbf", b"\xc0\xaf", b"\xf4\x90\x80\x80",
            b"a/\xe2\x82", b"nul\x00"]


def test_keys_not_utf8_or_with_nul_are_refused_and_nothing_is_stored(hostile):
    bucket = b"badkeys"
    assert exchange(hostile, signed_request(hostile, "PUT", b"/" + bucket))[0] == 200
    for key in BAD_KEYS:
        path = b"/" + bucket + b"/" + key
        for method, query, body in [("PUT", (), b"data"), ("POST", [(b"uploads", b"")], b""),
                                    ("GET", (), b""), ("DELETE", (), b"")]:
            status, _, out = exchange(hostile, signed_request(hostile, method, path, query,
                                                              body=body))
            assert status == 400, (key, method, out)
            root = well_formed(out)
            assert root.findtext("Code") == "InvalidArgument"
            assert root.findtext("ArgumentName") == "key"
            assert root.findtext("ArgumentValue") == q(key).replace("%2F", "/")
        # CopyObject: a bad source key is refused the same way.
        status, _, out = exchange(hostile, signed_request(
            hostile, "PUT", b"/" + bucket + b"/dst",
            headers={"x-amz-copy-source": b"/" + bucket + b"/" + q(key).encode()}))
        assert status == 400 and error_code(out) == "InvalidArgument", out
    listing = boto(hostile).list_objects_v2(Bucket="badkeys")
    assert listing["KeyCount"] == 0
    uploads = boto(hostile).list_multipart_uploads(Bucket="badkeys")
    assert not uploads.get("Uploads")
    serves_a_client(hostile, "after-bad-keys")


# --- 4. Listings and error bodies stay well-formed XML ---

# Every awkward character a UTF-8 key may hold: XML specials, whitespace XML normalises, C0 and
# C1 controls, DEL, U+FFFE/U+FFFF (valid UTF-8, not XML characters), and astral planes.
AWKWARD = ["tab\there", "lf\nhere", "cr\rhere", "amp&lt<gt>quot\"apos'", "cdata]]>end",
           "pct%2F+plus?q#h", "ctl\x01\x08\x0b\x0c\x1b\x1f", "del\x7f",
           "c1\u0080\u009f", "nonchar\ufffe\uffff", "repl\ufffd", "astral\U0001F600\U0010FFFF",
           "ls\u2028ps\u2029", " lead and trail "]


def xml_view(key):
    """What a listing without encoding-type shows: characters XML 1.0 cannot carry as U+FFFD."""
    out = []
    for ch in key:
        cp = ord(ch)
        ok = cp in (0x9, 0xA, 0xD) or 0x20 <= cp <= 0xD7FF or 0xE000 <= cp <= 0xFFFD or \
            cp >= 0x10000
        out.append(ch if ok else REPLACEMENT)
    return "".join(out)


def list_raw(srv, bucket, params):
    status, _, body = exchange(srv, signed_request(srv, "GET", b"/" + bucket.encode(), params))
    assert status == 200, body
    return well_formed(body)


def test_listings_are_well_formed_for_every_awkward_key(hostile):
    s3 = boto(hostile)
    bucket = "awkward"
    s3.create_bucket(Bucket=bucket)
    keys = [f"dir/{k}" for k in AWKWARD]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    # boto3 asks for encoding-type=url and decodes: every key comes back exactly.
    got = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert sorted(got) == sorted(keys)
    got = [o["Key"] for o in s3.list_objects(Bucket=bucket)["Contents"]]
    assert sorted(got) == sorted(keys)
    for params in ([(b"list-type", b"2")], [], [(b"list-type", b"2"), (b"encoding-type", b"url")],
                   [(b"encoding-type", b"url")]):
        root = list_raw(hostile, bucket, params)
        listed = [c.findtext(NS + "Key") for c in root.iter(NS + "Contents")]
        if (b"encoding-type", b"url") in params:
            assert root.findtext(NS + "EncodingType") == "url"
            listed = [urllib.parse.unquote(k) for k in listed]
            assert sorted(listed) == sorted(keys)
        else:
            assert sorted(listed) == sorted(xml_view(k) for k in keys)
    # Prefix, delimiter, marker and start-after are echoed: any bytes, still well-formed.
    hostile_value = b"\x01\xff\x00<&\xed\xa0\x80\x7f"
    for params in ([(b"prefix", hostile_value), (b"delimiter", hostile_value),
                    (b"marker", hostile_value)],
                   [(b"list-type", b"2"), (b"prefix", hostile_value),
                    (b"start-after", hostile_value), (b"delimiter", hostile_value)]):
        root = list_raw(hostile, bucket, params)
        assert REPLACEMENT in root.findtext(NS + "Prefix")


def test_error_bodies_are_well_formed_whatever_the_request_held(hostile):
    cases = [
        # The resource echoes a decoded path: NUL, controls, a raw 0xFF and a surrogate.
        b"GET /%00%01%1b%FF%ED%A0%80/k%0d%0a HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET /b%FF%01 HTTP/1.1\r\nHost: h\r\n\r\n",
        # Raw 0xFF (obs-text) in a header the gateway reads, and a malformed target.
        b"GET /b/k HTTP/1.1\r\nHost: h\r\nRange: bytes=\xff\xfe\r\n\r\n",
        b"GET /b/k%zz HTTP/1.1\r\nHost: \xff\r\n\r\n",
        # A presigned query with control bytes and 0xFF in every parameter.
        b"GET /b/k?X-Amz-Algorithm=%01%FF&X-Amz-Credential=%FF%00/x&X-Amz-Date=%1b"
        b"&X-Amz-Expires=%FF&X-Amz-SignedHeaders=host&X-Amz-Signature=%00 HTTP/1.1\r\n"
        b"Host: h\r\n\r\n",
        b"GET /b/k HTTP/1.1\r\nHost: h\r\nAuthorization: AWS4-HMAC-SHA256 Credential=\xff\xfe"
        b"/2025/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=\xff\r\n\r\n",
        # Control bytes the HTTP parser refuses outright.
        b"GET /b/k HTTP/1.1\r\nHost: h\r\nX-Bad: a\x01b\r\n\r\n",
        b"GET /b/\x00k HTTP/1.1\r\nHost: h\r\n\r\n",
    ]
    for data in cases:
        status, head, body = exchange(hostile, data)
        assert 400 <= status < 500, (data, head)
        root = well_formed(body)
        assert root.tag == "Error" and root.findtext("Code")
    # Signed, so the handler runs and echoes the header value as ArgumentValue.
    assert exchange(hostile, signed_request(hostile, "PUT", b"/echo"))[0] == 200
    status, _, body = exchange(hostile, signed_request(
        hostile, "PUT", b"/echo/dst", headers={"x-amz-copy-source": b"/only-bucket\xff\xfe"}))
    assert status == 400
    root = well_formed(body)
    assert root.findtext("ArgumentName") == "x-amz-copy-source"
    assert REPLACEMENT in root.findtext("ArgumentValue")
    assert hostile.alive()
    serves_a_client(hostile, "after-error-bodies")


def test_access_log_carries_no_raw_control_bytes(hostile):
    for target in (b"/%01%1b[31mred%0d%0aforged%00", b"/b%7f%09x/k"):
        exchange(hostile, b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n")
    log = hostile.log_bytes()
    assert b"\\x01\\x1b[31mred\\x0d\\x0aforged\\x00" in log
    for line in log.split(b"\n"):
        bad = [c for c in line if c < 0x20 or c == 0x7F]
        assert not bad, line
