"""Stand-in of vllm/v1/kv_offload/base.py: the types of docs/integrations.md §2 "Data types"."""
import enum
from dataclasses import dataclass, field
from typing import NamedTuple, NewType

OffloadKey = NewType("OffloadKey", bytes)  # block hash + KV-cache group as 4 big-endian bytes


class LookupResult(enum.Enum):
    MISS = enum.auto()
    HIT = enum.auto()
    HIT_PENDING = enum.auto()
    RETRY = enum.auto()


class Medium(enum.Enum):
    CPU = enum.auto()
    STORAGE = enum.auto()


class TierFilter(enum.Enum):
    ALL = enum.auto()


class OffloadPolicy(enum.Enum):
    BLOCK_LEVEL = enum.auto()
    REQUEST_LEVEL = enum.auto()


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: dict | None = None
    load_tier_filter: TierFilter = TierFilter.ALL
    _state: dict = field(default_factory=dict, repr=False)

    def set_state(self, val):
        self._state[type(val)] = val

    def get_state(self, cls):
        return self._state.get(cls)


@dataclass
class RequestOffloadingContext:
    policy: OffloadPolicy = OffloadPolicy.BLOCK_LEVEL


class ScheduleEndContext(NamedTuple):
    new_req_ids: list
    preempted_req_ids: list
