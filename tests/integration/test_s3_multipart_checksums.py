"""Multipart uploads with checksums in full (issue 17): each part's checksum is stored with the
part (sent as a header or as an aws-chunked trailer) and shown by ListParts; the completion
compares the checksums the client lists with the parts' own (400 InvalidPart), requires them
when the upload was created with an algorithm (400 InvalidRequest), checks an expected
checksum sent with it (400 BadDigest), and stores the checksum of checksums "-N" with the
object, returned by GetObject/HeadObject with checksum mode. Clients: Debian's boto3
(upload_file with ChecksumAlgorithm, the low-level calls) and raw requests for the mismatches.
Over the embedded and the remote store; test_s3_compat_rados.py runs these over RADOS."""
import xml.etree.ElementTree as ET

import boto3.s3.transfer
import pytest

from rawhttp import assert_not_stored, aws_chunked, error_code, signed
from test_s3_checksums import DIGESTS, b64, body, checksum, head, stored_checksums

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def composite(algorithm, parts):
    """S3's checksum of checksums: the algorithm over the parts' binary digests, then -N."""
    return b64(DIGESTS[algorithm](b"".join(DIGESTS[algorithm](p) for p in parts))) + \
        f"-{len(parts)}"


def complete_xml(parts):
    """A CompleteMultipartUpload body; each part is (number, etag, {element: value})."""
    out = "<CompleteMultipartUpload>"
    for number, etag, extra in parts:
        out += f"<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag>"
        out += "".join(f"<{k}>{v}</{k}>" for k, v in extra.items())
        out += "</Part>"
    return (out + "</CompleteMultipartUpload>").encode()


def start_upload(server, bucket, key, parts_data, algorithm="CRC32"):
    s3 = server.boto3()
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key,
                                     ChecksumAlgorithm=algorithm)["UploadId"]
    etags = []
    for n, data in enumerate(parts_data, start=1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=data,
                           ChecksumAlgorithm=algorithm)
        etags.append(r["ETag"])
    return uid, etags


@pytest.mark.parametrize("algorithm", ["CRC32", "SHA256"])
def test_upload_file_stores_the_checksum_of_checksums(server, made_bucket, tmp_path, algorithm):
    """boto3's upload_file with ChecksumAlgorithm (a multipart upload whose completion lists
    every part's checksum): HeadObject and GetObject with checksum mode return the composite
    the completion answered, typed COMPOSITE; a ranged GET does not carry it."""
    data = body(11, 12 * MiB + 12345)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    config = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * MiB,
                                              multipart_chunksize=5 * MiB)
    s3 = server.boto3()
    s3.upload_file(str(path), made_bucket, "big", ExtraArgs={"ChecksumAlgorithm": algorithm},
                   Config=config)
    alg = algorithm.lower()
    parts = [data[i:i + 5 * MiB] for i in range(0, len(data), 5 * MiB)]
    want = composite(alg, parts)
    headers = head(server, made_bucket, "big")
    assert stored_checksums(headers) == {f"x-amz-checksum-{alg}": want,
                                         "x-amz-checksum-type": "COMPOSITE"}
    got = s3.get_object(Bucket=made_bucket, Key="big", ChecksumMode="ENABLED")
    assert got["ResponseMetadata"]["HTTPHeaders"][f"x-amz-checksum-{alg}"] == want
    assert got["Body"].read() == data
    ranged = s3.get_object(Bucket=made_bucket, Key="big", Range="bytes=0-99",
                           ChecksumMode="ENABLED")
    assert not stored_checksums(ranged["ResponseMetadata"]["HTTPHeaders"])
    # Without checksum mode nothing is sent.
    assert not stored_checksums(head(server, made_bucket, "big", mode=False))


def test_list_parts_shows_each_parts_checksum(server, made_bucket):
    """ListParts names the upload's algorithm and each part's checksum, also for a part whose
    checksum came as an aws-chunked trailer (the RPC's PutHeader in remote mode)."""
    s3 = server.boto3()
    data = [body(21, 5 * MiB), body(22, 4000)]
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="lp",
                                     ChecksumAlgorithm="CRC32C")["UploadId"]
    s3.upload_part(Bucket=made_bucket, Key="lp", UploadId=uid, PartNumber=1, Body=data[0],
                   ChecksumAlgorithm="CRC32C")
    header = "x-amz-checksum-crc32c"
    status, headers, reply = signed(
        server, "PUT", f"/{made_bucket}/lp", query=f"partNumber=2&uploadId={uid}",
        headers={"content-encoding": "aws-chunked", "x-amz-trailer": header,
                 "x-amz-decoded-content-length": str(len(data[1]))},
        body=aws_chunked(data[1], 1000, trailer=[(header, checksum("crc32c", data[1]))]),
        payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert status == 200, reply
    listed = s3.list_parts(Bucket=made_bucket, Key="lp", UploadId=uid)
    assert listed["ChecksumAlgorithm"] == "CRC32C"
    assert [(p["PartNumber"], p["ChecksumCRC32C"]) for p in listed["Parts"]] == \
        [(1, checksum("crc32c", data[0])), (2, checksum("crc32c", data[1]))]
    parts = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"],
              "ChecksumCRC32C": p["ChecksumCRC32C"]} for p in listed["Parts"]]
    done = s3.complete_multipart_upload(Bucket=made_bucket, Key="lp", UploadId=uid,
                                        MultipartUpload={"Parts": parts})
    assert done["ChecksumCRC32C"] == composite("crc32c", data)
    assert stored_checksums(head(server, made_bucket, "lp"))[header] == composite("crc32c", data)


def test_completion_compares_listed_checksums(server, made_bucket):
    """Raw completions: a listed checksum that is not the part's own is 400 InvalidPart, a
    part listed without one on an upload created with CRC32 is 400 InvalidRequest, an expected
    object checksum that differs is 400 BadDigest; each leaves the upload open, and the right
    completion then stores the composite."""
    data = [body(31, 5 * MiB), body(32, 5 * MiB), body(33, 777)]
    uid, etags = start_upload(server, made_bucket, "cmp", data)
    good = [{"ChecksumCRC32": checksum("crc32", d)} for d in data]
    swapped = [good[1], good[0], good[2]]
    path, query = f"/{made_bucket}/cmp", f"uploadId={uid}"

    def complete(extras, headers=None):
        parts = [(n, etag, extra) for n, (etag, extra) in enumerate(zip(etags, extras), 1)]
        return signed(server, "POST", path, query=query, headers=headers,
                      body=complete_xml(parts))

    status, _, reply = complete(swapped)
    assert status == 400 and error_code(reply)[0] == "InvalidPart", reply
    status, _, reply = complete([{}, {}, {}])
    assert status == 400 and error_code(reply) == ("InvalidRequest", "x-amz-checksum-crc32"), reply
    assert b"It was missing for part 1" in reply
    want = composite("crc32", data)
    status, _, reply = complete(good, {"x-amz-checksum-crc32": checksum("crc32", data[0])})
    assert status == 400 and error_code(reply) == ("BadDigest", "x-amz-checksum-crc32"), reply
    # Nothing was stored by the refused completions; the upload is still open.
    assert_not_stored(server, made_bucket, "cmp")
    status, _, reply = complete(good, {"x-amz-checksum-crc32": want})
    assert status == 200, reply
    assert ET.fromstring(reply).findtext(f"{NS}ChecksumCRC32") == want
    assert stored_checksums(head(server, made_bucket, "cmp")) == {
        "x-amz-checksum-crc32": want, "x-amz-checksum-type": "COMPOSITE"}
    # A retry of the completion answers as the first did (the same object).
    status, _, reply = complete(good)
    assert status == 200, reply
    assert server.boto3().get_object(Bucket=made_bucket, Key="cmp")["Body"].read() == \
        b"".join(data)


def test_completion_without_checksums_stores_none(server, made_bucket):
    """An upload created without an algorithm whose parts list no checksums completes as
    before: the object carries no checksum."""
    s3 = server.boto3()
    data = [body(41, 5 * MiB), body(42, 10)]
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="plain")["UploadId"]
    parts = []
    for n, d in enumerate(data, 1):
        r = s3.upload_part(Bucket=made_bucket, Key="plain", UploadId=uid, PartNumber=n, Body=d)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    listed = s3.list_parts(Bucket=made_bucket, Key="plain", UploadId=uid)
    assert "ChecksumAlgorithm" not in listed
    assert all("ChecksumCRC32" not in p for p in listed["Parts"])
    s3.complete_multipart_upload(Bucket=made_bucket, Key="plain", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    assert not stored_checksums(head(server, made_bucket, "plain"))
