"""Stand-in of vllm/v1/kv_offload/tiering/factory.py: the out-of-tree route of
docs/integrations.md §2 "How it is loaded" (no registered names here)."""
import importlib

from vllm.v1.kv_offload.tiering.base import SecondaryTierManager


class SecondaryTierFactory:
    @staticmethod
    def get_tier_class(tier_config):
        name = tier_config["type"]
        module_path = tier_config.get("module_path")
        if not module_path:
            raise ValueError(f"unknown secondary tier type {name!r} and no module_path")
        cls = getattr(importlib.import_module(module_path), name)
        assert issubclass(cls, SecondaryTierManager)
        return cls

    @staticmethod
    def create_secondary_tier(tier_config, offloading_spec, primary_kv_view):
        cls = SecondaryTierFactory.get_tier_class(tier_config)
        rest = {k: v for k, v in tier_config.items() if k not in ("type", "module_path")}
        return cls(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view,
                   tier_type=tier_config["type"], **rest)
