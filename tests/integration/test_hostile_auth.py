"""A hostile tester's requests, sent raw over a socket: headers added to a signed request or a
presigned URL after signing (x-amz-meta-*, x-amz-copy-source, x-oc-delivery, x-oc-target-*,
x-oc-layout), and presigned URLs with malformed signatures. Each must be refused with a 403 and
a well-formed S3 error (the right Code, the header named), and must change nothing: objects,
their metadata and stored chunks are checked afterwards. The same requests with the header
signed are the controls. docs/protocol.md "Signing" states the rule."""
import os
import shutil
import socket
import tempfile
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

import sigv4
from conftest import Server, modes

PUBLIC_BUCKET = "public-hostile"


@pytest.fixture(scope="module", params=modes())
def server(request):
    """The conftest server, with one public-read bucket (anonymous reads must keep working)."""
    root = tempfile.mkdtemp(prefix="oc-it-")
    srv = Server(request.param, root, extra_config=f'public_read_buckets = ["{PUBLIC_BUCKET}"]\n')
    srv.start()
    yield srv
    codes = srv.stop()
    log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
    shutil.rmtree(root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"


def send(server, method, target, headers, body=b""):
    """One request over a fresh connection, headers in the order given; (status, headers,
    body) of the answer."""
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers]
    lines.append("Connection: close")
    if body or method in ("PUT", "POST"):
        lines.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(data)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    raw = b"".join(chunks)
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    resp_headers = {k.strip().lower(): v.strip()
                    for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
    return int(status_line.split()[1]), resp_headers, rest


def host(server):
    return f"127.0.0.1:{server.port}"


def signed(server, method, path, query="", headers=None, body=b"", payload_hash=None):
    """Headers of a header-signed request (every header given is signed), as a list so that
    unsigned ones can be appended after."""
    h = sigv4.sign(method, host(server), path, query, headers or {}, body, server.access_key,
                   server.secret_key, payload_hash=payload_hash)
    return list(h.items())


def target(path, query=""):
    return path + ("?" + query if query else "")


def error_of(status, body, code, argument=None):
    """Checks a 403 S3 error document; returns its root."""
    assert status == 403, body
    root = ET.fromstring(body)  # well-formed XML or this raises
    assert root.tag == "Error", body
    assert root.findtext("Code") == code, body
    assert root.findtext("RequestId"), body
    assert root.findtext("Message"), body
    if argument is not None:
        assert root.findtext("ArgumentName") == argument, body
        assert argument in root.findtext("Message"), body
    return root


def unsigned_refused(status, body, header):
    root = error_of(status, body, "AccessDenied", header)
    assert "not signed" in root.findtext("Message"), body


# ---- x-amz-* added to a header-signed request ----

def test_unsigned_metadata_is_refused_and_not_stored(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"original", Metadata={"owner": "alice"})
    path = f"/{made_bucket}/k"
    body = b"replaced"
    h = signed(server, "PUT", path, headers={"x-amz-meta-owner": "bob"}, body=body)
    status, _, resp = send(server, "PUT", path, h + [("x-amz-meta-evil", "mallory")], body)
    unsigned_refused(status, resp, "x-amz-meta-evil")
    got = s3.get_object(Bucket=made_bucket, Key="k")
    assert got["Body"].read() == b"original"
    assert got["Metadata"] == {"owner": "alice"}
    # Control: the same request as signed is stored with its signed metadata.
    status, _, resp = send(server, "PUT", path, h, body)
    assert status == 200, resp
    got = s3.get_object(Bucket=made_bucket, Key="k")
    assert got["Body"].read() == body and got["Metadata"] == {"owner": "bob"}


def test_unsigned_copy_source_does_not_turn_a_put_into_a_copy(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="secret", Body=b"top secret")
    path = f"/{made_bucket}/mine"
    body = b"my own bytes"
    h = signed(server, "PUT", path, body=body)
    for name in ("x-amz-copy-source", "X-Amz-Copy-Source"):
        status, _, resp = send(server, "PUT", path,
                               h + [(name, f"/{made_bucket}/secret"),
                                    ("x-amz-metadata-directive", "COPY")], body)
        unsigned_refused(status, resp, "x-amz-copy-source")
        with pytest.raises(s3.exceptions.ClientError) as e:
            s3.head_object(Bucket=made_bucket, Key="mine")
        assert e.value.response["Error"]["Code"] == "404"


def test_signed_copy_and_metadata_still_work(server, made_bucket):
    """boto3 signs every x-amz-* header it sends: copy with REPLACE metadata is accepted."""
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="src", Body=b"abc", Metadata={"a": "1"})
    s3.copy_object(Bucket=made_bucket, Key="dst", CopySource={"Bucket": made_bucket, "Key": "src"},
                   Metadata={"b": "2"}, MetadataDirective="REPLACE")
    got = s3.get_object(Bucket=made_bucket, Key="dst")
    assert got["Body"].read() == b"abc" and got["Metadata"] == {"b": "2"}


# ---- x-amz-* added to a presigned URL ----

def presigned(server, method, bucket, key):
    url = server.boto3().generate_presigned_url(method, Params={"Bucket": bucket, "Key": key},
                                                ExpiresIn=600)
    parts = urllib.parse.urlsplit(url)
    return parts.path + "?" + parts.query


def test_presigned_put_with_unsigned_copy_source_is_refused(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="secret", Body=b"top secret")
    t = presigned(server, "put_object", made_bucket, "upload")
    status, _, resp = send(server, "PUT", t, [("Host", host(server)),
                                              ("x-amz-copy-source", f"/{made_bucket}/secret")],
                           b"uploaded")
    unsigned_refused(status, resp, "x-amz-copy-source")
    status, _, resp = send(server, "PUT", t, [("Host", host(server)),
                                              ("x-amz-meta-evil", "1")], b"uploaded")
    unsigned_refused(status, resp, "x-amz-meta-evil")
    with pytest.raises(s3.exceptions.ClientError):
        s3.head_object(Bucket=made_bucket, Key="upload")
    # Control: the URL itself is good.
    status, _, resp = send(server, "PUT", t, [("Host", host(server))], b"uploaded")
    assert status == 200, resp
    got = s3.get_object(Bucket=made_bucket, Key="upload")
    assert got["Body"].read() == b"uploaded" and got["Metadata"] == {}


def test_malformed_presigned_signature_is_signature_does_not_match(server, made_bucket):
    server.boto3().put_object(Bucket=made_bucket, Key="k", Body=b"x")
    t = presigned(server, "get_object", made_bucket, "k")
    base, _, sig = t.rpartition("X-Amz-Signature=")
    assert len(sig) == 64
    status, _, resp = send(server, "GET", t, [("Host", host(server))])
    assert status == 200 and resp == b"x"
    for bad in (sig[:-1], sig + "0", sig.upper(), "zz" + sig[2:], "", "%00" + sig[1:]):
        status, _, resp = send(server, "GET", base + "X-Amz-Signature=" + bad,
                               [("Host", host(server))])
        error_of(status, resp, "SignatureDoesNotMatch")


# ---- x-oc-* added to signed descriptor requests ----

TOY = {"x-oc-version": "1", "x-oc-key-prefix": "hostile/",
       "x-oc-chunk-hashes": "73915cab52f8c56eb1816a3a2513692d,a5e3d64f612716482e00d38104516b19",
       "x-oc-num-layers": "2", "x-oc-chunk-tokens": "4", "x-oc-layer-bytes": "6"}
CHUNKS = b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V"  # chunk-major, kv_l2td (docs/protocol.md walk-through)
LAYER_MAJOR = b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"


def descriptor_get(server, bucket, extra_signed=None, unsigned=()):
    fields = dict(TOY, **(extra_signed or {}))
    h = signed(server, "GET", f"/{bucket}", "objectcache=", fields)
    return send(server, "GET", target(f"/{bucket}", "objectcache="), h + list(unsigned))


def put_toy_chunks(server, bucket):
    h = signed(server, "PUT", f"/{bucket}", "objectcache=", dict(TOY, **{"x-oc-layout": "kv_l2td"}),
               CHUNKS)
    status, _, resp = send(server, "PUT", target(f"/{bucket}", "objectcache="), h, CHUNKS)
    assert status == 200, resp


def test_unsigned_delivery_does_not_change_a_descriptor_get(server, made_bucket):
    put_toy_chunks(server, made_bucket)
    status, _, resp = descriptor_get(server, made_bucket)
    assert status == 200 and resp == LAYER_MAJOR
    status, _, resp = descriptor_get(server, made_bucket, unsigned=[("x-oc-delivery",
                                                                     "chunk-major")])
    unsigned_refused(status, resp, "x-oc-delivery")
    # Control: signed, the same header is obeyed.
    status, _, resp = descriptor_get(server, made_bucket, {"x-oc-delivery": "chunk-major"})
    assert status == 200 and resp == CHUNKS


def test_unsigned_target_is_refused_before_any_connection(server, made_bucket):
    put_toy_chunks(server, made_bucket)
    target_headers = [("x-oc-target-connection", "00" * 16), ("x-oc-target-rkey", "00"),
                      ("x-oc-target-address", "4096"), ("X-OC-Target-Length", "24")]
    status, _, resp = descriptor_get(server, made_bucket, unsigned=target_headers)
    unsigned_refused(status, resp, "x-oc-target-connection")
    root = ET.fromstring(resp)
    for name, _ in target_headers:
        assert name.lower() in root.findtext("Message"), resp
    # Control: signed, the same (bogus) connection gets past auth to the descriptor checks.
    status, _, resp = descriptor_get(server, made_bucket, {k.lower(): v for k, v in target_headers})
    assert status != 403, resp


def test_unsigned_layout_does_not_change_a_descriptor_put(server, made_bucket):
    put_toy_chunks(server, made_bucket)
    h = signed(server, "PUT", f"/{made_bucket}", "objectcache=", TOY, CHUNKS)
    status, _, resp = send(server, "PUT", target(f"/{made_bucket}", "objectcache="),
                           h + [("x-oc-layout", "kv_2ltd")], CHUNKS)
    unsigned_refused(status, resp, "x-oc-layout")
    status, _, resp = descriptor_get(server, made_bucket)
    assert status == 200 and resp == LAYER_MAJOR  # still stored as kv_l2td


# ---- anonymous requests ----

def test_anonymous_reads_of_a_public_bucket_keep_working(server):
    s3 = server.boto3()
    s3.create_bucket(Bucket=PUBLIC_BUCKET)
    s3.put_object(Bucket=PUBLIC_BUCKET, Key="open", Body=b"for all")
    path = f"/{PUBLIC_BUCKET}/open"
    status, _, resp = send(server, "GET", path, [("Host", host(server))])
    assert status == 200 and resp == b"for all"
    # Nothing is signed, so the rule does not apply; access control still does.
    status, _, resp = send(server, "GET", path, [("Host", host(server)),
                                                 ("x-amz-request-payer", "requester")])
    assert status == 200 and resp == b"for all"
    status, _, resp = send(server, "PUT", path, [("Host", host(server))], b"overwrite")
    error_of(status, resp, "AccessDenied")
    assert s3.get_object(Bucket=PUBLIC_BUCKET, Key="open")["Body"].read() == b"for all"


def test_anonymous_descriptor_request_may_not_name_a_target(server):
    s3 = server.boto3()
    try:
        s3.create_bucket(Bucket=PUBLIC_BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    put_toy_chunks(server, PUBLIC_BUCKET)
    query = "objectcache="
    anonymous = [("Host", host(server))] + list(TOY.items())
    status, _, resp = send(server, "GET", target(f"/{PUBLIC_BUCKET}", query), anonymous)
    assert status == 200 and resp == LAYER_MAJOR
    target_fields = [("x-oc-target-connection", "00" * 16), ("x-oc-target-rkey", "00"),
                     ("x-oc-target-address", "4096"), ("x-oc-target-length", "24")]
    status, _, resp = send(server, "GET", target(f"/{PUBLIC_BUCKET}", query),
                           anonymous + target_fields)
    error_of(status, resp, "AccessDenied", "x-oc-target-address")


# ---- descriptor bodies ----

def descriptor_body(fields):
    return "".join(f"{k}: {v}\n" for k, v in fields.items()).encode()


def test_descriptor_post_body_must_be_signed(server, made_bucket):
    put_toy_chunks(server, made_bucket)
    body = descriptor_body(TOY)
    path, query = f"/{made_bucket}", "objectcache="
    h = signed(server, "POST", path, query, {}, body)  # x-amz-content-sha256: the body's hash
    status, _, resp = send(server, "POST", target(path, query), h, body)
    assert status == 200 and resp == LAYER_MAJOR
    # The same body under UNSIGNED-PAYLOAD: whoever relays it could rewrite the descriptor.
    h = signed(server, "POST", path, query, {}, body, payload_hash="UNSIGNED-PAYLOAD")
    tampered = descriptor_body(dict(TOY, **{"x-oc-delivery": "chunk-major"}))
    status, _, resp = send(server, "POST", target(path, query), h, tampered)
    error_of(status, resp, "AccessDenied", "x-amz-content-sha256")
