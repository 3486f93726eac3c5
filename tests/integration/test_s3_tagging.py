"""S3 object tagging (issue 17) with real clients, over the embedded and the remote store;
test_s3_compat_rados.py runs the same tests over RADOS.

- boto3: PutObject with Tagging (x-amz-tagging), Get/Put/DeleteObjectTagging, TagCount
  (x-amz-tagging-count) on GET and HEAD, ETag and Last-Modified unchanged by tagging, S3's
  limits (10 tags, keys of 1..128 and values of 0..256 characters, unique keys: 400 InvalidTag),
  a malformed body (400 MalformedXML), a missing key (404 NoSuchKey).
- CopyObject with x-amz-tagging-directive COPY (the default) and REPLACE, with the metadata
  directive either way; CreateMultipartUpload with Tagging.
- aws-cli v2 (Debian's /usr/bin/aws, which copies tags and properties by default):
  `aws s3 cp s3://b/x s3://b/y` for a small object (CopyObject) and a multipart-sized one
  (> 8 MiB: HeadObject, GetObjectTagging, multipart copy with the tags), and `aws s3 sync`
  between S3 prefixes with both; the copies carry the sources' tags.
"""
import datetime
import os
import urllib.request

import pytest
from botocore.exceptions import ClientError

import sigv4
from test_clients import AWS, aws_env, run, workdir  # noqa: F401
from test_s3_compat import code_of, pattern, status_of

MiB = 1 << 20


def tag_set(tags):
    return [{"Key": k, "Value": v} for k, v in tags]


def tags_of(s3, bucket, key):
    return [(t["Key"], t["Value"]) for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]]


def test_put_get_delete_object_tagging(server, made_bucket):
    s3 = server.boto3()
    put = s3.put_object(Bucket=made_bucket, Key="t", Body=b"hello",
                        Tagging="project=kv&tier=hot%20cache&empty=")
    assert tags_of(s3, made_bucket, "t") == [("project", "kv"), ("tier", "hot cache"),
                                            ("empty", "")]
    assert s3.get_object(Bucket=made_bucket, Key="t")["TagCount"] == 3
    head = s3.head_object(Bucket=made_bucket, Key="t")
    assert head["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "3"
    # Replacing the tags changes nothing else.
    s3.put_object_tagging(Bucket=made_bucket, Key="t", Tagging={"TagSet": tag_set(
        [("k\u00e9y", "v\u00e4lue"), ("a", "b")])})
    assert tags_of(s3, made_bucket, "t") == [("k\u00e9y", "v\u00e4lue"), ("a", "b")]
    after = s3.head_object(Bucket=made_bucket, Key="t")
    assert after["ETag"] == put["ETag"] == head["ETag"]
    assert after["LastModified"] == head["LastModified"]
    assert s3.get_object(Bucket=made_bucket, Key="t")["Body"].read() == b"hello"
    s3.delete_object_tagging(Bucket=made_bucket, Key="t")
    assert tags_of(s3, made_bucket, "t") == []
    assert "TagCount" not in s3.get_object(Bucket=made_bucket, Key="t")
    assert "x-amz-tagging-count" not in s3.head_object(
        Bucket=made_bucket, Key="t")["ResponseMetadata"]["HTTPHeaders"]
    for call in (lambda: s3.get_object_tagging(Bucket=made_bucket, Key="absent"),
                 lambda: s3.put_object_tagging(Bucket=made_bucket, Key="absent",
                                               Tagging={"TagSet": tag_set([("a", "b")])}),
                 lambda: s3.delete_object_tagging(Bucket=made_bucket, Key="absent")):
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == "NoSuchKey" and status_of(e) == 404


def test_tag_limits_are_s3s(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="t", Body=b"x")
    ok = [("k" * 128, "v" * 256), ("\u00e9" * 128, "\u00e4" * 256)] + [
        (f"k{i}", "") for i in range(8)]  # 10 tags, lengths in characters
    s3.put_object_tagging(Bucket=made_bucket, Key="t", Tagging={"TagSet": tag_set(ok)})
    assert tags_of(s3, made_bucket, "t") == ok
    for what, bad in (("11 tags", [(f"k{i}", "v") for i in range(11)]),
                      ("key of 129", [("k" * 129, "v")]),
                      ("value of 257", [("k", "v" * 257)]),
                      ("repeated key", [("k", "1"), ("k", "2")])):
        with pytest.raises(ClientError) as e:
            s3.put_object_tagging(Bucket=made_bucket, Key="t", Tagging={"TagSet": tag_set(bad)})
        assert code_of(e) == "InvalidTag" and status_of(e) == 400, what
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=made_bucket, Key="refused", Body=b"x",
                          Tagging="&".join(f"{k}={v}" for k, v in bad))
        assert code_of(e) == "InvalidTag" and status_of(e) == 400, what
    assert tags_of(s3, made_bucket, "t") == ok  # nothing changed
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=made_bucket, Key="refused")
    assert status_of(e) == 404


def raw_put_tagging(server, bucket, key, body):
    host = server.endpoint.split("//", 1)[1]
    path = f"/{bucket}/{key}"
    headers = sigv4.sign("PUT", host, path, "tagging=", {}, body, server.access_key,
                         server.secret_key, now=datetime.datetime.now(datetime.timezone.utc))
    req = urllib.request.Request(f"{server.endpoint}{path}?tagging=", data=body, method="PUT",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_malformed_tagging_bodies_are_malformed_xml(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="t", Body=b"x", Tagging="a=1")
    for body in (b"<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
                 b"<Tagging></Tagging>", b"<Tagging><TagSet>", b"not xml"):
        status, answer = raw_put_tagging(server, made_bucket, "t", body)
        assert status == 400, answer
        assert b"<Code>MalformedXML</Code>" in answer, answer
    status, answer = raw_put_tagging(
        server, made_bucket, "t",
        b"<Tagging><TagSet><Tag><Key>b</Key><Value>2</Value></Tag></TagSet></Tagging>")
    assert status == 200, answer
    assert tags_of(s3, made_bucket, "t") == [("b", "2")]


def test_copy_object_tagging_directive(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="src", Body=b"data", ContentType="text/plain",
                  Metadata={"m": "1"}, Tagging="a=1&b=2")
    src = {"Bucket": made_bucket, "Key": "src"}
    s3.copy_object(Bucket=made_bucket, Key="copy", CopySource=src)
    assert tags_of(s3, made_bucket, "copy") == [("a", "1"), ("b", "2")]
    s3.copy_object(Bucket=made_bucket, Key="replaced", CopySource=src,
                   TaggingDirective="REPLACE", Tagging="c=3")
    assert tags_of(s3, made_bucket, "replaced") == [("c", "3")]
    head = s3.head_object(Bucket=made_bucket, Key="replaced")
    assert head["ContentType"] == "text/plain" and head["Metadata"] == {"m": "1"}
    s3.copy_object(Bucket=made_bucket, Key="untagged", CopySource=src, TaggingDirective="REPLACE")
    assert tags_of(s3, made_bucket, "untagged") == []
    s3.copy_object(Bucket=made_bucket, Key="meta", CopySource=src, MetadataDirective="REPLACE",
                   ContentType="image/png")
    assert tags_of(s3, made_bucket, "meta") == [("a", "1"), ("b", "2")]
    assert s3.head_object(Bucket=made_bucket, Key="meta")["ContentType"] == "image/png"
    # Onto itself, metadata replaced, tags replaced.
    s3.copy_object(Bucket=made_bucket, Key="src", CopySource=src, MetadataDirective="REPLACE",
                   TaggingDirective="REPLACE", Tagging="self=yes")
    assert tags_of(s3, made_bucket, "src") == [("self", "yes")]
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=made_bucket, Key="bad", CopySource=src,
                       TaggingDirective="REPLACE", Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert code_of(e) == "InvalidTag"


def test_multipart_upload_with_tagging(server, made_bucket):
    s3 = server.boto3()
    up = s3.create_multipart_upload(Bucket=made_bucket, Key="mp", Tagging="kind=multipart")
    part = s3.upload_part(Bucket=made_bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                          Body=b"x" * 1000)
    s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": part["ETag"]}]})
    assert tags_of(s3, made_bucket, "mp") == [("kind", "multipart")]
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=made_bucket, Key="mp2", Tagging="a=1&a=2")
    assert code_of(e) == "InvalidTag"


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_cli_v2_copies_and_syncs_tags_between_s3_locations(server, made_bucket, workdir):
    """aws-cli v2 copies tags and properties by default: a small object by CopyObject, one
    above its 8 MiB multipart threshold by HeadObject + GetObjectTagging and a multipart copy
    (UploadPartCopy) carrying the tags. Both must keep the sources' bytes and tags."""
    version = run([AWS, "--version"], aws_env(server, workdir)).stdout.decode()
    assert version.startswith("aws-cli/2."), version
    s3 = server.boto3()
    small, big = pattern(1, 100_000), pattern(2, 20 * MiB)
    s3.put_object(Bucket=made_bucket, Key="src/small.bin", Body=small, Tagging="size=small")
    s3.put_object(Bucket=made_bucket, Key="src/big.bin", Body=big,
                  Tagging="size=big&note=two%20words", Metadata={"m": "1"})
    env = aws_env(server, workdir)
    aws = [AWS, "--endpoint-url", server.endpoint]
    for name in ("small.bin", "big.bin"):
        run(aws + ["s3", "cp", f"s3://{made_bucket}/src/{name}",
                   f"s3://{made_bucket}/copy/{name}"], env)
    run(aws + ["s3", "sync", f"s3://{made_bucket}/src/", f"s3://{made_bucket}/synced/"], env)
    for prefix in ("copy", "synced"):
        assert s3.get_object(Bucket=made_bucket,
                             Key=f"{prefix}/small.bin")["Body"].read() == small
        assert s3.get_object(Bucket=made_bucket, Key=f"{prefix}/big.bin")["Body"].read() == big
        assert tags_of(s3, made_bucket, f"{prefix}/small.bin") == [("size", "small")], prefix
        assert sorted(tags_of(s3, made_bucket, f"{prefix}/big.bin")) == [
            ("note", "two words"), ("size", "big")], prefix
        assert s3.head_object(Bucket=made_bucket, Key=f"{prefix}/big.bin")["Metadata"] == {
            "m": "1"}
