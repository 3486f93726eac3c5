"""A minimal Signature Version 2 signer for hand-made requests: the shapes older clients send
(aws-cli v1's `s3 presign`, botocore's signature_version "s3"), built here so the tests run on
machines without those clients. Follows the S3 guide's "Signing and authenticating REST
requests" (Amazon S3 API version 2006-03-01): the string to sign is

    VERB \\n Content-MD5 \\n Content-Type \\n Date-or-Expires \\n CanonicalizedAmzHeaders
    CanonicalizedResource

signed with HMAC-SHA1 under the secret key, base64-encoded. The resource is the path as sent
(percent-encoded, bucket included) followed by the sub-resources the guide lists, sorted."""
import base64
import hashlib
import hmac
import time
import urllib.parse

# Query parameters that belong to the canonicalized resource (the guide's list of
# sub-resources and response-header overrides); every other parameter is left out.
SUBRESOURCES = {
    "acl", "cors", "delete", "lifecycle", "location", "logging", "notification", "partNumber",
    "policy", "requestPayment", "response-cache-control", "response-content-disposition",
    "response-content-encoding", "response-content-language", "response-content-type",
    "response-expires", "restore", "tagging", "torrent", "uploadId", "uploads", "versionId",
    "versioning", "versions", "website"}


def canonical_resource(path, query=""):
    """`path` as it goes on the request line; `query` the raw query string."""
    kept = []
    for item in query.split("&") if query else []:
        name, eq, value = item.partition("=")
        if name in SUBRESOURCES:
            kept.append((name, urllib.parse.unquote(value) if eq else None))
    if not kept:
        return path
    kept.sort(key=lambda nv: nv[0])
    return path + "?" + "&".join(n if v is None else f"{n}={v}" for n, v in kept)


def string_to_sign(method, path, query, headers, date_or_expires):
    """`headers` a dict of the request's headers (any case)."""
    lower = {k.lower(): str(v).strip() for k, v in headers.items()}
    amz = sorted((k, v) for k, v in lower.items() if k.startswith("x-amz-"))
    lines = [method, lower.get("content-md5", ""), lower.get("content-type", ""),
             date_or_expires]
    lines += [f"{k}:{v}" for k, v in amz]
    return "\n".join(lines + [canonical_resource(path, query)])


def signature(secret_key, sts):
    digest = hmac.new(secret_key.encode(), sts.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def presign(method, path, access_key, secret_key, expires_in=None, expires_at=None, query=""):
    """The path and query of a SigV2 presigned URL, parameters in the order aws-cli v1 (1.45,
    botocore 1.43) writes them: AWSAccessKeyId, Signature, Expires. `expires_at` (epoch
    seconds) overrides now + `expires_in`."""
    expires = str(int(expires_at if expires_at is not None else time.time() + expires_in))
    sig = signature(secret_key, string_to_sign(method, path, query, {}, expires))
    params = urllib.parse.urlencode([("AWSAccessKeyId", access_key), ("Signature", sig),
                                     ("Expires", expires)], quote_via=urllib.parse.quote)
    return path + "?" + (query + "&" if query else "") + params


def authorization(method, path, query, headers, access_key, secret_key):
    """The headers of a header-signed SigV2 request: `headers` plus Date and Authorization
    ("AWS key:signature")."""
    out = dict(headers)
    out.setdefault("Date", time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()))
    sts = string_to_sign(method, path, query, out, out["Date"])
    out["Authorization"] = f"AWS {access_key}:{signature(secret_key, sts)}"
    return out
