"""boto3 against the gateway: every operation of issue 4 and the error codes it lists."""
import datetime
import hashlib
import base64
import io

import pytest
from botocore.exceptions import ClientError

from rawhttp import assert_not_stored


def code_of(excinfo):
    return excinfo.value.response["Error"]["Code"]


def status_of(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_bucket_lifecycle(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket in names
    s3.head_bucket(Bucket=bucket)
    loc = s3.get_bucket_location(Bucket=bucket)
    assert loc["LocationConstraint"] in (None, "")
    # Its owner re-creating it: 200 in us-east-1, as S3 answers (test_s3_names.py).
    assert s3.create_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code_of(e) == "BucketNotEmpty"
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status_of(e) == 404
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=bucket)
    assert code_of(e) == "NoSuchBucket"


def test_invalid_bucket_name(server):
    s3 = server.boto3()
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket="Bad_Bucket_Name")
    assert code_of(e) == "InvalidBucketName"


def test_put_get_head_delete_with_metadata(server, made_bucket):
    s3 = server.boto3()
    body = bytes(range(256)) * 1000
    put = s3.put_object(Bucket=made_bucket, Key="dir/obj.bin", Body=body,
                        ContentType="application/x-test", Metadata={"color": "blue"},
                        CacheControl="no-cache")
    etag = '"' + hashlib.md5(body).hexdigest() + '"'
    assert put["ETag"] == etag
    got = s3.get_object(Bucket=made_bucket, Key="dir/obj.bin")
    assert got["Body"].read() == body
    assert got["ETag"] == etag
    assert got["ContentType"] == "application/x-test"
    assert got["Metadata"] == {"color": "blue"}
    assert got["CacheControl"] == "no-cache"
    head = s3.head_object(Bucket=made_bucket, Key="dir/obj.bin")
    assert head["ContentLength"] == len(body)
    assert head["ETag"] == etag
    assert head["Metadata"] == {"color": "blue"}
    s3.delete_object(Bucket=made_bucket, Key="dir/obj.bin")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="dir/obj.bin")
    assert code_of(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=made_bucket, Key="dir/obj.bin")
    assert status_of(e) == 404
    # Deleting an absent key succeeds, as in S3.
    s3.delete_object(Bucket=made_bucket, Key="dir/obj.bin")


def test_empty_object_and_overwrite(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="empty", Body=b"")
    assert s3.get_object(Bucket=made_bucket, Key="empty")["Body"].read() == b""
    s3.put_object(Bucket=made_bucket, Key="empty", Body=b"now full")
    assert s3.get_object(Bucket=made_bucket, Key="empty")["Body"].read() == b"now full"


def test_content_md5(server, made_bucket):
    s3 = server.boto3()
    body = b"hello md5"
    good = base64.b64encode(hashlib.md5(body).digest()).decode()
    s3.put_object(Bucket=made_bucket, Key="m", Body=body, ContentMD5=good)
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=made_bucket, Key="m2", Body=body, ContentMD5=bad)
    assert code_of(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=made_bucket, Key="m2", Body=body, ContentMD5="notbase64!")
    assert code_of(e) == "InvalidDigest"
    assert_not_stored(server, made_bucket, "m2")  # nothing half-written is visible


def test_ranges(server, made_bucket):
    s3 = server.boto3()
    body = bytes(i % 251 for i in range(10000))
    s3.put_object(Bucket=made_bucket, Key="r", Body=body)
    rows = [("bytes=0-9", 0, 10), ("bytes=9990-", 9990, 10), ("bytes=-5", 9995, 5),
            ("bytes=100-199", 100, 100), ("bytes=9000-20000", 9000, 1000)]
    for header, offset, length in rows:
        got = s3.get_object(Bucket=made_bucket, Key="r", Range=header)
        assert got["ResponseMetadata"]["HTTPStatusCode"] == 206, header
        assert got["Body"].read() == body[offset:offset + length], header
        assert got["ContentRange"] == f"bytes {offset}-{offset + length - 1}/10000"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="r", Range="bytes=10000-")
    assert code_of(e) == "InvalidRange"
    assert status_of(e) == 416
    # Several ranges: served whole with 200, as S3 does.
    got = s3.get_object(Bucket=made_bucket, Key="r", Range="bytes=0-1,5-6")
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert got["Body"].read() == body


def test_conditional_get(server, made_bucket):
    s3 = server.boto3()
    etag = s3.put_object(Bucket=made_bucket, Key="c", Body=b"cond")["ETag"]
    past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    assert s3.get_object(Bucket=made_bucket, Key="c", IfMatch=etag)["Body"].read() == b"cond"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="c", IfMatch='"0000"')
    assert code_of(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="c", IfNoneMatch=etag)
    assert status_of(e) == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="c", IfModifiedSince=future)
    assert status_of(e) == 304
    assert s3.get_object(Bucket=made_bucket, Key="c", IfModifiedSince=past)["Body"].read()
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="c", IfUnmodifiedSince=past)
    assert code_of(e) == "PreconditionFailed"
    # Precedence: If-Match true wins over If-Unmodified-Since false.
    assert s3.get_object(Bucket=made_bucket, Key="c", IfMatch=etag,
                         IfUnmodifiedSince=past)["Body"].read() == b"cond"
    # If-None-Match false (no match) wins over If-Modified-Since "not modified".
    assert s3.get_object(Bucket=made_bucket, Key="c", IfNoneMatch='"zz"',
                         IfModifiedSince=future)["Body"].read() == b"cond"


def test_response_overrides(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="o", Body=b"x", ContentType="text/plain")
    got = s3.get_object(Bucket=made_bucket, Key="o", ResponseContentType="application/json",
                        ResponseContentDisposition="attachment; filename=a.json")
    assert got["ContentType"] == "application/json"
    assert got["ContentDisposition"] == "attachment; filename=a.json"


def test_listing_v1_v2(server, made_bucket):
    s3 = server.boto3()
    keys = ["a/1", "a/2", "b/1", "c", "d e+f", "z/x/y"]
    for k in keys:
        s3.put_object(Bucket=made_bucket, Key=k, Body=k.encode())
    v2 = s3.list_objects_v2(Bucket=made_bucket)
    assert [o["Key"] for o in v2["Contents"]] == sorted(keys)
    assert v2["KeyCount"] == len(keys)
    d = s3.list_objects_v2(Bucket=made_bucket, Delimiter="/")
    assert [p["Prefix"] for p in d["CommonPrefixes"]] == ["a/", "b/", "z/"]
    assert [o["Key"] for o in d["Contents"]] == ["c", "d e+f"]
    p = s3.list_objects_v2(Bucket=made_bucket, Prefix="a/")
    assert [o["Key"] for o in p["Contents"]] == ["a/1", "a/2"]
    # Pagination with continuation tokens, two at a time.
    seen, token = [], None
    while True:
        kw = {"Bucket": made_bucket, "MaxKeys": 2}
        if token:
            kw["ContinuationToken"] = token
        page = s3.list_objects_v2(**kw)
        seen += [o["Key"] for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == sorted(keys)
    sa = s3.list_objects_v2(Bucket=made_bucket, StartAfter="b/1")
    assert [o["Key"] for o in sa["Contents"]] == ["c", "d e+f", "z/x/y"]
    # encoding-type=url: boto3 asks for it by default and decodes it.
    enc = s3.list_objects_v2(Bucket=made_bucket, Prefix="d", EncodingType="url")
    # Asked for explicitly, boto3 hands back the keys as sent: percent-encoded.
    assert [o["Key"] for o in enc["Contents"]] == ["d%20e%2Bf"]
    # v1 with marker.
    v1 = s3.list_objects(Bucket=made_bucket, Marker="a/2", MaxKeys=2)
    assert [o["Key"] for o in v1["Contents"]] == ["b/1", "c"]
    assert v1["IsTruncated"] is True
    paginator = s3.get_paginator("list_objects")
    allv1 = [o["Key"] for page in paginator.paginate(Bucket=made_bucket, PaginationConfig={"PageSize": 2})
             for o in page.get("Contents", [])]
    assert allv1 == sorted(keys)


def test_delete_objects(server, made_bucket):
    s3 = server.boto3()
    for k in ["x1", "x2", "x3"]:
        s3.put_object(Bucket=made_bucket, Key=k, Body=b"1")
    r = s3.delete_objects(Bucket=made_bucket, Delete={
        "Objects": [{"Key": "x1"}, {"Key": "x2"}, {"Key": "missing"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["missing", "x1", "x2"]
    r = s3.delete_objects(Bucket=made_bucket, Delete={"Objects": [{"Key": "x3"}], "Quiet": True})
    assert "Deleted" not in r
    assert s3.list_objects_v2(Bucket=made_bucket)["KeyCount"] == 0


def test_copy_object(server, made_bucket):
    s3 = server.boto3()
    etag = s3.put_object(Bucket=made_bucket, Key="src", Body=b"copy me",
                         Metadata={"a": "1"}, ContentType="text/plain")["ETag"]
    r = s3.copy_object(Bucket=made_bucket, Key="dst", CopySource={"Bucket": made_bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == etag
    got = s3.get_object(Bucket=made_bucket, Key="dst")
    assert got["Body"].read() == b"copy me"
    assert got["Metadata"] == {"a": "1"}
    s3.copy_object(Bucket=made_bucket, Key="dst2", CopySource={"Bucket": made_bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="text/x")
    got = s3.get_object(Bucket=made_bucket, Key="dst2")
    assert got["Metadata"] == {"b": "2"}
    assert got["ContentType"] == "text/x"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=made_bucket, Key="dst3", CopySource={"Bucket": made_bucket, "Key": "src"},
                       CopySourceIfMatch='"nope"')
    assert code_of(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=made_bucket, Key="dst3", CopySource={"Bucket": made_bucket, "Key": "nope"})
    assert code_of(e) == "NoSuchKey"


def test_multipart(server, made_bucket):
    s3 = server.boto3()
    part1 = b"a" * (5 << 20)
    part2 = b"b" * 1000
    up = s3.create_multipart_upload(Bucket=made_bucket, Key="mp", Metadata={"m": "p"})
    uid = up["UploadId"]
    uploads = s3.list_multipart_uploads(Bucket=made_bucket)
    assert [u["UploadId"] for u in uploads["Uploads"]] == [uid]
    e1 = s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=1, Body=part1)["ETag"]
    e2 = s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=2, Body=part2)["ETag"]
    parts = s3.list_parts(Bucket=made_bucket, Key="mp", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, len(part1)), (2, len(part2))]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]})
    assert code_of(e) == "InvalidPartOrder"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": '"ffff"'}]})
    assert code_of(e) == "InvalidPart"
    r = s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    digests = hashlib.md5(part1).digest() + hashlib.md5(part2).digest()
    assert r["ETag"] == '"' + hashlib.md5(digests).hexdigest() + '-2"'
    got = s3.get_object(Bucket=made_bucket, Key="mp")
    assert got["ContentLength"] == len(part1) + len(part2)
    assert got["Metadata"] == {"m": "p"}
    data = got["Body"].read()
    assert data[:10] == b"aaaaaaaaaa" and data[-10:] == b"bbbbbbbbbb"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=uid, PartNumber=3, Body=b"x")
    assert code_of(e) == "NoSuchUpload"


def test_multipart_small_part_and_abort(server, made_bucket):
    s3 = server.boto3()
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="small")["UploadId"]
    e1 = s3.upload_part(Bucket=made_bucket, Key="small", UploadId=uid, PartNumber=1, Body=b"tiny")["ETag"]
    e2 = s3.upload_part(Bucket=made_bucket, Key="small", UploadId=uid, PartNumber=2, Body=b"tiny")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=made_bucket, Key="small", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert code_of(e) == "EntityTooSmall"
    s3.abort_multipart_upload(Bucket=made_bucket, Key="small", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=made_bucket, Key="small", UploadId=uid)
    assert code_of(e) == "NoSuchUpload"


def test_managed_transfer_large(server, made_bucket):
    """boto3's transfer manager: multipart upload and ranged parallel download."""
    s3 = server.boto3()
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
    data = bytes(i % 253 for i in range(20 << 20))
    s3.upload_fileobj(io.BytesIO(data), made_bucket, "big", Config=cfg)
    out = io.BytesIO()
    s3.download_fileobj(made_bucket, "big", out, Config=cfg)
    assert out.getvalue() == data


def test_errors_auth(server, made_bucket):
    bad_secret = server.boto3(secret_key="wrong" * 8)
    with pytest.raises(ClientError) as e:
        bad_secret.list_buckets()
    assert code_of(e) == "SignatureDoesNotMatch"
    bad_key = server.boto3(access_key="NOSUCHKEY0000000000")
    with pytest.raises(ClientError) as e:
        bad_key.list_buckets()
    assert code_of(e) == "InvalidAccessKeyId"


def test_not_implemented_subresources(server, made_bucket):
    s3 = server.boto3()
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=made_bucket)
    assert code_of(e) == "NotImplemented"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=made_bucket, VersioningConfiguration={"Status": "Enabled"})
    assert code_of(e) == "NotImplemented"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=made_bucket)
    assert code_of(e) == "NotImplemented"
    # What clients read: versioning (never enabled) and the owner-only ACL.
    assert "Status" not in s3.get_bucket_versioning(Bucket=made_bucket)
    acl = s3.get_bucket_acl(Bucket=made_bucket)
    assert acl["Grants"][0]["Permission"] == "FULL_CONTROL"


def test_presigned_get_put(server, made_bucket):
    import urllib.request
    s3 = server.boto3()
    url = s3.generate_presigned_url("put_object", Params={"Bucket": made_bucket, "Key": "p"},
                                    ExpiresIn=60)
    req = urllib.request.Request(url, data=b"presigned body", method="PUT")
    with urllib.request.urlopen(req) as r:
        assert r.status == 200
    url = s3.generate_presigned_url("get_object", Params={"Bucket": made_bucket, "Key": "p"},
                                    ExpiresIn=60)
    with urllib.request.urlopen(url) as r:
        assert r.read() == b"presigned body"
