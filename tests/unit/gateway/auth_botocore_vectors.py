#!/usr/bin/env python3
"""Regenerates auth_botocore_vectors.h: requests signed by a real client (botocore), which
auth_botocore_test.cc feeds to our Authenticator. Each request is captured at the moment
botocore would send it (the before-send event), so path encoding, query order, header
choice and payload hashing are exactly the client's. Nothing is sent on the network.

Usage (from this directory), covering Debian's botocore and the image's:
  (cat auth_botocore_vectors.h.in
   BOTO_DISABLE_CRT=true /usr/bin/python3 auth_botocore_vectors.py
   BOTO_DISABLE_CRT=true python3 auth_botocore_vectors.py
   printf '  };\n}\n\n}  // namespace oc::gateway::auth::testing\n') > auth_botocore_vectors.h
"""
import io
import os
import urllib.parse

os.environ.setdefault("BOTO_DISABLE_CRT", "true")
import boto3  # noqa: E402
import botocore  # noqa: E402
from botocore.awsrequest import AWSResponse  # noqa: E402

ACCESS = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ENDPOINT = "http://127.0.0.1:9000"


def cxx(s):
    if isinstance(s, bytes):
        data = s
    else:
        data = s.encode()
    out = '"'
    for b in data:
        c = chr(b)
        if c == '"' or c == "\\":
            out += "\\" + c
        elif 32 <= b < 127 and c != "?":
            out += c
        else:
            out += '\\x%02x""' % b
    return out + '"'


class _Raw:
    def stream(self, *a, **k):
        return iter([b""])


captured = []


def _capture(request, **kwargs):
    body = request.body
    if hasattr(body, "read"):
        pos = body.tell() if hasattr(body, "tell") else None
        body = body.read()
        if pos is not None:
            request.body.seek(pos)
    captured.append((request.method, request.url, dict(request.headers.items()), body or b""))
    return AWSResponse(request.url, 200, {}, _Raw())


def emit(name, method, url, headers, body, presigned, sigv2=False):
    parts = urllib.parse.urlsplit(url)
    target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    hdrs = [("Host", parts.netloc)]
    for k, v in headers.items():
        hdrs.append((k, v.decode() if isinstance(v, bytes) else v))
    print("    {%s, %s, %s, %s, %s, {" % (cxx(name + " (botocore " + botocore.__version__ + ")"),
                                         cxx(method), cxx(target), "true" if presigned else "false",
                                         "true" if sigv2 else "false"))
    for k, v in hdrs:
        print("      {%s, %s}," % (cxx(k), cxx(v)))
    print("     }, %s}," % cxx(body))


def main():
    s3 = boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
        region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    s3.meta.events.register("before-send", _capture)
    key = "dir/a b+c~d!e'(f)*,;=@$&.txt"
    ops = [
        ("GetObject odd key", lambda: s3.get_object(Bucket="bucket", Key=key, Range="bytes=0-9")),
        ("GetObject unicode key", lambda: s3.get_object(Bucket="bucket", Key="ключ/€ %2F")),
        ("HeadObject", lambda: s3.head_object(Bucket="bucket", Key="k")),
        ("ListObjectsV2", lambda: s3.list_objects_v2(Bucket="bucket", Prefix="a/b c+", Delimiter="/",
                                                     ContinuationToken="tok==/+", MaxKeys=7)),
        ("PutObject", lambda: s3.put_object(Bucket="bucket", Key=key, Body=b"hello world",
                                            ContentType="text/plain",
                                            Metadata={"note": "a   b  c", "Mixed": "X"})),
        ("PutObject stream", lambda: s3.put_object(Bucket="bucket", Key="s",
                                                   Body=io.BytesIO(b"streamed body"))),
        ("UploadPart", lambda: s3.upload_part(Bucket="bucket", Key="k", UploadId="up/1+2",
                                              PartNumber=3, Body=b"part")),
        ("DeleteObjects", lambda: s3.delete_objects(
            Bucket="bucket", Delete={"Objects": [{"Key": "a"}, {"Key": "b c"}]})),
        ("CreateBucket", lambda: s3.create_bucket(Bucket="new-bucket")),
        ("ListBuckets", lambda: s3.list_buckets()),
    ]
    for name, op in ops:
        captured.clear()
        op()
        method, url, headers, body = captured[-1]
        emit(name, method, url, headers, body, False)
    # Over HTTPS, botocore >= 1.36 sends uploads as STREAMING-UNSIGNED-PAYLOAD-TRAILER with an
    # x-amz-checksum-* trailer (older botocore signs the payload hash instead).
    tls = boto3.client(
        "s3", endpoint_url=ENDPOINT.replace("http:", "https:"), aws_access_key_id=ACCESS,
        aws_secret_access_key=SECRET, region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    tls.meta.events.register("before-send", _capture)
    for name, kwargs in [("TLS PutObject", {}),
                         ("TLS PutObject sha256", {"ChecksumAlgorithm": "SHA256"}),
                         ("TLS PutObject sha1", {"ChecksumAlgorithm": "SHA1"})]:
        captured.clear()
        try:
            tls.put_object(Bucket="bucket", Key="t", Body=io.BytesIO(b"hello world" * 100),
                           **kwargs)
        except Exception as e:  # an algorithm this botocore cannot compute without the CRT
            print("    // %s skipped: %s" % (name, type(e).__name__))
            continue
        method, url, headers, body = captured[-1]
        emit(name, method, url, headers, body, False)
    # generate_presigned_url signs with SigV2 unless the client is configured for s3v4 (as
    # aws-cli v1's `s3 presign` does): both kinds must authenticate.
    v4 = boto3.client(
        "s3", endpoint_url=ENDPOINT, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
        region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    for name, method, params in [
        ("presigned GetObject", "get_object", {"Bucket": "bucket", "Key": key}),
        ("presigned PutObject", "put_object", {"Bucket": "bucket", "Key": "up load"}),
        ("presigned ListObjectsV2", "list_objects_v2", {"Bucket": "bucket", "Prefix": "a b/"}),
    ]:
        url = v4.generate_presigned_url(method, Params=params, ExpiresIn=3600)
        emit(name, "PUT" if method == "put_object" else "GET", url, {}, b"", True)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "bucket", "Key": "k"},
                                    ExpiresIn=3600)
    if "X-Amz-Algorithm" not in url:
        emit("default (SigV2) presigned GetObject", "GET", url, {}, b"", True, sigv2=True)


if __name__ == "__main__":
    main()
