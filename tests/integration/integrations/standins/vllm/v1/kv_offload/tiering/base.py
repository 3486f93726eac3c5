"""Stand-in of vllm/v1/kv_offload/tiering/base.py (docs/integrations.md §2): the job types and
the abstract SecondaryTierManager with the table's abstract set and no-op defaults."""
import abc
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from vllm.v1.kv_offload.base import OffloadKey, ReqContext

JobId = int


@dataclass
class TransferJob:
    job_id: JobId
    keys: Collection[OffloadKey]
    block_ids: np.ndarray
    is_promotion: bool
    req_context: ReqContext


@dataclass
class JobResult:
    job_id: JobId
    success: bool
    successful_keys: Collection[OffloadKey] | None = None
    transfer_time: float | None = None


class SecondaryTierManager(abc.ABC):
    medium = None

    def __init__(self, offloading_spec, primary_kv_view: memoryview, tier_type: str):
        self.offloading_spec = offloading_spec
        self.primary_kv_view = primary_kv_view
        self.tier_type = tier_type

    @abc.abstractmethod
    def lookup(self, key, req_context): ...

    @abc.abstractmethod
    def submit_store(self, job_metadata): ...

    @abc.abstractmethod
    def submit_load(self, job_metadata): ...

    @abc.abstractmethod
    def get_finished_jobs(self): ...

    @abc.abstractmethod
    def on_new_request(self, req_context): ...

    @abc.abstractmethod
    def drain_jobs(self): ...

    def on_request_finished(self, req_context):
        return None

    def on_schedule_end(self, context):
        return None

    def has_pending_work(self):
        return False

    def touch(self, keys, req_context):
        return None

    def take_events(self):
        return ()

    def shutdown(self):
        return None

    @classmethod
    def build_metric_definitions(cls, extra_config):
        return {}

    def get_stats(self):
        return None
