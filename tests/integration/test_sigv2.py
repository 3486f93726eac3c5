"""Signature Version 2 (issue 17): aws-cli v1's `s3 presign` URLs, botocore's default presigned
URLs (AWSAccessKeyId, Signature, Expires) for GET, HEAD, PUT and DELETE, and the
`Authorization: AWS key:signature` header (botocore's signature_version "s3"), with SigV4's
checks: expired URLs and URLs used for another key or method are refused."""
import http.client
import os
import subprocess
import time
import urllib.parse

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import sigv2
from client_replay import aws_cli_v1_put_object
from conftest import ACCESS_KEY, SECRET_KEY
from rawhttp import error_code, send
from test_clients import aws_env, workdir  # noqa: F401
from test_s3_compat import AWS_V1


def sigv2_client(server, signature_version=None):
    """Debian's boto3 as a user who never configured a signature version (presigned URLs are
    then SigV2), or with signature_version "s3" (every request SigV2 header-signed)."""
    kw = {"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 1}}
    if signature_version:
        kw["signature_version"] = signature_version
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=server.access_key,
                        aws_secret_access_key=server.secret_key, config=Config(**kw))


def fetch(url, method="GET", data=None):
    """(status, body) of `url` as curl would send it: no Content-Type (it is signed)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, u.path + ("?" + u.query if u.query else ""), body=data)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def test_presigned_urls_get_head_put_delete(server, made_bucket):
    s3 = sigv2_client(server)
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": made_bucket, "Key": "a b+c"},
                                        ExpiresIn=600)
    assert "AWSAccessKeyId=" in put_url and "Signature=" in put_url and "Expires=" in put_url
    assert fetch(put_url, "PUT", b"sigv2 bytes")[0] == 200
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": made_bucket, "Key": "a b+c"},
                                        ExpiresIn=600)
    assert fetch(get_url) == (200, b"sigv2 bytes")
    head_url = s3.generate_presigned_url("head_object",
                                         Params={"Bucket": made_bucket, "Key": "a b+c"},
                                         ExpiresIn=600)
    assert fetch(head_url, "HEAD")[0] == 200
    # A URL signed for GET does not PUT, and does not read another key.
    status, body = fetch(get_url, "PUT", b"other")
    assert status == 403 and error_code(body)[0] == "SignatureDoesNotMatch"
    other = get_url.replace("a%20b%2Bc", "other")
    assert other != get_url
    status, body = fetch(other)
    assert status == 403 and error_code(body)[0] == "SignatureDoesNotMatch"
    del_url = s3.generate_presigned_url("delete_object",
                                        Params={"Bucket": made_bucket, "Key": "a b+c"},
                                        ExpiresIn=600)
    assert fetch(del_url, "DELETE")[0] == 204
    assert fetch(get_url)[0] == 404


def test_expired_and_far_future_urls_are_access_denied(server, made_bucket):
    s3 = sigv2_client(server)
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"x")
    # Signed with an Expires a minute in the past (botocore always adds ExpiresIn to now):
    # expired, with no wait on the clock.
    target = sigv2.presign("GET", f"/{made_bucket}/k", server.access_key, server.secret_key,
                           expires_at=time.time() - 60)
    status, body = fetch(server.endpoint + target)
    assert status == 403 and error_code(body) == ("AccessDenied", "Expires")
    target = sigv2.presign("GET", f"/{made_bucket}/k", server.access_key, server.secret_key,
                           expires_in=60)
    assert fetch(server.endpoint + target) == (200, b"x")  # the same URL, not yet expired
    far = s3.generate_presigned_url("get_object", Params={"Bucket": made_bucket, "Key": "k"},
                                    ExpiresIn=8 * 86400)
    status, body = fetch(far)
    assert status == 403 and error_code(body) == ("AccessDenied", "Expires")


def test_sigv2_header_signed_requests(server, made_bucket):
    s3 = sigv2_client(server, signature_version="s3")
    s3.put_object(Bucket=made_bucket, Key="dir/k", Body=b"hello", Metadata={"who": "v2"},
                  ContentType="text/plain")
    got = s3.get_object(Bucket=made_bucket, Key="dir/k", Range="bytes=1-3")
    assert got["Body"].read() == b"ell"
    head = s3.head_object(Bucket=made_bucket, Key="dir/k")
    assert head["Metadata"] == {"who": "v2"} and head["ContentType"] == "text/plain"
    listed = s3.list_objects(Bucket=made_bucket, Prefix="dir/")
    assert [o["Key"] for o in listed["Contents"]] == ["dir/k"]
    # (Path-style operations whose URI carries a query, such as ListObjectsV2 and the multipart
    # calls, are signed wrongly by botocore's SigV2 signer: it puts the query into the resource
    # twice, e.g. "/b/k?uploads?uploads". S3 refuses those too; clients use SigV4 for them.)
    s3.delete_object(Bucket=made_bucket, Key="dir/k")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=made_bucket, Key="dir/k")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # A wrong secret is SignatureDoesNotMatch, as under SigV4.
    bad = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                       aws_access_key_id=server.access_key, aws_secret_access_key="wrong",
                       config=Config(signature_version="s3", s3={"addressing_style": "path"}))
    s3.put_object(Bucket=made_bucket, Key="mp", Body=b"x")
    with pytest.raises(ClientError) as e:
        bad.get_object(Bucket=made_bucket, Key="mp")
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_sigv2_cannot_carry_unsigned_oc_headers(server, made_bucket):
    """SigV2 signs every x-amz-* header and no x-oc-* one: a descriptor header under a SigV2
    signature is refused (the signing rule), whatever it asks for."""
    s3 = sigv2_client(server)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": made_bucket, "Key": "k"},
                                    ExpiresIn=600)
    parsed = urllib.parse.urlsplit(url)
    status, _, body = send(server.port, "GET", f"{parsed.path}?{parsed.query}",
                           [("x-oc-delivery", "body")])
    assert status == 403 and error_code(body) == ("AccessDenied", "x-oc-delivery")


@pytest.mark.skipif(AWS_V1 is None, reason="aws-cli v1 is not on PATH")
def test_aws_cli_v1_presign(server, made_bucket, workdir):  # noqa: F811
    env = aws_env(server, workdir)
    src = os.path.join(workdir, "src.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(100000))
    subprocess.run([AWS_V1, "--endpoint-url", server.endpoint, "s3", "cp", src,
                    f"s3://{made_bucket}/dir/obj file.bin"], env=env, check=True,
                   capture_output=True, timeout=120)
    r = subprocess.run([AWS_V1, "--endpoint-url", server.endpoint, "s3", "presign",
                        f"s3://{made_bucket}/dir/obj file.bin", "--expires-in", "300"],
                       env=env, check=True, capture_output=True, timeout=120)
    url = r.stdout.decode().strip()
    assert "AWSAccessKeyId=" in url, url  # aws-cli v1 presigns with SigV2
    status, data = fetch(url)
    assert status == 200 and data == open(src, "rb").read()
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                         capture_output=True, timeout=60)
    assert out.stdout.decode() == "200"


def test_presign_matches_aws_cli_v1_output():
    """A URL aws-cli 1.45.11 printed (`aws --endpoint-url http://127.0.0.1:9 s3 presign
    "s3://bkt/dir/obj file.bin" --expires-in 300`, with the tests' credentials, 2026-12-02):
    sigv2.presign writes the same bytes for the same key and Expires."""
    printed = ("/bkt/dir/obj%20file.bin?AWSAccessKeyId=OCTESTACCESSKEY00001"
               "&Signature=biSJ4gRSampE2NSQ5PR9YXgOGd0%3D&Expires=1796187251")
    assert sigv2.presign("GET", "/bkt/dir/obj%20file.bin", ACCESS_KEY, SECRET_KEY,
                         expires_at=1796187251) == printed


def test_aws_cli_v1_presign_request_shapes(server, made_bucket):
    """test_aws_cli_v1_presign without aws-cli v1: the `s3 cp` PutObject as aws-cli 1.45.11
    sends it (client_replay), and the URL its `s3 presign --expires-in 300` prints (SigV2 query
    auth: AWSAccessKeyId, Signature, Expires, in that order; checked byte for byte against
    aws-cli 1.45.11's output for the same key and Expires), fetched as the test does and with
    curl; the same URL for another key, or with another signature, is refused."""
    data = os.urandom(100000)
    status, _, body = aws_cli_v1_put_object(server, made_bucket, "dir/obj file.bin", data,
                                            content_type="application/octet-stream")
    assert status == 200, body
    path = f"/{made_bucket}/dir/obj%20file.bin"
    url = server.endpoint + sigv2.presign("GET", path, server.access_key, server.secret_key,
                                          expires_in=300)
    assert "AWSAccessKeyId=" in url and "&Signature=" in url and "&Expires=" in url
    assert fetch(url) == (200, data)
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                         capture_output=True, timeout=60)
    assert out.stdout.decode() == "200"
    status, body = fetch(url.replace("obj%20file", "obj%20other"))
    assert status == 403 and error_code(body)[0] == "SignatureDoesNotMatch"
    forged = url.replace("&Signature=", "&Signature=A")
    status, body = fetch(forged)
    assert status == 403 and error_code(body)[0] == "SignatureDoesNotMatch"
