"""ObjectCache as an SGLang HiCache storage backend (`--hicache-storage-backend dynamic`,
docs/integrations.md §3).

    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config
      '{"backend_name": "objectcache", "module_path": "objectcache.integrations.sglang",
        "class_name": "ObjectCacheHiCacheStorage", "interface_v1": 1,
        "endpoint": "http://10.0.0.5:9000", "bucket": "kvcache",
        "access_key": "...", "secret_key": "..."}'

SGLang constructs it as `cls(storage_config, kwargs)` and calls it from its cache
controller's background threads, so calls may block; each returns only when its bytes moved.

Zero-copy path (`"interface_v1": 1`): the host pool gives, per page, B buffers (pointer,
size) in a fixed order (`get_page_buffer_meta`: 2 per page for page_first and
page_first_direct, 2 per layer for layer_first). Buffer b of a page is stored as its own
object `<name>.<b>` (`<name>` = prefix, model, the page key and the rank suffix). Buffer b of
consecutive host pages usually lies back to back (the K half of pages 5, 6, 7 of a
page_first pool is one run of memory), so one descriptor GET (or PUT) moves buffer b of a
whole run of pages straight between that memory and the gateway: for a batch of pages
contiguous in the pool that is B requests, whatever the number of pages. The last buffer is
written after every other one of its page, so it marks a complete page: batch_exists probes
only `<name>.<B-1>`, in ONE request for the whole batch.

Generic path (without interface_v1): one object per page, `<name>.flat`, holding the flat
page tensor SGLang hands over (get/set/batch_get/batch_set).

Writes are create-if-absent (the first writer of a page wins; a page's bytes never change).
"""
import ctypes
import logging
import time
from collections import deque

import objectcache as oc

try:
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("objectcache.integrations.sglang is loaded by SGLang's HiCache "
                      "(sglang.srt.mem_cache.hicache_storage); it is not importable here: "
                      f"{e}") from e

_log = logging.getLogger("objectcache.integrations.sglang")

# Extra-config keys we read; SGLang's own keys (prefetch_threshold, ...) are ignored.
_DEFAULTS = {
    "endpoint": None,          # required
    "bucket": None,            # required
    "access_key": "",
    "secret_key": "",
    "region": "us-east-1",
    "prefix": "sglang/",       # object name prefix
    "timeout_s": 60.0,         # request timeout
    "requests_in_flight": 16,  # concurrent PUTs of the client
    "window": 16,              # descriptor GETs in flight per batch_get_v1
}
_CHUNK_TOKENS = 16  # x-oc-chunk-tokens of every descriptor (a page is opaque bytes here)


def _arange(n):
    try:
        import torch
        return torch.arange(n, dtype=torch.int64)
    except ImportError:
        import numpy
        return numpy.arange(n, dtype=numpy.int64)


def _memory(ptr, nbytes):
    """A writable buffer over [ptr, ptr + nbytes) of the host pool (no copy). The pool owns
    the memory; the caller keeps the pool alive while a request uses it."""
    return memoryview((ctypes.c_ubyte * nbytes).from_address(ptr)).cast("B")


def _tensor_memory(t):
    """The bytes of a contiguous tensor (torch: data_ptr, numpy/memoryview: the buffer)."""
    if hasattr(t, "data_ptr") and hasattr(t, "element_size"):
        if hasattr(t, "is_contiguous") and not t.is_contiguous():
            raise ValueError("the tensor must be contiguous")
        return _memory(t.data_ptr(), t.numel() * t.element_size())
    return memoryview(t).cast("B")


def _new_page(nbytes):
    try:
        import torch
        return torch.empty(nbytes, dtype=torch.uint8)
    except ImportError:
        import numpy
        return numpy.empty(nbytes, dtype=numpy.uint8)


class ObjectCacheHiCacheStorage(HiCacheStorage):
    """The backend. Thread safety: SGLang's controller threads may call it concurrently; the
    client is thread-safe and no call shares mutable state but the load log (a deque)."""

    def __init__(self, storage_config, kwargs):
        super().__init__()
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        extra.update(kwargs or {})
        cfg = {k: extra.get(k, v) for k, v in _DEFAULTS.items()}
        for name in ("endpoint", "bucket"):
            if not cfg[name]:
                raise ValueError(f"ObjectCacheHiCacheStorage: extra config needs {name!r}")
        self._cfg = cfg
        self.zero_copy = int(extra.get("interface_v1", 0) or 0) == 1
        self._bucket = cfg["bucket"]
        self._client = oc.Client(cfg["endpoint"], cfg["access_key"], cfg["secret_key"],
                                 region=cfg["region"], timeout=float(cfg["timeout_s"]),
                                 requests_in_flight=int(cfg["requests_in_flight"]))
        # Every rank holds a different slice of the KV unless the model is MLA: the rank
        # (and pipeline stage) is part of the name, as SGLang's own file backend does.
        c = storage_config
        suffix = ""
        if c is not None and not getattr(c, "is_mla_model", False):
            suffix = f"_{c.tp_rank}_{c.tp_size}"
        if c is not None and getattr(c, "pp_size", 1) > 1:
            suffix += f"_pp{c.pp_rank}_{c.pp_size}"
        model = getattr(c, "model_name", None) if c is not None else None
        self._base = cfg["prefix"] + (f"{model}/" if model else "")
        self._suffix = suffix
        self._part_sizes = None  # bytes of each buffer of a page, from the host pool
        self._flat_bytes = None  # bytes of a flat page (the generic path), from the host pool
        self.mem_pool_host = None
        self.load_log = deque(maxlen=4096)  # (pages asked, pages loaded, bytes, seconds)

    def _name(self, key, part):
        return f"{self._base}{key}{self._suffix}.{part}"

    def register_mem_pool_host(self, mem_pool_host):
        self.mem_pool_host = mem_pool_host
        if not self.zero_copy:
            # A probe names the stored shape (a size that disagrees is refused), so the
            # generic path needs the flat page's size.
            self._flat_bytes = len(_tensor_memory(mem_pool_host.get_dummy_flat_data_page()))
            return
        # The buffers of one page: their count and sizes fix the object names and sizes.
        # Pools that give no buffers for their layout (ValueError) cannot use zero copy.
        _, sizes = mem_pool_host.get_page_buffer_meta(_arange(mem_pool_host.page_size))
        if not sizes:
            raise ValueError("the host pool gives no buffers per page")
        self._part_sizes = [int(s) for s in sizes]

    # -- existence -------------------------------------------------------------------------
    def _marker(self):
        """(part name suffix, size) of the object that marks a stored page; the size is None
        before a host pool is registered."""
        if self.zero_copy:
            if not self._part_sizes:
                return None, None
            return len(self._part_sizes) - 1, self._part_sizes[-1]
        return "flat", self._flat_bytes

    def batch_exists(self, keys, extra_info=None):
        """How many leading keys are stored: one probe for the whole batch. (A probe also
        checks the stored shape: an object of another size under one of the names fails the
        whole probe, which answers 0.)"""
        if not keys:
            return 0
        part, size = self._marker()
        if size is None:  # no host pool yet: one one-byte read per key
            return self._exists_one_by_one(keys, "flat" if part is None else part)
        names = [self._name(k, part) for k in keys]
        d = oc.Descriptor(names, layers=1, layer_bytes=size, chunk_tokens=_CHUNK_TOKENS)
        try:
            r = self._client.probe(self._bucket, d)
        except oc.ObjectCacheError as e:
            _log.warning("probe of %d pages failed: %s", len(keys), e)
            return 0
        n = 0
        for present, got in zip(r.present, r.sizes):
            if not present or got != size:
                break
            n += 1
        return n

    def _exists_one_by_one(self, keys, part):
        n = 0
        for key in keys:
            try:
                self._client.get_object(self._bucket, self._name(key, part), 0, 1)
            except oc.ObjectCacheError:
                break
            n += 1
        return n

    def exists(self, key):
        return self.batch_exists([key]) == 1

    # -- zero copy -------------------------------------------------------------------------
    def _page_buffers(self, keys, host_indices):
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        ptrs, sizes = [int(p) for p in ptrs], [int(s) for s in sizes]
        n = len(keys)
        if n == 0 or len(ptrs) % n or len(sizes) != len(ptrs):
            raise ValueError(f"{len(ptrs)} buffers for {n} pages")
        return ptrs, sizes, len(ptrs) // n

    @staticmethod
    def _runs(ptrs, sizes, parts, part, pages):
        """Maximal runs of `pages` (in order) whose buffer `part` lies back to back in
        memory: [(address, size, [page indices])]."""
        runs = []
        for j in pages:
            p, s = ptrs[j * parts + part], sizes[j * parts + part]
            last = runs[-1] if runs else None
            if last and last[1] == s and last[0] + s * len(last[2]) == p:
                last[2].append(j)
            else:
                runs.append((p, s, [j]))
        return runs

    def _descriptor(self, keys, part, pages, size):
        return oc.Descriptor([self._name(keys[j], part) for j in pages], layers=1,
                             layer_bytes=size, chunk_tokens=_CHUNK_TOKENS)

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        """Loads each page's buffers in place; True per page whose every buffer arrived."""
        start = time.monotonic()
        ptrs, sizes, parts = self._page_buffers(keys, host_indices)
        n = len(keys)
        loaded = [[False] * parts for _ in range(n)]
        window = max(1, int(self._cfg["window"]))
        in_flight = deque()

        def finish(item):
            # Waits for the request's end, however long: a page is never reported (and the
            # pool page reused) while a write into it may still land.
            transfer, pages, part = item
            while True:
                try:
                    matched = transfer.wait().matched
                    break
                except oc.ObjectCacheError as e:
                    if e.timed_out:
                        continue  # this wait's bound passed; the request still runs
                    _log.warning("load of %d pages (buffer %d) failed: %s", len(pages), part, e)
                    return
            for j in pages[:matched]:
                loaded[j][part] = True

        for part in range(parts):
            for address, size, pages in self._runs(ptrs, sizes, parts, part, range(n)):
                d = self._descriptor(keys, part, pages, size)
                try:
                    t = self._client.get_layers(self._bucket, d,
                                                _memory(address, size * len(pages)),
                                                via="http")
                except oc.ObjectCacheError as e:
                    _log.warning("load of %d pages not started: %s", len(pages), e)
                    continue
                in_flight.append((t, pages, part))
                if len(in_flight) >= window:
                    finish(in_flight.popleft())
        while in_flight:
            finish(in_flight.popleft())
        ok = [all(p) for p in loaded]
        seconds = time.monotonic() - start
        good = sum(ok)
        self.load_log.append((n, good, good * sum(sizes[:parts]), seconds))
        _log.debug("load pages=%d loaded=%d s=%.6f", n, good, seconds)
        return ok

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        """Stores each page's buffers from the pool; the marker buffer last. True per page
        stored (or already there)."""
        ptrs, sizes, parts = self._page_buffers(keys, host_indices)
        n = len(keys)
        stored = [True] * n

        def put_parts(part_list, pages):
            futures = []
            for part in part_list:
                for address, size, run in self._runs(ptrs, sizes, parts, part, pages):
                    d = self._descriptor(keys, part, run, size)
                    try:
                        f = self._client.put_chunks_async(
                            self._bucket, d, _memory(address, size * len(run)),
                            if_absent=True)
                    except oc.ObjectCacheError as e:
                        _log.warning("store of %d pages not started: %s", len(run), e)
                        for j in run:
                            stored[j] = False
                        continue
                    futures.append((f, run))
            for f, run in futures:
                try:
                    status = f.result().status
                except oc.ObjectCacheError as e:
                    _log.warning("store of %d pages failed: %s", len(run), e)
                    status = ["failed"] * len(run)
                for j, s in zip(run, status):
                    if s == "failed":
                        stored[j] = False

        put_parts(range(parts - 1), range(n))
        # The marker only for pages whose other buffers are all stored.
        put_parts([parts - 1], [j for j in range(n) if stored[j]])
        return stored

    # -- generic path (flat pages, one object per page) ------------------------------------
    def get(self, key, target_location=None, target_sizes=None):
        out = self.batch_get([key], [target_location] if target_location is not None else None)
        return out[0]

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        """Each page into its target tensor (or a new uint8 tensor); None from the first
        missing page on."""
        results = [None] * len(keys)
        if target_locations is None:  # no targets: each page read whole, then copied once
            for i, key in enumerate(keys):
                try:
                    data = self._client.get_object(self._bucket, self._name(key, "flat"))
                except oc.ObjectCacheError:
                    break
                page = _new_page(len(data))
                _tensor_memory(page)[:] = data
                results[i] = page
            return results
        transfers = []
        for key, target in zip(keys, target_locations):
            mem = _tensor_memory(target)
            d = oc.Descriptor([self._name(key, "flat")], layers=1, layer_bytes=len(mem),
                              chunk_tokens=_CHUNK_TOKENS)
            try:
                transfers.append((self._client.get_layers(self._bucket, d, mem, via="http"),
                                  target))
            except oc.ObjectCacheError as e:
                _log.warning("load of %s not started: %s", key, e)
                break
        for i, (t, target) in enumerate(transfers):
            got = False
            while True:  # to the request's end (see batch_get_v1)
                try:
                    got = t.wait().matched == 1
                    break
                except oc.ObjectCacheError as e:
                    if e.timed_out:
                        continue
                    _log.warning("load of %s failed: %s", keys[i], e)
                    break
            if got and all(r is not None for r in results[:i]):
                results[i] = target
        return results

    def set(self, key, value=None, target_location=None, target_sizes=None):
        return self.batch_set([key], [value])

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        """Stores every page (create-if-absent); True only if all were stored."""
        if values is None or len(values) != len(keys):
            raise ValueError("batch_set needs one value per key")
        futures = []
        for key, value in zip(keys, values):
            mem = _tensor_memory(value)
            d = oc.Descriptor([self._name(key, "flat")], layers=1, layer_bytes=len(mem),
                              chunk_tokens=_CHUNK_TOKENS)
            futures.append(self._client.put_chunks_async(self._bucket, d, mem, if_absent=True))
        ok = True
        for f in futures:
            try:
                ok = f.result().ok and ok
            except oc.ObjectCacheError as e:
                _log.warning("store failed: %s", e)
                ok = False
        return ok

    # -- v2 (multi-pool) is not implemented: raise, never return None ----------------------
    def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
        raise NotImplementedError("ObjectCacheHiCacheStorage does not implement the v2 calls")

    def batch_get_v2(self, transfers, extra_info=None):
        raise NotImplementedError("ObjectCacheHiCacheStorage does not implement the v2 calls")

    def batch_set_v2(self, transfers, extra_info=None):
        raise NotImplementedError("ObjectCacheHiCacheStorage does not implement the v2 calls")

    def clear(self):
        """Deletes every object under this backend's prefix (and model)."""
        while True:
            objects = self._client.list_objects(self._bucket, self._base, 1000)
            if not objects:
                return
            for o in objects:
                self._client.delete_object(self._bucket, o.key)

    def close(self):
        self._client.close()
