"""A stand-in of vLLM's scheduler side (TieringOffloadingManager) calling a secondary tier the
way docs/integrations.md §2 says vLLM does: the tier built by SecondaryTierFactory from a
tier-config dict over a memoryview of the primary (host) KV tier; per request
on_new_request, lookup per chunk (asked again on the next step while RETRY),
submit_store / submit_load with TransferJobs naming primary slots, and at every step
on_schedule_end then get_finished_jobs. Every scheduler-path call is timed (the bench reads
`timings`). Shared by tests/integration/integrations/test_vllm_tier.py and
bench/vllm_tier_bench.py."""
import time

import numpy as np

import integ_util  # noqa: F401  (sys.path: the package and the stand-ins)
from vllm.v1.kv_offload.base import LookupResult, ReqContext, ScheduleEndContext
from vllm.v1.kv_offload.tiering.base import TransferJob
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory

SENTINEL = 0xEE


def tier_config(endpoint, bucket, access_key, secret_key, **extra):
    cfg = {"type": "ObjectCacheSecondaryTier", "module_path": "objectcache.integrations.vllm",
           "endpoint": endpoint, "bucket": bucket, "access_key": access_key,
           "secret_key": secret_key}
    cfg.update(extra)
    return cfg


class Scheduler:
    def __init__(self, config, slots=64, slot_bytes=16384):
        self.primary = np.full((slots, slot_bytes), SENTINEL, np.uint8)
        self.tier = SecondaryTierFactory.create_secondary_tier(
            config, offloading_spec=None, primary_kv_view=memoryview(self.primary))
        self.results = {}  # job_id -> JobResult, each reported once
        self.next_job = 1
        self.timings = []  # (call, seconds) of every scheduler-path call

    def timed(self, name, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        self.timings.append((name, time.perf_counter() - t0))
        return out

    def new_request(self, req_id):
        ctx = ReqContext(req_id=req_id)
        self.timed("on_new_request", self.tier.on_new_request, ctx)
        return ctx

    def finish_request(self, ctx):
        self.timed("on_request_finished", self.tier.on_request_finished, ctx)

    def step(self):
        self.timed("on_schedule_end", self.tier.on_schedule_end, ScheduleEndContext([], []))
        for r in self.timed("get_finished_jobs", lambda: list(self.tier.get_finished_jobs())):
            assert r.job_id not in self.results, f"job {r.job_id} reported twice"
            self.results[r.job_id] = r

    def lookup(self, key, ctx):
        return self.timed("lookup", self.tier.lookup, key, ctx)

    def lookup_all(self, keys, ctx, deadline_s=30.0):
        """Asks every key each step until none is RETRY; the verdicts and the first answers."""
        first = None
        end = time.monotonic() + deadline_s
        while True:
            verdicts = [self.lookup(k, ctx) for k in keys]
            first = first or verdicts
            if LookupResult.RETRY not in verdicts:
                return verdicts, first
            self.step()
            if time.monotonic() > end:
                raise AssertionError(f"lookups still RETRY after {deadline_s} s")
            time.sleep(0.001)

    def submit(self, keys, slots, ctx, load):
        job_id, self.next_job = self.next_job, self.next_job + 1
        job = TransferJob(job_id=job_id, keys=list(keys), block_ids=np.array(slots, np.int64),
                          is_promotion=load, req_context=ctx)
        self.timed("submit_load" if load else "submit_store",
                   self.tier.submit_load if load else self.tier.submit_store, job)
        return job_id

    def wait_job(self, job_id, deadline_s=30.0):
        end = time.monotonic() + deadline_s
        while job_id not in self.results:
            self.step()
            if time.monotonic() > end:
                raise AssertionError(f"job {job_id} did not finish within {deadline_s} s")
            time.sleep(0.001)
        return self.results[job_id]
