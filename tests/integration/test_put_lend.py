"""Upload bodies written by the HTTP parser straight into memory the store writer lends
(docs/decisions/put-copies-lent-buffers.md): /stats "upload_body_bytes" counts the body bytes
that went into a writer's lent space ("lent") and those read into the session's own piece
and copied from there ("piece": the first piece of a body sent without 100-continue, which
arrives before the writer opens, and aws-chunked bodies). Each case also checks the bytes
stored, and a refused body stores nothing, lent or not. Both modes: the remote store's writer
lends through the base class's scratch buffer."""
import base64
import hashlib
import json
import os
import urllib.request
import zlib

from rawhttp import aws_chunked, error_code, signed

PIECE = 256 << 10  # gateway.stream_piece_bytes (default)


def body_counts(server):
    with urllib.request.urlopen(server.endpoint + "/stats", timeout=10) as r:
        c = json.loads(r.read())["upload_body_bytes"]
    return c["lent"], c["piece"]


def counted(server, send):
    """Runs send(); returns its answer and the (lent, piece) bytes it added."""
    lent0, piece0 = body_counts(server)
    answer = send()
    lent1, piece1 = body_counts(server)
    return answer, lent1 - lent0, piece1 - piece0


def after_continue(answer):
    """The final answer of an exchange that began with 100 Continue (rawhttp parses the first
    status line only)."""
    status, headers, rest = answer
    if status != 100:
        return answer
    head, _, body = rest.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), headers, body


def get(server, bucket, key):
    return server.boto3().get_object(Bucket=bucket, Key=key)


def test_put_body_goes_into_the_writers_memory(server, made_bucket):
    data = os.urandom(3 * (1 << 20) + 12345)
    # No 100-continue: the first piece arrives before the writer opens and is copied.
    (status, headers, reply), lent, piece = counted(
        server, lambda: signed(server, "PUT", f"/{made_bucket}/plain", body=data))
    assert status == 200, reply
    assert (lent, piece) == (len(data) - PIECE, PIECE)
    got = get(server, made_bucket, "plain")
    assert got["Body"].read() == data
    assert got["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"'

    # 100-continue: the writer is open before the first byte, so every byte is lent.
    (status, _, reply), lent, piece = counted(
        server, lambda: after_continue(signed(server, "PUT", f"/{made_bucket}/continued",
                                              headers={"expect": "100-continue"}, body=data)))
    assert status == 200, reply
    assert (lent, piece) == (len(data), 0)
    assert get(server, made_bucket, "continued")["Body"].read() == data


def test_refused_lent_body_stores_nothing(server, made_bucket):
    data = os.urandom(2 * (1 << 20))
    wrong = hashlib.sha256(data[1:]).hexdigest()
    (status, _, reply), lent, _ = counted(
        server, lambda: signed(server, "PUT", f"/{made_bucket}/refused", body=data,
                               payload_hash=wrong))
    assert status == 400, reply
    assert error_code(reply)[0] == "XAmzContentSHA256Mismatch"
    assert lent == len(data) - PIECE  # the hash was checked over the lent bytes
    s3 = server.boto3()
    try:
        s3.head_object(Bucket=made_bucket, Key="refused")
        assert False, "a refused body was stored"
    except s3.exceptions.ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_aws_chunked_body_keeps_the_piece(server, made_bucket):
    data = os.urandom(600000)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    chunked = aws_chunked(data, 65536, trailer=[("x-amz-checksum-crc32", crc)])
    (status, _, reply), lent, piece = counted(
        server, lambda: signed(
            server, "PUT", f"/{made_bucket}/chunked",
            headers={"content-encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
                     "x-amz-decoded-content-length": str(len(data))},
            body=chunked, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
    assert status == 200, reply
    assert (lent, piece) == (0, len(chunked))  # chunk framing is not payload: decoded first
    assert get(server, made_bucket, "chunked")["Body"].read() == data


def test_descriptor_put_body_goes_into_the_pipes_buffers(server, made_bucket):
    layers, layer_bytes, n = 2, 64 << 10, 8
    keys = [f"lend/c{j}" for j in range(n)]
    chunk = layers * layer_bytes
    body = os.urandom(n * chunk)
    headers = {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
               "x-oc-num-layers": str(layers), "x-oc-chunk-tokens": "16",
               "x-oc-layer-bytes": str(layer_bytes), "x-oc-layout": "kv_l2td"}
    (status, _, reply), lent, piece = counted(
        server, lambda: signed(server, "PUT", f"/{made_bucket}", query="objectcache",
                               headers=headers, body=body))
    assert status == 200, reply
    assert (lent, piece) == (len(body) - PIECE, PIECE)
    for j, key in enumerate(keys):
        assert get(server, made_bucket, key)["Body"].read() == body[j * chunk:(j + 1) * chunk]
