"""Signed streaming uploads with a trailer (issue 17): x-amz-content-sha256:
STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, verified as S3 does: every chunk signature in the
chain, the x-amz-checksum-* trailer against the bytes (400 BadDigest), and the trailer's own
x-amz-trailer-signature (403 SignatureDoesNotMatch when it differs or is missing). No Python
SDK here sends this mode (botocore sends the unsigned trailer), so the requests come from a
signer written from the SigV4 streaming spec (sigv4.signed_chunks). PutObject and UploadPart,
over the embedded and the remote store."""
import pytest

from rawhttp import assert_not_stored, error_code, signed_streaming
from test_s3_checksums import body, checksum, head, stored_checksums

MiB = 1 << 20


@pytest.mark.parametrize("algorithm", ["crc32", "crc32c", "sha256"])
def test_signed_trailer_upload_is_verified_and_stored(server, made_bucket, algorithm):
    data = body(71, 150000)
    header = f"x-amz-checksum-{algorithm}"
    value = checksum(algorithm, data)
    status, headers, reply = signed_streaming(server, "PUT", f"/{made_bucket}/obj", data, 65536,
                                              trailer=(header, value))
    assert status == 200, reply
    assert headers[header] == value
    assert stored_checksums(head(server, made_bucket, "obj"))[header] == value
    got = server.boto3().get_object(Bucket=made_bucket, Key="obj")
    assert got["Body"].read() == data
    assert "ContentEncoding" not in got


@pytest.mark.parametrize("tamper, status, code, field", [
    ("trailer-signature", 403, "SignatureDoesNotMatch", "x-amz-trailer-signature"),
    ("no-trailer-signature", 403, "SignatureDoesNotMatch", "x-amz-trailer-signature"),
    ("chunk", 403, "SignatureDoesNotMatch", "chunk-signature"),
    ("checksum", 400, "BadDigest", "x-amz-checksum-crc32"),
])
def test_signed_trailer_refusals_store_nothing(server, made_bucket, tamper, status, code, field):
    data = body(72, 70000)
    value = checksum("crc32", data[1:] if tamper == "checksum" else data)
    got_status, _, reply = signed_streaming(
        server, "PUT", f"/{made_bucket}/bad", data, 8192, trailer=("x-amz-checksum-crc32", value),
        tamper=None if tamper == "checksum" else tamper)
    assert got_status == status, reply
    assert error_code(reply)[0] == code, reply
    assert error_code(reply)[1] in (field, None), reply
    assert_not_stored(server, made_bucket, "bad")


def test_signed_streaming_without_trailer_still_works(server, made_bucket):
    data = body(73, 100000)
    status, _, reply = signed_streaming(server, "PUT", f"/{made_bucket}/plain", data, 30000)
    assert status == 200, reply
    assert server.boto3().get_object(Bucket=made_bucket, Key="plain")["Body"].read() == data


def test_signed_trailer_on_upload_part_keeps_the_part_checksum(server, made_bucket):
    """A part sent with a signed trailer: the checksum is stored with the part, listed by
    ListParts and compared at completion."""
    s3 = server.boto3()
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="mp",
                                     ChecksumAlgorithm="CRC32C")["UploadId"]
    data = body(74, 5 * MiB + 10)
    value = checksum("crc32c", data)
    status, headers, reply = signed_streaming(
        server, "PUT", f"/{made_bucket}/mp", data, 1 << 20, query=f"partNumber=1&uploadId={uid}",
        trailer=("x-amz-checksum-crc32c", value))
    assert status == 200, reply
    parts = s3.list_parts(Bucket=made_bucket, Key="mp", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ChecksumCRC32C"]) for p in parts] == [(1, value)]
    done = s3.complete_multipart_upload(
        Bucket=made_bucket, Key="mp", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": headers["etag"],
                                    "ChecksumCRC32C": value}]})
    assert done["ChecksumCRC32C"].endswith("-1")
    assert s3.get_object(Bucket=made_bucket, Key="mp")["Body"].read() == data
