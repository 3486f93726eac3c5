"""Request shapes of S3 clients a fresh Debian 12 does not ship, replayed as raw signed
requests so the tests that need them run everywhere (issue 29): aws-cli v1 (what `pip install
awscli` gives; Debian ships v2) and a boto3 whose botocore is >= 1.36 (CRC32 on every upload
by default; Debian's is 1.26). Where those clients are installed the tests also run them.

Each shape was captured from the real client through a recording TCP relay in front of this
gateway, on 2026-12-02: aws-cli 1.45.11 (botocore 1.43.11, Python 3.11.7) and boto3 1.43.11
(botocore 1.43.11), both over plain HTTP with path-style addressing. Methods, paths, query
parameters and their order, the header set, its order and which headers are signed, body
encodings, part sizes and the concurrency of parts are as the clients sent them; what varies
per request (dates, signatures, payload hashes, checksums, upload ids, ETags) is computed here.
Over plain HTTP botocore 1.43 sends checksums as headers over a signed payload (it uses
aws-chunked trailers only over TLS: botocore/httpchecksum.py, resolve_request_checksum_
algorithm), so these shapes carry x-amz-checksum-* headers and no trailer."""
import base64
import xml.etree.ElementTree as ET
import urllib.parse
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor

import rawhttp
import sigv4

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# The User-Agent of each client as captured (its "m/" list of feature ids left out: it varies
# with the operation and carries no meaning for the server).
AWS_CLI_V1_UA = ("aws-cli/1.45.11 md/Botocore#1.43.11 ua/2.1 os/linux#6.18.44-fc-v1045 "
                 "md/arch#x86_64 lang/python#3.11.7 md/pyimpl#CPython cfg/retry-mode#legacy "
                 "botocore/1.43.11")
BOTO3_UA = ("Boto3/1.43.11 md/Botocore#1.43.11 ua/2.1 os/linux#6.18.44-fc-v1045 md/arch#x86_64 "
            "lang/python#3.11.7 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.43.11")

# s3transfer's defaults in both clients: multipart above 8 MiB, in 8 MiB parts, up to 10 at
# once (aws-cli's max_concurrent_requests and boto3's TransferConfig).
MULTIPART_THRESHOLD = 8 * MiB
MULTIPART_CHUNKSIZE = 8 * MiB
MAX_CONCURRENCY = 10

# Headers botocore adds after signing or leaves out of SignedHeaders (its SigV4 signer skips
# expect, user-agent, transfer-encoding and x-amzn-trace-id; urllib3 adds Accept-Encoding
# and Content-Length; amz-sdk-* come from the retry handler after signing).
_UNSIGNED = {"user-agent", "expect", "transfer-encoding", "accept-encoding", "content-length",
             "amz-sdk-invocation-id", "amz-sdk-request"}


def crc32(data):
    """x-amz-checksum-crc32 of `data` (base64 of the big-endian CRC-32), computed by zlib."""
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def botocore_request(server, method, path, query="", headers=(), body=b"",
                     payload_hash=None, interim=None):
    """One request as botocore 1.43 writes it: Host and Accept-Encoding first, then
    `headers` ((name, value) in the client's order, User-Agent and Expect among them), then
    X-Amz-Date, X-Amz-Content-SHA256 and Authorization, then amz-sdk-invocation-id and
    amz-sdk-request, Content-Length last. Signed with every header but the unsigned ones above,
    over the payload's SHA-256 (or `payload_hash`). `path` percent-encoded as sent. Returns
    rawhttp.send's (status, headers, body); `interim` collects interim statuses (100)."""
    host = f"127.0.0.1:{server.port}"
    to_sign = {k.lower(): v for k, v in headers if k.lower() not in _UNSIGNED}
    signed = sigv4.sign(method, host, urllib.parse.unquote(path), query, to_sign, body,
                        server.access_key, server.secret_key, payload_hash=payload_hash)
    wire = [("Host", host), ("Accept-Encoding", "identity")] + list(headers) + [
        ("X-Amz-Date", signed["x-amz-date"]),
        ("X-Amz-Content-SHA256", signed["x-amz-content-sha256"]),
        ("Authorization", signed["Authorization"]),
        ("amz-sdk-invocation-id", str(uuid.uuid4())), ("amz-sdk-request", "attempt=1")]
    if method in ("PUT", "POST", "DELETE") or body:
        wire.append(("Content-Length", str(len(body))))
    target = path + ("?" + query if query else "")
    return rawhttp.send(server.port, method, target, wire, body, interim=interim)


def ok(answer, *statuses):
    status, headers, body = answer
    assert status in (statuses or (200,)), (status, body[:600])
    return headers, body


def key_path(bucket, key):
    return f"/{bucket}/" + urllib.parse.quote(key, safe="/~")


def parts_of(data, size=MULTIPART_CHUNKSIZE):
    return [data[i:i + size] for i in range(0, len(data), size)]


def complete_body(parts):
    """The CompleteMultipartUpload body botocore serialises: the namespace on the root, per
    part the ETag, the number, then the CRC32 the part's answer carried (if any)."""
    out = '<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    for number, etag, checksum in parts:
        out += f"<Part><ETag>{etag}</ETag><PartNumber>{number}</PartNumber>"
        if checksum:
            out += f"<ChecksumCRC32>{checksum}</ChecksumCRC32>"
        out += "</Part>"
    return (out + "</CompleteMultipartUpload>").encode()


def upload_id_of(body):
    return ET.fromstring(body).findtext(f"{NS}UploadId")


# --- aws-cli v1 (1.45.11) ---

def aws_cli_v1_make_bucket(server, bucket):
    """`aws s3 mb s3://bucket` (us-east-1: no CreateBucketConfiguration body)."""
    return ok(botocore_request(server, "PUT", f"/{bucket}",
                               headers=[("User-Agent", AWS_CLI_V1_UA)]))


def aws_cli_v1_put_object(server, bucket, key, data, content_type=None, extra=(), interim=None):
    """PutObject as `aws s3 cp FILE` (content_type guessed from the file name) and `aws s3api
    put-object --body FILE` (extra: e.g. If-None-Match) send it: CRC32 as a header over a
    signed payload, Expect: 100-continue. The raw answer."""
    headers = list(extra)
    if content_type is None:
        headers += [("User-Agent", AWS_CLI_V1_UA), ("Expect", "100-continue"),
                    ("x-amz-checksum-crc32", crc32(data)),
                    ("x-amz-sdk-checksum-algorithm", "CRC32")]
    else:
        headers += [("x-amz-sdk-checksum-algorithm", "CRC32"), ("Content-Type", content_type),
                    ("User-Agent", AWS_CLI_V1_UA), ("Expect", "100-continue"),
                    ("x-amz-checksum-crc32", crc32(data))]
    return botocore_request(server, "PUT", key_path(bucket, key), headers=headers, body=data,
                            interim=interim)


def aws_cli_v1_multipart_upload(server, bucket, key, data, content_type):
    """`aws s3 cp FILE` above 8 MiB: CreateMultipartUpload with x-amz-checksum-algorithm CRC32,
    8 MiB parts with their CRC32 sent concurrently, the completion listing each part's ETag
    and CRC32. Returns the completion's body."""
    path = key_path(bucket, key)
    _, body = ok(botocore_request(server, "POST", path, "uploads", headers=[
        ("x-amz-checksum-algorithm", "CRC32"), ("Content-Type", content_type),
        ("User-Agent", AWS_CLI_V1_UA)]))
    upload_id = upload_id_of(body)
    pieces = parts_of(data)

    def part(n):
        piece = pieces[n - 1]
        headers, _ = ok(botocore_request(
            server, "PUT", path, f"uploadId={upload_id}&partNumber={n}", headers=[
                ("x-amz-sdk-checksum-algorithm", "CRC32"), ("User-Agent", AWS_CLI_V1_UA),
                ("Expect", "100-continue"), ("x-amz-checksum-crc32", crc32(piece))],
            body=piece))
        assert headers.get("x-amz-checksum-crc32") == crc32(piece), headers
        return n, headers["etag"], headers["x-amz-checksum-crc32"]

    with ThreadPoolExecutor(min(MAX_CONCURRENCY, len(pieces))) as pool:
        parts = list(pool.map(part, range(1, len(pieces) + 1)))
    _, body = ok(botocore_request(server, "POST", path, f"uploadId={upload_id}", headers=[
        ("User-Agent", AWS_CLI_V1_UA)], body=complete_body(parts)))
    return body


def aws_cli_v1_copy(server, src_bucket, src_key, dst_bucket, dst_key, content_type):
    """`aws s3 cp s3://a/k s3://b/k` of an object above 8 MiB: HeadObject of the source, then
    CreateMultipartUpload, one UploadPartCopy per 8 MiB range (x-amz-copy-source "bucket/key"
    without a leading slash, x-amz-copy-source-range, x-amz-copy-source-if-match on the
    source's ETag) sent concurrently, and the completion."""
    src = key_path(src_bucket, src_key)
    headers, _ = ok(botocore_request(server, "HEAD", src,
                                     headers=[("User-Agent", AWS_CLI_V1_UA)]))
    size, etag = int(headers["content-length"]), headers["etag"]
    path = key_path(dst_bucket, dst_key)
    _, body = ok(botocore_request(server, "POST", path, "uploads", headers=[
        ("Content-Type", content_type), ("User-Agent", AWS_CLI_V1_UA)]))
    upload_id = upload_id_of(body)
    ranges = [(first, min(first + MULTIPART_CHUNKSIZE, size) - 1)
              for first in range(0, size, MULTIPART_CHUNKSIZE)]
    copy_source = urllib.parse.quote(f"{src_bucket}/{src_key}", safe="/~")

    def part(n):
        first, last = ranges[n - 1]
        _, reply = ok(botocore_request(
            server, "PUT", path, f"uploadId={upload_id}&partNumber={n}", headers=[
                ("x-amz-copy-source", copy_source),
                ("x-amz-copy-source-range", f"bytes={first}-{last}"),
                ("x-amz-copy-source-if-match", etag), ("User-Agent", AWS_CLI_V1_UA)]))
        return n, ET.fromstring(reply).findtext(f"{NS}ETag"), None

    with ThreadPoolExecutor(min(MAX_CONCURRENCY, len(ranges))) as pool:
        parts = list(pool.map(part, range(1, len(ranges) + 1)))
    _, body = ok(botocore_request(server, "POST", path, f"uploadId={upload_id}", headers=[
        ("User-Agent", AWS_CLI_V1_UA)], body=complete_body(parts)))
    return body


def aws_cli_v1_download(server, bucket, key):
    """`aws s3 cp s3://b/k FILE`: HeadObject, then GetObject with x-amz-checksum-mode ENABLED;
    above 8 MiB as ranged GETs of 8 MiB sent concurrently, each with If-Match on the HEAD's
    ETag, the last range open-ended ("bytes=16777216-"). Returns the object's bytes."""
    path = key_path(bucket, key)
    headers, _ = ok(botocore_request(server, "HEAD", path,
                                     headers=[("User-Agent", AWS_CLI_V1_UA)]))
    size, etag = int(headers["content-length"]), headers["etag"]
    if size <= MULTIPART_THRESHOLD:
        _, body = ok(botocore_request(server, "GET", path, headers=[
            ("x-amz-checksum-mode", "ENABLED"), ("User-Agent", AWS_CLI_V1_UA)]))
        return body
    ranges = [(first, min(first + MULTIPART_CHUNKSIZE, size) - 1)
              for first in range(0, size, MULTIPART_CHUNKSIZE)]

    def get(r):
        first, last = r
        spec = f"bytes={first}-" if last == size - 1 else f"bytes={first}-{last}"
        h, body = ok(botocore_request(server, "GET", path, headers=[
            ("Range", spec), ("If-Match", etag), ("x-amz-checksum-mode", "ENABLED"),
            ("User-Agent", AWS_CLI_V1_UA)]), 206)
        assert h["content-range"] == f"bytes {first}-{last}/{size}", h
        return body

    with ThreadPoolExecutor(min(MAX_CONCURRENCY, len(ranges))) as pool:
        return b"".join(pool.map(get, ranges))


# --- boto3 with botocore 1.43.11 (checksums by default) ---

def boto3_put_object(server, bucket, key, data, interim=None):
    """put_object(Body=bytes) with the defaults (request_checksum_calculation
    "when_supported"): CRC32 as a header over a signed payload, Expect: 100-continue."""
    return botocore_request(server, "PUT", key_path(bucket, key), headers=[
        ("User-Agent", BOTO3_UA), ("Expect", "100-continue"),
        ("x-amz-checksum-crc32", crc32(data)), ("x-amz-sdk-checksum-algorithm", "CRC32")],
        body=data, interim=interim)


def boto3_get_object(server, bucket, key):
    """get_object with the defaults (response_checksum_validation "when_supported"): it asks
    for the stored checksum with x-amz-checksum-mode ENABLED and checks the body against it."""
    return botocore_request(server, "GET", key_path(bucket, key), headers=[
        ("x-amz-checksum-mode", "ENABLED"), ("User-Agent", BOTO3_UA)])


def boto3_head_object(server, bucket, key, checksum_mode=True):
    headers = [("x-amz-checksum-mode", "ENABLED")] if checksum_mode else []
    return botocore_request(server, "HEAD", key_path(bucket, key),
                            headers=headers + [("User-Agent", BOTO3_UA)])


def boto3_upload_file(server, bucket, key, data, chunksize=MULTIPART_CHUNKSIZE,
                      full_object_crc32=None):
    """upload_file of `data` above the threshold: CreateMultipartUpload with
    x-amz-checksum-algorithm CRC32 (and, given ExtraArgs={"ChecksumCRC32": value}, with
    x-amz-checksum-type FULL_OBJECT), parts of `chunksize` with their CRC32 sent concurrently,
    the completion listing each part's ETag and CRC32 (and then carrying the full-object value
    and type as headers). The completion's answer, raw."""
    path = key_path(bucket, key)
    create = [("x-amz-checksum-algorithm", "CRC32")]
    if full_object_crc32 is not None:
        create = [("x-amz-checksum-type", "FULL_OBJECT")] + create
    _, body = ok(botocore_request(server, "POST", path, "uploads",
                                  headers=create + [("User-Agent", BOTO3_UA)]))
    upload_id = upload_id_of(body)
    pieces = parts_of(data, chunksize)

    def part(n):
        piece = pieces[n - 1]
        headers, _ = ok(botocore_request(
            server, "PUT", path, f"uploadId={upload_id}&partNumber={n}", headers=[
                ("x-amz-sdk-checksum-algorithm", "CRC32"), ("User-Agent", BOTO3_UA),
                ("Expect", "100-continue"), ("x-amz-checksum-crc32", crc32(piece))],
            body=piece))
        assert headers.get("x-amz-checksum-crc32") == crc32(piece), headers
        return n, headers["etag"], headers["x-amz-checksum-crc32"]

    with ThreadPoolExecutor(min(MAX_CONCURRENCY, len(pieces))) as pool:
        parts = list(pool.map(part, range(1, len(pieces) + 1)))
    complete = [("User-Agent", BOTO3_UA)]
    if full_object_crc32 is not None:
        complete = [("x-amz-checksum-crc32", full_object_crc32),
                    ("x-amz-checksum-type", "FULL_OBJECT")] + complete
    answer = botocore_request(server, "POST", path, f"uploadId={upload_id}", headers=complete,
                              body=complete_body(parts))
    if answer[0] != 200:
        # s3transfer aborts an upload whose completion failed.
        ok(botocore_request(server, "DELETE", path, f"uploadId={upload_id}",
                            headers=[("User-Agent", BOTO3_UA)]), 204)
    return answer
