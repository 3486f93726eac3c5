"""Stand-ins of SGLang's host KV pool and cache controller for the HiCache adapter tests,
written from docs/integrations.md §3:

- HostPool: MHATokenToKVPoolHost's host tensor in each --hicache-mem-layout, on numpy, with
  get_page_buffer_meta giving (pointers, sizes) page after page as the table says
  (layer_first: per layer K then V; page_first / page_first_direct / page_head: K then V),
  and the flat-page calls of the generic path. `v_head_dim` unlike `head_dim` makes the
  asymmetric-K/V pool (buffers of one page of unequal sizes).
- Controller: what the cache controller does with a storage backend: builds it through
  StorageBackendFactory("dynamic", config, pool), registers the host pool, backs pages up in batches of at most
  STORAGE_BATCH_SIZE (v1 zero-copy only with "interface_v1": 1, else the generic flat-page
  path), and prefetches: batch_exists, then loads batch by batch, counting the leading
  successes and stopping at the first failure.
"""
import numpy as np

import integ_util  # noqa: F401  (sys.path: the package and the stand-ins)
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

STORAGE_BATCH_SIZE = 128
SENTINEL = 0xEEEE
LAYOUTS = ("layer_first", "page_first", "page_first_direct", "page_head")


class HostPool:
    def __init__(self, layout, pages=32, page_size=4, layers=3, heads=2, head_dim=8,
                 v_head_dim=None):
        self.layout, self.page_size, self.layer_num = layout, page_size, layers
        self.pages, self.size = pages, pages * page_size
        self.heads, self.head_dim = heads, head_dim
        self.v_head_dim = v_head_dim or head_dim
        self.dtype = np.dtype(np.uint16)  # a bf16 stand-in: 2 bytes per element
        shape = {
            "layer_first": lambda d: (layers, self.size, heads, d),
            "page_first": lambda d: (self.size, layers, heads, d),
            "page_first_direct": lambda d: (pages, layers, page_size, heads, d),
            "page_head": lambda d: (pages, heads, page_size, layers, d),
        }[layout]
        self.k = np.full(shape(head_dim), SENTINEL, self.dtype)
        self.v = np.full(shape(self.v_head_dim), SENTINEL, self.dtype)

    def fill(self, rng):
        self.k[...] = rng.integers(0, 1 << 16, self.k.shape, dtype=np.uint16)
        self.v[...] = rng.integers(0, 1 << 16, self.v.shape, dtype=np.uint16)

    def page_slices(self, t):
        """(K view, V view) of the page starting at token slot t, in the host tensors."""
        p, ps = t // self.page_size, self.page_size
        if self.layout == "layer_first":
            return self.k[:, t:t + ps], self.v[:, t:t + ps]
        if self.layout == "page_first":
            return self.k[t:t + ps], self.v[t:t + ps]
        return self.k[p], self.v[p]

    def host_indices(self, pages):
        return np.concatenate([np.arange(p * self.page_size, (p + 1) * self.page_size)
                               for p in pages]).astype(np.int64)

    # -- what the adapter calls ------------------------------------------------------------
    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        idx = indices.tolist()
        it = self.dtype.itemsize
        ptrs, sizes = [], []
        for i in range(0, len(idx), self.page_size):
            t = idx[i]
            if self.layout == "layer_first":
                for layer in range(self.layer_num):
                    for buf, d in ((self.k, self.head_dim), (self.v, self.v_head_dim)):
                        row = self.heads * d * it
                        ptrs.append(buf.ctypes.data + (layer * self.size + t) * row)
                        sizes.append(self.page_size * row)
            else:
                for buf, d in ((self.k, self.head_dim), (self.v, self.v_head_dim)):
                    page = self.layer_num * self.page_size * self.heads * d * it
                    ptrs.append(buf.ctypes.data + (t // self.page_size) * page)
                    sizes.append(page)
        return ptrs, sizes

    def get_dummy_flat_data_page(self):
        k, v = self.page_slices(0)
        return np.zeros(k.size + v.size, self.dtype)

    def get_data_page(self, index, flat=True):
        k, v = self.page_slices(int(index))
        return np.concatenate([k.reshape(-1), v.reshape(-1)])

    def set_from_flat_data_page(self, index, data_page):
        k, v = self.page_slices(int(index))
        k[...] = data_page[:k.size].reshape(k.shape)
        v[...] = data_page[k.size:].reshape(v.shape)


def storage_config(extra, tp_rank=0, tp_size=1, is_mla=False, layout="page_first"):
    return HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
        attn_cp_size=1, is_mla_model=is_mla, enable_storage_metrics=False,
        is_page_first_layout=layout == "page_first", model_name="meta-llama/Llama-3.1-8B",
        extra_config=extra)


def extra_config(server, bucket, zero_copy=True, **more):
    extra = {"backend_name": "objectcache", "module_path": "objectcache.integrations.sglang",
             "class_name": "ObjectCacheHiCacheStorage", "endpoint": server.endpoint,
             "bucket": bucket, "access_key": server.access_key,
             "secret_key": server.secret_key, "prefix_test": "ignored",
             "prefetch_threshold": 256}  # SGLang's own keys reach us too
    if zero_copy:
        extra["interface_v1"] = 1
    extra.update(more)
    return extra


class Controller:
    def __init__(self, pool, extra, **config):
        self.pool = pool
        self.zero_copy = extra.get("interface_v1") == 1
        self.storage = StorageBackendFactory.create_backend(
            "dynamic", storage_config(extra, layout=pool.layout, **config), pool)
        self.storage.register_mem_pool_host(pool)  # the controller's next call

    def backup(self, keys, pages):
        """Write-through of `pages` under `keys`; True when every batch was stored."""
        ok = True
        for i in range(0, len(keys), STORAGE_BATCH_SIZE):
            k, p = keys[i:i + STORAGE_BATCH_SIZE], pages[i:i + STORAGE_BATCH_SIZE]
            if self.zero_copy:
                ok = all(self.storage.batch_set_v1(k, self.pool.host_indices(p))) and ok
            else:
                values = [self.pool.get_data_page(x * self.pool.page_size) for x in p]
                ok = self.storage.batch_set(k, values) and ok
        return ok

    def prefetch(self, keys, pages):
        """Loads the leading stored pages of `keys` into `pages`; the number loaded."""
        hit = self.storage.batch_exists(keys)
        loaded = 0
        for i in range(0, hit, STORAGE_BATCH_SIZE):
            k, p = keys[i:min(hit, i + STORAGE_BATCH_SIZE)], pages[i:min(hit, i + STORAGE_BATCH_SIZE)]
            if self.zero_copy:
                results = self.storage.batch_get_v1(k, self.pool.host_indices(p))
                assert isinstance(results, list) and len(results) == len(k)
            else:
                targets = [self.pool.get_dummy_flat_data_page() for _ in k]
                got = self.storage.batch_get(k, targets)
                results = []
                for x, page in zip(p, got):
                    if page is None:
                        break
                    self.pool.set_from_flat_data_page(x * self.pool.page_size, page)
                    results.append(True)
                results += [False] * (len(k) - len(results))
            good = 0
            for r in results:
                if not r:
                    break
                good += 1
            loaded += good
            if good < len(k):
                break
        return loaded
