"""S3 additional checksums (issue 17): x-amz-checksum-crc32 / crc32c / crc64nvme / sha1 / sha256
on PutObject and UploadPart, as a header or as an aws-chunked trailer, verified on upload (400
BadDigest, nothing stored, on a mismatch), stored with the object and returned by GetObject and
HeadObject with x-amz-checksum-mode: ENABLED; multipart uploads with ChecksumAlgorithm, whose
completion answers the checksum of checksums "-N". Clients: boto3 (Debian's, and the newer one
of the image's own Python, which sends CRC32 on every upload by default), and raw requests for
the exact header and trailer shapes. Over the embedded and the remote store."""
import base64
import hashlib
import os
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET
import zlib

import pytest
from botocore.exceptions import ClientError

from client_replay import boto3_get_object, boto3_put_object, boto3_upload_file
from rawhttp import assert_not_stored, aws_chunked, error_code, signed

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def _table(poly):
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _table(0x82F63B78)
_CRC64NVME = _table(0x9A6C9329AC4BC9B5)


def _reflected(table, width, data):
    mask = (1 << width) - 1
    crc = mask
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return (crc ^ mask).to_bytes(width // 8, "big")


# The digests, computed here independently of the server's code (zlib, hashlib, bitwise tables).
DIGESTS = {
    "crc32": lambda d: zlib.crc32(d).to_bytes(4, "big"),
    "crc32c": lambda d: _reflected(_CRC32C, 32, d),
    "crc64nvme": lambda d: _reflected(_CRC64NVME, 64, d),
    "sha1": lambda d: hashlib.sha1(d).digest(),
    "sha256": lambda d: hashlib.sha256(d).digest(),
}


def b64(raw):
    return base64.b64encode(raw).decode()


def checksum(algorithm, data):
    return b64(DIGESTS[algorithm](data))


def composite_crc32(parts):
    """S3's CRC32 checksum of checksums of a multipart object: the CRC32 of the parts' CRC32s
    (big-endian), base64, then -N."""
    return checksum("crc32", b"".join(DIGESTS["crc32"](p) for p in parts)) + f"-{len(parts)}"


def body(seed, size):
    return bytes((seed * 13 + i * 7) % 256 for i in range(size))


def head(server, bucket, key, mode=True, **kw):
    extra = {"ChecksumMode": "ENABLED"} if mode else {}
    r = server.boto3().head_object(Bucket=bucket, Key=key, **extra, **kw)
    return r["ResponseMetadata"]["HTTPHeaders"]


def stored_checksums(headers):
    return {k: v for k, v in headers.items() if k.startswith("x-amz-checksum-")}


@pytest.mark.parametrize("algorithm", sorted(DIGESTS))
def test_checksum_header_is_verified_stored_and_returned(server, made_bucket, algorithm):
    data = body(1, 70000)
    value = checksum(algorithm, data)
    header = f"x-amz-checksum-{algorithm}"
    status, headers, reply = signed(server, "PUT", f"/{made_bucket}/obj", headers={header: value},
                                    body=data)
    assert status == 200, reply
    assert headers[header] == value
    # Returned only when asked for, and only for the whole object.
    assert stored_checksums(head(server, made_bucket, "obj")) == {
        header: value, "x-amz-checksum-type": "FULL_OBJECT"}
    assert stored_checksums(head(server, made_bucket, "obj", mode=False)) == {}
    status, headers, got = signed(server, "GET", f"/{made_bucket}/obj",
                                  headers={"x-amz-checksum-mode": "ENABLED"})
    assert status == 200 and got == data and headers[header] == value
    status, headers, got = signed(server, "GET", f"/{made_bucket}/obj",
                                  headers={"x-amz-checksum-mode": "ENABLED", "range": "bytes=0-9"})
    assert status == 206 and got == data[:10] and header not in headers


@pytest.mark.parametrize("algorithm", sorted(DIGESTS))
def test_checksum_mismatch_is_bad_digest_and_stores_nothing(server, made_bucket, algorithm):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="kept", Body=b"first version")
    data = body(2, 5000)
    header = f"x-amz-checksum-{algorithm}"
    wrong = checksum(algorithm, data + b"x")
    for key in ("kept", "new"):
        status, _, reply = signed(server, "PUT", f"/{made_bucket}/{key}", headers={header: wrong},
                                  body=data)
        assert status == 400, reply
        assert error_code(reply) == ("BadDigest", header)
    assert s3.get_object(Bucket=made_bucket, Key="kept")["Body"].read() == b"first version"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=made_bucket, Key="new")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_malformed_checksum_headers_are_invalid_request(server, made_bucket):
    data = b"some bytes"
    cases = [
        ({"x-amz-checksum-crc32": checksum("crc32", data),
          "x-amz-checksum-sha1": checksum("sha1", data)}, None),
        ({"x-amz-checksum-crc32": checksum("sha1", data)}, "x-amz-checksum-crc32"),  # 20 bytes
        ({"x-amz-checksum-crc64nvme": "not base64!!"}, "x-amz-checksum-crc64nvme"),
        ({"x-amz-checksum-crc32": checksum("crc32", data),
          "x-amz-sdk-checksum-algorithm": "SHA256"}, "x-amz-sdk-checksum-algorithm"),
        ({"x-amz-checksum-crc32": checksum("crc32", data),
          "x-amz-sdk-checksum-algorithm": "MD5"}, "x-amz-sdk-checksum-algorithm"),
    ]
    for headers, argument in cases:
        status, _, reply = signed(server, "PUT", f"/{made_bucket}/bad", headers=headers, body=data)
        assert status == 400, (headers, reply)
        code, name = error_code(reply)
        assert code == "InvalidRequest", reply
        if argument:
            assert name == argument, reply
    assert_not_stored(server, made_bucket, "bad")


@pytest.mark.parametrize("algorithm", ["crc32", "crc32c", "crc64nvme", "sha256"])
def test_trailer_checksum_is_verified_and_stored(server, made_bucket, algorithm):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER (what boto3 sends over HTTPS and NIXL's OBJ backend
    by default): the trailer is checked over the decoded bytes and becomes the object's
    checksum; in remote mode it crosses the storage RPC after the body (PutHeader)."""
    data = body(3, 200000)
    header = f"x-amz-checksum-{algorithm}"
    for key, value, expect in (("good", checksum(algorithm, data), 200),
                               ("bad", checksum(algorithm, data[1:]), 400)):
        chunked = aws_chunked(data, 65536, trailer=[(header, value)])
        status, headers, reply = signed(
            server, "PUT", f"/{made_bucket}/{key}",
            headers={"content-encoding": "aws-chunked", "x-amz-trailer": header,
                     "x-amz-decoded-content-length": str(len(data)),
                     "x-amz-sdk-checksum-algorithm": algorithm.upper()},
            body=chunked, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        assert status == expect, reply
        if expect == 200:
            assert headers[header] == value
        else:
            assert error_code(reply) == ("BadDigest", header)
    s3 = server.boto3()
    assert stored_checksums(head(server, made_bucket, "good"))[header] == checksum(algorithm, data)
    got = s3.get_object(Bucket=made_bucket, Key="good")
    assert got["Body"].read() == data
    assert "ContentEncoding" not in got  # aws-chunked is not part of the object
    assert_not_stored(server, made_bucket, "bad")


@pytest.mark.parametrize("algorithm", ["CRC32", "SHA256", "SHA1"])
def test_boto3_checksum_algorithm_round_trips(server, made_bucket, algorithm):
    """Debian's boto3 with ChecksumAlgorithm: it computes the checksum, sends it as a header
    (plain http), and with ChecksumMode=ENABLED validates the body against the one returned."""
    s3 = server.boto3()
    data = body(4, 300000)
    r = s3.put_object(Bucket=made_bucket, Key="o", Body=data, ChecksumAlgorithm=algorithm)
    expected = checksum(algorithm.lower(), data)
    assert r[f"Checksum{algorithm}"] == expected
    got = s3.get_object(Bucket=made_bucket, Key="o", ChecksumMode="ENABLED")
    assert got[f"Checksum{algorithm}"] == expected
    assert got["Body"].read() == data


def test_multipart_with_checksum_algorithm(server, made_bucket):
    """Parts carry checksums (verified: a wrong one is BadDigest), and the completion answers
    the checksum of the parts' checksums with "-N"."""
    s3 = server.boto3()
    parts_data = [body(5, 5 * MiB), body(6, 5 * MiB), body(7, 1000)]
    up = s3.create_multipart_upload(Bucket=made_bucket, Key="mp", ChecksumAlgorithm="CRC32")
    assert up["ChecksumAlgorithm"] == "CRC32"
    uid = up["UploadId"]
    parts = []
    for n, data in enumerate(parts_data, start=1):
        r = s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=n, Body=data,
                           ChecksumAlgorithm="CRC32")
        assert r["ChecksumCRC32"] == checksum("crc32", data)
        parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=2,
                       Body=parts_data[1], ChecksumCRC32=checksum("crc32", parts_data[0]))
    assert e.value.response["Error"]["Code"] == "BadDigest"
    done = s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid,
                                        MultipartUpload={"Parts": parts})
    composite = b64(zlib.crc32(b"".join(DIGESTS["crc32"](d) for d in parts_data))
                    .to_bytes(4, "big")) + "-3"
    assert done["ChecksumCRC32"] == composite
    # Part 2, untouched by the refused retry, is in the object.
    got = s3.get_object(Bucket=made_bucket, Key="mp")["Body"].read()
    assert got == b"".join(parts_data)


MODERN_BOTO3_SCRIPT = textwrap.dedent("""
    import sys, zlib, base64
    import boto3, botocore
    from botocore.config import Config
    endpoint, ak, sk, bucket = sys.argv[1:5]
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                      aws_secret_access_key=sk, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    data = bytes(i % 251 for i in range(100000))
    # Defaults: request_checksum_calculation and response_checksum_validation when_supported.
    put = s3.put_object(Bucket=bucket, Key="modern", Body=data)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    assert put["ChecksumCRC32"] == crc, put
    got = s3.get_object(Bucket=bucket, Key="modern")  # validated against the stored CRC32
    assert got["ChecksumCRC32"] == crc, got
    assert got["Body"].read() == data
    big = bytes(i % 253 for i in range(12 << 20))
    with open(sys.argv[5], "wb") as f:
        f.write(big)
    s3.upload_file(sys.argv[5], bucket, "modern-big")  # multipart, parts with CRC32
    assert s3.get_object(Bucket=bucket, Key="modern-big")["Body"].read() == big
    print("ok", botocore.__version__)
""")


def modern_python():
    """The image's own python3 when its boto3 sends checksums by default (botocore >= 1.36)."""
    exe = shutil.which("python3")
    if exe is None or os.path.realpath(exe) == os.path.realpath("/usr/bin/python3"):
        return None
    r = subprocess.run([exe, "-c", "import botocore; print(botocore.__version__)"],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        return None
    major, minor = (int(x) for x in r.stdout.decode().split(".")[:2])
    return exe if (major, minor) >= (1, 36) else None


MODERN_PYTHON = modern_python()


@pytest.mark.skipif(MODERN_PYTHON is None, reason="no botocore >= 1.36 on this machine")
def test_modern_boto3_default_checksums(server, made_bucket, tmp_path):
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    env["BOTO_DISABLE_CRT"] = "true"
    r = subprocess.run([MODERN_PYTHON, "-c", MODERN_BOTO3_SCRIPT, server.endpoint,
                        server.access_key, server.secret_key, made_bucket,
                        str(tmp_path / "big.bin")], capture_output=True, timeout=300, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()


def test_modern_boto3_default_checksum_request_shapes(server, made_bucket):
    """What test_modern_boto3_default_checksums has boto3 (botocore >= 1.36) send, replayed as
    boto3 1.43.11 sends it over HTTP (client_replay), so it runs without that boto3:
    put_object with CRC32 by default (x-amz-checksum-crc32 and x-amz-sdk-checksum-algorithm
    over a signed payload, Expect: 100-continue), get_object asking for the checksum
    (x-amz-checksum-mode: ENABLED, which boto3 checks the body against), and upload_file of
    12 MiB (multipart with x-amz-checksum-algorithm CRC32, 8 MiB parts with their CRC32 sent
    concurrently, the completion listing each part's CRC32)."""
    data = bytes(i % 251 for i in range(100000))
    crc = checksum("crc32", data)
    interim = []
    status, headers, reply = boto3_put_object(server, made_bucket, "modern", data,
                                              interim=interim)
    assert (status, interim) == (200, [100]), reply
    assert headers["x-amz-checksum-crc32"] == crc  # boto3 reads ChecksumCRC32 from here
    status, headers, got = boto3_get_object(server, made_bucket, "modern")
    assert status == 200 and got == data
    assert headers["x-amz-checksum-crc32"] == crc  # what boto3 validates the body against
    big = bytes(i % 253 for i in range(12 << 20))
    status, _, reply = boto3_upload_file(server, made_bucket, "modern-big", big)
    assert status == 200, reply
    parts = [big[:8 * MiB], big[8 * MiB:]]
    want = composite_crc32(parts)
    assert ET.fromstring(reply).findtext(f"{NS}ChecksumCRC32") == want, reply
    status, headers, got = boto3_get_object(server, made_bucket, "modern-big")
    assert status == 200 and got == big
    # A checksum of checksums ("-2") is returned as is; boto3 does not validate those.
    assert headers["x-amz-checksum-crc32"] == want
