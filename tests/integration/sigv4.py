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
