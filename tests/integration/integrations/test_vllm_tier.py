"""objectcache.integrations.vllm (issue 32 part 2) driven by a stand-in of vLLM's scheduler
(vllm_scheduler.py, built from docs/integrations.md §2) against a real gateway: lookups
that never block (RETRY, then HIT or MISS, MISS by the deadline when the gateway stalls),
create-if-absent stores, loads into the primary view's slots byte for byte, partial loads
with successful_keys, a failed load's verdicts forgotten at once, drain_jobs."""
import os
import time

import numpy as np
import pytest

from integ_util import StalledGateway
from vllm_scheduler import SENTINEL, Scheduler, tier_config
from vllm.v1.kv_offload.base import LookupResult, Medium
from vllm.v1.kv_offload.tiering.base import SecondaryTierManager
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory

HIT, MISS, RETRY = LookupResult.HIT, LookupResult.MISS, LookupResult.RETRY
PREFIX = "vllm-it/"


def new_keys(n, group=0):
    """OffloadKeys: a 16-byte block hash and the KV-cache group as 4 big-endian bytes."""
    return [os.urandom(16) + group.to_bytes(4, "big") for _ in range(n)]


def scheduler(server, bucket, **extra):
    extra.setdefault("prefix", PREFIX)
    extra.setdefault("layers", 4)
    return Scheduler(tier_config(server.endpoint, bucket, server.access_key, server.secret_key,
                                 **extra))


def fill(s, slots, seed):
    rng = np.random.default_rng(seed)
    for slot in slots:
        s.primary[slot] = rng.integers(0, 256, s.primary.shape[1], dtype=np.uint8)
    return {slot: s.primary[slot].copy() for slot in slots}


def test_loaded_by_the_factory_as_a_real_subclass(server, made_bucket):
    cfg = tier_config(server.endpoint, made_bucket, server.access_key, server.secret_key)
    cls = SecondaryTierFactory.get_tier_class(cfg)
    assert issubclass(cls, SecondaryTierManager) and not cls.__abstractmethods__
    s = Scheduler(cfg)
    assert isinstance(s.tier, cls) and s.tier.tier_type == "ObjectCacheSecondaryTier"
    assert s.tier.medium == Medium.STORAGE
    with pytest.raises(TypeError, match="bucket_name"):
        Scheduler(dict(cfg, bucket_name="typo"))
    with pytest.raises(TypeError, match="bucket"):
        Scheduler(dict(cfg, bucket=""))
    s.tier.shutdown()


def test_store_lookup_load_byte_exact_through_slot_runs(server, made_bucket):
    s = scheduler(server, made_bucket)
    keys = new_keys(6)
    src = [0, 1, 2, 5, 6, 3]  # three runs of consecutive slots: 0-2, 5-6, 3
    data = fill(s, src, seed=1)
    r1 = s.new_request("r1")
    verdicts, first = s.lookup_all(keys, r1)
    assert first == [RETRY] * 6 and verdicts == [MISS] * 6
    result = s.wait_job(s.submit(keys, src, r1, load=False))
    assert result.success and result.successful_keys is None
    s.finish_request(r1)

    r2 = s.new_request("r2")
    verdicts, first = s.lookup_all(keys, r2)
    assert first == [RETRY] * 6 and verdicts == [HIT] * 6
    dst = [40, 41, 30, 31, 33, 32]
    job = s.submit(keys, dst, r2, load=True)
    result = s.wait_job(job)
    assert result.success and result.successful_keys is None and result.transfer_time > 0
    for a, b in zip(src, dst):
        assert np.array_equal(s.primary[b], data[a]), f"slot {b} (from {a})"
    untouched = [i for i in range(len(s.primary)) if i not in src + dst]
    assert (s.primary[untouched] == SENTINEL).all()
    job_id, n, nbytes, seconds = s.tier.load_log[-1]
    assert (job_id, n, nbytes) == (job, 6, 6 * s.primary.shape[1]) and seconds > 0
    assert not s.tier.has_pending_work()
    s.tier.shutdown()


def test_store_is_create_if_absent(server, made_bucket):
    s = scheduler(server, made_bucket)
    keys = new_keys(3)
    first = fill(s, [0, 1, 2], seed=2)
    ctx = s.new_request("w")
    assert s.wait_job(s.submit(keys, [0, 1, 2], ctx, load=False)).success
    fill(s, [0, 1, 2], seed=3)  # other bytes under the same keys: the first writer wins
    assert s.wait_job(s.submit(keys, [0, 1, 2], ctx, load=False)).success
    assert s.wait_job(s.submit(keys, [10, 11, 12], ctx, load=True)).success
    for a in range(3):
        assert np.array_equal(s.primary[10 + a], first[a])
    s.tier.shutdown()


def test_partial_load_reports_successful_keys_and_forgets_failed_verdicts(server, made_bucket):
    s = scheduler(server, made_bucket)
    keys = new_keys(6)
    data = fill(s, range(6), seed=4)
    ctx = s.new_request("p")
    assert s.wait_job(s.submit(keys, range(6), ctx, load=False)).success
    verdicts, _ = s.lookup_all(keys, ctx)
    assert verdicts == [HIT] * 6
    server.boto3().delete_object(Bucket=made_bucket, Key=PREFIX + keys[3].hex())

    result = s.wait_job(s.submit(keys, range(20, 26), ctx, load=True))
    assert not result.success and list(result.successful_keys) == keys[:3]
    for j in range(3):
        assert np.array_equal(s.primary[20 + j], data[j])
    assert (s.primary[23:26] == SENTINEL).all()  # nothing written past the missing chunk
    # At once, without a probe: the keys that did not load are MISS for this request, so
    # the scheduler does not ask for them again (no livelock); the loaded ones stay HIT.
    assert [s.lookup(k, ctx) for k in keys] == [HIT] * 3 + [MISS] * 3
    # A new request probes again: key 3 is gone, 4 and 5 are there.
    verdicts, _ = s.lookup_all(keys, s.new_request("p2"))
    assert verdicts == [HIT] * 3 + [MISS, HIT, HIT]
    s.tier.shutdown()


def test_an_object_of_another_size_is_a_miss(server, made_bucket):
    # The gateway refuses a probe naming a shape a present object does not have (400): the
    # tier answers MISS for the probe's keys, never HIT, and never RETRY for ever.
    s = scheduler(server, made_bucket)
    key = new_keys(1)[0]
    server.boto3().put_object(Bucket=made_bucket, Key=PREFIX + key.hex(), Body=b"x" * 100)
    verdicts, _ = s.lookup_all([key], s.new_request("z"))
    assert verdicts == [MISS]
    s.tier.shutdown()


def test_stalled_gateway_lookup_goes_retry_then_miss_by_the_deadline():
    stalled = StalledGateway()
    deadline = 0.3
    s = Scheduler(tier_config(stalled.endpoint, "stalled-bucket", "AK", "SK",
                              lookup_deadline_s=deadline, probe_timeout_s=5.0))
    keys = new_keys(4)
    ctx = s.new_request("s")
    t0 = time.monotonic()
    verdicts, first = s.lookup_all(keys, ctx, deadline_s=10.0)
    elapsed = time.monotonic() - t0
    assert first == [RETRY] * 4 and verdicts == [MISS] * 4
    assert deadline <= elapsed < deadline + 2.0
    # Keys asked while the stalled probe is still in flight are MISS by their own deadline.
    more = new_keys(2)
    verdicts, first = s.lookup_all(more, ctx, deadline_s=10.0)
    assert first == [RETRY] * 2 and verdicts == [MISS] * 2
    # A load from the stalled gateway is not reported while its request runs (it could
    # still write into the slots); once the gateway drops the connection it is reported
    # once, failed, with no key loaded, and its keys are MISS for the request.
    job = s.submit(keys, range(4), ctx, load=True)
    for _ in range(50):
        s.step()
    assert job not in s.results and s.tier.has_pending_work()
    stalled.close()
    result = s.wait_job(job, deadline_s=15.0)
    assert not result.success and list(result.successful_keys) == []
    assert (s.primary[:4] == SENTINEL).all()
    assert [s.lookup(k, ctx) for k in keys] == [MISS] * 4
    worst = max(t for name, t in s.timings if name in ("lookup", "on_schedule_end",
                                                        "get_finished_jobs", "submit_load"))
    print(f"slowest scheduler-path call with the gateway stalled: {worst * 1e3:.3f} ms")
    s.tier.shutdown()


def test_a_stalled_probe_is_given_up_and_the_next_goes_out(server, made_bucket):
    """A gateway that stalls and recovers: the probe that hung ends after probe_timeout_s
    (given up, or timed out by its client) and the next step's probe answers."""
    stalled = StalledGateway()
    s = Scheduler(tier_config(stalled.endpoint, made_bucket, server.access_key,
                              server.secret_key, prefix=PREFIX, layers=4, lookup_deadline_s=2.0,
                              probe_timeout_s=0.5))
    keys = new_keys(2)
    ctx = s.new_request("g")
    verdicts, _ = s.lookup_all(keys, ctx, deadline_s=10.0)
    assert verdicts == [MISS] * 2
    # The gateway comes back at the tier's endpoint: point the tier's config at the real
    # one (what a restarted gateway behind the same address looks like to the tier). The
    # stalled probe either was given up (its client dropped) or ended first by the client's
    # own timeout, which equals probe_timeout_s (its client kept, still aimed at the stalled
    # address): which one is a race, and both are right. Behind the same address a kept
    # client reconnects; here it is dropped so the next probe goes to the new address.
    s.tier._cfg["endpoint"] = server.endpoint
    s.tier._probe_client = None
    writer = scheduler(server, made_bucket)
    fill(writer, [0, 1], seed=6)
    assert writer.wait_job(writer.submit(keys, [0, 1], writer.new_request("w"),
                                         load=False)).success
    verdicts, _ = s.lookup_all(keys, s.new_request("g2"), deadline_s=10.0)
    assert verdicts == [HIT] * 2
    stalled.close()
    s.tier.shutdown()
    writer.tier.shutdown()


def test_drain_jobs_waits_for_transfers_in_flight_and_aborts_none(server, made_bucket):
    s = Scheduler(tier_config(server.endpoint, made_bucket, server.access_key,
                              server.secret_key, prefix=PREFIX, layers=8),
                  slots=64, slot_bytes=256 << 10)
    keys = new_keys(24)
    data = fill(s, range(24), seed=5)
    ctx = s.new_request("d")
    store = s.submit(keys, range(24), ctx, load=False)
    assert s.tier.has_pending_work()
    s.tier.drain_jobs()  # the store has ended here: the next poll reports it
    s.step()
    assert s.results[store].success
    load = s.submit(keys, range(32, 56), ctx, load=True)
    s.tier.drain_jobs()
    for j in range(24):  # every byte is there before any poll: nothing was cut short
        assert np.array_equal(s.primary[32 + j], data[j]), f"slot {32 + j}"
    s.step()
    assert s.results[load].success and s.results[load].successful_keys is None
    assert not s.tier.has_pending_work()
    s.tier.shutdown()
