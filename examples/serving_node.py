#!/usr/bin/env python3
"""A serving node's KV-cache loop over objectcache (issue 18), runnable against a gateway:

  1. hash the prompt's tokens into chunk keys (docs/protocol.md, chunk keys) and probe them:
     one round trip says how many leading chunks are cached;
  2. "prefill" the missing chunks (random KV here) into a numpy [chunks, layers, S] array and
     store them with one descriptor PUT;
  3. a second, longer prompt sharing that prefix: probe again, then load the hit layer by layer
     into a registered numpy target, "computing" on layer l while layer l+1 arrives, and print
     when each layer arrived and when its compute finished.

    OC_ENDPOINT=http://127.0.0.1:9000 OC_ACCESS_KEY=... OC_SECRET_KEY=... OC_BUCKET=kvcache \\
        PYTHONPATH=build/release/python /usr/bin/python3 examples/serving_node.py

The bucket must exist first (`aws --endpoint-url $OC_ENDPOINT s3 mb s3://kvcache`); run it
with /usr/bin/python3, the interpreter the module is built for (README, "The Python package").
"""
import os
import time

import numpy as np

import objectcache as oc

G = 16  # tokens per chunk
LAYERS = 8
# S: 2 (K, V) x 8 KV heads x 128 head dims x 2 bytes (bfloat16) x G tokens, Llama-3.1-8B's.
LAYER_BYTES = 2 * 8 * 128 * 2 * G


def prefill(n_chunks, seed):
    """The KV of n_chunks chunks, [chunks, layers, S] (stands in for the model's forward)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n_chunks, LAYERS, LAYER_BYTES), dtype=np.uint8)


def main():
    client = oc.Client(os.environ.get("OC_ENDPOINT", "http://127.0.0.1:9000"),
                       os.environ.get("OC_ACCESS_KEY", ""), os.environ.get("OC_SECRET_KEY", ""))
    bucket = os.environ.get("OC_BUCKET", "kvcache")
    prefix = f"example-{os.getpid()}-{int(time.time())}/"
    ns = oc.namespace_string("meta-llama/Llama-3.1-8B", "bfloat16")
    client.ping(bucket)

    # 1-2: a first prompt of 6 chunks: nothing cached, prefill and store all of it.
    tokens = np.arange(1000, 1000 + 6 * G, dtype=np.uint32)
    d = oc.Descriptor(oc.chunk_hashes(tokens, G, ns), layers=LAYERS, layer_bytes=LAYER_BYTES,
                      chunk_tokens=G, prefix=prefix)
    hit = client.probe(bucket, d)
    print(f"probe: matched={hit.matched} of {len(d)}")
    kv = prefill(len(d) - hit.matched, seed=1)
    put = client.put_chunks(bucket, d[hit.matched:], kv, if_absent=True)
    put.raise_for_status()
    print(f"stored {put.chunks} chunks ({put.bytes} bytes) in one descriptor PUT")

    # 3: a longer prompt with the same first 6 chunks.
    tokens2 = np.concatenate([tokens, np.arange(5000, 5000 + 2 * G, dtype=np.uint32)])
    d2 = oc.Descriptor(oc.chunk_hashes(tokens2, G, ns), layers=LAYERS, layer_bytes=LAYER_BYTES,
                       chunk_tokens=G, prefix=prefix)
    hit = client.probe(bucket, d2)
    print(f"probe: matched={hit.matched} of {len(d2)} (the shared prefix)")
    load = d2[:hit.matched]
    buf = client.allocate_buffer(load.payload_bytes)  # registered once; reuse it per request
    target = oc.as_array(buf, shape=(LAYERS, len(load), LAYER_BYTES))  # layer-major
    start = time.perf_counter()
    arrived = {}
    t = client.get_layers(bucket, load, buf,
                          on_layer=lambda l: arrived.setdefault(l, time.perf_counter()))
    checksum = 0
    for layer in range(LAYERS):
        t.wait_layer(layer)  # layer l is in `target`; l+1 keeps arriving meanwhile
        got = time.perf_counter()
        checksum += int(target[layer].sum(dtype=np.uint64))  # "compute" on layer l
        done = time.perf_counter()
        print(f"layer {layer} arrived_us={(got - start) * 1e6:.0f} "
              f"callback_us={(arrived.get(layer, got) - start) * 1e6:.0f} "
              f"computed_us={(done - start) * 1e6:.0f}")
    info = t.wait()
    print(f"loaded matched={info.matched} mode={info.mode} via={info.via} "
          f"bytes={info.payload_bytes} request_id={info.request_id}")
    assert np.array_equal(target, kv.transpose(1, 0, 2)), "loaded bytes differ from stored"
    assert checksum == int(kv.sum(dtype=np.uint64))
    print("verified: every loaded byte equals the stored KV")


if __name__ == "__main__":
    main()
