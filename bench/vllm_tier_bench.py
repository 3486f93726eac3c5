#!/usr/bin/python3
"""vllm_tier_bench (issue 32): how long the vLLM secondary tier's scheduler-path calls take
(objectcache.integrations.vllm), driven by the stand-in scheduler of the adapter tests
(tests/integration/integrations/vllm_scheduler.py), in three situations, one run:
  idle     lookups answered from known verdicts, steps with nothing in flight
  loading  a large load (N slots of S bytes, one descriptor GET) runs while the scheduler
           keeps stepping: fresh lookups (RETRY, one probe per step, then HIT), on_schedule_end,
           get_finished_jobs, submit_store of new chunks
  stalled  the gateway accepts connections and never answers: lookups go RETRY then MISS by
           the deadline, a load is submitted and fails by the client's timeout
For every call: count, p50, p99 and max in microseconds. Target (issue 32): each call <= 1 ms.

    bench/vllm_tier_bench.py --build build/release [--out FILE.json] [--smallest]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
import common  # noqa: E402

ACCESS, SECRET = "TIERBENCHACCESSKEY01", "tierBenchSecretKey00000000000000000000001"


def start_server(build, tmp):
    port = common.free_port()
    env = dict(os.environ, OC_ACCESS_KEY=ACCESS, OC_SECRET_KEY=SECRET)
    log = open(os.path.join(tmp, "server.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "gateway", "objectcache"), "serve",
                             "--data-dir", os.path.join(tmp, "data"), "--listen",
                             f"127.0.0.1:{port}"], env=env, stdout=log, stderr=log)
    endpoint = f"http://127.0.0.1:{port}"
    if not common.wait_healthy(endpoint, proc):
        raise SystemExit("objectcache serve did not start (see its log)")
    return proc, endpoint


def summary(timings):
    calls = {}
    for name, seconds in timings:
        calls.setdefault(name, []).append(seconds * 1e6)
    out = {}
    for name, us in sorted(calls.items()):
        us.sort()
        out[name] = {"count": len(us), "p50_us": round(statistics.median(us), 1),
                     "p99_us": round(us[min(len(us) - 1, int(len(us) * 0.99))], 1),
                     "max_us": round(us[-1], 1)}
    return out


def keys(n):
    return [os.urandom(16) + b"\0\0\0\0" for _ in range(n)]


def run(args, endpoint):
    from vllm_scheduler import Scheduler, tier_config
    from integ_util import StalledGateway
    from vllm.v1.kv_offload.base import LookupResult

    n, s = args.slots, args.slot_bytes
    result = {}
    cfg = tier_config(endpoint, "tier-bench", ACCESS, SECRET, prefix="bench/", layers=8)
    sched = Scheduler(cfg, slots=2 * n + 64, slot_bytes=s)
    sched.tier._client(False).create_bucket("tier-bench")
    stored = keys(n)
    sched.primary[:n] = np.random.default_rng(0).integers(0, 256, (n, s), dtype=np.uint8)
    ctx = sched.new_request("bench")
    sched.wait_job(sched.submit(stored, range(n), ctx, load=False), deadline_s=300)
    verdicts, _ = sched.lookup_all(stored, ctx)
    assert verdicts == [LookupResult.HIT] * n

    sched.timings = []  # idle: known verdicts, nothing in flight
    for _ in range(args.rounds):
        for k in stored:
            sched.lookup(k, ctx)
        sched.step()
    result["idle"] = summary(sched.timings)

    sched.timings = []  # loading: a large load in flight while the scheduler steps
    loads = 0
    for r in range(args.rounds):
        job = sched.submit(stored, range(n, 2 * n), ctx, load=True)
        fresh = sched.new_request(f"fresh-{r}")
        asked = keys(32)
        while job not in sched.results:
            for k in asked:
                sched.lookup(k, fresh)
            sched.step()
        assert sched.results[job].success
        loads += 1
    result["loading"] = summary(sched.timings)
    result["loading"]["loads"] = {"count": loads, "bytes_each": n * s,
                                  "load_s": [round(x[3], 4) for x in sched.tier.load_log][-loads:]}
    sched.tier.shutdown()

    stalled = StalledGateway()  # stalled: RETRY then MISS by the deadline, a load times out
    sched = Scheduler(tier_config(stalled.endpoint, "stalled", "AK", "SK",
                                  lookup_deadline_s=args.deadline, timeout_s=1.0,
                                  probe_timeout_s=5.0), slots=64, slot_bytes=s)
    ctx = sched.new_request("stalled")
    t0 = time.monotonic()
    verdicts, first = sched.lookup_all(keys(32), ctx, deadline_s=30)
    to_miss = time.monotonic() - t0
    job = sched.submit(keys(8), range(8), ctx, load=True)
    sched.wait_job(job, deadline_s=30)
    result["stalled"] = summary(sched.timings)
    result["stalled"]["lookup_retry_to_miss_s"] = round(to_miss, 4)
    result["stalled"]["deadline_s"] = args.deadline
    result["stalled"]["verdicts"] = sorted({v.name for v in verdicts})
    stalled.close()
    sched.tier.shutdown()
    worst = max(c["max_us"] for sc in result.values() for name, c in sc.items()
                if isinstance(c, dict) and "max_us" in c)
    p99 = max(c["p99_us"] for sc in result.values() for name, c in sc.items()
              if isinstance(c, dict) and "p99_us" in c)
    result["target"] = {"each_call_le_us": 1000, "worst_p99_us": p99, "worst_max_us": worst,
                        "p99_met": p99 <= 1000}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="JSON file (default: stdout only)")
    ap.add_argument("--smallest", action="store_true", help="seconds, figures meaningless")
    ap.add_argument("--slots", type=int, default=128, help="chunks per load")
    ap.add_argument("--slot-bytes", type=int, default=256 << 10)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--deadline", type=float, default=0.5)
    args = ap.parse_args()
    if args.smallest:
        args.slots, args.slot_bytes, args.rounds = 8, 16 << 10, 2
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "integrations"))
    os.environ.setdefault("OC_PYTHON_DIR", os.path.join(args.build, "python"))
    tmp = tempfile.mkdtemp(prefix="oc-tier-bench-")
    proc, endpoint = start_server(args.build, tmp)
    try:
        result = run(args, endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    result["config"] = {"slots": args.slots, "slot_bytes": args.slot_bytes,
                        "rounds": args.rounds, "smallest": args.smallest}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
