"""Bucket quotas (issue 31, "A full disk, and quotas"; docs/decisions/bucket-quotas.md) with real
clients through the real gateway, over the embedded and the remote store (the remote mode
gives the [quota] table to oc-storage-server, which enforces it); test_s3_quota_rados.py runs
the same tests over RADOS.

- boto3: a PutObject over max_bytes is 403 QuotaExceeded with a message naming the bucket and
  the limit, and stores nothing; an overwrite counts the difference; a delete gives room back.
- aws-cli v2: put-object over max_objects fails with QuotaExceeded; after delete-object the
  same put succeeds.
- Multipart (boto3): UploadPart over max_bytes is refused (parts count, as in RGW); a part
  written again counts the difference; CompleteMultipartUpload of a second object over
  max_objects is refused and the upload can still be aborted.
- CopyObject into a quota bucket is checked against the copy's size.
- A chunked PutObject (no Content-Length) is refused once its body cannot fit, nothing stored.
- /stats shows each quota bucket's limits and usage, equal to what a listing adds up to.
"""
import json
import os
import urllib.request

import pytest
from botocore.exceptions import ClientError

from conftest import Server, modes, running_server
from test_clients import AWS, aws_env, run, workdir  # noqa: F401
from test_s3_api import exchange, head_bytes, http_chunked, parse_answer, signed_head
from test_s3_compat import code_of, status_of
import rawhttp

MIB = 1 << 20
# One bucket per test, each with its own limits; the servers are shared by a module's tests.
QUOTA_CONFIG = (
    "[quota]\nbuckets = { "
    '"qt-bytes" = { max_bytes = 300000 }, '
    '"qt-objects" = { max_objects = 3 }, '
    '"qt-mp" = { max_bytes = "12MiB", max_objects = 1 }, '
    '"qt-copy" = { max_bytes = 100000 }, '
    '"qt-chunked" = { max_bytes = 50000 }, '
    '"qt-stats" = { max_bytes = 1000000, max_objects = 10 } }\n')


def quota_server(mode, root, extra_config=""):
    """A Server enforcing QUOTA_CONFIG: in `objectcache serve`'s config, or in remote mode in
    oc-storage-server's own config file (oc-gateway reads only [gateway])."""
    if mode == "embedded":
        return Server(mode, root, extra_config=QUOTA_CONFIG + extra_config)
    srv = Server(mode, root, extra_config=extra_config)
    storage_config = os.path.join(root, "storage.toml")
    with open(storage_config, "w") as f:
        f.write(QUOTA_CONFIG)
    srv.storage_args = ["--config", storage_config]
    return srv


@pytest.fixture(scope="module", params=modes())
def server(request):
    with running_server("oc-it-quota-", request.param, make=quota_server) as srv:
        yield srv


def fresh(server, bucket):
    """`bucket`, created (the module's server keeps it for this test only)."""
    server.boto3().create_bucket(Bucket=bucket)
    return bucket


def stats(server):
    with urllib.request.urlopen(f"{server.endpoint}/stats", timeout=10) as r:
        return json.loads(r.read())


def listed(server, bucket):
    """(bytes, objects) of a listing of `bucket`."""
    total, count = 0, 0
    for page in server.boto3().get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            total += o["Size"]
            count += 1
    return total, count


def shown(server, bucket):
    """(used_bytes, used_objects, upload_bytes) of `bucket` in /stats."""
    store = stats(server)["store"]
    p = f"quota.{bucket}."
    return store[p + "used_bytes"], store[p + "used_objects"], store[p + "upload_bytes"]


def assert_quota_exceeded(excinfo, bucket, limit):
    assert (status_of(excinfo), code_of(excinfo)) == (403, "QuotaExceeded"), excinfo.value
    message = excinfo.value.response["Error"]["Message"]
    assert bucket in message and limit in message, message


def test_put_over_max_bytes_is_403_quota_exceeded(server):
    bucket = fresh(server, "qt-bytes")
    s3 = server.boto3()
    s3.put_object(Bucket=bucket, Key="a", Body=b"a" * 200_000)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="b", Body=b"b" * 200_000)
    assert_quota_exceeded(e, bucket, "max_bytes")
    rawhttp.assert_not_stored(server, bucket, "b")
    # 250,000 replacing 200,000: the bucket holds 250,000, under the limit.
    s3.put_object(Bucket=bucket, Key="a", Body=b"c" * 250_000)
    assert shown(server, bucket) == (250_000, 1, 0)
    # A delete gives the room back.
    s3.delete_object(Bucket=bucket, Key="a")
    s3.put_object(Bucket=bucket, Key="b", Body=b"b" * 300_000)  # exactly the limit
    assert shown(server, bucket)[:2] == listed(server, bucket) == (300_000, 1)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="one-more", Body=b"x")
    assert_quota_exceeded(e, bucket, "max_bytes")


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_cli_put_over_max_objects(server, workdir):
    bucket = fresh(server, "qt-objects")
    env = aws_env(server, workdir)
    aws = [AWS, "--endpoint-url", server.endpoint, "s3api"]
    body = os.path.join(workdir, "body")
    with open(body, "wb") as f:
        f.write(b"small")
    for key in ("k1", "k2", "k3"):
        run(aws + ["put-object", "--bucket", bucket, "--key", key, "--body", body], env)
    r = run(aws + ["put-object", "--bucket", bucket, "--key", "k4", "--body", body], env,
            check=False)
    assert r.returncode != 0 and b"QuotaExceeded" in r.stderr, r.stderr
    assert b"max_objects" in r.stderr and bucket.encode() in r.stderr, r.stderr
    # Overwriting an existing key adds no object.
    run(aws + ["put-object", "--bucket", bucket, "--key", "k2", "--body", body], env)
    run(aws + ["delete-object", "--bucket", bucket, "--key", "k1"], env)
    run(aws + ["put-object", "--bucket", bucket, "--key", "k4", "--body", body], env)
    keys = json.loads(run(aws + ["list-objects-v2", "--bucket", bucket], env).stdout)
    assert sorted(o["Key"] for o in keys["Contents"]) == ["k2", "k3", "k4"]
    assert shown(server, bucket)[:2] == listed(server, bucket) == (15, 3)


def test_multipart_parts_count_and_completion_checks_objects(server):
    bucket = fresh(server, "qt-mp")
    s3 = server.boto3()
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]

    def part(n, size, key="mp", upload=None):
        return s3.upload_part(Bucket=bucket, Key=key, UploadId=upload or uid, PartNumber=n,
                              Body=bytes([n]) * size)["ETag"]

    etags = {1: part(1, 6 * MIB), 2: part(2, 6 * MIB)}
    assert shown(server, bucket) == (0, 0, 12 * MIB)
    with pytest.raises(ClientError) as e:
        part(3, 1)
    assert_quota_exceeded(e, bucket, "max_bytes")
    etags[2] = part(2, 5 * MIB)  # written again: 1 MiB given back
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2)]})
    assert shown(server, bucket) == (11 * MIB, 1, 0)
    assert listed(server, bucket) == (11 * MIB, 1)
    # A second object is over max_objects = 1: refused at completion; the upload stays and
    # aborting it frees its part.
    uid2 = s3.create_multipart_upload(Bucket=bucket, Key="mp2")["UploadId"]
    etag = part(1, 1000, key="mp2", upload=uid2)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid2, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert_quota_exceeded(e, bucket, "max_objects")
    rawhttp.assert_not_stored(server, bucket, "mp2")
    assert shown(server, bucket) == (11 * MIB, 1, 1000)
    s3.abort_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid2)
    assert shown(server, bucket) == (11 * MIB, 1, 0)


def test_copy_into_a_quota_bucket_is_checked(server):
    bucket = fresh(server, "qt-copy")
    source = fresh(server, "qt-copy-source")  # no quota
    s3 = server.boto3()
    s3.put_object(Bucket=source, Key="big", Body=b"b" * 80_000)
    s3.put_object(Bucket=source, Key="small", Body=b"s" * 10_000)
    s3.put_object(Bucket=bucket, Key="held", Body=b"h" * 50_000)
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": source, "Key": "big"})
    assert_quota_exceeded(e, bucket, "max_bytes")
    rawhttp.assert_not_stored(server, bucket, "copy")
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": source, "Key": "small"})
    assert shown(server, bucket)[:2] == listed(server, bucket) == (60_000, 2)


def test_chunked_put_is_refused_once_it_cannot_fit(server):
    bucket = fresh(server, "qt-chunked")
    data = b"z" * 60_000  # over max_bytes = 50,000, sent without Content-Length
    h = signed_head(server, "PUT", f"/{bucket}/big", "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Transfer-Encoding"] = "chunked"
    status, reply = parse_answer(exchange(
        server.port, head_bytes("PUT", f"/{bucket}/big", h) + http_chunked(data)))
    assert (status, rawhttp.error_code(reply)[0]) == (403, "QuotaExceeded"), reply
    rawhttp.assert_not_stored(server, bucket, "big")
    # One that fits is stored.
    h = signed_head(server, "PUT", f"/{bucket}/fits", "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Transfer-Encoding"] = "chunked"
    status, reply = parse_answer(exchange(
        server.port, head_bytes("PUT", f"/{bucket}/fits", h) + http_chunked(data[:50_000])))
    assert status == 200, reply
    assert shown(server, bucket) == (50_000, 1, 0)


def test_stats_show_limits_and_usage(server):
    bucket = fresh(server, "qt-stats")
    s3 = server.boto3()
    for i in range(4):
        s3.put_object(Bucket=bucket, Key=f"o{i}", Body=b"x" * (1000 * (i + 1)))
    store = stats(server)["store"]
    assert store[f"quota.{bucket}.max_bytes"] == 1_000_000
    assert store[f"quota.{bucket}.max_objects"] == 10
    assert (store[f"quota.{bucket}.used_bytes"], store[f"quota.{bucket}.used_objects"]) == \
        listed(server, bucket) == (10_000, 4)
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert "oc_store_quota_qt_stats_used_bytes 10000" in metrics
