#!/usr/bin/env python3
"""How objectcache's calls map onto the KV-tier hooks of vLLM and LMCache (issue 18): a sketch,
with stand-in classes carrying the hooks' names so it runs without either framework installed.

vLLM KVConnectorBase_V1 (scheduler side, then worker side):
  get_num_new_matched_tokens(request)  -> probe(): matched chunks x G tokens, one round trip
  start_load_kv(forward_context)       -> get_layers() into the registered KV buffer, returns
                                          at once with a Transfer
  wait_for_layer_load(layer_name)      -> Transfer.wait_layer(l): layer l is in place
  save_kv_layer(...) / wait_for_save() -> put_chunks_async(if_absent=True) / Future.result()
vLLM's offload tier (SecondaryTierManager: non-blocking lookup, submit_load, submit_store,
get_finished)                          -> probe_async, get_layers, put_chunks_async, and done()
                                          polled on the Transfers and Futures
LMCache storage plugin / L2 adapter    -> contains: probe; batched_submit_put_task:
                                          put_chunks_async; get_blocking: get_layers().wait()
SGLang HiCacheStorage.batch_exists     -> probe().matched (the leading hit count)
Mooncake batch_is_exist / batch_get_into -> probe().present / get_object_into per key

    OC_ENDPOINT=... OC_ACCESS_KEY=... OC_SECRET_KEY=... OC_BUCKET=kvcache \\
        PYTHONPATH=build/release/python /usr/bin/python3 examples/connector.py

The bucket must exist first (`aws --endpoint-url $OC_ENDPOINT s3 mb s3://kvcache`); run it
with /usr/bin/python3, the interpreter the module is built for (README, "The Python package").
"""
import os
import time

import numpy as np

import objectcache as oc

G, LAYERS, LAYER_BYTES = 16, 4, 4096


class ObjectCacheConnector:
    """KVConnectorBase_V1's hooks over one client; one per worker (a client per process)."""

    def __init__(self, client, bucket, prefix, model="meta-llama/Llama-3.1-8B"):
        self.client, self.bucket, self.prefix = client, bucket, prefix
        self.ns = oc.namespace_string(model, "bfloat16")
        self.buffer = None  # registered once, reused by every load
        self.loading = None  # the Transfer of the load in progress
        self.saving = []  # Futures of stores not yet waited for

    def descriptor(self, tokens):
        return oc.Descriptor(oc.chunk_hashes(tokens, G, self.ns), layers=LAYERS,
                             layer_bytes=LAYER_BYTES, chunk_tokens=G, prefix=self.prefix)

    # Scheduler side.
    def get_num_new_matched_tokens(self, tokens, num_computed_tokens=0):
        hit = self.client.probe(self.bucket, self.descriptor(tokens))
        return max(0, hit.matched * G - num_computed_tokens)

    # Worker side.
    def start_load_kv(self, tokens, matched_tokens):
        d = self.descriptor(tokens)[:matched_tokens // G]
        if self.buffer is None or self.buffer.nbytes < d.payload_bytes:
            self.buffer = self.client.allocate_buffer(d.payload_bytes)
        self.loading = self.client.get_layers(self.bucket, d, self.buffer)
        return oc.as_array(self.buffer)[:d.payload_bytes].reshape(LAYERS, len(d), LAYER_BYTES)

    def wait_for_layer_load(self, layer):
        self.loading.wait_layer(layer)

    def save_kv(self, tokens, kv):  # save_kv_layer's batch: all layers of new chunks at once
        d = self.descriptor(tokens)
        self.saving.append(self.client.put_chunks_async(self.bucket, d, kv, if_absent=True))

    def wait_for_save(self):
        results = [f.result() for f in self.saving]
        self.saving = []
        for r in results:
            r.raise_for_status()
        return results


class ObjectCacheTier:
    """The offload tier's non-blocking calls: submit, then poll get_finished()."""

    def __init__(self, connector):
        self.c = connector
        self.jobs = {}  # job id -> Future or Transfer

    def lookup(self, tokens):
        return self.c.client.probe_async(self.c.bucket, self.c.descriptor(tokens))

    def submit_store(self, job, tokens, kv):
        self.jobs[job] = self.c.client.put_chunks_async(self.c.bucket, self.c.descriptor(tokens),
                                                        kv, if_absent=True)

    def submit_load(self, job, tokens, out):
        self.jobs[job] = self.c.client.get_layers(self.c.bucket, self.c.descriptor(tokens), out)

    def get_finished(self):
        done = [job for job, h in self.jobs.items() if h.done()]
        return {job: self.jobs.pop(job).result() for job in done}


def main():
    client = oc.Client(os.environ.get("OC_ENDPOINT", "http://127.0.0.1:9000"),
                       os.environ.get("OC_ACCESS_KEY", ""), os.environ.get("OC_SECRET_KEY", ""))
    bucket = os.environ.get("OC_BUCKET", "kvcache")
    conn = ObjectCacheConnector(client, bucket, f"connector-{os.getpid()}-{time.time_ns()}/")
    tokens = np.arange(4 * G, dtype=np.uint32)
    kv = np.random.default_rng(2).integers(0, 256, (4, LAYERS, LAYER_BYTES), dtype=np.uint8)

    assert conn.get_num_new_matched_tokens(tokens) == 0
    conn.save_kv(tokens, kv)
    conn.wait_for_save()
    assert conn.get_num_new_matched_tokens(tokens, num_computed_tokens=G) == 3 * G
    target = conn.start_load_kv(tokens, 4 * G)
    for layer in range(LAYERS):
        conn.wait_for_layer_load(layer)
        assert np.array_equal(target[layer], kv[:, layer, :])

    tier = ObjectCacheTier(conn)
    assert tier.lookup(tokens).result().matched == 4
    more = np.arange(100, 100 + 2 * G, dtype=np.uint32)
    tier.submit_store("store", more, kv[:2])
    out = np.zeros(4 * LAYERS * LAYER_BYTES, np.uint8)
    tier.submit_load("load", tokens, out)
    finished = {}
    while len(finished) < 2:
        finished.update(tier.get_finished())
        time.sleep(0.001)
    assert finished["store"].ok and finished["load"].matched == 4
    assert np.array_equal(out.reshape(LAYERS, 4, LAYER_BYTES), kv.transpose(1, 0, 2))

    # SGLang's batch_exists and Mooncake's batch_is_exist over one probe.
    hit = client.probe(bucket, conn.descriptor(np.concatenate([tokens, more + 10**6])))
    assert hit.matched == 4 and [int(p) for p in hit.present] == [1, 1, 1, 1, 0, 0]
    print("connector sketch: ok")


if __name__ == "__main__":
    main()
