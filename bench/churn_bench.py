#!/usr/bin/python3
"""churn_bench: a cache bucket under prefix churn, offline and online (issue 31, "A churn
benchmark"; run-all experiment 14).

Offline: cache_churn_bench replays the seeded multi-tenant prefix workload (bench/cache_churn/)
against chain-aware, chain-aware-nolink, LRU, FIFO and Belady eviction at 10 / 33 / 66% of the
working set and at the online capacity. Online: cache_churn_online_bench drives `objectcache
serve` with the same trace (descriptor GET of each chain over HTTP, descriptor PUT of what
missed; sizes divided by `byte_scale`) into (a) a cache bucket of `capacity` x the working set
with `eviction_batch_bytes` = `batch_share` x that, and (b) a plain bucket (no cache layer:
unbounded), alternating (a b, then b a, ...) `reps` times, on the embedded RocksDB store and on
RADOS (a throw-away memstore cluster from tools/ceph-test-cluster; one server; the pool is
purged between phases). Each phase is a fresh server. During bounded phases a sampler reads
/stats every `sample_s`: used, evicting, dead bytes, evicted bytes and admitted_bytes_peak (the
largest stored + in-flight bytes any admission saw: an upper bound on what the bucket ever held).

Checked, per bounded phase: the bucket's bytes never went above the high watermark plus one
eviction batch (the sampled used + evicting and the admitted peak), no request failed and every
delivered slice held the bytes stored. Reported per backend: requests/s, descriptor GET and PUT
ops/s, MB/s and p99, bounded against unbounded (issue 31's target: within 10%), the online
prefix hit ratio after the first drift period beside the offline simulation's at that capacity,
dead bytes, turnovers (bytes PUT / capacity) and the server's CPU per request.

  bench/churn_bench.py [--build build/release] [--out PREFIX] [--profile reduced]

Writes PREFIX.json and PREFIX.png (default bench/results/<date>/14-cache-churn).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
from common import (BENCH, CLUSTER, ROOT, Say, cpu_seconds, load_average, median,  # noqa: E402
                    portable, run, serve, stop)

ACCESS_KEY = "OCBENCHACCESSKEY0001"
SECRET_KEY = "ocBenchSecretKey000000000000000000000001"
BUCKET = "churn"
POLICIES = ["chain-aware", "chain-aware-nolink", "lru", "fifo", "belady"]
TARGET_RATIO = 0.10  # issue 31: bounded within 10% of unbounded

PROFILES = {
    "smallest": {"seed": 1, "requests": 300, "documents": 60, "byte_scale": 64, "layers": 4,
                 "clients": 2, "capacity": 0.33, "batch_share": 0.05, "reps": 1,
                 "sample_s": 0.1, "backends": ["rocksdb", "rados"],
                 "offline_capacities": [0.1, 0.33, 0.66]},
    "reduced": {"seed": 1, "requests": 1500, "documents": 600, "byte_scale": 16, "layers": 4,
                "clients": 4, "capacity": 0.33, "batch_share": 0.05, "reps": 2,
                "sample_s": 0.1, "backends": ["rocksdb", "rados"],
                "offline_capacities": [0.1, 0.33, 0.66]},
    "full": {"seed": 1, "requests": 3000, "documents": 600, "byte_scale": 16, "layers": 4,
             "clients": 4, "capacity": 0.33, "batch_share": 0.05, "reps": 3,
             "sample_s": 0.1, "backends": ["rocksdb", "rados"],
             "offline_capacities": [0.1, 0.33, 0.66]},
}
PLANNED_S = {"smallest": 60, "reduced": 480, "full": 1500}


class Sampler(threading.Thread):
    """Reads the cache bucket's figures from /stats every `every` seconds until halted, and
    once more then."""

    def __init__(self, url, every):
        super().__init__(daemon=True)
        self.url, self.every = url, every
        self.halt = threading.Event()
        self.samples = []  # (unix seconds, {figure: value})
        self.high_ppm = None

    def sample(self):
        try:
            with urllib.request.urlopen(self.url + "/stats", timeout=5) as r:
                store = json.load(r)["store"]
        except (OSError, ValueError, KeyError):
            return
        p = f"cache.{BUCKET}."
        self.high_ppm = store.get("cache.high_watermark_ppm", self.high_ppm)
        self.samples.append((time.time(), {k[len(p):]: v for k, v in store.items()
                                           if k.startswith(p)}))

    def run(self):
        while not self.halt.wait(self.every):
            self.sample()
        self.sample()

    def finish(self):
        self.halt.set()
        self.join()


def offline(cfg, build, log_dir, progress, tmp):
    """cache_churn_bench on the online trace; (its JSON, the command)."""
    caps = sorted(set(cfg["offline_capacities"]) | {cfg["capacity"]})
    js = os.path.join(tmp, "offline.json")
    cmd = [os.path.join(build, "bench", "cache_churn_bench"), "--seed", str(cfg["seed"]),
           "--requests", str(cfg["requests"]), "--documents", str(cfg["documents"]),
           "--capacities", ",".join(str(c) for c in caps), "--policies", ",".join(POLICIES),
           "--index-entries", "0", "--json", js]
    run(cmd, log_dir, "cache_churn_bench", progress, timeout=1800)
    return json.load(open(js)), cmd


def online_cmd(cfg, build, url, js):
    return [os.path.join(build, "bench", "cache_churn_online_bench"), "--endpoint", url,
            "--bucket", BUCKET, "--seed", str(cfg["seed"]), "--requests", str(cfg["requests"]),
            "--documents", str(cfg["documents"]), "--byte-scale", str(cfg["byte_scale"]),
            "--layers", str(cfg["layers"]), "--clients", str(cfg["clients"]), "--json", js]


def phase(cfg, build, backend, mode, rep, sizes, ceph_conf, log_dir, progress, tmp):
    """One fresh server, one replay of the trace; the row (and the command)."""
    name = f"{backend}-{mode}-r{rep}"
    root = os.path.join(tmp, name)
    os.makedirs(root)
    toml = ""
    if backend == "rados":
        toml += (f'[storage]\nbackend = "rados"\n[rados]\nconf_file = "{ceph_conf}"\n'
                 f'client_name = "client.admin"\npool = "oc-test"\nnamespace = "{name}"\n')
    if mode == "bounded":
        toml += (f"[cache]\nbuckets = {{ {BUCKET} = {sizes['capacity']} }}\n"
                 f"eviction_batch_bytes = {sizes['batch']}\n")
    env = dict(os.environ, OC_ACCESS_KEY=ACCESS_KEY, OC_SECRET_KEY=SECRET_KEY)
    proc, url = serve(build, root, "server", toml, env)
    sampler = Sampler(url, cfg["sample_s"]) if mode == "bounded" else None
    js = os.path.join(root, "online.json")
    cmd = online_cmd(cfg, build, url, js)
    try:
        if sampler:
            sampler.start()
        cpu0 = cpu_seconds(proc.pid)
        run(cmd, log_dir, name, progress, timeout=3600,
            env=dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY))
        server_cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        if sampler:
            sampler.finish()
        stop(proc)
        shutil.copy(os.path.join(root, "server.log"), os.path.join(log_dir, name + "-server.log"))
    o = json.load(open(js))
    shutil.rmtree(root, ignore_errors=True)
    requests = o["config"]["requests"]
    row = {"backend": backend, "mode": mode, "rep": rep, "wall_s": o["wall_s"],
           "requests": requests, "requests_per_s": o["requests_per_s"],
           "get": o["get"], "put": o["put"], "hit_ratio": o["hit"]["hit_ratio"],
           "hit_ratio_steady": o["hit"]["hit_ratio_steady"], "failed": o["failed"],
           "errors": o["errors"], "check_failures": o["check_failures"],
           "slowdown_retries": o["slowdown_retries"], "server_cpu_s": server_cpu,
           "server_cpu_ms_per_request": 1e3 * server_cpu / requests,
           "workload": o["workload"], "listed_at_end": o["listed_at_end"]}
    if sampler:
        row.update(bounded_figures(sampler, sizes, o))
    return row, cmd


def bounded_figures(sampler, sizes, o):
    """The bounded phase's /stats figures: the series, the maxima and the bound check."""
    cap, batch = sizes["capacity"], sizes["batch"]
    high = (sampler.high_ppm or 900_000) / 1e6
    bound = int(high * cap) + batch
    t0 = o["started_unix_s"]
    series = [[round(t - t0, 3), f.get("used_bytes", 0), f.get("evicting_bytes", 0),
               f.get("dead_bytes", 0)] for t, f in sampler.samples]
    last = sampler.samples[-1][1] if sampler.samples else {}
    stored_max = max((u + e for _, u, e, _ in series), default=0)
    peak = last.get("admitted_bytes_peak")
    requested = last.get("chunks_requested_total", 0)
    return {"capacity_bytes": cap, "batch_bytes": batch, "high_watermark": high,
            "bound_bytes": bound, "samples": len(series), "stored_max_sampled": stored_max,
            "admitted_peak": peak, "bound_held": stored_max <= bound and
            (peak is None or peak <= bound),
            "capacity_held": stored_max <= cap and (peak is None or peak <= cap),
            "dead_max": max((d for *_, d in series), default=0),
            "dead_listed_at_end": o["listed_at_end"].get("dead_bytes"),
            "evicted_bytes": last.get("evicted_bytes_total", 0),
            "evicted_objects": last.get("evicted_objects_total", 0),
            "evicted_objects_per_s": last.get("evicted_objects_total", 0) / o["wall_s"],
            "eviction_failures": last.get("eviction_failures_total", 0),
            "puts_waited": last.get("puts_waited_total", 0),
            "puts_refused": last.get("puts_refused_total", 0),
            "server_hit_ratio": last.get("chunks_served_total", 0) / requested if requested
            else None,
            "turnovers": o["put"]["bytes"] / cap, "series": series}


def measure(cfg, build, log_dir, progress, tmp, result):
    """Fills result's offline, sizes, rows and commands; raises on a failed step (the rows
    measured before it stay)."""
    doc, cmd = offline(cfg, build, log_dir, progress, tmp)
    result["commands"].append(" ".join(cmd))
    result["offline"] = {"workload": doc["workload"], "rows": doc["rows"],
                         "ratios": doc["ratios"]}
    ws = doc["workload"]["working_set_bytes"] // cfg["byte_scale"]
    cap = int(cfg["capacity"] * ws)
    sizes = {"working_set": ws, "capacity": cap, "batch": max(1, int(cfg["batch_share"] * cap))}
    result["sizes"] = sizes
    for backend in cfg["backends"]:
        ceph = os.path.join(tmp, "ceph") if backend == "rados" else None
        if ceph:
            up = [CLUSTER, "up", ceph]
            run(up, log_dir, "cluster-up", progress, timeout=600)
            result["commands"].append(" ".join(up))
        try:
            for rep in range(cfg["reps"]):
                modes = ["bounded", "unbounded"] if rep % 2 == 0 else ["unbounded", "bounded"]
                for mode in modes:
                    conf = os.path.join(ceph, "ceph.conf") if ceph else None
                    row, cmd = phase(cfg, build, backend, mode, rep, sizes, conf, log_dir,
                                     progress, tmp)
                    result["rows"].append(row)
                    shown = " ".join(cmd[:2] + ["<objectcache serve>"] + cmd[3:-1] + ["<json>"])
                    if shown not in result["commands"]:
                        result["commands"].append(shown)
                    if ceph:  # the next phase starts on an empty pool (memstore holds it in RAM)
                        run(["rados", "-c", conf, "purge", "oc-test",
                             "--yes-i-really-really-mean-it"], log_dir, "purge", progress,
                            timeout=300, quiet=True)
        finally:
            if ceph:
                subprocess.run([CLUSTER, "down", ceph], capture_output=True, timeout=300)


def offline_hit(result, policy, fraction):
    for r in result.get("offline", {}).get("rows", []):
        if r["policy"] == policy and abs(r["capacity_fraction"] - fraction) < 1e-9:
            return r["hit_ratio_steady"]
    return None


def summarize(result, cfg):
    out = []
    for backend in cfg["backends"]:
        rs = {m: [r for r in result["rows"] if r["backend"] == backend and r["mode"] == m]
              for m in ("bounded", "unbounded")}
        if not rs["bounded"] or not rs["unbounded"]:
            continue
        s = {"backend": backend, "reps": len(rs["bounded"])}
        for key, get in (("requests_per_s", lambda r: r["requests_per_s"]),
                         ("get_ops_per_s", lambda r: r["get"]["ops_per_s"]),
                         ("put_ops_per_s", lambda r: r["put"]["ops_per_s"]),
                         ("get_mb_per_s", lambda r: r["get"]["mb_per_s"]),
                         ("put_mb_per_s", lambda r: r["put"]["mb_per_s"]),
                         ("get_p99_ms", lambda r: r["get"]["p99_ms"]),
                         ("put_p99_ms", lambda r: r["put"]["p99_ms"]),
                         ("hit_ratio_steady", lambda r: r["hit_ratio_steady"]),
                         ("server_cpu_ms_per_request", lambda r: r["server_cpu_ms_per_request"])):
            s[key] = {m: median([get(r) for r in rs[m]]) for m in rs}
        ratio = lambda k: s[k]["bounded"] / s[k]["unbounded"] if s[k]["unbounded"] else None
        s["throughput_ratio"] = ratio("requests_per_s")
        s["get_p99_ratio"] = ratio("get_p99_ms")
        s["put_p99_ratio"] = ratio("put_p99_ms")
        s["within_target"] = (s["throughput_ratio"] is not None and
                              s["throughput_ratio"] >= 1 - TARGET_RATIO and
                              all(x is not None and x <= 1 + TARGET_RATIO
                                  for x in (s["get_p99_ratio"], s["put_p99_ratio"])))
        b = rs["bounded"]
        cap = b[0]["capacity_bytes"]
        s["capacity_bytes"] = cap
        s["bound_share"] = b[0]["bound_bytes"] / cap
        s["stored_max_share"] = max(r["stored_max_sampled"] for r in b) / cap
        peaks = [r["admitted_peak"] for r in b if r["admitted_peak"] is not None]
        s["admitted_peak_share"] = max(peaks) / cap if peaks else None
        s["bound_held"] = all(r["bound_held"] for r in b)
        s["capacity_held"] = all(r["capacity_held"] for r in b)
        s["evicted_objects_per_s"] = median([r["evicted_objects_per_s"] for r in b])
        s["dead_max_share"] = max(r["dead_max"] for r in b) / cap
        s["dead_listed_share"] = max((r["dead_listed_at_end"] or 0) for r in b) / cap
        s["turnovers"] = median([r["turnovers"] for r in b])
        s["puts_waited"] = sum(r["puts_waited"] for r in b)
        s["errors"] = sum(r["failed"] + r["check_failures"] for r in b + rs["unbounded"])
        s["offline_hit_ratio_steady"] = {p: offline_hit(result, p, cfg["capacity"])
                                         for p in ("chain-aware", "chain-aware-nolink", "lru")}
        out.append(s)
    return out


def run_churn(cfg, build, log_dir, progress, tmp):
    """The result dict of the churn experiment (rows measured before a failure are kept)."""
    result = {"profile_config": cfg, "target_ratio": TARGET_RATIO, "cores": os.cpu_count(),
              "commands": [], "rows": [], "offline": {}, "sizes": {},
              "load_average_start": load_average()}
    try:
        measure(cfg, build, log_dir, progress, tmp, result)
    except Exception as ex:  # keep the error in the result
        result["error"] = f"{type(ex).__name__}: {ex}"
    result["load_average_end"] = load_average()
    result["summary"] = summarize(result, cfg)
    bad = [f"{r['backend']} {r['mode']} r{r['rep']}" for r in result["rows"]
           if r["failed"] or r["check_failures"]]
    if bad and "error" not in result:
        result["error"] = "requests failed or delivered wrong bytes in: " + ", ".join(bad)
    result["notes"] = notes(cfg, result)
    return result


def notes(cfg, result):
    sz = result.get("sizes") or {}
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    return [
        f"Trace: seed {cfg['seed']}, {cfg['requests']} requests, {cfg['documents']} documents; "
        f"chunk sizes divided by {cfg['byte_scale']}, {cfg['layers']} layers per chunk; "
        + (f"working set {mib(sz['working_set'])}, cache capacity {mib(sz['capacity'])} "
           f"({cfg['capacity']:.0%}), eviction batch {mib(sz['batch'])} "
           f"({cfg['batch_share']:.0%} of it); " if sz else "")
        + f"{cfg['clients']} client threads, descriptor GETs over HTTP.",
        "Unbounded = the same trace into a plain bucket of a server without [cache] (no cache "
        "layer, nothing evicted): the ratio includes the bounded cache's extra misses (more "
        "PUT bytes, fewer GET bytes), not only eviction's own cost.",
        "The online PUT stores chunks M..N-1 and cannot name chunk M-1: the offline "
        "chain-aware-nolink policy is its model; chain-aware (with the link) is the "
        "simulation's figure. Requests run in trace order on concurrent threads, and eviction "
        "runs in the background: the online ratio is not expected to equal the simulation's.",
        "Bytes over time are /stats samples (used + evicting bytes); admitted_bytes_peak is "
        "the server's own upper bound over the whole phase.",
        "Dead bytes: /stats' dead_bytes (the index's view: chunks below a chunk it knows is "
        "gone) sampled, and the bucket's listing at the end of the phase against the trace's "
        "chains (present chunks with an absent predecessor, which the index cannot see for "
        "chains no request linked), as a share of capacity.",
    ]


def plot(e, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for r in e["rows"]:
        if r["mode"] == "bounded" and r.get("series"):
            cap = r["capacity_bytes"]
            ax.plot([p[0] for p in r["series"]], [(p[1] + p[2]) / cap for p in r["series"]],
                    label=f"{r['backend']} rep {r['rep']}", lw=1)
    s0 = e["summary"][0] if e["summary"] else None
    if s0:
        high = s0["bound_share"] - (e["sizes"]["batch"] / s0["capacity_bytes"])
        for y, what, style in ((1.0, "capacity", "-"), (high, "high watermark", "--"),
                               (s0["bound_share"], "high + one batch", ":")):
            ax.axhline(y, color="k", ls=style, lw=0.8, label=what)
    ax.set_xlabel("seconds into the phase")
    ax.set_ylabel("used + evicting bytes / capacity")
    ax.set_title("Cache bucket bytes under churn")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    names = [s["backend"] for s in e["summary"]]
    x = range(len(names))
    w = 0.38
    for k, mode in enumerate(("bounded", "unbounded")):
        axes[1].bar([i + (k - 0.5) * w for i in x],
                    [s["requests_per_s"][mode] for s in e["summary"]], w, label=mode)
    axes[1].set_xticks(list(x))
    axes[1].set_xticklabels(names)
    axes[1].set_ylabel("requests/s (GET + PUT of the missed tail)")
    axes[1].set_title("Throughput, median of the repetitions")
    axes[1].legend(fontsize=7)
    labels = [f"{s['backend']}\n{op}" for s in e["summary"] for op in ("GET", "PUT")]
    for k, mode in enumerate(("bounded", "unbounded")):
        vals = [s[f"{op}_p99_ms"][mode] for s in e["summary"] for op in ("get", "put")]
        axes[2].bar([i + (k - 0.5) * w for i in range(len(labels))], vals, w, label=mode)
    axes[2].set_xticks(list(range(len(labels))))
    axes[2].set_xticklabels(labels)
    axes[2].set_ylabel("p99 latency, ms")
    axes[2].set_title("Descriptor GET and PUT p99")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def markdown(e):
    """Report text and one-line finding."""
    lines = ["| backend | mode | requests/s | GET ops/s | GET p99 ms | PUT ops/s | PUT MB/s | "
             "PUT p99 ms | hit ratio (steady) | server CPU ms/request |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in e["summary"]:
        for m in ("bounded", "unbounded"):
            lines.append(f"| {s['backend']} | {m} | {s['requests_per_s'][m]:.0f} | "
                         f"{s['get_ops_per_s'][m]:.0f} | {s['get_p99_ms'][m]:.1f} | "
                         f"{s['put_ops_per_s'][m]:.0f} | {s['put_mb_per_s'][m]:.1f} | "
                         f"{s['put_p99_ms'][m]:.1f} | {s['hit_ratio_steady'][m]:.3f} | "
                         f"{s['server_cpu_ms_per_request'][m]:.2f} |")
    lines += ["", "| backend | max bytes / capacity (sampled) | admitted peak / capacity | "
              "bound (high + batch) | held | dead bytes: index max / listed at end | "
              "turnovers | PUTs waited | evictions/s | offline chain-aware / nolink / LRU |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    finds = []
    for s in e["summary"]:
        off = s["offline_hit_ratio_steady"]
        fmt3 = lambda v: f"{v:.3f}" if v is not None else "-"
        peak = s["admitted_peak_share"]
        lines.append(f"| {s['backend']} | {s['stored_max_share']:.3f} | "
                     f"{fmt3(peak)} | {s['bound_share']:.3f} | "
                     f"{'yes' if s['bound_held'] else 'NO'} | {s['dead_max_share']:.2%} / "
                     f"{s['dead_listed_share']:.2%} | "
                     f"{s['turnovers']:.1f} | {s['puts_waited']} | "
                     f"{s['evicted_objects_per_s']:.0f} | "
                     f"{fmt3(off['chain-aware'])} / {fmt3(off['chain-aware-nolink'])} / "
                     f"{fmt3(off['lru'])} |")
        finds.append(
            f"{s['backend']}: bounded at {s['throughput_ratio']:.2f}x the unbounded requests/s, "
            f"GET p99 {s['get_p99_ratio']:.2f}x, PUT p99 {s['put_p99_ratio']:.2f}x (target "
            f"within {TARGET_RATIO:.0%}: {'met' if s['within_target'] else 'not met'}); bytes "
            f"{'held' if s['capacity_held'] else 'NOT held'} under the capacity and "
            f"{'held' if s['bound_held'] else 'NOT held'} under high + one batch (max "
            f"{max(s['stored_max_share'], peak or 0):.3f} of capacity, "
            f"{s['puts_waited']} PUTs waited); online hit "
            f"{s['hit_ratio_steady']['bounded']:.3f} vs offline chain-aware "
            f"{fmt3(off['chain-aware'])}")
    if e.get("error"):
        finds.append(f"error: {e['error']}")
    return "\n".join(lines), "; ".join(finds) + "." if finds else "Nothing was measured."


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="prefix of the JSON and PNG")
    ap.add_argument("--profile", default="reduced", choices=sorted(PROFILES))
    a = ap.parse_args()
    out = a.out or os.path.join(BENCH, "results", datetime.date.today().isoformat(),
                                "14-cache-churn")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-churn-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    e = run_churn(PROFILES[a.profile], os.path.abspath(a.build), log_dir, Say(), tmp)
    e["profile"] = a.profile
    with open(out + ".json", "w") as f:
        json.dump(portable(e, tmp), f, indent=1)
    plot(e, out + ".png")
    text, finding = markdown(e)
    print(text + "\n\n" + finding)
    print(f"wrote {out}.json, {out}.png (tool logs in {log_dir})", file=sys.stderr)
    return 1 if e.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
