"""Helpers of the objectcache package tests: importing the package CMake built, clients for a
conftest Server, and KV chunks as numpy arrays with the payload they must arrive as."""
import os
import sys

import numpy as np

PYTHON_DIR = os.environ.get("OC_PYTHON_DIR", "")
if PYTHON_DIR and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import objectcache as oc  # noqa: E402

SENTINEL = 0xEE  # what a buffer holds where nothing may be written


def client(server, **kw):
    return oc.Client(server.endpoint, server.access_key, server.secret_key, **kw)


def chunks(n, n_layers, s, seed):
    """[N, L, S] uint8: layer l of chunk j, K half then V half (distinct per seed)."""
    return np.random.default_rng(seed).integers(0, 256, (n, n_layers, s), dtype=np.uint8)


def stored_objects(arr, layout):
    """The N chunk objects back to back in `layout`: kv_l2td is arr itself, kv_2ltd every
    layer's K half, then every layer's V half (docs/protocol.md, stored layouts)."""
    if layout == "kv_l2td":
        return np.ascontiguousarray(arr)
    n, n_layers, s = arr.shape
    h = s // 2
    return np.ascontiguousarray(np.concatenate(
        [arr[:, :, :h].reshape(n, -1), arr[:, :, h:].reshape(n, -1)], axis=1))


def expected(arr, m, n, delivery):
    """The N·L·S buffer after chunks 0..m-1 of `arr` were delivered (sentinel elsewhere)."""
    _, n_layers, s = arr.shape
    if delivery == "layer-major":
        out = np.full((n_layers, n, s), SENTINEL, dtype=np.uint8)
        out[:, :m, :] = arr[:m].transpose(1, 0, 2)
    else:
        out = np.full((n, n_layers, s), SENTINEL, dtype=np.uint8)
        out[:m] = arr[:m]
    return out.reshape(-1)


def keys(form, n, g, prefix, start=0):
    """N chunk keys of consecutive tokens: 16-byte hashes (compact) or names (explicit)."""
    ns = oc.namespace_string("meta-llama/Llama-3.1-8B", "bfloat16")
    tokens = np.arange(start, start + n * g, dtype=np.uint32)
    if form == "compact":
        return oc.chunk_hashes(tokens, g, ns), prefix
    return oc.chunk_keys(tokens, g, ns, prefix), ""


def descriptor(form, n, n_layers, s, g, prefix, layout="kv_l2td", delivery="layer-major"):
    k, p = keys(form, n, g, prefix)
    return oc.Descriptor(k, layers=n_layers, layer_bytes=s, chunk_tokens=g, layout=layout,
                         delivery=delivery, prefix=p)


def rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0
