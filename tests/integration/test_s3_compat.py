"""S3 behaviours that clients and the Ceph s3-tests suite rely on (issue 17), with real clients
(boto3, aws-cli), over the embedded and the remote store; test_s3_compat_rados.py runs the same
tests over RADOS.

- DeleteBucket counts only objects: unfinished multipart uploads are aborted with the bucket
  (boto3, and `aws s3 rb --force`, which deletes every object and then the bucket).
- Multipart: a retried CompleteMultipartUpload answers 200 with the same ETag; parts uploaded
  out of order; GetObject/HeadObject with partNumber (multipart and single-part objects);
  UploadPartCopy with and without x-amz-copy-source-range, bad ranges refused as S3 does, and
  aws-cli v1's `aws s3 cp s3://a/big s3://b/big` (which copies above 8 MiB by UploadPartCopy).
- Conditional writes: PutObject with If-None-Match: * and If-Match (412 otherwise, 404 for
  If-Match on a missing key), and N clients racing If-None-Match: * on one key: exactly one
  wins, the others get 412 and the winner's bytes stay. aws-cli v1's `s3api put-object
  --if-none-match`.
"""
import filecmp
import hashlib
import os
import shutil
import subprocess
import threading
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from client_replay import (aws_cli_v1_copy, aws_cli_v1_download, aws_cli_v1_make_bucket,
                           aws_cli_v1_multipart_upload, aws_cli_v1_put_object, crc32, parts_of)
from rawhttp import error_code
from test_clients import AWS, aws_env, run, workdir  # noqa: F401


MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def aws_v1():
    """aws-cli v1 (what `pip install awscli` gives, first on PATH in many Python environments),
    or None when the `aws` on PATH is not v1."""
    path = shutil.which("aws")
    if path is None or os.path.realpath(path) == os.path.realpath(AWS):
        return None
    r = subprocess.run([path, "--version"], capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode()
    return path if out.startswith("aws-cli/1.") else None


AWS_V1 = aws_v1()


def pattern(seed, size):
    """`size` bytes that differ at every offset mod 251 and between seeds."""
    block = bytes((seed * 7 + i) % 251 for i in range(251))
    return (block * (size // 251 + 1))[:size]


def code_of(excinfo):
    return excinfo.value.response["Error"]["Code"]


def status_of(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_delete_bucket_aborts_unfinished_uploads(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="big")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="big", UploadId=uid, PartNumber=1, Body=b"p" * (5 << 20))
    s3.create_multipart_upload(Bucket=bucket, Key="dir/other")
    s3.put_object(Bucket=bucket, Key="obj", Body=b"x")
    # An object still refuses the delete, and the uploads stay.
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code_of(e) == "BucketNotEmpty"
    assert len(s3.list_multipart_uploads(Bucket=bucket)["Uploads"]) == 2
    s3.delete_object(Bucket=bucket, Key="obj")
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status_of(e) == 404
    # A bucket of the same name starts without them.
    s3.create_bucket(Bucket=bucket)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="big", UploadId=uid)
    assert code_of(e) == "NoSuchUpload"
    s3.delete_bucket(Bucket=bucket)


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_rb_force_with_unfinished_upload(server, bucket, workdir):  # noqa: F811
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="a.txt", Body=b"a")
    s3.create_multipart_upload(Bucket=bucket, Key="interrupted.bin")
    env = aws_env(server, workdir)
    run([AWS, "--endpoint-url", server.endpoint, "s3", "rb", f"s3://{bucket}", "--force"], env)
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket not in names


def multipart(s3, bucket, key, parts, order=None):
    """Uploads `parts` (bytes each) as one multipart upload, in `order` (part numbers) if given;
    returns (upload id, completion response)."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    etags = {}
    for n in order or range(1, len(parts) + 1):
        etags[n] = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n,
                                  Body=parts[n - 1])["ETag"]
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]}
                                   for n in range(1, len(parts) + 1)]})
    return uid, etags, done


def s3_etag(parts):
    md5s = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(md5s).hexdigest()}-{len(parts)}"'


def test_complete_retried_answers_the_same_etag(server, made_bucket):
    s3 = server.boto3()
    parts = [pattern(1, 5 * MiB), pattern(2, 1234)]
    uid, etags, done = multipart(s3, made_bucket, "mp", parts)
    assert done["ETag"] == s3_etag(parts)
    listed = {"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2)]}
    again = s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid,
                                         MultipartUpload=listed)
    assert again["ETag"] == done["ETag"]
    assert s3.get_object(Bucket=made_bucket, Key="mp")["Body"].read() == b"".join(parts)
    # Once the object is replaced the upload is gone for good.
    s3.put_object(Bucket=made_bucket, Key="mp", Body=b"new")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=made_bucket, Key="mp", UploadId=uid,
                                     MultipartUpload=listed)
    assert code_of(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=made_bucket, Key="other", UploadId=uid,
                                     MultipartUpload=listed)
    assert code_of(e) == "NoSuchUpload"


def test_parts_uploaded_out_of_order(server, made_bucket):
    s3 = server.boto3()
    parts = [pattern(3, 5 * MiB), pattern(4, 5 * MiB + 17), pattern(5, 999)]
    _, _, done = multipart(s3, made_bucket, "ooo", parts, order=[3, 1, 2])
    assert done["ETag"] == s3_etag(parts)
    got = s3.get_object(Bucket=made_bucket, Key="ooo")
    assert got["Body"].read() == b"".join(parts)


def test_get_and_head_by_part_number(server, made_bucket):
    s3 = server.boto3()
    parts = [pattern(6, 5 * MiB), pattern(7, 5 * MiB + 3), pattern(8, 4321)]
    _, _, done = multipart(s3, made_bucket, "mp", parts)
    offset = 0
    for n, body in enumerate(parts, start=1):
        end = offset + len(body) - 1
        size = sum(len(p) for p in parts)
        got = s3.get_object(Bucket=made_bucket, Key="mp", PartNumber=n)
        assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert got["PartsCount"] == 3
        assert got["ETag"] == done["ETag"]
        assert got["ContentLength"] == len(body)
        assert got["ContentRange"] == f"bytes {offset}-{end}/{size}"
        assert got["Body"].read() == body
        head = s3.head_object(Bucket=made_bucket, Key="mp", PartNumber=n)
        assert head["PartsCount"] == 3 and head["ContentLength"] == len(body)
        headers = head["ResponseMetadata"]["HTTPHeaders"]  # boto3 1.26 has no HEAD ContentRange
        assert headers["content-range"] == f"bytes {offset}-{end}/{size}"
        assert head["ETag"] == done["ETag"]
        offset += len(body)
    for method in (s3.get_object, s3.head_object):
        with pytest.raises(ClientError) as e:
            method(Bucket=made_bucket, Key="mp", PartNumber=4)
        assert status_of(e) == 416
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="mp", PartNumber=4)
    assert code_of(e) == "InvalidPartNumber"
    # A single-part object is one part: part 1 is all of it, part 2 is past the count.
    s3.put_object(Bucket=made_bucket, Key="single", Body=b"single body")
    got = s3.get_object(Bucket=made_bucket, Key="single", PartNumber=1)
    assert got["Body"].read() == b"single body"
    assert got["ContentLength"] == 11 and "PartsCount" not in got
    assert s3.head_object(Bucket=made_bucket, Key="single", PartNumber=1)["ContentLength"] == 11
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="single", PartNumber=2)
    assert code_of(e) == "InvalidPartNumber" and status_of(e) == 416
    # Malformed part numbers, and a part number with a Range.
    for bad in (0, 10001):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=made_bucket, Key="mp", PartNumber=bad)
        assert code_of(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="mp", PartNumber=1, Range="bytes=0-9")
    assert code_of(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key="absent", PartNumber=1)
    assert code_of(e) == "NoSuchKey"


def test_upload_part_copy(server, made_bucket):
    s3 = server.boto3()
    src = pattern(9, 12 * MiB + 5)
    s3.put_object(Bucket=made_bucket, Key="src", Body=src)
    tail = pattern(10, 777)
    s3.put_object(Bucket=made_bucket, Key="tail", Body=tail)
    dst = f"{made_bucket}-dst"
    s3.create_bucket(Bucket=dst)
    uid = s3.create_multipart_upload(Bucket=dst, Key="copy")["UploadId"]
    copy_source = {"Bucket": made_bucket, "Key": "src"}

    def part_copy(n, rng=None, source=copy_source, **kw):
        args = dict(Bucket=dst, Key="copy", UploadId=uid, PartNumber=n, CopySource=source, **kw)
        if rng is not None:
            args["CopySourceRange"] = rng
        return s3.upload_part_copy(**args)["CopyPartResult"]["ETag"]

    e1 = part_copy(1, f"bytes=0-{6 * MiB - 1}")
    e2 = part_copy(2, f"bytes={6 * MiB}-{len(src) - 1}")
    e3 = part_copy(3, source={"Bucket": made_bucket, "Key": "tail"})  # no range: all of it
    assert e1 == '"' + hashlib.md5(src[:6 * MiB]).hexdigest() + '"'
    assert e3 == '"' + hashlib.md5(tail).hexdigest() + '"'
    sizes = [p["Size"] for p in s3.list_parts(Bucket=dst, Key="copy", UploadId=uid)["Parts"]]
    assert sizes == [6 * MiB, len(src) - 6 * MiB, len(tail)]
    # Ranges S3 refuses: malformed or reversed (400 InvalidArgument), past the end (416).
    for bad in ("x", "bytes", "bytes=", "bytes=0-", "bytes=-5", "bytes=1-2-3", "bytes=5-1",
                "bytes=a-b"):
        with pytest.raises(ClientError) as e:
            part_copy(4, bad)
        assert (code_of(e), status_of(e)) == ("InvalidArgument", 400), bad
    with pytest.raises(ClientError) as e:
        part_copy(4, f"bytes=0-{len(src)}")
    assert (code_of(e), status_of(e)) == ("InvalidRange", 416)
    with pytest.raises(ClientError) as e:
        part_copy(4, f"bytes={len(src)}-{len(src) + 10}")
    assert code_of(e) == "InvalidRange"
    with pytest.raises(ClientError) as e:
        part_copy(4, source={"Bucket": made_bucket, "Key": "absent"})
    assert code_of(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        part_copy(4, CopySourceIfMatch='"0000"')
    assert code_of(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=dst, Key="copy", UploadId="0" * 32, PartNumber=1,
                            CopySource=copy_source)
    assert code_of(e) == "NoSuchUpload"
    done = s3.complete_multipart_upload(
        Bucket=dst, Key="copy", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2},
                                   {"PartNumber": 3, "ETag": e3}]})
    assert done["ETag"].endswith('-3"')
    assert s3.get_object(Bucket=dst, Key="copy")["Body"].read() == src + tail


@pytest.mark.skipif(AWS_V1 is None, reason="aws-cli v1 is not the `aws` on PATH")
def test_aws_cli_v1_copies_a_big_object_between_buckets(server, made_bucket, workdir):  # noqa
    env = aws_env(server, workdir)
    aws = [AWS_V1, "--endpoint-url", server.endpoint]
    big = os.path.join(workdir, "big.bin")
    with open(big, "wb") as f:
        f.write(pattern(11, 20 * MiB + 3))
    run(aws + ["s3", "cp", big, f"s3://{made_bucket}/big.bin"], env)
    dst = f"{made_bucket}-copy"
    run(aws + ["s3", "mb", f"s3://{dst}"], env)
    # Above the 8 MiB threshold: CreateMultipartUpload, UploadPartCopy per 8 MiB range, Complete.
    run(aws + ["s3", "cp", f"s3://{made_bucket}/big.bin", f"s3://{dst}/big.bin"], env)
    head = server.boto3().head_object(Bucket=dst, Key="big.bin")
    assert head["ETag"].endswith('-3"') and head["ContentLength"] == 20 * MiB + 3
    back = os.path.join(workdir, "back.bin")
    run(aws + ["s3", "cp", f"s3://{dst}/big.bin", back], env)
    assert filecmp.cmp(big, back, shallow=False)


def test_aws_cli_v1_big_copy_request_shapes(server, made_bucket):
    """What test_aws_cli_v1_copies_a_big_object_between_buckets has aws-cli v1 send, replayed
    request by request as aws-cli 1.45.11 sends it (client_replay), so it runs without that
    client: `s3 cp` of 20 MiB + 3 (multipart, CRC32 per part), `s3 mb`, `s3 cp` between
    buckets (UploadPartCopy per 8 MiB range with x-amz-copy-source-if-match), `s3 cp` back
    (ranged GETs with x-amz-checksum-mode)."""
    data = pattern(11, 20 * MiB + 3)
    done = aws_cli_v1_multipart_upload(server, made_bucket, "big.bin", data,
                                       "application/octet-stream")
    assert ET.fromstring(done).findtext(f"{NS}ETag") == s3_etag(parts_of(data)), done
    dst = f"{made_bucket}-copy"
    aws_cli_v1_make_bucket(server, dst)
    aws_cli_v1_copy(server, made_bucket, "big.bin", dst, "big.bin", "application/octet-stream")
    head = server.boto3().head_object(Bucket=dst, Key="big.bin")
    # Copied in the same 8 MiB ranges: the same "-3" ETag as the upload.
    assert head["ETag"] == s3_etag(parts_of(data)) and head["ContentLength"] == len(data)
    assert aws_cli_v1_download(server, dst, "big.bin") == data


def put_with_headers(s3, bucket, key, body, **headers):
    """put_object with extra (signed) headers: Debian's boto3 1.26 has no IfNoneMatch/IfMatch
    parameters, so they are added before signing, as newer SDKs send them."""
    def add(request, **_):
        for name, value in headers.items():
            request.headers[name.replace("_", "-")] = value
    s3.meta.events.register("before-sign.s3.PutObject", add)
    try:
        return s3.put_object(Bucket=bucket, Key=key, Body=body)
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add)


def test_conditional_put(server, made_bucket):
    s3 = server.boto3()
    first = put_with_headers(s3, made_bucket, "k", b"first", If_None_Match="*")
    with pytest.raises(ClientError) as e:
        put_with_headers(s3, made_bucket, "k", b"second", If_None_Match="*")
    assert (code_of(e), status_of(e)) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=made_bucket, Key="k")["Body"].read() == b"first"
    with pytest.raises(ClientError) as e:
        put_with_headers(s3, made_bucket, "k", b"third", If_Match='"0123456789abcdef"')
    assert (code_of(e), status_of(e)) == ("PreconditionFailed", 412)
    second = put_with_headers(s3, made_bucket, "k", b"fourth", If_Match=first["ETag"])
    assert second["ETag"] == '"' + hashlib.md5(b"fourth").hexdigest() + '"'
    assert s3.get_object(Bucket=made_bucket, Key="k")["Body"].read() == b"fourth"
    with pytest.raises(ClientError) as e:
        put_with_headers(s3, made_bucket, "absent", b"x", If_Match=first["ETag"])
    assert (code_of(e), status_of(e)) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        put_with_headers(s3, made_bucket, "k", b"x", If_None_Match=second["ETag"])
    assert (code_of(e), status_of(e)) == ("NotImplemented", 501)
    # A multipart-sized body (several extents, several RADOS data objects) is refused whole.
    with pytest.raises(ClientError) as e:
        put_with_headers(s3, made_bucket, "k", pattern(1, 3 * MiB), If_None_Match="*")
    assert code_of(e) == "PreconditionFailed"
    assert s3.get_object(Bucket=made_bucket, Key="k")["Body"].read() == b"fourth"


def test_if_none_match_race_has_one_winner(server, made_bucket):
    clients = 8
    bodies = [pattern(20 + i, 64 * 1024 + i) for i in range(clients)]
    s3s = [server.boto3() for _ in range(clients)]
    outcomes = [None] * clients
    start = threading.Barrier(clients)

    def racer(i):
        start.wait()
        try:
            put_with_headers(s3s[i], made_bucket, "race", bodies[i], If_None_Match="*")
            outcomes[i] = 200
        except ClientError as e:
            outcomes[i] = e.response["ResponseMetadata"]["HTTPStatusCode"]

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [200] + [412] * (clients - 1), outcomes
    winner = outcomes.index(200)
    assert s3s[0].get_object(Bucket=made_bucket, Key="race")["Body"].read() == bodies[winner]


@pytest.mark.skipif(AWS_V1 is None, reason="aws-cli v1 is not the `aws` on PATH")
def test_aws_cli_v1_put_if_none_match(server, made_bucket, workdir):  # noqa: F811
    env = aws_env(server, workdir)
    path = os.path.join(workdir, "f.txt")
    with open(path, "wb") as f:
        f.write(b"only once")
    cmd = [AWS_V1, "--endpoint-url", server.endpoint, "s3api", "put-object", "--bucket",
           made_bucket, "--key", "once", "--body", path, "--if-none-match", "*"]
    run(cmd, env)
    again = run(cmd, env, check=False)
    assert again.returncode != 0 and b"PreconditionFailed" in again.stderr, again.stderr


def test_aws_cli_v1_put_if_none_match_request_shape(server, made_bucket):
    """test_aws_cli_v1_put_if_none_match's two `aws s3api put-object --if-none-match *` calls
    as aws-cli 1.45.11 sends them (If-None-Match, CRC32 header, signed payload, Expect:
    100-continue), replayed: the first stores, the second is 412 PreconditionFailed."""
    interim = []
    status, headers, body = aws_cli_v1_put_object(server, made_bucket, "once", b"only once",
                                                  extra=[("If-None-Match", "*")],
                                                  interim=interim)
    assert (status, interim) == (200, [100]), body
    assert headers["x-amz-checksum-crc32"] == crc32(b"only once")
    status, _, body = aws_cli_v1_put_object(server, made_bucket, "once", b"second",
                                            extra=[("If-None-Match", "*")])
    assert (status, error_code(body)[0]) == (412, "PreconditionFailed"), body
    assert server.boto3().get_object(Bucket=made_bucket, Key="once")["Body"].read() == \
        b"only once"
