"""Cache buckets (issue 31; docs/decisions/cache-buckets.md) through the real gateway: an
`objectcache serve` whose [cache] table makes `kvcache` a 2 MiB cache. A churn of descriptor
PUTs (raw signed requests) and boto3 PUTs several times the capacity keeps the bucket's listed
bytes under capacity plus one eviction batch after every request, /stats' used bytes equal the
listing, chains are eaten from their tails (no dead bytes), a PUT larger than the capacity is
refused 503 SlowDown with Retry-After and stores nothing (so is a multipart completion, the
upload kept), and a bucket that is not a cache keeps every object."""
import json
import time
import urllib.request

import pytest
import rawhttp
from botocore.exceptions import ClientError
from conftest import running_server

CAPACITY = 2 << 20
BATCH = 256 << 10
LAYERS = 2
LAYER_BYTES = 16 << 10
CHUNK = LAYERS * LAYER_BYTES
CHUNKS = 4
CONFIG = f"""
[cache]
buckets = {{ kvcache = {CAPACITY} }}
eviction_batch_bytes = {BATCH}
put_wait = "2s"
"""


def descriptor_put(srv, keys, fill):
    headers = {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
               "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
               "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}
    body = bytes([fill % 251]) * (CHUNK * len(keys))
    return rawhttp.signed(srv, "PUT", "/kvcache", query="objectcache=", headers=headers,
                          body=body)


def probe(srv, keys):
    """The batch existence query (docs/protocol.md): counts toward the prefix hit ratio."""
    headers = {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
               "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
               "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}
    status, _, body = rawhttp.signed(srv, "GET", "/kvcache", query="objectcache=&probe=",
                                     headers=headers)
    assert status == 200, body[:500]


def listed(s3, bucket):
    keys = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            keys[o["Key"]] = o["Size"]
    return keys


def figures(srv):
    with urllib.request.urlopen(srv.endpoint + "/stats", timeout=10) as r:
        store = json.load(r)["store"]
    prefix = "cache.kvcache."
    return {k[len(prefix):]: v for k, v in store.items() if k.startswith(prefix)}


def test_cache_bucket_holds_its_capacity_and_other_buckets_are_untouched():
    with running_server("oc-it-cache-", extra_config=CONFIG) as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="kvcache")
        s3.create_bucket(Bucket="plain-bucket")
        chains = []
        for i in range(60):  # 60 x 128 KiB = 3.75x the capacity
            keys = [f"doc{i}-c{j}" for j in range(CHUNKS)]
            chains.append(keys)
            status, _, body = descriptor_put(srv, keys, i)
            assert status == 200, body[:500]
            probe(srv, chains[i // 2])  # an older chain: a partial or whole hit
            if i % 4 == 0:
                s3.put_object(Bucket="kvcache", Key=f"plain{i}", Body=b"p" * (64 << 10))
                s3.put_object(Bucket="plain-bucket", Key=f"keep{i}", Body=b"k" * (64 << 10))
            used = sum(listed(s3, "kvcache").values())
            assert used <= CAPACITY + BATCH, (i, used)

        # The index's used bytes are the listing's once no eviction batch is mid-delete.
        deadline = time.time() + 30
        while True:
            before = figures(srv)
            objects = listed(s3, "kvcache")
            f = figures(srv)
            settled = before["evicting_bytes"] == 0 and f["evicting_bytes"] == 0 and \
                before["evicted_objects_total"] == f["evicted_objects_total"]
            if settled or time.time() > deadline:
                break
        assert f["capacity_bytes"] == CAPACITY
        assert f["used_bytes"] == sum(objects.values()), (f, len(objects))
        assert f["used_bytes"] <= CAPACITY * 0.9 + BATCH
        assert f["evicted_bytes_total"] > 0 and f["evicted_objects_total"] > 0
        assert f["dead_bytes"] == 0
        assert f["chunks_requested_total"] == 60 * CHUNKS
        assert 0 < f["chunks_served_total"] < f["chunks_requested_total"]
        assert f["prefix_hit_ratio_ppm"] == \
            f["chunks_served_total"] * 1_000_000 // f["chunks_requested_total"]
        # Chains go from their tails: what is left of each is a prefix.
        for keys in chains:
            present = [k in objects for k in keys]
            assert present == sorted(present, reverse=True), (keys, present)
        # Never evicted: the bucket that is not a cache.
        assert len(listed(s3, "plain-bucket")) == 15

        # More than the capacity in one PUT: 503 SlowDown, Retry-After, nothing stored.
        status, headers, body = rawhttp.signed(srv, "PUT", "/kvcache/huge",
                                               headers={"expect": "100-continue"},
                                               body=b"h" * (CAPACITY + 1))
        assert status == 503, body[:500]
        assert rawhttp.error_code(body)[0] == "SlowDown"
        assert headers.get("retry-after") == "1"
        rawhttp.assert_not_stored(srv, "kvcache", "huge")

        # A multipart object counts from its completion: one larger than the capacity is
        # refused there, 503 SlowDown, nothing stored, and the upload stays (the client may
        # abort it or retry).
        uid = s3.create_multipart_upload(Bucket="kvcache", Key="mp")["UploadId"]
        etag = s3.upload_part(Bucket="kvcache", Key="mp", UploadId=uid, PartNumber=1,
                              Body=b"m" * (CAPACITY + 1))["ETag"]
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket="kvcache", Key="mp", UploadId=uid,
                                         MultipartUpload={"Parts": [{"PartNumber": 1,
                                                                     "ETag": etag}]})
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert e.value.response["Error"]["Code"] == "SlowDown"
        rawhttp.assert_not_stored(srv, "kvcache", "mp")
        assert len(s3.list_parts(Bucket="kvcache", Key="mp", UploadId=uid)["Parts"]) == 1
        s3.abort_multipart_upload(Bucket="kvcache", Key="mp", UploadId=uid)

        with urllib.request.urlopen(srv.endpoint + "/metrics", timeout=10) as r:
            metrics = r.read().decode()
        assert "oc_store_cache_kvcache_used_bytes " in metrics
        assert "oc_store_cache_kvcache_evicted_bytes_total " in metrics
        # The snapshot bucket is nobody's.
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["kvcache", "plain-bucket"]
