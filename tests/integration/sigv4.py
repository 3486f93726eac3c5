"""A minimal SigV4 signer for hand-made requests (skewed clocks, tampered signatures,
malformed bodies) that boto3 will not send. Follows the AWS "Signature Version 4 signing
process"; boto3 is the reference the other tests use."""
import datetime
import hashlib
import hmac
import urllib.parse


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sign(method, host, path, query, headers, body, access_key, secret_key,
         region="us-east-1", now=None, payload_hash=None):
    """Returns the headers to send (including Authorization, x-amz-date, host)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = now.strftime("%Y%m%d")
    if payload_hash is None:
        payload_hash = hashlib.sha256(body).hexdigest()
    out = dict(headers)
    out["host"] = host
    out["x-amz-date"] = amz_date
    out["x-amz-content-sha256"] = payload_hash
    signed = sorted(k.lower() for k in out)
    canon_headers = "".join(f"{k}:{str(out[k]).strip()}\n" for k in signed)
    pairs = sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    canon_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                           for k, v in pairs)
    canon_path = urllib.parse.quote(path, safe="/-_.~")
    creq = "\n".join([method, canon_path, canon_query, canon_headers, ";".join(signed), payload_hash])
    scope = f"{date}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret_key).encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, "s3")
    key = _hmac(key, "aws4_request")
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                            f"SignedHeaders={';'.join(signed)}, Signature={sig}")
    return out


def signing_key(secret_key, date, region="us-east-1"):
    """kSigning of the SigV4 spec for `date` (yyyymmdd)."""
    key = _hmac(("AWS4" + secret_key).encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, "s3")
    return _hmac(key, "aws4_request")


EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def signed_chunks(payload, chunk_bytes, key, amz_date, scope, seed, trailer=None,
                  tamper=None):
    """An aws-chunked body signed as the S3 guide's "Signature calculations for the
    Authorization header: transferring payload in multiple chunks" and, with `trailer` (a
    (name, value) checksum trailer), "Signature calculations for trailing headers": every
    chunk signed over the previous signature, the final empty chunk too; then the trailer
    line and its x-amz-trailer-signature. `tamper` may name "chunk", "trailer-signature" or
    "no-trailer-signature" to break one part."""
    out = b""
    prev = seed
    pieces = [payload[i:i + chunk_bytes] for i in range(0, len(payload), chunk_bytes)] + [b""]
    for n, piece in enumerate(pieces):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, EMPTY_SHA256,
                         hashlib.sha256(piece).hexdigest()])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        prev = sig
        if tamper == "chunk" and n == 0:
            sig = "0" * 64
        out += f"{len(piece):x};chunk-signature={sig}\r\n".encode() + piece
        if piece or trailer is None:
            out += b"\r\n"
    if trailer is None:
        return out
    name, value = trailer
    canonical = f"{name}:{value}\n"
    sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, prev,
                     hashlib.sha256(canonical.encode()).hexdigest()])
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    if tamper == "trailer-signature":
        sig = sig[::-1]
    out += f"{name}:{value}\r\n".encode()
    if tamper != "no-trailer-signature":
        out += f"x-amz-trailer-signature:{sig}\r\n".encode()
    return out + b"\r\n"


def presign(method, host, path, access_key, secret_key, expires, now=None, region="us-east-1"):
    """The path and query of a presigned URL (the S3 guide's "Authenticating requests: using
    query parameters"): host the only signed header, UNSIGNED-PAYLOAD, signed at `now` (a
    datetime; a past one gives a URL that has already expired) for `expires` seconds."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = now.strftime("%Y%m%d")
    scope = f"{date}/{region}/s3/aws4_request"
    params = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
              ("X-Amz-Credential", f"{access_key}/{scope}"), ("X-Amz-Date", amz_date),
              ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")]
    query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                     for k, v in sorted(params))
    canon_path = urllib.parse.quote(path, safe="/-_.~")
    creq = "\n".join([method, canon_path, query, f"host:{host}\n", "host", "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    key = signing_key(secret_key, date, region)
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    return f"{canon_path}?{query}&X-Amz-Signature={sig}"
