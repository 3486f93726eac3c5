#!/usr/bin/python3
"""scaling_bench: the same load at 1, 2, 4, ... server threads up to the cores this process may
use (issue 16, "Use every core"), for

  get-64KiB, get-1MiB   wrk against `objectcache serve` (one presigned URL, --conc connections)
  desc-get-1            one client loading a warm prefix by descriptor GETs over UCX shm
  desc-get-16           16 clients at once loading a smaller warm prefix (prefix_clients_bench)
  desc-put              descriptor PUTs of the first prefix (prefix_clients_bench --put-repeat)

At n threads the server runs under `taskset` on n of the usable CPUs, with gateway.io_threads = n;
every other thread count ([kv] assembly_threads, layers_in_flight, data_plane_copy_threads,
descriptor_threads, store_threads) is left at its default, which follows the usable cores
(oc::UsableCores reads the affinity mask), so n is the server's whole share of the machine. The
load generators are not pinned: on a small machine they share the cores with the server, as
noted in the report. Reported per load and n: throughput, throughput per core (÷ n), the gain
over n/2, server CPU seconds, and where throughput stops growing: the first n whose gain over
n/2 is below STOP_GAIN (1.3x).

The usable cores are computed as oc::UsableCores does (common/include/oc/common/cores.h): the
affinity mask, capped by a cgroup CPU quota; --max-threads overrides. Nothing here names a core
count, so the same command runs on 2 cores and on 64.

  bench/scaling_bench.py [--build build/release] [--out PREFIX] [--profile reduced]
                         [--max-threads N]

Writes PREFIX.json and PREFIX.png (default bench/results/<date>/11-scaling); bench/run-all runs
it as experiment 11.
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
from common import BENCH, free_port, portable, run, wait_healthy  # noqa: E402
from presign import Presigner  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
ACCESS_KEY = "OCBENCHACCESSKEY0001"
SECRET_KEY = "ocBenchSecretKey000000000000000000000001"
BUCKET = "prefix-bench"
STOP_GAIN = 1.3  # a doubling that gains less than this has stopped paying
LOADS = ["get-64KiB", "get-1MiB", "desc-get-1", "desc-get-16", "desc-put"]

PROFILES = {
    "smallest": {"wrk_seconds": 1, "conc": 8, "prefix": [8, 32, 64 * KiB], "requests": 1,
                 "small_prefix": [4, 32, 16 * KiB], "clients": 16, "small_requests": 1,
                 "put_repeat": 1, "ucx_tls": "shm"},
    "reduced": {"wrk_seconds": 5, "conc": 16, "prefix": [32, 32, 256 * KiB], "requests": 4,
                "small_prefix": [8, 32, 64 * KiB], "clients": 16, "small_requests": 4,
                "put_repeat": 2, "ucx_tls": "shm"},
    "full": {"wrk_seconds": 10, "conc": 32, "prefix": [64, 32, 256 * KiB], "requests": 8,
             "small_prefix": [16, 32, 64 * KiB], "clients": 16, "small_requests": 8,
             "put_repeat": 3, "ucx_tls": "shm"},
}
PLANNED_S = {"smallest": 40, "reduced": 150, "full": 400}  # per thread count


def planned_s(profile):
    """Planned seconds of a run: per thread count, times the thread counts of this machine."""
    return PLANNED_S[profile] * len(thread_counts(len(usable_cpus())))


def cgroup_quota():
    """The tightest CFS quota (cores) of this process's cgroup and its ancestors, or None."""
    best = None
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2]
        v2 = parts[0] == "0" and parts[1] == ""
        root = "/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/cpu"
        if not v2 and "cpu" not in parts[1].split(","):
            continue
        while True:
            d = os.path.join(root, path.lstrip("/"))
            q = None
            try:
                if v2:
                    f = open(os.path.join(d, "cpu.max")).read().split()
                    if f and f[0] != "max":
                        q = int(f[0]) / int(f[1])
                else:
                    quota = int(open(os.path.join(d, "cpu.cfs_quota_us")).read())
                    period = int(open(os.path.join(d, "cpu.cfs_period_us")).read())
                    if quota > 0 and period > 0:
                        q = quota / period
            except (OSError, ValueError, IndexError):
                pass
            if q is not None:
                best = q if best is None else min(best, q)
            if path in ("", "/"):
                break
            path = os.path.dirname(path.rstrip("/"))
    return best


def usable_cpus():
    """The CPUs this process may run on, as oc::UsableCores counts them (affinity, then the
    cgroup quota rounded up)."""
    cpus = sorted(os.sched_getaffinity(0))
    q = cgroup_quota()
    if q is not None:
        cpus = cpus[:max(1, math.ceil(q))]
    return cpus


def thread_counts(max_threads):
    """1, 2, 4, ... below max_threads, then max_threads itself."""
    out, n = [], 1
    while n < max_threads:
        out.append(n)
        n *= 2
    out.append(max_threads)
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(build, root, cpus, n, tls):
    port = free_port()
    conf = os.path.join(root, f"scaling-{n}.toml")
    with open(conf, "w") as f:
        f.write(f"[gateway]\nio_threads = {n}\nmax_object_bytes = \"4GiB\"\n"
                "[storage]\nblock_cache_bytes = \"2GiB\"\n")
    env = dict(os.environ, OC_ACCESS_KEY=ACCESS_KEY, OC_SECRET_KEY=SECRET_KEY, UCX_TLS=tls)
    log = open(os.path.join(root, f"server-{n}.log"), "ab")
    data = os.path.join(root, f"data-{n}")
    proc = subprocess.Popen(["taskset", "-c", ",".join(map(str, cpus)),
                             os.path.join(build, "gateway", "objectcache"), "serve", "--config",
                             conf, "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
                            env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    if not wait_healthy(url, proc):
        raise RuntimeError("server did not start; see " + log.name)
    return proc, url


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def put_object(url, key, size):
    p = Presigner(url, ACCESS_KEY, SECRET_KEY)
    req = urllib.request.Request(url + p.path("PUT", BUCKET, key), data=os.urandom(size),
                                 method="PUT")
    urllib.request.urlopen(req, timeout=60).read()
    return url + p.path("GET", BUCKET, key)


def parse_ms(text, label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)] if m else None


def wrk(get_url, conc, seconds, log_dir, name, progress):
    out = run(["wrk", "-t", "2", "-c", str(conc), "-d", f"{seconds}s", "--latency", get_url],
              log_dir, name, progress, timeout=seconds + 120)
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors += int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors += sum(int(x) for x in m.groups()) if m else 0
    return {"requests": reqs, "errors": errors,
            "ops_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": parse_ms(out, "50"), "p99_ms": parse_ms(out, "99")}


def prefix_bench(build, url, cfg, shape, clients, requests, prefix, put, log_dir, name,
                 progress, tmp):
    js = os.path.join(tmp, name + ".json")
    cmd = [os.path.join(build, "bench", "prefix_clients_bench"), "--endpoint", url, "--bucket",
           BUCKET, "--prefix", prefix, "--chunks", str(shape[0]), "--layers", str(shape[1]),
           "--layer-bytes", str(shape[2]), "--clients", str(clients), "--requests",
           str(requests), "--json", js, "--label", name]
    if put:
        cmd += ["--put-repeat", str(cfg["put_repeat"])]
    else:
        cmd.append("--no-put")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               UCX_TLS=cfg["ucx_tls"])
    run(cmd, log_dir, name, progress, timeout=1800, env=env)
    return json.load(open(js)), cmd


def measure_n(build, cfg, cpus, n, log_dir, progress, tmp):
    """Every load at n server threads; rows and the commands run."""
    root = tempfile.mkdtemp(prefix=f"scale-{n}-", dir=tmp)
    rows, commands = [], []
    proc, url = start_server(build, root, cpus[:n], n, cfg["ucx_tls"])
    try:
        # The prefixes first: prefix_clients_bench creates the bucket and times the PUTs.
        c0 = cpu_seconds(proc.pid)
        doc, cmd = prefix_bench(build, url, cfg, cfg["prefix"], 1, cfg["requests"], "big/", True,
                                log_dir, f"desc-n{n}", progress, root)
        commands.append(cmd)
        cpu = cpu_seconds(proc.pid) - c0  # PUTs and the one-client GETs together
        put = next(r for r in doc if r["kind"] == "put")
        get1 = next(r for r in doc if r["kind"] == "get")
        rows.append({"load": "desc-put", "n": n, "gbps": put["gbps"], "errors": 0,
                     "server_cpu_s": None})
        rows.append({"load": "desc-get-1", "n": n, "gbps": get1["gbps"], "errors": get1["failed"],
                     "p50_ms": get1["p50_s"] * 1e3, "p99_ms": get1["p99_s"] * 1e3,
                     "server_cpu_s": None, "desc_cpu_s_put_and_get": cpu})
        c0 = cpu_seconds(proc.pid)
        doc, cmd = prefix_bench(build, url, cfg, cfg["small_prefix"], cfg["clients"],
                                cfg["small_requests"], "small/", True, log_dir, f"desc16-n{n}",
                                progress, root)
        commands.append(cmd)
        g = next(r for r in doc if r["kind"] == "get")
        rows.append({"load": "desc-get-16", "n": n, "gbps": g["gbps"], "errors": g["failed"],
                     "p50_ms": g["p50_s"] * 1e3, "p99_ms": g["p99_s"] * 1e3,
                     "server_cpu_s": cpu_seconds(proc.pid) - c0})
        for size, load in ((64 * KiB, "get-64KiB"), (MiB, "get-1MiB")):
            get_url = put_object(url, f"obj-{size}", size)
            c0 = cpu_seconds(proc.pid)
            r = wrk(get_url, cfg["conc"], cfg["wrk_seconds"], log_dir, f"wrk-{load}-n{n}",
                    progress)
            commands.append(["wrk", "-t", "2", "-c", str(cfg["conc"]), "-d",
                             f"{cfg['wrk_seconds']}s", "--latency", "<presigned GET>"])
            ok = max(r["requests"] - r["errors"], 0)
            rows.append(dict(r, load=load, n=n, server_cpu_s=cpu_seconds(proc.pid) - c0,
                             gbps=r["ops_per_s"] * size * ok / max(r["requests"], 1) / 1e9))
    finally:
        stop_server(proc)
        shutil.rmtree(root, ignore_errors=True)
    return rows, commands


def summarize(rows, counts):
    """Per load: throughput and per core at each n, the gain over n/2, where it stops."""
    out = []
    for load in LOADS:
        by_n = {r["n"]: r for r in rows if r["load"] == load}
        if not by_n:
            continue
        points, stops = [], None
        for n in counts:
            r = by_n.get(n)
            if r is None:
                continue
            key = "ops_per_s" if load.startswith("get-") else "gbps"
            half = by_n.get(n // 2) if n > 1 else None
            prev = by_n.get(max(k for k in by_n if k < n)) if any(k < n for k in by_n) else None
            base = half or prev
            gain = r[key] / base[key] if base and base[key] > 0 else None
            if gain is not None and gain < STOP_GAIN and stops is None:
                stops = n
            points.append({"n": n, "throughput": r[key], "unit": key, "gbps": r["gbps"],
                           "per_core": r[key] / n, "gain_over_half": gain,
                           "errors": r["errors"]})
        out.append({"load": load, "points": points, "stops_growing_at": stops,
                    "grows_through": stops is None})
    return out


def run_scaling(cfg, build, log_dir, progress, tmp, max_threads=None):
    """Every thread count, every load; the result dict of experiment 11."""
    cpus = usable_cpus()
    top = min(max_threads or len(cpus), len(cpus))
    counts = thread_counts(top)
    rows, commands = [], []
    result = {"usable_cpus": len(cpus), "thread_counts": counts, "stop_gain": STOP_GAIN,
              "rows": rows, "commands": commands}
    try:
        for n in counts:
            r, c = measure_n(build, cfg, cpus, n, log_dir, progress, tmp)
            rows.extend(r)
            commands.extend(c)
    except Exception as ex:  # keep what was measured
        result["error"] = f"{type(ex).__name__}: {ex}"
    result["summary"] = summarize(rows, counts)
    return result


def plot(e, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for s in e["summary"]:
        ns = [p["n"] for p in s["points"]]
        base = s["points"][0]["throughput"] if s["points"] else 1
        axes[0].plot(ns, [p["throughput"] / base for p in s["points"]], marker="o",
                     label=s["load"])
        axes[1].plot(ns, [p["gbps"] for p in s["points"]], marker="o", label=s["load"])
    ns = e["thread_counts"]
    axes[0].plot(ns, [n / ns[0] for n in ns], "k:", label="linear")
    axes[0].set_ylabel(f"throughput / throughput at n={ns[0]}")
    axes[1].set_ylabel("GB/s")
    for ax in axes:
        ax.set_xlabel("server threads (cores)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[0].set_title(f"Scaling with server cores ({e['usable_cpus']} usable)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def markdown(e):
    """Report text and one-line finding of experiment 11."""
    lines = [f"Usable CPUs {e['usable_cpus']}; server threads {e['thread_counts']}; a doubling "
             f"stops paying below {e['stop_gain']}x. Load generators unpinned (they share the "
             "cores with the server on a small machine).", "",
             "| load | n | throughput | per core | gain over n/2 | errors |",
             "| --- | --- | --- | --- | --- | --- |"]
    stops = []
    for s in e["summary"]:
        for p in s["points"]:
            unit = "ops/s" if p["unit"] == "ops_per_s" else "GB/s"
            fmt = "{:.0f}" if unit == "ops/s" else "{:.3f}"
            gain = f"{p['gain_over_half']:.2f}x" if p["gain_over_half"] else "-"
            lines.append(f"| {s['load']} | {p['n']} | {fmt.format(p['throughput'])} {unit} | "
                         f"{fmt.format(p['per_core'])} | {gain} | {p['errors']} |")
        stops.append(f"{s['load']}: " + (f"stops at n={s['stops_growing_at']}"
                                         if s["stops_growing_at"] else "grows through "
                                         f"n={e['thread_counts'][-1]}"))
    return "\n".join(lines), "; ".join(stops) + "."


class _Say:
    """The progress reporter common.run expects, for a run outside bench/run-all."""

    def say(self, text):
        print(text, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(BENCH), "build", "release"))
    ap.add_argument("--out", help="prefix of the JSON and PNG")
    ap.add_argument("--profile", default="reduced", choices=sorted(PROFILES))
    ap.add_argument("--max-threads", type=int, help="highest thread count (default: usable)")
    a = ap.parse_args()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out = a.out or os.path.join(BENCH, "results", date, "11-scaling")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-scaling-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    try:
        e = run_scaling(PROFILES[a.profile], os.path.abspath(a.build), log_dir, _Say(), tmp,
                        a.max_threads)
    finally:
        print(f"tool logs in {log_dir}", file=sys.stderr)
    e.update({"profile": a.profile, "config": PROFILES[a.profile]})
    e = portable(e, tmp)  # committed results name no machine path
    with open(out + ".json", "w") as f:
        json.dump(e, f, indent=1)
    plot(e, out + ".png")
    text, finding = markdown(e)
    print(text + "\n\n" + finding)
    return 1 if e.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
