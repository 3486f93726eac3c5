"""KV-cache clients that speak plain S3 (issue 17), their request shapes replayed against a
gateway with virtual-host addressing on (`gateway.virtual_host_domain`), over the embedded and
the remote store:

- LMCache's S3 tier (awscrt): buckets only virtual-host style (`Host: bucket.domain:port`),
  `UNSIGNED-PAYLOAD` over http, reads as ranged GETs of 8 MiB each with `If-Match` (expecting
  206), uploads above 8 MiB as multipart with parallel parts, one HEAD per key to find hits.
- NIXL's OBJ backend (AWS SDK for C++; vLLM's object tier, SGLang HiCache, Dynamo): exact
  `Range` GETs per layer, in parallel, parallel HEADs, and aws-chunked bodies with a CRC32
  trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
- boto3 with virtual-host addressing (its own DNS lookups pointed at 127.0.0.1 here, as a
  wildcard DNS record or /etc/hosts entries would in a deployment)."""
import base64
import contextlib
import socket
import xml.etree.ElementTree as ET
import zlib
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.config import Config

from conftest import modes, running_server
from rawhttp import aws_chunked, signed

DOMAIN = "s3.test"
MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@pytest.fixture(scope="module", params=modes())
def server(request):
    with running_server("oc-it-kv-", request.param,
                        extra_config=f'virtual_host_domain = "{DOMAIN}"\n') as srv:
        yield srv


def vhost(server, bucket):
    return f"{bucket}.{DOMAIN}:{server.port}"


def lmcache(server, bucket, method, key, query="", headers=None, body=b""):
    """One request as LMCache's awscrt client sends it: virtual host, UNSIGNED-PAYLOAD."""
    return signed(server, method, "/" + key, query, headers or {}, body,
                  payload_hash="UNSIGNED-PAYLOAD", host=vhost(server, bucket))


def pattern(seed, size):
    block = bytes((seed * 11 + i) % 253 for i in range(253))
    return (block * (size // 253 + 1))[:size]


def test_lmcache_request_shapes(server, made_bucket):
    # Small chunks: one PUT each.
    small = {f"kv/{i:04x}": pattern(i, 300000 + i) for i in range(4)}
    for key, data in small.items():
        status, headers, reply = lmcache(server, made_bucket, "PUT", key, body=data)
        assert status == 200, reply
    # A chunk above 8 MiB: multipart, parts uploaded in parallel.
    big = pattern(99, 20 * MiB + 12345)
    status, _, reply = lmcache(server, made_bucket, "POST", "kv/big", "uploads")
    assert status == 200, reply
    upload_id = ET.fromstring(reply).findtext(f"{NS}UploadId")
    part_bytes = 8 * MiB
    pieces = [big[i:i + part_bytes] for i in range(0, len(big), part_bytes)]

    def upload(n):
        st, h, r = lmcache(server, made_bucket, "PUT", "kv/big",
                           f"partNumber={n}&uploadId={upload_id}", body=pieces[n - 1])
        assert st == 200, r
        return n, h["etag"]

    with ThreadPoolExecutor(len(pieces)) as pool:
        etags = dict(pool.map(upload, range(1, len(pieces) + 1)))
    complete = "<CompleteMultipartUpload>" + "".join(
        f"<Part><PartNumber>{n}</PartNumber><ETag>{etags[n]}</ETag></Part>"
        for n in sorted(etags)) + "</CompleteMultipartUpload>"
    status, _, reply = lmcache(server, made_bucket, "POST", "kv/big", f"uploadId={upload_id}",
                               body=complete.encode())
    assert status == 200, reply
    # One HEAD per key to find hits: 200 with the size for a hit, 404 for a miss.
    for key, data in small.items():
        status, headers, _ = lmcache(server, made_bucket, "HEAD", key)
        assert status == 200 and int(headers["content-length"]) == len(data)
    status, _, body = lmcache(server, made_bucket, "HEAD", "kv/absent")
    assert status == 404 and body == b""
    # Reads: ranged GETs of 8 MiB, each with If-Match on the ETag the HEAD gave, expecting 206.
    status, headers, _ = lmcache(server, made_bucket, "HEAD", "kv/big")
    assert status == 200 and int(headers["content-length"]) == len(big)
    etag = headers["etag"]
    got = b""
    for offset in range(0, len(big), 8 * MiB):
        last = min(offset + 8 * MiB, len(big)) - 1
        status, h, data = lmcache(server, made_bucket, "GET", "kv/big",
                                  headers={"range": f"bytes={offset}-{last}", "if-match": etag})
        assert status == 206, data[:300]
        assert h["content-range"] == f"bytes {offset}-{last}/{len(big)}"
        got += data
    assert got == big
    # The chunk changed under the reader: If-Match fails rather than mixing versions.
    status, _, _ = lmcache(server, made_bucket, "PUT", "kv/big", body=b"replaced")
    assert status == 200
    status, _, reply = lmcache(server, made_bucket, "GET", "kv/big",
                               headers={"range": "bytes=0-9", "if-match": etag})
    assert status == 412, reply


def test_nixl_obj_request_shapes(server, made_bucket):
    layers, layer_bytes = 8, 96 * 1024
    chunks = {f"nixl/{i}": pattern(40 + i, layers * layer_bytes) for i in range(3)}
    # aws-chunked bodies with a CRC32 trailer, as the AWS SDK for C++ sends by default.
    for key, data in chunks.items():
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
        body = aws_chunked(data, 65536, trailer=[("x-amz-checksum-crc32", crc)])
        status, headers, reply = signed(
            server, "PUT", f"/{made_bucket}/{key}",
            headers={"content-encoding": "aws-chunked", "content-type": "binary/octet-stream",
                     "x-amz-trailer": "x-amz-checksum-crc32",
                     "x-amz-decoded-content-length": str(len(data)),
                     "x-amz-sdk-checksum-algorithm": "CRC32"},
            body=body, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        assert status == 200, reply
        assert headers["x-amz-checksum-crc32"] == crc

    # Parallel HEADs (hits and misses), then exact Range GETs per layer, in parallel.
    def head(key):
        return key, signed(server, "HEAD", f"/{made_bucket}/{key}")[0]

    with ThreadPoolExecutor(8) as pool:
        found = dict(pool.map(head, list(chunks) + ["nixl/absent-1", "nixl/absent-2"]))
    assert found == {**{k: 200 for k in chunks}, "nixl/absent-1": 404, "nixl/absent-2": 404}

    def layer(job):
        key, l = job
        first = l * layer_bytes
        status, headers, data = signed(server, "GET", f"/{made_bucket}/{key}",
                                       headers={"range": f"bytes={first}-{first + layer_bytes - 1}"})
        assert status == 206 and "content-encoding" not in headers
        return key, l, data

    with ThreadPoolExecutor(8) as pool:
        for key, l, data in pool.map(layer, [(k, l) for k in chunks for l in range(layers)]):
            assert data == chunks[key][l * layer_bytes:(l + 1) * layer_bytes], (key, l)


@contextlib.contextmanager
def resolved_to_loopback(domain):
    """Names under `domain` resolve to 127.0.0.1 in this process (a wildcard DNS record)."""
    real = socket.getaddrinfo

    def lookup(host, *args, **kw):
        if isinstance(host, str) and (host == domain or host.endswith("." + domain)):
            host = "127.0.0.1"
        return real(host, *args, **kw)

    socket.getaddrinfo = lookup
    try:
        yield
    finally:
        socket.getaddrinfo = real


def test_boto3_virtual_host_addressing(server, made_bucket):
    with resolved_to_loopback(DOMAIN):
        s3 = boto3.client("s3", endpoint_url=f"http://{DOMAIN}:{server.port}",
                          region_name="us-east-1", aws_access_key_id=server.access_key,
                          aws_secret_access_key=server.secret_key,
                          config=Config(signature_version="s3v4",
                                        s3={"addressing_style": "virtual"},
                                        retries={"max_attempts": 1}))
        s3.put_object(Bucket=made_bucket, Key="v/a b", Body=b"virtual")
        assert s3.get_object(Bucket=made_bucket, Key="v/a b")["Body"].read() == b"virtual"
        assert s3.head_object(Bucket=made_bucket, Key="v/a b")["ContentLength"] == 7
        listed = s3.list_objects_v2(Bucket=made_bucket, Prefix="v/")
        assert [o["Key"] for o in listed["Contents"]] == ["v/a b"]
        s3.delete_object(Bucket=made_bucket, Key="v/a b")
    # Path style keeps working on the same server.
    assert server.boto3().list_objects_v2(Bucket=made_bucket).get("KeyCount") == 0
