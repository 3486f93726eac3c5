"""S3 requests found wrong by trying the server as its users would (issue 29), with boto3 and
raw signed requests, over the embedded and the remote store; test_s3_api_rados.py runs the same
tests over RADOS.

- A descriptor PUT (`PUT /bucket?objectcache`, docs/protocol.md) without Content-Length
  (`Transfer-Encoding: chunked`) is 411 MissingContentLength at once, before its body is read,
  and stores nothing; PutObject and UploadPart keep taking chunked bodies.
- GetObjectAttributes: ETag (unquoted), Checksum, ObjectParts (paged by x-amz-max-parts and
  x-amz-part-number-marker), StorageClass, ObjectSize, as S3 answers them.
- ListObjectVersions on our never-versioned buckets: every object its one version, `null`,
  the latest; prefix, delimiter, max-keys, key-marker/version-id-marker pages, encoding-type,
  boto3's paginator.
- `PUT ?acl` with `x-amz-acl: private` (bucket and object) is the 200 no-op it is here; other
  ACLs are 501 and change nothing. `x-amz-acl: private` on PutObject, CopyObject,
  CreateMultipartUpload and CreateBucket is accepted; public-read is refused as S3 refuses it
  with ACLs disabled (400 AccessControlListNotSupported, InvalidBucketAclWithObjectOwnership).
- The new operations refuse anonymous requests, on a public-read bucket too.
"""
import base64
import hashlib
import socket
import xml.etree.ElementTree as ET
import zlib

import pytest
from botocore.exceptions import ClientError

import sigv4
from conftest import modes, running_server
from rawhttp import aws_chunked, error_code, send, signed

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MiB = 1 << 20
PUBLIC_BUCKET = "pub-s3api"
# The anonymous-access test needs a public-read bucket; the RADOS twin starts its server with
# the same line (before its [storage] table).
EXTRA_CONFIG = f'public_read_buckets = ["{PUBLIC_BUCKET}"]\n'


@pytest.fixture(scope="module", params=modes())
def server(request):
    with running_server("oc-it-s3api-", request.param, extra_config=EXTRA_CONFIG) as srv:
        yield srv


def code_of(excinfo):
    return excinfo.value.response["Error"]["Code"]


def status_of(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


def pattern(seed, size):
    block = bytes((seed * 7 + i) % 251 for i in range(251))
    return (block * (size // 251 + 1))[:size]


def exchange(port, data):
    """Sends `data` on a fresh connection, keeps it open for writing, and returns everything
    the server answers until it closes the connection (the socket timeout is the deadline)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            out += b
        return out


def parse_answer(raw):
    assert raw.startswith(b"HTTP/1.1 "), f"no answer before the server closed: {raw[:200]!r}"
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def http_chunked(payload, piece=1000):
    """`payload` in HTTP/1.1 chunked transfer coding."""
    out = b""
    for i in range(0, len(payload), piece):
        part = payload[i:i + piece]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def head_bytes(method, target, headers):
    """The request head, asking the server to close the connection after its answer."""
    lines = ([f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
             + ["Connection: close"])
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# --- Descriptor PUT without a length ---------------------------------------------------------

LAYERS, LAYER_BYTES = 2, 64 << 10  # as test_hostile_descriptor_put.py


def descriptor_headers(keys):
    return {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
            "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
            "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}


def signed_head(server, method, path, query, headers, body, payload_hash=None):
    return sigv4.sign(method, f"127.0.0.1:{server.port}", path, query, headers, body,
                      server.access_key, server.secret_key, payload_hash=payload_hash)


def test_descriptor_put_without_length_is_411_at_once(server, made_bucket):
    s3 = server.boto3()
    keys = [f"nolen/c{j}" for j in range(2)]
    body = pattern(3, len(keys) * LAYERS * LAYER_BYTES)
    h = signed_head(server, "PUT", f"/{made_bucket}", "objectcache=", descriptor_headers(keys),
                    body)
    h["Transfer-Encoding"] = "chunked"
    target = f"/{made_bucket}?objectcache="
    # The head alone: S3 answers a PUT without Content-Length 411 MissingContentLength (API
    # reference, "Error responses"), so the answer must come without a body byte sent (the
    # old server waited for the body until its read timeout and answered 400).
    status, reply = parse_answer(exchange(server.port, head_bytes("PUT", target, h)))
    assert (status, error_code(reply)[0]) == (411, "MissingContentLength"), reply
    # With the whole chunked body sent too: the same answer.
    status, reply = parse_answer(
        exchange(server.port, head_bytes("PUT", target, h) + http_chunked(body)))
    assert (status, error_code(reply)[0]) == (411, "MissingContentLength"), reply
    # Nothing was stored, and the server serves the same PUT with its length.
    for key in keys:
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=made_bucket, Key=key)
        assert (status_of(e), code_of(e)) == (404, "NoSuchKey")
    h = signed_head(server, "PUT", f"/{made_bucket}", "objectcache=", descriptor_headers(keys),
                    body)
    h["Content-Length"] = str(len(body))
    status, reply = parse_answer(exchange(server.port, head_bytes("PUT", target, h) + body))
    assert status == 200, reply
    stored = b"".join(s3.get_object(Bucket=made_bucket, Key=k)["Body"].read() for k in keys)
    assert stored == body
    # PutObject and UploadPart keep taking a chunked body without a length (plain, and
    # aws-chunked with x-amz-decoded-content-length, the only form S3 itself takes:
    # docs/decisions/chunked-uploads.md).
    data = pattern(4, 5000)
    h = signed_head(server, "PUT", f"/{made_bucket}/plain", "", {}, b"",
                    payload_hash="UNSIGNED-PAYLOAD")
    h["Transfer-Encoding"] = "chunked"
    status, reply = parse_answer(exchange(
        server.port, head_bytes("PUT", f"/{made_bucket}/plain", h) + http_chunked(data)))
    assert status == 200, reply
    assert s3.get_object(Bucket=made_bucket, Key="plain")["Body"].read() == data
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="mp")["UploadId"]
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    framed = aws_chunked(data, 2048, trailer=[("x-amz-checksum-crc32", crc)])
    h = signed_head(server, "PUT", f"/{made_bucket}/mp", f"partNumber=1&uploadId={uid}",
                    {"content-encoding": "aws-chunked",
                     "x-amz-decoded-content-length": str(len(data)),
                     "x-amz-trailer": "x-amz-checksum-crc32"}, b"",
                    payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    h["Transfer-Encoding"] = "chunked"
    status, reply = parse_answer(exchange(
        server.port,
        head_bytes("PUT", f"/{made_bucket}/mp?partNumber=1&uploadId={uid}", h)
        + http_chunked(framed)))
    assert status == 200, reply
    parts = s3.list_parts(Bucket=made_bucket, Key="mp", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, len(data))]
    s3.abort_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid)


# --- GetObjectAttributes ---------------------------------------------------------------------

ALL_ATTRIBUTES = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]


def test_get_object_attributes(server, made_bucket):
    s3 = server.boto3()
    # A single PUT with a checksum: no ObjectParts (S3 gives them only for multipart objects).
    data = pattern(1, 1024)
    sha = base64.b64encode(hashlib.sha256(data).digest()).decode()
    s3.put_object(Bucket=made_bucket, Key="one", Body=data, ChecksumSHA256=sha)
    r = s3.get_object_attributes(Bucket=made_bucket, Key="one", ObjectAttributes=ALL_ATTRIBUTES)
    assert r["ETag"] == hashlib.md5(data).hexdigest()  # unquoted, as S3 answers it here
    assert r["Checksum"]["ChecksumSHA256"] == sha
    assert r["StorageClass"] == "STANDARD" and r["ObjectSize"] == len(data)
    assert "ObjectParts" not in r and "LastModified" in r
    # Only what was asked for.
    r = s3.get_object_attributes(Bucket=made_bucket, Key="one", ObjectAttributes=["ObjectSize"])
    assert r["ObjectSize"] == len(data)
    assert not {"ETag", "Checksum", "StorageClass", "ObjectParts"} & set(r)
    # A multipart upload with CRC32 checksums: the composite checksum without "-N", the parts
    # listed (number and size) and paged.
    sizes = [5 * MiB, 5 * MiB, 1234]
    parts = [pattern(10 + i, n) for i, n in enumerate(sizes)]
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="mp",
                                     ChecksumAlgorithm="CRC32")["UploadId"]
    listed = []
    for n, part in enumerate(parts, 1):
        crc = base64.b64encode(zlib.crc32(part).to_bytes(4, "big")).decode()
        etag = s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=n,
                              Body=part, ChecksumCRC32=crc)["ETag"]
        listed.append({"PartNumber": n, "ETag": etag, "ChecksumCRC32": crc})
    done = s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid,
                                        MultipartUpload={"Parts": listed})
    composite = done["ChecksumCRC32"]
    assert composite.endswith("-3")
    r = s3.get_object_attributes(Bucket=made_bucket, Key="mp", ObjectAttributes=ALL_ATTRIBUTES)
    assert r["ETag"] == done["ETag"].strip('"') and r["ObjectSize"] == sum(sizes)
    assert r["Checksum"]["ChecksumCRC32"] == composite[:-2]
    op = r["ObjectParts"]
    assert op["TotalPartsCount"] == 3 and op["IsTruncated"] is False
    assert op["MaxParts"] == 1000 and op["NextPartNumberMarker"] == 3
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(1, sizes[0]), (2, sizes[1]),
                                                                     (3, sizes[2])]
    r = s3.get_object_attributes(Bucket=made_bucket, Key="mp", ObjectAttributes=["ObjectParts"],
                                 MaxParts=2)
    op = r["ObjectParts"]
    assert op["IsTruncated"] is True and op["NextPartNumberMarker"] == 2
    assert [p["PartNumber"] for p in op["Parts"]] == [1, 2]
    r = s3.get_object_attributes(Bucket=made_bucket, Key="mp", ObjectAttributes=["ObjectParts"],
                                 MaxParts=2, PartNumberMarker=2)
    op = r["ObjectParts"]
    assert op["IsTruncated"] is False and op["PartNumberMarker"] == 2
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(3, sizes[2])]
    # A multipart object without checksums: its part count only (no Part elements, as S3).
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="plain-mp")["UploadId"]
    etags = [s3.upload_part(Bucket=made_bucket, Key="plain-mp", UploadId=uid, PartNumber=n,
                            Body=part)["ETag"] for n, part in enumerate(parts[1:], 1)]
    s3.complete_multipart_upload(
        Bucket=made_bucket, Key="plain-mp", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]})
    r = s3.get_object_attributes(Bucket=made_bucket, Key="plain-mp",
                                 ObjectAttributes=ALL_ATTRIBUTES)
    assert r["ObjectParts"] == {"TotalPartsCount": 2} and "Checksum" not in r
    # Errors: a missing key, a missing or unknown attribute, a bad x-amz-max-parts.
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=made_bucket, Key="nope", ObjectAttributes=["ETag"])
    assert (status_of(e), code_of(e)) == (404, "NoSuchKey")
    for headers, field in (({}, "x-amz-object-attributes"),
                           ({"x-amz-object-attributes": "ETag,Colour"}, "x-amz-object-attributes"),
                           ({"x-amz-object-attributes": "ETag", "x-amz-max-parts": "-1"},
                            "x-amz-max-parts")):
        status, _, body = signed(server, "GET", f"/{made_bucket}/one", "attributes=",
                                 headers=headers)
        assert (status, error_code(body)) == (400, ("InvalidArgument", field)), body


# --- ListObjectVersions ----------------------------------------------------------------------

def test_list_object_versions_of_an_unversioned_bucket(server, made_bucket):
    s3 = server.boto3()
    keys = ["a", "b/1", "b/2", "c d", "e\nf"]
    etags = {k: s3.put_object(Bucket=made_bucket, Key=k, Body=k.encode())["ETag"] for k in keys}
    # boto3 asks for encoding-type=url and decodes: every object, version "null", the latest.
    r = s3.list_object_versions(Bucket=made_bucket)
    assert r["IsTruncated"] is False and "DeleteMarkers" not in r
    assert [(v["Key"], v["VersionId"], v["IsLatest"], v["ETag"], v["Size"])
            for v in r["Versions"]] == [(k, "null", True, etags[k], len(k)) for k in keys]
    # prefix and delimiter.
    r = s3.list_object_versions(Bucket=made_bucket, Prefix="b/")
    assert [v["Key"] for v in r["Versions"]] == ["b/1", "b/2"] and r["Prefix"] == "b/"
    r = s3.list_object_versions(Bucket=made_bucket, Delimiter="/")
    assert [v["Key"] for v in r["Versions"]] == ["a", "c d", "e\nf"]
    assert r["CommonPrefixes"] == [{"Prefix": "b/"}]
    # Pages of max-keys with the markers S3 hands back, and the paginator over them.
    r = s3.list_object_versions(Bucket=made_bucket, MaxKeys=2)
    assert r["IsTruncated"] is True and [v["Key"] for v in r["Versions"]] == ["a", "b/1"]
    assert (r["NextKeyMarker"], r["NextVersionIdMarker"]) == ("b/1", "null")
    r = s3.list_object_versions(Bucket=made_bucket, MaxKeys=2, KeyMarker=r["NextKeyMarker"],
                                VersionIdMarker=r["NextVersionIdMarker"])
    assert [v["Key"] for v in r["Versions"]] == ["b/2", "c d"]
    assert (r["KeyMarker"], r["VersionIdMarker"]) == ("b/1", "null")
    pages = s3.get_paginator("list_object_versions").paginate(
        Bucket=made_bucket, PaginationConfig={"PageSize": 2})
    assert [v["Key"] for page in pages for v in page["Versions"]] == keys
    # encoding-type=url on the wire: keys, prefix and markers percent-encoded.
    status, _, body = signed(server, "GET", f"/{made_bucket}",
                             "encoding-type=url&key-marker=c%20d&versions=")
    root = ET.fromstring(body)
    assert status == 200 and root.tag == NS + "ListVersionsResult", body
    assert root.findtext(NS + "KeyMarker") == "c%20d"
    assert [v.findtext(NS + "Key") for v in root.iter(NS + "Version")] == ["e%0Af"]
    assert root.findtext(NS + "EncodingType") == "url"
    # A version-id marker without a key marker, or naming a version we do not have.
    for query, value in (("version-id-marker=null&versions=", "null"),
                         ("key-marker=a&version-id-marker=3HL4kqtJ&versions=", "3HL4kqtJ")):
        status, _, body = signed(server, "GET", f"/{made_bucket}", query)
        assert (status, error_code(body)) == (400, ("InvalidArgument", "version-id-marker")), body
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=made_bucket + "-none")
    assert (status_of(e), code_of(e)) == (404, "NoSuchBucket")


# --- ACLs ------------------------------------------------------------------------------------

def owner_only(acl):
    grants = acl["Grants"]
    return len(grants) == 1 and grants[0]["Permission"] == "FULL_CONTROL" and \
        grants[0]["Grantee"]["ID"] == acl["Owner"]["ID"]


def test_put_acl_private_is_a_no_op_and_others_are_not_implemented(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"x")
    # The canned ACL every bucket and object here has: 200, nothing changes.
    s3.put_bucket_acl(Bucket=made_bucket, ACL="private")
    s3.put_object_acl(Bucket=made_bucket, Key="k", ACL="private")
    s3.put_object_acl(Bucket=made_bucket, Key="k", ACL="bucket-owner-full-control")
    assert owner_only(s3.get_bucket_acl(Bucket=made_bucket))
    assert owner_only(s3.get_object_acl(Bucket=made_bucket, Key="k"))
    # On what does not exist: 404 as S3.
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=made_bucket, Key="nope", ACL="private")
    assert (status_of(e), code_of(e)) == (404, "NoSuchKey")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=made_bucket + "-none", ACL="private")
    assert (status_of(e), code_of(e)) == (404, "NoSuchBucket")
    # Anything else needs ACLs we do not keep: 501 NotImplemented naming what was asked, and
    # nothing changes (anonymous reads stay refused).
    policy = {"Owner": {"ID": server.access_key},
              "Grants": [{"Grantee": {"Type": "Group",
                                      "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
                          "Permission": "READ"}]}
    for call in (lambda: s3.put_bucket_acl(Bucket=made_bucket, ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=made_bucket, Key="k", ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=made_bucket, Key="k",
                                           AccessControlPolicy=policy),
                 lambda: s3.put_bucket_acl(Bucket=made_bucket, GrantRead="uri=\"http://acs."
                                           "amazonaws.com/groups/global/AllUsers\"")):
        with pytest.raises(ClientError) as e:
            call()
        assert (status_of(e), code_of(e)) == (501, "NotImplemented")
    assert owner_only(s3.get_bucket_acl(Bucket=made_bucket))
    assert owner_only(s3.get_object_acl(Bucket=made_bucket, Key="k"))
    for path in (f"/{made_bucket}/k", f"/{made_bucket}"):
        status, _, body = send(server.port, "GET", path, [])
        assert (status, error_code(body)[0]) == (403, "AccessDenied"), body


def test_acl_headers_on_writes(server, bucket):
    s3 = server.boto3()
    # private (sent by clients that set an ACL on upload) is accepted everywhere.
    s3.create_bucket(Bucket=bucket, ACL="private")
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", ACL="private")
    s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k"},
                   ACL="bucket-owner-full-control")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp", ACL="private")["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid)
    # public-read (or a grant) would be a lie: refused as S3 refuses it on a bucket with ACLs
    # disabled, and nothing is stored.
    for call in (lambda: s3.put_object(Bucket=bucket, Key="pub", Body=b"x", ACL="public-read"),
                 lambda: s3.put_object(Bucket=bucket, Key="pub", Body=b"x",
                                       GrantRead="uri=\"http://acs.amazonaws.com/groups/"
                                                 "global/AllUsers\""),
                 lambda: s3.copy_object(Bucket=bucket, Key="pub", ACL="public-read",
                                        CopySource={"Bucket": bucket, "Key": "k"}),
                 lambda: s3.create_multipart_upload(Bucket=bucket, Key="pub",
                                                    ACL="public-read")):
        with pytest.raises(ClientError) as e:
            call()
        assert (status_of(e), code_of(e)) == (400, "AccessControlListNotSupported")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="pub")
    assert status_of(e) == 404
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=bucket + "-pub", ACL="public-read")
    assert (status_of(e), code_of(e)) == (400, "InvalidBucketAclWithObjectOwnership")
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket + "-pub")
    assert status_of(e) == 404
    for key in ("k", "k2"):
        s3.delete_object(Bucket=bucket, Key=key)
    s3.delete_bucket(Bucket=bucket)


# --- Anonymous requests ----------------------------------------------------------------------

def test_new_operations_refuse_anonymous_requests(server):
    s3 = server.boto3()
    s3.create_bucket(Bucket=PUBLIC_BUCKET)
    s3.put_object(Bucket=PUBLIC_BUCKET, Key="k", Body=b"x")
    try:
        # The public-read bucket's reads work anonymously...
        assert send(server.port, "GET", f"/{PUBLIC_BUCKET}/k", [])[0] == 200
        # ...but not the new operations, which S3 grants apart from the reads.
        for method, target, headers in (
                ("GET", f"/{PUBLIC_BUCKET}?versions", []),
                ("GET", f"/{PUBLIC_BUCKET}/k?attributes",
                 [("x-amz-object-attributes", "ETag")]),
                ("PUT", f"/{PUBLIC_BUCKET}?acl", [("x-amz-acl", "private")]),
                ("PUT", f"/{PUBLIC_BUCKET}/k?acl", [("x-amz-acl", "private")])):
            status, _, body = send(server.port, method, target, headers)
            assert (status, error_code(body)[0]) == (403, "AccessDenied"), (target, body)
    finally:
        s3.delete_object(Bucket=PUBLIC_BUCKET, Key="k")
        s3.delete_bucket(Bucket=PUBLIC_BUCKET)
