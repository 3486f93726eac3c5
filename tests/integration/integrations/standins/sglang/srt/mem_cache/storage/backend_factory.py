"""Stand-in of sglang/srt/mem_cache/storage/backend_factory.py: the `dynamic` route of
docs/integrations.md §3 "How it is loaded": cls(storage_config, kwargs), two positional
arguments; the cache controller registers the host pool afterwards (sglang_controller.py)."""
import importlib

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage


class StorageBackendFactory:
    @staticmethod
    def create_backend(backend_name, storage_config, mem_pool_host, **kwargs):
        if backend_name != "dynamic":
            raise ValueError(f"stand-in knows only the dynamic backend, not {backend_name!r}")
        extra = storage_config.extra_config or {}
        for field in ("backend_name", "module_path", "class_name"):
            if field not in extra:
                raise ValueError(f"dynamic backend needs {field!r} in the extra config")
        cls = getattr(importlib.import_module(extra["module_path"]), extra["class_name"])
        if not issubclass(cls, HiCacheStorage):
            raise TypeError(f"{cls} is not a HiCacheStorage")
        return cls(storage_config, kwargs)
