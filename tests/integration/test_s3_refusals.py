"""What the README's S3 table says the gateway refuses, and how, sent over HTTP as signed
requests, over the embedded and the remote store (test_s3_refusals_rados.py: over RADOS):

- Every sub-resource of the last row (versioning, object lock, policy, CORS, website, PUT
  ?acl with a non-private ACL; lifecycle is served since issue 31: test_s3_lifecycle.py), at bucket and object level where S3 has both:
  501 NotImplemented in a well-formed S3 error, and nothing stored: the same sub-resource read
  back, the object (bytes, ETag, headers), an anonymous read and the bucket listing are what
  they were before.
- CreateBucket of an existing bucket by its owner: 200 and nothing changed in us-east-1, 409
  BucketAlreadyOwnedByYou on a server configured for another region (`gateway.region`)."""
import base64
import hashlib
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

import sigv4
from conftest import modes, running_server
from rawhttp import send, signed

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"

VERSIONING = (f'<VersioningConfiguration xmlns="{NS}"><Status>Enabled</Status>'
              '</VersioningConfiguration>')
OBJECT_LOCK = (f'<ObjectLockConfiguration xmlns="{NS}"><ObjectLockEnabled>Enabled'
               '</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days>'
               '</DefaultRetention></Rule></ObjectLockConfiguration>')
POLICY = ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",'
          '"Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/*"}]}')
CORS = (f'<CORSConfiguration xmlns="{NS}"><CORSRule><AllowedOrigin>*</AllowedOrigin>'
        '<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>')
WEBSITE = (f'<WebsiteConfiguration xmlns="{NS}"><IndexDocument><Suffix>index.html</Suffix>'
           '</IndexDocument></WebsiteConfiguration>')
GRANT_ALL_USERS_READ = (
    f'<AccessControlPolicy xmlns="{NS}"><Owner><ID>%s</ID></Owner><AccessControlList>'
    '<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group">'
    f'<URI>{ALL_USERS}</URI></Grantee><Permission>READ</Permission></Grant>'
    '</AccessControlList></AccessControlPolicy>')
RETENTION = (f'<Retention xmlns="{NS}"><Mode>GOVERNANCE</Mode><RetainUntilDate>'
             '2099-01-01T00:00:00.000Z</RetainUntilDate></Retention>')
LEGAL_HOLD = f'<LegalHold xmlns="{NS}"><Status>ON</Status></LegalHold>'

# (what, method, level, sub-resource, headers, body). Level "bucket" targets /{bucket},
# "object" /{bucket}/obj. `%s` in a body is the bucket name (policy) or the owner (grant).
REFUSED = [
    ("PutBucketVersioning", "PUT", "bucket", "versioning", {}, VERSIONING),
    ("PutObjectLockConfiguration", "PUT", "bucket", "object-lock", {}, OBJECT_LOCK),
    ("GetObjectLockConfiguration", "GET", "bucket", "object-lock", {}, ""),
    ("PutObjectRetention", "PUT", "object", "retention", {}, RETENTION),
    ("GetObjectRetention", "GET", "object", "retention", {}, ""),
    ("PutObjectLegalHold", "PUT", "object", "legal-hold", {}, LEGAL_HOLD),
    ("GetObjectLegalHold", "GET", "object", "legal-hold", {}, ""),
    ("PutBucketPolicy", "PUT", "bucket", "policy", {}, POLICY),
    ("GetBucketPolicy", "GET", "bucket", "policy", {}, ""),
    ("DeleteBucketPolicy", "DELETE", "bucket", "policy", {}, ""),
    ("PutBucketCors", "PUT", "bucket", "cors", {}, CORS),
    ("GetBucketCors", "GET", "bucket", "cors", {}, ""),
    ("DeleteBucketCors", "DELETE", "bucket", "cors", {}, ""),
    ("PutBucketWebsite", "PUT", "bucket", "website", {}, WEBSITE),
    ("GetBucketWebsite", "GET", "bucket", "website", {}, ""),
    ("DeleteBucketWebsite", "DELETE", "bucket", "website", {}, ""),
    ("PutBucketAcl public-read", "PUT", "bucket", "acl", {"x-amz-acl": "public-read"}, ""),
    ("PutBucketAcl grant header", "PUT", "bucket", "acl",
     {"x-amz-grant-read": f'uri="{ALL_USERS}"'}, ""),
    ("PutBucketAcl grant body", "PUT", "bucket", "acl", {}, GRANT_ALL_USERS_READ),
    ("PutObjectAcl public-read", "PUT", "object", "acl", {"x-amz-acl": "public-read"}, ""),
    ("PutObjectAcl grant header", "PUT", "object", "acl",
     {"x-amz-grant-read": f'uri="{ALL_USERS}"'}, ""),
    ("PutObjectAcl grant body", "PUT", "object", "acl", {}, GRANT_ALL_USERS_READ),
]

def s3_error(body):
    """(Code, Message, RequestId) of a well-formed S3 error document."""
    root = ET.fromstring(body)
    assert root.tag == "Error", body
    return root.findtext("Code"), root.findtext("Message"), root.findtext("RequestId")


def without_request_id(status, body):
    """An answer to compare before/after: the status and the body without per-request ids."""
    if body.lstrip().startswith(b"<?xml") or body.lstrip().startswith(b"<"):
        root = ET.fromstring(body)
        for tag in ("RequestId", "HostId"):
            for e in root.iter(tag):
                e.text = ""
        return status, ET.tostring(root)
    return status, body


def state(server, bucket, subresource):
    """Everything a refused request could have changed: the sub-resource read at bucket and
    object level, the object's bytes and headers, an anonymous GET, and the listing."""
    out = {}
    for path in (f"/{bucket}", f"/{bucket}/obj"):
        status, _, body = signed(server, "GET", path, subresource)
        out[path + "?" + subresource] = without_request_id(status, body)
    status, headers, body = signed(server, "GET", f"/{bucket}/obj")
    assert status == 200, body
    out["object"] = (body, {k: v for k, v in headers.items()
                            if k not in ("date", "x-amz-request-id", "x-amz-id-2")})
    status, _, body = send(server.port, "GET", f"/{bucket}/obj", [])
    out["anonymous"] = (status, s3_error(body)[0])
    status, _, body = signed(server, "GET", f"/{bucket}", "list-type=2")
    out["listing"] = without_request_id(status, body)
    return out


@pytest.mark.parametrize("what, method, level, subresource, headers, body", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_unsupported_subresources_are_501_and_store_nothing(server, made_bucket, what, method,
                                                            level, subresource, headers, body):
    s3 = server.boto3()
    s3.put_object(Bucket=made_bucket, Key="obj", Body=b"private bytes", ContentType="text/plain")
    before = state(server, made_bucket, subresource)
    assert before["anonymous"] == (403, "AccessDenied")

    path = f"/{made_bucket}" + ("/obj" if level == "object" else "")
    payload = body
    if "%s" in payload:
        payload = payload % (made_bucket if subresource == "policy" else server.access_key)
    payload = payload.encode()
    h = dict(headers)
    if payload:
        h["content-md5"] = base64.b64encode(hashlib.md5(payload).digest()).decode()
    status, reply_headers, reply = signed(server, method, path, subresource, headers=h,
                                          body=payload)
    assert status == 501, (what, status, reply)
    code, message, request_id = s3_error(reply)
    assert code == "NotImplemented", reply
    assert message and request_id, reply
    assert reply_headers.get("content-type", "").startswith("application/xml"), reply_headers

    assert state(server, made_bucket, subresource) == before, what


@pytest.fixture(scope="module", params=modes())
def region_server(request):
    """A server configured for eu-west-1 (`gateway.region`)."""
    with running_server("oc-it-region-", request.param,
                        extra_config='region = "eu-west-1"\n') as srv:
        yield srv


def signed_in_region(server, region, method, path, body=b""):
    """A SigV4 request signed for `region`: (status, headers, body)."""
    h = sigv4.sign(method, f"127.0.0.1:{server.port}", path, "", {}, body, server.access_key,
                   server.secret_key, region=region)
    return send(server.port, method, path, list(h.items()), body)


def location_body(region):
    return (f'<CreateBucketConfiguration xmlns="{NS}"><LocationConstraint>{region}'
            '</LocationConstraint></CreateBucketConfiguration>').encode()


def test_owner_recreating_a_bucket_outside_us_east_1_is_409(region_server, bucket):
    s3 = region_server.boto3(region="eu-west-1")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket=bucket, Key="kept", Body=b"still here")
    assert s3.get_bucket_location(Bucket=bucket)["LocationConstraint"] == "eu-west-1"
    for body in (location_body("eu-west-1"), b""):
        status, _, reply = signed_in_region(region_server, "eu-west-1", "PUT", f"/{bucket}", body)
        assert status == 409, reply
        code, message, request_id = s3_error(reply)
        assert code == "BucketAlreadyOwnedByYou" and message and request_id, reply
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=bucket,
                         CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert e.value.response["Error"]["Code"] == "BucketAlreadyOwnedByYou"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    # Nothing changed.
    assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"still here"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["kept"]


def test_owner_recreating_a_bucket_in_us_east_1_is_200(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="kept", Body=b"still here")
    status, headers, reply = signed_in_region(server, "us-east-1", "PUT", f"/{bucket}")
    assert status == 200, reply
    assert headers.get("location") == f"/{bucket}"
    assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"still here"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["kept"]
