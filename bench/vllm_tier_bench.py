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
The stalled part steps the scheduler for the client's timeout and a little more, then drops
the stalled connections (as tests/integration/integrations/test_vllm_tier.py does), so the
load ends whether or not the client's own timeout ended it (`load_ended_by_timeout` says which).

    bench/vllm_tier_bench.py --build build/release [--out FILE.json]
                             [--profile smallest|reduced|full] [--smallest]
                             [--slots N] [--slot-bytes S] [--rounds R] [--deadline SECONDS]

Also bench/run-all's experiment 15 (run_bench with PROFILES[profile]); writes FILE.json and
FILE.png when --out is given.
"""
import argparse
import json
import os
import shutil
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
TARGET_US = 1000  # issue 32: each scheduler-path call <= 1 ms
# The stalled client's request timeout: the load is given this long (and STALL_GRACE_S more)
# to fail by itself before the stalled gateway drops its connections.
STALL_TIMEOUT_S = 1.0
STALL_GRACE_S = 1.0

# Per bench/run-all profile (experiment 15): chunks per load, bytes per chunk, load rounds,
# the lookup deadline in the stalled part.
PROFILES = {
    "smallest": {"slots": 8, "slot_bytes": 16 << 10, "rounds": 2, "deadline": 0.5},
    "reduced": {"slots": 128, "slot_bytes": 256 << 10, "rounds": 10, "deadline": 0.5},
    "full": {"slots": 256, "slot_bytes": 256 << 10, "rounds": 30, "deadline": 0.5},
}
PLANNED_S = {"smallest": 10, "reduced": 40, "full": 90}


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


def run(cfg, endpoint):
    from vllm_scheduler import Scheduler, tier_config
    from integ_util import StalledGateway
    from vllm.v1.kv_offload.base import LookupResult

    n, s, rounds = cfg["slots"], cfg["slot_bytes"], cfg["rounds"]
    result = {}
    tier_cfg = tier_config(endpoint, "tier-bench", ACCESS, SECRET, prefix="bench/", layers=8)
    sched = Scheduler(tier_cfg, slots=2 * n + 64, slot_bytes=s)
    sched.tier._client(False).create_bucket("tier-bench")
    stored = keys(n)
    sched.primary[:n] = np.random.default_rng(0).integers(0, 256, (n, s), dtype=np.uint8)
    ctx = sched.new_request("bench")
    sched.wait_job(sched.submit(stored, range(n), ctx, load=False), deadline_s=300)
    verdicts, _ = sched.lookup_all(stored, ctx)
    assert verdicts == [LookupResult.HIT] * n

    sched.timings = []  # idle: known verdicts, nothing in flight
    for _ in range(rounds):
        for k in stored:
            sched.lookup(k, ctx)
        sched.step()
    result["idle"] = summary(sched.timings)

    sched.timings = []  # loading: a large load in flight while the scheduler steps
    loads = 0
    for r in range(rounds):
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

    stalled = StalledGateway()  # stalled: RETRY then MISS by the deadline, a load fails
    sched = Scheduler(tier_config(stalled.endpoint, "stalled", "AK", "SK",
                                  lookup_deadline_s=cfg["deadline"], timeout_s=STALL_TIMEOUT_S,
                                  probe_timeout_s=5.0), slots=64, slot_bytes=s)
    try:
        ctx = sched.new_request("stalled")
        t0 = time.monotonic()
        verdicts, first = sched.lookup_all(keys(32), ctx, deadline_s=30)
        to_miss = time.monotonic() - t0
        job = sched.submit(keys(8), range(8), ctx, load=True)
        # The scheduler keeps stepping while the load hangs; the client's timeout may end it.
        end = time.monotonic() + STALL_TIMEOUT_S + STALL_GRACE_S
        while job not in sched.results and time.monotonic() < end:
            sched.step()
            time.sleep(0.001)
        by_timeout = job in sched.results
        stalled.close()  # a gateway that drops its connections ends the load in any case
        failed = not sched.wait_job(job, deadline_s=30).success
    finally:
        stalled.close()
        sched.tier.shutdown()
    result["stalled"] = summary(sched.timings)
    result["stalled"]["lookup_retry_to_miss_s"] = round(to_miss, 4)
    result["stalled"]["deadline_s"] = cfg["deadline"]
    result["stalled"]["verdicts"] = sorted({v.name for v in verdicts})
    result["stalled"]["load_failed"] = failed
    result["stalled"]["load_ended_by_timeout"] = by_timeout
    calls = [c for sc in result.values() for c in sc.values()
             if isinstance(c, dict) and "p99_us" in c]
    p99 = max(c["p99_us"] for c in calls)
    worst = max(c["max_us"] for c in calls)
    result["target"] = {"each_call_le_us": TARGET_US, "worst_p99_us": p99, "worst_max_us": worst,
                        "p99_met": p99 <= TARGET_US}
    return result


def run_bench(cfg, build):
    """The three situations against a fresh `objectcache serve`; the result document (bench/
    run-all's experiment 15 and main())."""
    build = os.path.abspath(build)
    path = os.path.join(ROOT, "tests", "integration", "integrations")
    if path not in sys.path:
        sys.path.insert(0, path)
    os.environ.setdefault("OC_PYTHON_DIR", os.path.join(build, "python"))
    tmp = tempfile.mkdtemp(prefix="oc-tier-bench-")
    proc, endpoint = start_server(build, tmp)
    try:
        result = run(cfg, endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    return dict(result, config=cfg, commands=[
        f"bench/vllm_tier_bench.py --build {build} --slots {cfg['slots']} --slot-bytes "
        f"{cfg['slot_bytes']} --rounds {cfg['rounds']} --deadline {cfg['deadline']} (against "
        "objectcache serve on a free port, and a stalled listener)"])


SITUATIONS = ("idle", "loading", "stalled")


def markdown(e):
    """Report text and one-line finding (bench/run-all's experiment 15)."""
    lines = ["| situation | call | count | p50 µs | p99 µs | max µs |",
             "| --- | --- | --- | --- | --- | --- |"]
    for sit in SITUATIONS:
        for name, c in sorted(e[sit].items()):
            if isinstance(c, dict) and "p99_us" in c:
                lines.append(f"| {sit} | {name} | {c['count']} | {c['p50_us']:.0f} | "
                             f"{c['p99_us']:.0f} | {c['max_us']:.0f} |")
    st = e["stalled"]
    loads = e["loading"].get("loads", {})
    lines += ["", f"Loads in the loading part: {loads.get('count', 0)} of "
              f"{loads.get('bytes_each', 0) / 2**20:.1f} MiB, seconds each "
              f"{loads.get('load_s', [])}. Stalled gateway: lookups RETRY then "
              f"{'/'.join(st['verdicts'])} after {st['lookup_retry_to_miss_s']:.2f} s "
              f"(deadline {st['deadline_s']} s); the load failed: {st['load_failed']} "
              f"({'by the client timeout' if st['load_ended_by_timeout'] else 'once the connection dropped'})."]
    t = e["target"]
    finding = (f"Slowest scheduler-path call p99 {t['worst_p99_us']:.0f} µs, max "
               f"{t['worst_max_us']:.0f} µs (target each call <= {t['each_call_le_us']} µs: "
               f"{'met' if t['p99_met'] else 'not met'} at p99).")
    return "\n".join(lines), finding


def plot(e, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [(f"{sit}\n{name}", c["p50_us"], c["p99_us"]) for sit in SITUATIONS
            for name, c in sorted(e[sit].items()) if isinstance(c, dict) and "p99_us" in c]
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.8), 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r[1] for r in rows], 0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], [r[2] for r in rows], 0.4, label="p99")
    ax.axhline(e["target"]["each_call_le_us"], color="red", linestyle="--", label="target 1 ms")
    ax.set_xticks(list(xs), [r[0] for r in rows], fontsize=7, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("µs per call")
    ax.set_title("vLLM secondary tier: scheduler-path calls")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="FILE.json (and FILE.png); default: stdout only")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="reduced")
    ap.add_argument("--smallest", action="store_true", help="seconds, figures meaningless")
    ap.add_argument("--slots", type=int, help="chunks per load")
    ap.add_argument("--slot-bytes", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--deadline", type=float, help="lookup deadline in the stalled part")
    args = ap.parse_args()
    cfg = dict(PROFILES["smallest" if args.smallest else args.profile])
    for key in ("slots", "slot_bytes", "rounds", "deadline"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    result = dict(run_bench(cfg, args.build), machine=common.machine(),
                  load_average=common.load_average())
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        plot(result, os.path.splitext(args.out)[0] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
