"""CopyObject and CompleteMultipartUpload beside PutObject (issue 17): the write conditions
If-None-Match: * and If-Match on the destination, decided atomically by the store (412
PreconditionFailed, 404 NoSuchKey for If-Match on a missing key), and the checksum a copy
carries: the source's with the COPY and the REPLACE metadata directive, a new one computed over
the bytes when x-amz-checksum-algorithm names another algorithm. Clients: Debian's boto3 and raw
requests for the condition headers its CopyObject and CompleteMultipartUpload do not send.
Over the embedded and the remote store; test_s3_compat_rados.py runs these over RADOS."""
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

import pytest
from botocore.exceptions import ClientError

from rawhttp import error_code, signed
from test_s3_checksums import b64, body, checksum, head, stored_checksums
from test_s3_multipart_checksums import complete_xml, composite, start_upload

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def completion(parts):
    xml = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
                  for n, e in parts)
    return f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode()


def read(server, bucket, key):
    return server.boto3().get_object(Bucket=bucket, Key=key)["Body"].read()


def test_complete_multipart_upload_conditions(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"old")
    old_etag = s3.head_object(Bucket=made_bucket, Key="k")["ETag"]
    data = body(51, 5 * MiB + 3)

    def upload(key):
        uid = s3.create_multipart_upload(Bucket=made_bucket, Key=key)["UploadId"]
        etag = s3.upload_part(Bucket=made_bucket, Key=key, UploadId=uid, PartNumber=1,
                              Body=data)["ETag"]
        return uid, completion([(1, etag)])

    def complete(key, uid, xml, headers):
        return signed(server, "POST", f"/{made_bucket}/{key}", query=f"uploadId={uid}",
                      headers=headers, body=xml)

    uid, xml = upload("k")
    for headers, want in (({"if-none-match": "*"}, ("PreconditionFailed", "If-None-Match")),
                          ({"if-match": '"0123456789abcdef0123456789abcdef"'},
                           ("PreconditionFailed", "If-Match"))):
        status, _, reply = complete("k", uid, xml, headers)
        assert status == 412 and error_code(reply) == want, reply
        assert read(server, made_bucket, "k") == b"old"  # refused: the key is unchanged
    status, _, reply = complete("k", uid, xml, {"if-none-match": "etag"})
    assert status == 501 and error_code(reply)[0] == "NotImplemented", reply
    status, _, reply = complete("k", uid, xml, {"if-match": old_etag})
    assert status == 200, reply
    assert read(server, made_bucket, "k") == data

    # If-Match on a key that does not exist is 404 NoSuchKey; If-None-Match: * creates it.
    uid, xml = upload("fresh")
    status, _, reply = complete("fresh", uid, xml, {"if-match": old_etag})
    assert status == 404 and error_code(reply)[0] == "NoSuchKey", reply
    status, _, reply = complete("fresh", uid, xml, {"if-none-match": "*"})
    assert status == 200, reply
    assert read(server, made_bucket, "fresh") == data


def test_copy_object_conditions(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="src", Body=b"source")
    s3.put_object(Bucket=made_bucket, Key="dst", Body=b"dest")
    dst_etag = s3.head_object(Bucket=made_bucket, Key="dst")["ETag"]

    def copy(to, headers, directive=None):
        h = {"x-amz-copy-source": urllib.parse.quote(f"/{made_bucket}/src"), **headers}
        if directive:
            h["x-amz-metadata-directive"] = directive
        return signed(server, "PUT", f"/{made_bucket}/{to}", headers=h)

    for to, directive in (("dst", None), ("dst", "REPLACE"), ("src", "REPLACE")):
        status, _, reply = copy(to, {"if-none-match": "*"}, directive)
        assert status == 412 and error_code(reply) == ("PreconditionFailed", "If-None-Match"), \
            (to, reply)
        status, _, reply = copy(to, {"if-match": '"ffffffffffffffffffffffffffffffff"'},
                                directive)
        assert status == 412 and error_code(reply) == ("PreconditionFailed", "If-Match"), \
            (to, reply)
    assert read(server, made_bucket, "dst") == b"dest"
    status, _, reply = copy("absent", {"if-match": dst_etag})
    assert status == 404 and error_code(reply)[0] == "NoSuchKey", reply
    status, _, reply = copy("dst", {"if-match": dst_etag})
    assert status == 200, reply
    assert read(server, made_bucket, "dst") == b"source"
    status, _, reply = copy("new", {"if-none-match": "*"})
    assert status == 200, reply
    assert read(server, made_bucket, "new") == b"source"
    # The copy-source conditions still apply to the source.
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=made_bucket, Key="x", CopySource=f"{made_bucket}/src",
                       CopySourceIfMatch='"ffffffffffffffffffffffffffffffff"')
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"


def test_copy_object_keeps_or_recomputes_the_checksum(server, made_bucket):
    s3 = server.boto3()
    data = body(61, 300000)
    s3.put_object(Bucket=made_bucket, Key="src", Body=data, ChecksumAlgorithm="SHA256")
    sha = checksum("sha256", data)
    assert stored_checksums(head(server, made_bucket, "src"))["x-amz-checksum-sha256"] == sha

    # COPY and REPLACE both keep the source's checksum (S3 does).
    r = s3.copy_object(Bucket=made_bucket, Key="c1", CopySource=f"{made_bucket}/src")
    assert r["CopyObjectResult"]["ChecksumSHA256"] == sha
    r = s3.copy_object(Bucket=made_bucket, Key="c2", CopySource=f"{made_bucket}/src",
                       MetadataDirective="REPLACE", ContentType="text/plain",
                       Metadata={"a": "b"})
    assert r["CopyObjectResult"]["ChecksumSHA256"] == sha
    for key in ("c1", "c2"):
        assert stored_checksums(head(server, made_bucket, key)) == {
            "x-amz-checksum-sha256": sha, "x-amz-checksum-type": "FULL_OBJECT"}, key
    assert s3.head_object(Bucket=made_bucket, Key="c2")["ContentType"] == "text/plain"

    # Another algorithm: computed over the bytes, the old one dropped; the directives hold.
    r = s3.copy_object(Bucket=made_bucket, Key="c3", CopySource=f"{made_bucket}/src",
                       ChecksumAlgorithm="CRC32", MetadataDirective="REPLACE",
                       ContentType="image/png")
    crc = b64(zlib.crc32(data).to_bytes(4, "big"))
    assert r["CopyObjectResult"]["ChecksumCRC32"] == crc
    assert stored_checksums(head(server, made_bucket, "c3")) == {
        "x-amz-checksum-crc32": crc, "x-amz-checksum-type": "FULL_OBJECT"}
    assert s3.head_object(Bucket=made_bucket, Key="c3")["ContentType"] == "image/png"
    got = s3.get_object(Bucket=made_bucket, Key="c3", ChecksumMode="ENABLED")
    assert got["Body"].read() == data
    # Onto itself with a new algorithm (a REPLACE, as S3 requires for a self-copy).
    s3.copy_object(Bucket=made_bucket, Key="src", CopySource=f"{made_bucket}/src",
                   ChecksumAlgorithm="CRC32C", MetadataDirective="REPLACE")
    assert stored_checksums(head(server, made_bucket, "src")) == {
        "x-amz-checksum-crc32c": checksum("crc32c", data), "x-amz-checksum-type": "FULL_OBJECT"}
    assert read(server, made_bucket, "src") == data
    # The same algorithm as stored keeps the value; an unknown one is 400 InvalidRequest.
    r = s3.copy_object(Bucket=made_bucket, Key="c4", CopySource=f"{made_bucket}/c1",
                       ChecksumAlgorithm="SHA256")
    assert r["CopyObjectResult"]["ChecksumSHA256"] == sha
    status, _, reply = signed(server, "PUT", f"/{made_bucket}/c5",
                              headers={"x-amz-copy-source": f"/{made_bucket}/c1",
                                       "x-amz-checksum-algorithm": "MD5"})
    assert status == 400 and error_code(reply) == ("InvalidRequest", "x-amz-checksum-algorithm")
    # With conditions: the streamed copy honours them too.
    status, _, reply = signed(server, "PUT", f"/{made_bucket}/c3",
                              headers={"x-amz-copy-source": f"/{made_bucket}/c1",
                                       "x-amz-checksum-algorithm": "CRC32",
                                       "if-none-match": "*"})
    assert status == 412 and error_code(reply) == ("PreconditionFailed", "If-None-Match"), reply
    assert ET.fromstring(reply).tag == "Error"


@pytest.mark.parametrize("algorithm", ["CRC32", "SHA256"])
def test_copy_of_a_multipart_object_keeps_its_composite_checksum(server, made_bucket, algorithm):
    """README, "CopyObject and checksums": a copy of a multipart object keeps the checksum of
    checksums "-N" (and its COMPOSITE type) under COPY and REPLACE and when the copy names the
    same algorithm, in the copy's answer and on HeadObject/GetObject with checksum mode."""
    alg = algorithm.lower()
    parts = [body(71, 5 * MiB), body(72, 5 * MiB), body(73, 12345)]
    uid, etags = start_upload(server, made_bucket, "mp", parts, algorithm)
    want = composite(alg, parts)
    assert want.endswith("-3")
    element = f"Checksum{algorithm}"
    status, _, reply = signed(server, "POST", f"/{made_bucket}/mp", f"uploadId={uid}",
                              body=complete_xml([(n, e, {element: checksum(alg, p)}) for n, e, p
                                                 in zip((1, 2, 3), etags, parts)]))
    assert status == 200, reply
    expected = {f"x-amz-checksum-{alg}": want, "x-amz-checksum-type": "COMPOSITE"}
    assert stored_checksums(head(server, made_bucket, "mp")) == expected

    s3 = server.boto3()
    copies = {
        "copy": {},
        "replace": {"MetadataDirective": "REPLACE", "ContentType": "text/plain"},
        "same-algorithm": {"ChecksumAlgorithm": algorithm},
    }
    for key, extra in copies.items():
        r = s3.copy_object(Bucket=made_bucket, Key=key, CopySource=f"{made_bucket}/mp", **extra)
        assert r["CopyObjectResult"][element] == want, key
        assert stored_checksums(head(server, made_bucket, key)) == expected, key
        got = s3.get_object(Bucket=made_bucket, Key=key, ChecksumMode="ENABLED")
        assert got["ResponseMetadata"]["HTTPHeaders"][f"x-amz-checksum-{alg}"] == want, key
        assert got["Body"].read() == b"".join(parts), key
    # A copy of the copy still carries it.
    r = s3.copy_object(Bucket=made_bucket, Key="copy2", CopySource=f"{made_bucket}/copy")
    assert r["CopyObjectResult"][element] == want
    assert stored_checksums(head(server, made_bucket, "copy2")) == expected
