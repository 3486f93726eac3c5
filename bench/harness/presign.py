"""SigV4 presigned paths for the benchmarks that drive wrk with a URL per request
(gateway_bench.py, write_bench.py)."""
import datetime
import hashlib
import hmac
import urllib.parse


class Presigner:
    """SigV4 query-string signing (presigned PUT URLs, UNSIGNED-PAYLOAD), the same as
    botocore's generate_presigned_url but ~30x cheaper: a distinct-key run needs one URL per
    request. gateway_bench.presigner_for checks it against botocore once before use."""

    def __init__(self, endpoint, access, secret, region="us-east-1", expires=3600, now=None):
        self.endpoint = endpoint.rstrip("/")
        self.host = urllib.parse.urlparse(self.endpoint).netloc
        self.access = access
        self.region = region
        self.expires = expires
        now = now or datetime.datetime.now(datetime.timezone.utc)
        self.amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        self.date = now.strftime("%Y%m%d")
        key = ("AWS4" + secret).encode()
        for part in (self.date, region, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        self.signing_key = key
        self.scope = f"{self.date}/{region}/s3/aws4_request"

    def path(self, method, bucket, key):
        """The presigned path and query (no scheme and host) of `method` on bucket/key."""
        uri = "/" + urllib.parse.quote(bucket, safe="") + "/" + urllib.parse.quote(key, safe="/~")
        query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256",
                 "X-Amz-Credential": f"{self.access}/{self.scope}",
                 "X-Amz-Date": self.amz_date, "X-Amz-Expires": str(self.expires),
                 "X-Amz-SignedHeaders": "host"}
        qs = "&".join(f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}"
                      for k, v in sorted(query.items()))
        canonical = f"{method}\n{uri}\n{qs}\nhost:{self.host}\n\nhost\nUNSIGNED-PAYLOAD"
        to_sign = (f"AWS4-HMAC-SHA256\n{self.amz_date}\n{self.scope}\n"
                   + hashlib.sha256(canonical.encode()).hexdigest())
        sig = hmac.new(self.signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
        return f"{uri}?{qs}&X-Amz-Signature={sig}"
