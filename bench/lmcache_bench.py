#!/usr/bin/python3
"""lmcache_bench (issue 32): ObjectCache's LMCache native_plugin L2 connector
(objectcache.integrations.lmcache) against the same gateway driven the way LMCache's own S3 L2
adapter drives S3, in the same run, against one `objectcache serve` (RocksDB).

Benchmarks:
  get     a batch load of N = 256 chunks of C bytes, for each C in --sizes:
          plugin    submit_batch_get of the 256 keys, waited for the way LMCache's wrapper
                    waits (tests/integration/pyclient/lmcache_standin.py: poll() on the
                    eventfd, drain_completions(), future ids): one descriptor GET, chunk j
                    read straight into buffer j
          per-key   what S3L2Adapter does (docs/integrations.md, section 1): one GET per key,
                    the whole batch in flight at once (asyncio.gather over awscrt, 64 I/O
                    threads by default). Here liboc_client's plain GetObject into each buffer
                    (objectcache.Client.get_object_into, GIL released) from K threads, for K
                    in --conc; the best K is the baseline. awscrt is not used: a C++ client
                    per request is no slower than awscrt driven from asyncio, so the ratio is
                    if anything understated.
          Reported: median ms per batch of --repeat batches (after one warm-up), GB/s, and
          ratio = per-key ms / plugin ms (target >= 5).
  exists  16 threads, each submitting submit_batch_exists of its own 256 keys (half of them
          stored) in a closed loop for --seconds, through one connector and one stand-in:
          p50 / p99 ms from submit to the routed result (target p50 <= 2 ms), with batches
          waiting together merged into one probe (the default) and each probed alone,
          alternated. Both benchmarks report CPU per batch of the server and of this process.

    bench/lmcache_bench.py --build build/release [--out PREFIX] [--profile full|reduced|smallest]
                           [--quick] [--sizes B,...] [--conc K,...] [--repeat R] [--seconds S]

Writes PREFIX.json (also printed) and PREFIX.png (default bench/results/<date>/lmcache).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "pyclient"))
import common  # noqa: E402

ACCESS, SECRET = "LMBENCHACCESSKEY0001", "lmBenchSecretKey000000000000000000000001"
BUCKET = "lmcache"
CHUNKS = 256
SIZES = [16 << 10, 64 << 10, 256 << 10, 1 << 20]
CONC = [8, 64]
CONFIG = '[storage]\nblock_cache_bytes = "2GiB"\n'


def start_server(build, tmp):
    port = common.free_port()
    conf = os.path.join(tmp, "objectcache.toml")
    with open(conf, "w") as f:
        f.write(CONFIG)
    env = dict(os.environ, OC_ACCESS_KEY=ACCESS, OC_SECRET_KEY=SECRET)
    log = open(os.path.join(tmp, "server.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "gateway", "objectcache"), "serve", "--config",
                             conf, "--data-dir", os.path.join(tmp, "data"), "--listen",
                             f"127.0.0.1:{port}"], env=env, stdout=log, stderr=log)
    endpoint = f"http://127.0.0.1:{port}"
    if not common.wait_healthy(endpoint, proc):
        raise SystemExit("objectcache serve did not start (see its log)")
    return proc, endpoint


def proc_cpu_s(pid):
    """User + system CPU seconds of process `pid` so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def op_stats(endpoint, op):
    """(requests, summed latency in µs) of gateway operation `op` so far (/stats)."""
    import urllib.request
    with urllib.request.urlopen(endpoint + "/stats", timeout=10) as r:
        ops = json.loads(r.read())["operations"]
    o = ops.get(op, {"requests": 0, "latency_us": {"mean": 0}})
    return o["requests"], o["requests"] * o["latency_us"]["mean"]


class Meter:
    """CPU of the server and of this (the bench's) process, and the gateway's own latency of
    one operation, between start() and stop(): where a batch's time goes."""

    def __init__(self, endpoint, pid, op):
        self.endpoint, self.pid, self.op = endpoint, pid, op

    def start(self):
        t = os.times()
        self.server0 = proc_cpu_s(self.pid)
        self.client0 = t.user + t.system
        self.ops0 = op_stats(self.endpoint, self.op)

    def stop(self, batches):
        t = os.times()
        server = proc_cpu_s(self.pid) - self.server0
        client = t.user + t.system - self.client0
        n, lat = op_stats(self.endpoint, self.op)
        requests = n - self.ops0[0]
        return {"batches": batches, "server_cpu_ms_per_batch": server * 1e3 / max(batches, 1),
                "bench_cpu_ms_per_batch": client * 1e3 / max(batches, 1),
                "gateway_requests_per_batch": requests / max(batches, 1),
                "gateway_ms_per_request_mean": (lat - self.ops0[1]) / 1e3 / max(requests, 1)}


def keys_for(tag, n):
    return [f"bench/Llama-3.1-8B@00000000@0@{tag}{j:056x}" for j in range(n)]


def bench_get(oc, lmc, standin_mod, endpoint, pid, size, repeat, conc):
    import numpy as np
    keys = keys_for(f"g{size:x}", CHUNKS)
    data = [np.random.default_rng(j).integers(0, 256, size, dtype=np.uint8)
            for j in range(CHUNKS)]
    conn = lmc.ObjectCacheL2Connector(endpoint=endpoint, access_key=ACCESS, secret_key=SECRET,
                                      bucket=BUCKET)
    s = standin_mod.NativeConnectorStandIn(conn)
    try:
        if s.store(keys, [memoryview(d) for d in data]) is not True:
            raise SystemExit("storing the chunks failed")
        outs = [np.empty(size, dtype=np.uint8) for _ in range(CHUNKS)]
        views = [memoryview(o) for o in outs]
        plugin = []
        meter = Meter(endpoint, pid, "GetObjectCache")
        for i in range(repeat + 1):
            if i == 1:
                meter.start()
            t0 = time.perf_counter()
            got = s.load(keys, views)
            t = time.perf_counter() - t0
            if got != [True] * CHUNKS:
                raise SystemExit(f"plugin load missed {got.count(False)} keys")
            if i > 0:
                plugin.append(t)
        plugin_cpu = meter.stop(repeat)
        if not all(np.array_equal(o, d) for o, d in zip(outs, data)):
            raise SystemExit("plugin load delivered wrong bytes")
        load_stats = conn.stats()["get"]
    finally:
        s.close()
    client = oc.Client(endpoint, ACCESS, SECRET, requests_in_flight=max(conc))
    per_key = {}
    per_key_cpu = {}
    try:
        for k in conc:
            with concurrent.futures.ThreadPoolExecutor(k) as pool:
                times = []
                meter = Meter(endpoint, pid, "GetObject")
                for i in range(repeat + 1):
                    if i == 1:
                        meter.start()
                    t0 = time.perf_counter()
                    n = list(pool.map(lambda j: client.get_object_into(BUCKET, keys[j], outs[j]),
                                      range(CHUNKS)))
                    t = time.perf_counter() - t0
                    if n != [size] * CHUNKS:
                        raise SystemExit("a per-key GET returned a short object")
                    if i > 0:
                        times.append(t)
                per_key_cpu[str(k)] = meter.stop(repeat)
            per_key[k] = statistics.median(times)
    finally:
        client.close()
    best_k = min(per_key, key=per_key.get)
    p = statistics.median(plugin)
    payload = CHUNKS * size
    return {"chunk_bytes": size, "chunks": CHUNKS, "payload_bytes": payload,
            "plugin_ms": p * 1e3, "plugin_gbps": payload / p / 1e9,
            "plugin_ms_all": [t * 1e3 for t in plugin],
            "plugin_seconds_total_stats": load_stats["seconds_total"],
            "per_key_ms": {str(k): v * 1e3 for k, v in per_key.items()},
            "per_key_best_conc": best_k, "per_key_gbps": payload / per_key[best_k] / 1e9,
            "ratio": per_key[best_k] / p, "plugin_cpu": plugin_cpu, "per_key_cpu": per_key_cpu}


def bench_exists(lmc, standin_mod, endpoint, pid, callers, nkeys, seconds):
    """16 callers, each asking its own nkeys keys (half stored) in a closed loop, through one
    connector: with exists batches that wait together merged into one probe (the default) and
    with every batch probed alone (merge_exists_keys=0), alternated in two rounds each."""
    import numpy as np
    keys = [keys_for(f"e{c:02x}", nkeys) for c in range(callers)]
    expected = [j % 2 == 0 for j in range(nkeys)]
    blob = np.zeros(4096, dtype=np.uint8)
    variants = {"merged": None, "per_batch": 0}  # merge_exists_keys (None: the default)
    lat = {v: [] for v in variants}
    cpu = {v: [] for v in variants}
    lock = threading.Lock()
    for rnd, variant in enumerate(["per_batch", "merged", "per_batch", "merged"]):
        extra = {} if variants[variant] is None else {"merge_exists_keys": variants[variant]}
        conn = lmc.ObjectCacheL2Connector(endpoint=endpoint, access_key=ACCESS,
                                          secret_key=SECRET, bucket=BUCKET, **extra)
        s = standin_mod.NativeConnectorStandIn(conn)
        try:
            if rnd == 0:
                stored = [k for mine in keys for k in mine[::2]]
                if s.store(stored, [memoryview(blob)] * len(stored)) is not True:
                    raise SystemExit("storing the exists keys failed")
            if s.lookup(keys[0]) != expected:
                raise SystemExit("exists answered wrongly")
            stop = time.time() + seconds / 2
            errors = []

            def caller(mine_keys):
                mine = []
                while time.time() < stop:
                    t0 = time.perf_counter()
                    got = s.lookup(mine_keys)
                    mine.append(time.perf_counter() - t0)
                    if got != expected:
                        errors.append("wrong answer")
                        return
                with lock:
                    lat[variant].extend(mine)

            threads = [threading.Thread(target=caller, args=(keys[c],)) for c in range(callers)]
            meter = Meter(endpoint, pid, "GetObjectCache")
            n0 = len(lat[variant])
            meter.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            cpu[variant].append(meter.stop(len(lat[variant]) - n0))
            if errors:
                raise SystemExit(f"exists: {errors[0]}")
        finally:
            s.close()
    out = {}
    for variant, xs in lat.items():
        xs.sort()
        n = sum(c["batches"] for c in cpu[variant])
        merged_cpu = {k: sum(c[k] * c["batches"] for c in cpu[variant]) / max(n, 1)
                      for k in cpu[variant][0] if k != "batches"}
        out[variant] = {"callers": callers, "keys_per_batch": nkeys, "hit_fraction": 0.5,
                        "batches": len(xs), "seconds": seconds,
                        "p50_ms": xs[len(xs) // 2] * 1e3, "p99_ms": xs[int(len(xs) * 0.99)] * 1e3,
                        "max_ms": xs[-1] * 1e3, "batches_per_s": len(xs) / seconds,
                        "cpu": dict(merged_cpu, batches=n)}
    return dict(out["merged"], per_batch=out["per_batch"])


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = result["get"]
    labels = [f"{r['chunk_bytes'] // 1024} KiB" for r in rows]
    xs = range(len(rows))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    a.bar([x - 0.2 for x in xs], [r["plugin_ms"] for r in rows], 0.4, label="native plugin")
    a.bar([x + 0.2 for x in xs], [min(r["per_key_ms"].values()) for r in rows], 0.4,
          label="one GET per key (S3L2Adapter's way)")
    for x, r in zip(xs, rows):
        a.text(x, max(r["plugin_ms"], min(r["per_key_ms"].values())), f"{r['ratio']:.1f}x",
               ha="center", va="bottom")
    a.set_xticks(list(xs), labels)
    a.set_ylabel("ms per batch of 256 chunks (median)")
    a.set_title("batch get")
    a.legend()
    e = result["exists"]
    b.bar(["p50", "p99"], [e["p50_ms"], e["p99_ms"]])
    b.axhline(2.0, color="red", linestyle="--", label="target p50 2 ms")
    b.set_ylabel("ms")
    b.set_title(f"batch exists, {e['callers']} callers x {e['keys_per_batch']} keys")
    b.legend()
    fig.tight_layout()
    fig.savefig(path)


# Per bench/run-all profile (experiment 12): chunk sizes, per-key concurrencies, batches.
PROFILES = {
    "smallest": {"sizes": [64 << 10], "conc": [8], "repeat": 1, "callers": 16,
                 "exists_keys": 256, "seconds": 1.0},
    "reduced": {"sizes": [16 << 10, 64 << 10, 256 << 10], "conc": [8, 64], "repeat": 5,
                "callers": 16, "exists_keys": 256, "seconds": 3.0},
    "full": {"sizes": SIZES, "conc": CONC, "repeat": 9, "callers": 16, "exists_keys": 256,
             "seconds": 10.0},
}
PLANNED_S = {"smallest": 10, "reduced": 40, "full": 120}


def run(cfg, build):
    """Both benchmarks against a fresh `objectcache serve`; the result document."""
    build = os.path.abspath(build)
    if os.path.join(build, "python") not in sys.path:
        sys.path.insert(0, os.path.join(build, "python"))
    import objectcache as oc
    import objectcache.integrations.lmcache as lmc
    import lmcache_standin
    tmp = tempfile.mkdtemp(prefix="oc-lmcache-bench-")
    proc, endpoint = start_server(build, tmp)
    try:
        oc.Client(endpoint, ACCESS, SECRET).create_bucket(BUCKET)
        result = {"benchmark": "lmcache_bench", "config": cfg,
                  "commands": [f"bench/lmcache_bench.py --build {build} (in process, against "
                               "objectcache serve on a free port)"],
                  "targets": {"get_ratio_min": 5.0, "exists_p50_ms_max": 2.0},
                  "get": [bench_get(oc, lmc, lmcache_standin, endpoint, proc.pid, s,
                                    cfg["repeat"], cfg["conc"]) for s in cfg["sizes"]],
                  "exists": bench_exists(lmc, lmcache_standin, endpoint, proc.pid,
                                         cfg["callers"], cfg["exists_keys"], cfg["seconds"])}
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    result["met"] = {"get_ratio": all(r["ratio"] >= 5.0 for r in result["get"]),
                     "exists_p50": result["exists"]["p50_ms"] <= 2.0}
    return result


def markdown(e):
    """Report text and one-line finding (bench/run-all's experiment 12)."""
    lines = ["| chunk | plugin ms | per-key ms (best of conc) | ratio | plugin GB/s |",
             "| --- | --- | --- | --- | --- |"]
    for r in e["get"]:
        lines.append(f"| {r['chunk_bytes'] // 1024} KiB x {r['chunks']} | {r['plugin_ms']:.2f} "
                     f"| {min(r['per_key_ms'].values()):.2f} (conc {r['per_key_best_conc']}) "
                     f"| {r['ratio']:.1f}x | {r['plugin_gbps']:.2f} |")
    lines += ["", "CPU per batch of 256 chunks (ms; server = the gateway process, bench = this "
              "process: the stand-in, the connector or client and their threads):", "",
              "| chunk | plugin server | plugin bench | per-key server | per-key bench |",
              "| --- | --- | --- | --- | --- |"]
    for r in e["get"]:
        pk = r.get("per_key_cpu", {}).get(str(r["per_key_best_conc"]))
        pc = r.get("plugin_cpu")
        if pc and pk:
            lines.append(f"| {r['chunk_bytes'] // 1024} KiB | "
                         f"{pc['server_cpu_ms_per_batch']:.2f} | {pc['bench_cpu_ms_per_batch']:.2f} "
                         f"| {pk['server_cpu_ms_per_batch']:.2f} | "
                         f"{pk['bench_cpu_ms_per_batch']:.2f} |")
    x = e["exists"]
    lines += ["", f"Batch exists, {x['callers']} callers x {x['keys_per_batch']} keys each "
              "(closed loop):", "",
              "| probes | p50 ms | p99 ms | batches/s | server CPU ms/batch | bench CPU ms/batch "
              "| gateway requests/batch | gateway ms/request |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, v in (("merged (default)", x), ("one per batch", x.get("per_batch"))):
        if v and v.get("cpu"):
            c = v["cpu"]
            lines.append(f"| {name} | {v['p50_ms']:.2f} | {v['p99_ms']:.2f} | "
                         f"{v['batches_per_s']:.0f} | {c['server_cpu_ms_per_batch']:.3f} | "
                         f"{c['bench_cpu_ms_per_batch']:.3f} | "
                         f"{c['gateway_requests_per_batch']:.2f} | "
                         f"{c['gateway_ms_per_request_mean']:.2f} |")
    ratios = ", ".join(f"{r['chunk_bytes'] // 1024} KiB {r['ratio']:.1f}x" for r in e["get"])
    finding = (f"Batch get through the plugin vs one GET per key: {ratios} (target >= 5x: "
               f"{'met' if e['met']['get_ratio'] else 'not met'}); exists p50 "
               f"{x['p50_ms']:.2f} ms (target <= 2 ms: "
               f"{'met' if e['met']['exists_p50'] else 'not met'}).")
    return "\n".join(lines), finding


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", choices=sorted(PROFILES), default="full")
    ap.add_argument("--quick", action="store_true", help="the smallest profile")
    ap.add_argument("--sizes", default=None, help="chunk sizes in bytes, comma-separated")
    ap.add_argument("--conc", default=None, help="per-key concurrencies, comma-separated")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="of the exists loop")
    a = ap.parse_args(argv)
    cfg = dict(PROFILES["smallest" if a.quick else a.profile])
    if a.sizes:
        cfg["sizes"] = [int(x) for x in a.sizes.split(",")]
    if a.conc:
        cfg["conc"] = [int(x) for x in a.conc.split(",")]
    if a.repeat:
        cfg["repeat"] = a.repeat
    if a.seconds:
        cfg["seconds"] = a.seconds
    out = a.out or os.path.join(HERE, "results", datetime.date.today().isoformat(), "lmcache")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    result = dict(run(cfg, a.build), machine=common.machine(),
                  load_average=common.load_average())
    with open(out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    plot(result, out + ".png")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
