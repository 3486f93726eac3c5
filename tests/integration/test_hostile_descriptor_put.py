"""Descriptor PUTs whose bytes are not the ones that were signed (docs/protocol.md, "A
descriptor PUT is all or nothing"), sent raw over a socket to a real server in both modes
(`objectcache serve`, and oc-gateway + oc-storage-server): a replay of an earlier PUT with
another body (wrong x-amz-content-sha256), an aws-chunked body whose 3rd chunk signature is
bad, and a body cut short. Each must store nothing: the chunks written before keep their
bytes, and absent chunks stay absent."""
import hashlib
import hmac
import socket

import pytest

import sigv4
from rawhttp import wait_read_by_server

LAYERS = 2
LAYER_BYTES = 64 << 10
CHUNK = LAYERS * LAYER_BYTES  # 128 KiB per chunk object
N = 8  # 1 MiB bodies: several of the gateway's 256 KiB body reads
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def names(tag):
    return [f"hostile/{tag}/c{j}" for j in range(N)]


def descriptor_headers(keys):
    return {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
            "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
            "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}


def body_of(seed):
    return b"".join(bytes([(seed * 31 + j) & 0xff]) * CHUNK for j in range(N))


def request_bytes(method, target, headers, body=b""):
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def exchange(server, data, close_early=False):
    """Sends `data`, then (close_early) shuts the write side; returns everything answered until
    the server closes. A server that neither answers nor closes within 60 s fails the test
    (socket.timeout is not caught)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(data)
        if close_early:
            # The server takes in what was sent as body (not with the end of the stream), so
            # it has received whole chunks when the client goes away: waited for as state.
            wait_read_by_server(s)
            s.shutdown(socket.SHUT_WR)
        out = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out.append(b)
        except ConnectionResetError:
            pass
        return b"".join(out)


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def signed_put(server, bucket, keys, body, payload_hash=None, extra=None):
    headers = {**descriptor_headers(keys), **(extra or {})}
    h = sigv4.sign("PUT", f"127.0.0.1:{server.port}", f"/{bucket}", "objectcache=", headers,
                   body, server.access_key, server.secret_key, payload_hash=payload_hash)
    return h


def put(server, bucket, keys, body):
    h = signed_put(server, bucket, keys, body)
    h.update({"Content-Length": str(len(body)), "Connection": "close"})
    answer = exchange(server, request_bytes("PUT", f"/{bucket}?objectcache=", h, body))
    assert status_of(answer) == 200, answer[:2000]


def stored(server, bucket, keys):
    """Each key's bytes, or None when absent."""
    s3 = server.boto3()
    out = []
    for k in keys:
        try:
            out.append(s3.get_object(Bucket=bucket, Key=k)["Body"].read())
        except s3.exceptions.NoSuchKey:
            out.append(None)
    return out


def chunks_of(body):
    return [body[j * CHUNK:(j + 1) * CHUNK] for j in range(N)]


def test_replay_with_another_body_keeps_the_signed_chunks(server, made_bucket):
    keys = names("replay")
    good = body_of(1)
    put(server, made_bucket, keys, good)
    # The same signed request (its x-amz-content-sha256 is the good body's) with other bytes.
    evil = body_of(2)
    h = signed_put(server, made_bucket, keys, good)
    h.update({"Content-Length": str(len(evil)), "Connection": "close"})
    answer = exchange(server, request_bytes("PUT", f"/{made_bucket}?objectcache=", h, evil))
    assert status_of(answer) == 400, answer[:2000]
    assert b"<Code>XAmzContentSHA256Mismatch</Code>" in answer
    assert stored(server, made_bucket, keys) == chunks_of(good)
    # Over keys that did not exist: nothing appears.
    fresh = names("replay-fresh")
    h = signed_put(server, made_bucket, fresh, good)
    h.update({"Content-Length": str(len(evil)), "Connection": "close"})
    answer = exchange(server, request_bytes("PUT", f"/{made_bucket}?objectcache=", h, evil))
    assert status_of(answer) == 400, answer[:2000]
    assert stored(server, made_bucket, fresh) == [None] * N


def signing_key(secret, date, region="us-east-1"):
    key = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def aws_chunked(server, headers, body, piece, bad_chunk):
    """The aws-chunked encoding of `body` in pieces of `piece` bytes, signed from the seed
    signature in `headers`; chunk number `bad_chunk` (1-based) gets a wrong signature."""
    amz_date = headers["x-amz-date"]
    scope = f"{amz_date[:8]}/us-east-1/s3/aws4_request"
    key = signing_key(server.secret_key, amz_date[:8])
    previous = headers["Authorization"].rsplit("Signature=", 1)[1]
    out = b""
    pieces = [body[i:i + piece] for i in range(0, len(body), piece)] + [b""]
    for number, data in enumerate(pieces, start=1):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous, EMPTY_SHA256,
                         hashlib.sha256(data).hexdigest()])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        previous = sig
        if number == bad_chunk:
            sig = ("0" if sig[0] != "0" else "1") + sig[1:]
        out += f"{len(data):x};chunk-signature={sig}\r\n".encode() + data + b"\r\n"
    return out


def chunked_put(server, bucket, keys, body, bad_chunk):
    extra = {"content-encoding": "aws-chunked",
             "x-amz-decoded-content-length": str(len(body))}
    h = signed_put(server, bucket, keys, b"", payload_hash=STREAMING, extra=extra)
    encoded = aws_chunked(server, h, body, 64 << 10, bad_chunk)
    h.update({"Content-Length": str(len(encoded)), "Connection": "close"})
    return exchange(server, request_bytes("PUT", f"/{bucket}?objectcache=", h, encoded))


def test_aws_chunked_with_a_bad_third_chunk_signature_stores_nothing(server, made_bucket):
    keys = names("chunked")
    good = body_of(3)
    # The signer is right: a well-signed streaming PUT is stored.
    answer = chunked_put(server, made_bucket, keys, good, bad_chunk=None)
    assert status_of(answer) == 200, answer[:2000]
    assert stored(server, made_bucket, keys) == chunks_of(good)
    # aws-chunked chunks 1 and 2 (128 KiB: all of descriptor chunk 0) verify; chunk 3 does not.
    answer = chunked_put(server, made_bucket, keys, body_of(4), bad_chunk=3)
    assert status_of(answer) == 403, answer[:2000]
    assert b"<Code>SignatureDoesNotMatch</Code>" in answer
    assert stored(server, made_bucket, keys) == chunks_of(good)
    fresh = names("chunked-fresh")
    answer = chunked_put(server, made_bucket, fresh, body_of(4), bad_chunk=3)
    assert status_of(answer) == 403, answer[:2000]
    assert stored(server, made_bucket, fresh) == [None] * N


def test_body_shorter_than_content_length_stores_nothing(server, made_bucket):
    keys = names("short")
    good = body_of(5)
    put(server, made_bucket, keys, good)
    evil = body_of(6)
    for tag, h in [("signed", signed_put(server, made_bucket, keys, evil)),
                   ("unsigned", signed_put(server, made_bucket, keys, evil,
                                           payload_hash="UNSIGNED-PAYLOAD"))]:
        h.update({"Content-Length": str(len(evil))})
        # 5.5 chunks, then the client goes away: the server answers (or closes) only after
        # it has given up the request.
        exchange(server, request_bytes("PUT", f"/{made_bucket}?objectcache=", h,
                                       evil[:11 * CHUNK // 2]), close_early=True)
        assert stored(server, made_bucket, keys) == chunks_of(good), tag
    fresh = names("short-fresh")
    h = signed_put(server, made_bucket, fresh, evil, payload_hash="UNSIGNED-PAYLOAD")
    h.update({"Content-Length": str(len(evil))})
    exchange(server, request_bytes("PUT", f"/{made_bucket}?objectcache=", h,
                                   evil[:11 * CHUNK // 2]), close_early=True)
    assert stored(server, made_bucket, fresh) == [None] * N
