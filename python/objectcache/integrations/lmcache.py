"""ObjectCache as LMCache's L2 tier: the multi-process (MP) mode `native_plugin` connector
(docs/integrations.md, section 1; pinned to LMCache 0.5.6).

LMCache imports this module and builds the connector from the adapter's `adapter_params`:

    lmcache server --l1-size-gb 100 --eviction-policy LRU \\
      --l2-adapter '{"type": "native_plugin",
                     "module_path": "objectcache.integrations.lmcache",
                     "class_name": "ObjectCacheL2Connector",
                     "adapter_params": {"endpoint": "http://10.0.0.5:9000", "bucket": "kvcache",
                                        "access_key": "...", "secret_key": "..."}}'

adapter_params: endpoint, access_key, secret_key, bucket (required); prefix (prepended to
every LMCache key, default ""), region ("us-east-1"), timeout (seconds per request, 60),
workers (batches running at once, 8), sign_payload (False), merge_exists_keys (exists batches
waiting together are probed as one request of at most this many keys, 1024; 0: never).

The connector is C++ (objectcache._native, over liboc_client): each submit_batch_* call pins
the buffers, queues the batch and returns a future id at once; worker threads run it without
the GIL as one probe (exists), one descriptor GET reading key j straight into buffer j (get),
one descriptor PUT (set) per run of equally sized buffers, or one delete per key; then the
eventfd turns readable and drain_completions() returns (future_id, ok, error, per_key). Every
completion has one bool per key; a failed or cut-short load reports False for its keys, never
a hit.

Whether a hit pays: stats() returns, per operation ("get", "set", "exists", "delete"),
batches, keys, hits, bytes, failed_batches, seconds_total and last_seconds (from submit to
completion); last_load_seconds is stats()["get"]["last_seconds"]. Compare
bytes / seconds_total of "get" with what recomputing the prefill costs.
"""
from .._native import ObjectCacheL2Connector  # noqa: F401  (LMCache's class_name)

__all__ = ["ObjectCacheL2Connector"]
