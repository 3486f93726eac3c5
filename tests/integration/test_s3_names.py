"""Listing, names, metadata, headers and error precedence as S3 answers them (issue 17), with
boto3 and raw requests, over the embedded and the remote store:

- ListBuckets with max-buckets / continuation-token / prefix; ListObjectsV2 with an empty
  continuation-token (lists from the start, echoed empty); a prefix holding a newline comes back decoded unless
  encoding-type=url; encoding-type=url on ListMultipartUploads and ListParts.
- Re-creating a bucket by its owner answers 200 (us-east-1) and changes nothing.
- Special key names (`/`, `%`, `?`, `+`, spaces, `_` runs) round-trip.
- User metadata outside printable ASCII comes back as an RFC 2047 encoded word; encoded words
  sent stay as sent. Content-Encoding is stored as sent, aws-chunked removed.
- A PUT with Date and x-amz-date, or x-amz-date alone, is accepted; X-Amz-Expires not a
  number, negative or over 604800 is 400 AuthorizationQueryParametersError, 0 is 403
  AccessDenied (expired).
- DeleteObject on a deleted bucket is 404 NoSuchBucket; for a user who owns nothing and for
  anonymous requests, a missing bucket is NoSuchBucket before any AccessDenied."""
import base64
import datetime
import email.header
import hashlib
import hmac
import os
import shutil
import tempfile
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import sigv4
from conftest import ACCESS_KEY, SECRET_KEY, Server, modes
from rawhttp import aws_chunked, error_code, send, signed

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
ALICE = ("alice", "OCALICEACCESSKEY0001", "ocAliceSecretKey00000000000000000000001")


class TwoUserServer(Server):
    """The conftest server with a credentials file of its own: the admin of the environment's
    keys and alice, an ordinary user who owns nothing yet."""

    def __init__(self, mode, root, extra_config=""):
        creds = os.path.join(root, "credentials.toml")
        with open(creds, "w") as f:
            f.write(f'[[user]]\nname = "admin"\naccess_key = "{ACCESS_KEY}"\n'
                    f'secret_key = "{SECRET_KEY}"\nadmin = true\n')
            f.write(f'[[user]]\nname = "{ALICE[0]}"\naccess_key = "{ALICE[1]}"\n'
                    f'secret_key = "{ALICE[2]}"\nadmin = false\n')
        super().__init__(mode, root,
                         extra_config=f'credentials_file = "{creds}"\n' + extra_config)


@pytest.fixture(scope="module", params=modes())
def server(request):
    root = tempfile.mkdtemp(prefix="oc-it-names-")
    srv = TwoUserServer(request.param, root)
    srv.start()
    yield srv
    codes = srv.stop()
    log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
    shutil.rmtree(root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"


def xml(body):
    return ET.fromstring(body)


def texts(root, path):
    return [e.text or "" for e in root.iter(NS + path)]


def test_list_buckets_pages(server):
    s3 = server.boto3()
    names = [f"lb-{os.getpid()}-{i}" for i in range(5)]
    for n in names:
        s3.create_bucket(Bucket=n)
    seen, token, pages = [], None, 0
    while True:
        query = "max-buckets=2&prefix=" + urllib.parse.quote(f"lb-{os.getpid()}-")
        if token:
            query += "&continuation-token=" + urllib.parse.quote(token)
        status, _, body = signed(server, "GET", "/", query)
        assert status == 200, body
        root = xml(body)
        page = texts(root, "Name")
        assert len(page) <= 2
        seen += page
        pages += 1
        token = root.findtext(NS + "ContinuationToken")
        if not token:
            break
    assert seen == sorted(names) and pages == 3
    for bad in ("max-buckets=0", "max-buckets=10001", "max-buckets=x",
                "continuation-token=zz"):
        status, _, body = signed(server, "GET", "/", bad)
        assert status == 400 and error_code(body)[0] == "InvalidArgument", (bad, body)
    for n in names:
        s3.delete_bucket(Bucket=n)


def test_list_objects_v2_empty_token_and_newline_prefix(server, made_bucket):
    s3 = server.boto3()
    for key in ("\nnl/a", "\nnl/b", "plain"):
        s3.put_object(Bucket=made_bucket, Key=key, Body=b"x")
    status, _, body = signed(server, "GET", f"/{made_bucket}", "list-type=2&continuation-token=")
    assert status == 200, body
    assert sorted(texts(xml(body), "Key")) == sorted(["\nnl/a", "\nnl/b", "plain"])
    # S3 echoes the token sent, empty too (API reference, ListObjectsV2: "If ContinuationToken
    # was sent with the request, it is included in the response"; issue 29).
    token = xml(body).find(NS + "ContinuationToken")
    assert token is not None and (token.text or "") == "", body
    r = s3.list_objects_v2(Bucket=made_bucket, ContinuationToken="")
    assert r["ContinuationToken"] == "" and r["KeyCount"] == 3
    # Without a token sent, none comes back.
    status, _, body = signed(server, "GET", f"/{made_bucket}", "list-type=2")
    assert xml(body).find(NS + "ContinuationToken") is None, body
    # The prefix comes back decoded (as XML character data) unless encoding-type=url.
    status, _, body = signed(server, "GET", f"/{made_bucket}", "list-type=2&prefix=%0A")
    root = xml(body)
    assert root.findtext(NS + "Prefix") == "\n" and len(texts(root, "Key")) == 2
    status, _, body = signed(server, "GET", f"/{made_bucket}",
                             "delimiter=%2F&encoding-type=url&list-type=2&prefix=%0A")
    root = xml(body)
    assert root.findtext(NS + "Prefix") == "%0A"
    assert texts(root, "Prefix")[1:] == ["%0Anl/"]  # the common prefix, encoded too
    # boto3 (which asks for encoding-type=url itself and decodes) sees the raw strings.
    r = s3.list_objects_v2(Bucket=made_bucket, Prefix="\n", Delimiter="/")
    assert r["Prefix"] == "\n" and r["CommonPrefixes"] == [{"Prefix": "\nnl/"}]
    r = s3.list_objects(Bucket=made_bucket, Prefix="\n")
    assert r["Prefix"] == "\n" and [o["Key"] for o in r["Contents"]] == ["\nnl/a", "\nnl/b"]


def test_multipart_listings_url_encoding(server, made_bucket):
    s3 = server.boto3()
    key = "dir/a b+c\n"
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key=key)["UploadId"]
    s3.upload_part(Bucket=made_bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"p")
    status, _, body = signed(server, "GET", f"/{made_bucket}", "encoding-type=url&uploads")
    assert status == 200, body
    root = xml(body)
    assert root.findtext(NS + "EncodingType") == "url"
    assert texts(root, "Key") == ["dir/a%20b%2Bc%0A"]
    status, _, body = signed(server, "GET", f"/{made_bucket}", "uploads")
    assert texts(xml(body), "Key") == [key]
    path = "/" + made_bucket + "/" + urllib.parse.quote(key, safe="/")
    status, _, body = signed(server, "GET", path, f"encoding-type=url&uploadId={uid}")
    assert status == 200, body
    assert xml(body).findtext(NS + "Key") == "dir/a%20b%2Bc%0A"
    status, _, body = signed(server, "GET", f"/{made_bucket}", "encoding-type=xml&uploads")
    assert status == 400 and error_code(body) == ("InvalidArgument", "encoding-type")
    # boto3's own calls keep working.
    assert s3.list_multipart_uploads(Bucket=made_bucket)["Uploads"][0]["Key"] == key
    assert len(s3.list_parts(Bucket=made_bucket, Key=key, UploadId=uid)["Parts"]) == 1


def test_owner_recreating_a_bucket_gets_200_and_keeps_it(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="kept", Body=b"still here")
    r = s3.create_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"still here"
    # Someone else's bucket is still 409 BucketAlreadyExists.
    with pytest.raises(ClientError) as e:
        alice(server).create_bucket(Bucket=bucket)
    assert e.value.response["Error"]["Code"] == "BucketAlreadyExists"


SPECIAL_KEYS = ["/", "//", "/a", "a/", "%", "%25", "?", "a?b=c", "+", "a+b", " ", "a b", " lead",
                "trail ", "_", "__", "___a___", "_a_b_", "a%2Fb", "#", "&", "~", "=", ";", ":",
                "!", "'", "(", ")", "*", "@", "$", ","]


def test_special_key_names_round_trip(server, made_bucket):
    s3 = server.boto3()
    for i, key in enumerate(SPECIAL_KEYS):
        s3.put_object(Bucket=made_bucket, Key=key, Body=f"body {i}".encode())
    for i, key in enumerate(SPECIAL_KEYS):
        assert s3.get_object(Bucket=made_bucket, Key=key)["Body"].read() == f"body {i}".encode(), key
        assert s3.head_object(Bucket=made_bucket, Key=key)["ContentLength"] == len(f"body {i}")
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=made_bucket)["Contents"]]
    assert listed == sorted(SPECIAL_KEYS, key=lambda k: k.encode())
    listed = [o["Key"] for o in s3.list_objects(Bucket=made_bucket)["Contents"]]
    assert listed == sorted(SPECIAL_KEYS, key=lambda k: k.encode())
    deleted = s3.delete_objects(Bucket=made_bucket, Delete={
        "Objects": [{"Key": k} for k in SPECIAL_KEYS]})
    assert sorted(d["Key"] for d in deleted["Deleted"]) == sorted(SPECIAL_KEYS)
    assert s3.list_objects_v2(Bucket=made_bucket)["KeyCount"] == 0


def test_non_ascii_metadata_as_s3_returns_it(server, made_bucket):
    # Raw UTF-8 bytes in a header value (curl, SDKs that do not encode): an encoded word back.
    text = "h\u00e9llo w\u00f6rld \u20ac"
    value = text.encode()  # sent as these UTF-8 bytes (rawhttp encodes the head as UTF-8)
    status, _, body = signed(server, "PUT", f"/{made_bucket}/utf8",
                             headers={"x-amz-meta-greeting": text}, body=b"x")
    assert status == 200, body
    r = server.boto3().head_object(Bucket=made_bucket, Key="utf8")
    returned = r["ResponseMetadata"]["HTTPHeaders"]["x-amz-meta-greeting"]
    assert returned.startswith("=?UTF-8?") and returned.isascii(), returned
    (decoded, charset), = email.header.decode_header(returned)
    assert decoded == value and charset.lower() == "utf-8"
    # An encoded word sent (what boto3 users must send, botocore taking only ASCII) stays.
    word = "=?UTF-8?B?w6l0w6k=?="
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="word", Body=b"x", Metadata={"season": word, "a": "plain"})
    assert s3.head_object(Bucket=made_bucket, Key="word")["Metadata"] == {"season": word,
                                                                         "a": "plain"}


def test_content_encoding_stored_as_sent(server, made_bucket):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="z", Body=b"x", ContentEncoding="deflate, gzip")
    assert s3.head_object(Bucket=made_bucket, Key="z")["ContentEncoding"] == "deflate, gzip"
    # An aws-chunked upload that also names a real encoding keeps only that one.
    data = b"compressed bytes"
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    body = aws_chunked(data, 1024, trailer=[("x-amz-checksum-crc32", crc)])
    status, _, reply = signed(server, "PUT", f"/{made_bucket}/z2",
                              headers={"content-encoding": "gzip, aws-chunked",
                                       "x-amz-trailer": "x-amz-checksum-crc32",
                                       "x-amz-decoded-content-length": str(len(data))},
                              body=body, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert status == 200, reply
    assert s3.head_object(Bucket=made_bucket, Key="z2")["ContentEncoding"] == "gzip"


def test_date_and_amz_date_and_presigned_expires(server, made_bucket):
    now = datetime.datetime.now(datetime.timezone.utc)
    http_date = now.strftime("%a, %d %b %Y %H:%M:%S GMT")
    # SigV4: Date signed beside x-amz-date, or sent unsigned, or absent.
    for i, headers in enumerate(({"date": http_date}, {})):
        status, _, body = signed(server, "PUT", f"/{made_bucket}/d{i}", headers=headers, body=b"x")
        assert status == 200, body
    h = sigv4.sign("PUT", f"127.0.0.1:{server.port}", f"/{made_bucket}/d2", "", {}, b"x",
                   server.access_key, server.secret_key)
    status, _, body = send(server.port, "PUT", f"/{made_bucket}/d2",
                           list(h.items()) + [("Date", "Mon, 01 Jan 2001 00:00:00 GMT")], b"x")
    assert status == 200, body
    # SigV2 with Date and x-amz-date (the Date line then empty, as the S3 guide says and boto2
    # and the s3-tests suite sign), with x-amz-date alone, and with Date alone.
    for i, headers in enumerate(({"Date": http_date, "x-amz-date": http_date},
                                 {"x-amz-date": http_date}, {"Date": http_date})):
        key = f"/{made_bucket}/v2-{i}"
        status, _, body = send(server.port, "PUT", key, sign_v2(server, "PUT", key, headers), b"x")
        assert status == 200, (headers, body)
        assert server.boto3().head_object(Bucket=made_bucket, Key=f"v2-{i}")["ContentLength"] == 1
    # X-Amz-Expires: S3 answers a value that is not a number, negative, or over 604800 with
    # 400 AuthorizationQueryParametersError ("X-Amz-Expires should be a number", "must be
    # non-negative", "must be less than a week"; S3 API reference, "Authenticating Requests:
    # Using Query Parameters"), and 0, a URL expired on arrival, with 403 AccessDenied (issue
    # 29). A valid one works.
    s3 = server.boto3()
    url = s3.generate_presigned_url("get_object", Params={"Bucket": made_bucket, "Key": "d0"},
                                    ExpiresIn=100)
    parsed = urllib.parse.urlsplit(url)
    assert send(server.port, "GET", f"{parsed.path}?{parsed.query}", [])[0] == 200
    for expires, want in (("0", (403, "AccessDenied")),
                          ("-1", (400, "AuthorizationQueryParametersError")),
                          ("604801", (400, "AuthorizationQueryParametersError")),
                          ("99999999999", (400, "AuthorizationQueryParametersError")),
                          ("ten", (400, "AuthorizationQueryParametersError"))):
        query = parsed.query.replace("X-Amz-Expires=100", f"X-Amz-Expires={expires}")
        status, _, body = send(server.port, "GET", f"{parsed.path}?{query}", [])
        assert (status, error_code(body)) == (want[0], (want[1], "X-Amz-Expires")), (expires, body)


def sign_v2(server, method, path, headers):
    """SigV2 header signing from the S3 guide ("Signing and Authenticating REST Requests"),
    written here independently of the server: the headers to send."""
    amz = sorted((k.lower(), v.strip()) for k, v in headers.items() if k.lower().startswith("x-amz-"))
    date = "" if any(k == "x-amz-date" for k, _ in amz) else headers.get("Date", "")
    sts = f"{method}\n\n\n{date}\n" + "".join(f"{k}:{v}\n" for k, v in amz) + path
    sig = base64.b64encode(hmac.new(server.secret_key.encode(), sts.encode(),
                                    hashlib.sha1).digest()).decode()
    return list(headers.items()) + [("Authorization", f"AWS {server.access_key}:{sig}")]


def alice(server):
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=ALICE[1], aws_secret_access_key=ALICE[2],
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def test_missing_bucket_is_no_such_bucket_before_access_denied(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="foo", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="foo")
    s3.delete_bucket(Bucket=bucket)
    for client in (s3, alice(server)):
        for call in (lambda c: c.delete_object(Bucket=bucket, Key="foo"),
                     lambda c: c.put_object(Bucket=bucket, Key="foo", Body=b"x"),
                     lambda c: c.get_object(Bucket=bucket, Key="foo"),
                     lambda c: c.list_objects_v2(Bucket=bucket)):
            with pytest.raises(ClientError) as e:
                call(client)
            assert e.value.response["Error"]["Code"] == "NoSuchBucket"
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # Anonymous requests too: a missing bucket is NoSuchBucket, as S3 answers.
    for method in ("GET", "DELETE", "PUT"):
        status, _, body = send(server.port, method, f"/{bucket}/foo", [])
        assert status == 404 and error_code(body)[0] == "NoSuchBucket", (method, body)
    # An existing bucket of someone else's stays AccessDenied for alice and for anonymous.
    s3.create_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        alice(server).delete_object(Bucket=bucket, Key="foo")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    for method in ("GET", "DELETE", "PUT"):
        status, _, body = send(server.port, method, f"/{bucket}/foo", [])
        assert status == 403 and error_code(body)[0] == "AccessDenied", (method, body)
    s3.delete_bucket(Bucket=bucket)
