#!/usr/bin/python3
"""scale_out_bench: serving nodes loading warm prefixes from one and from two `objectcache serve`
peers over one replicated RADOS pool (issue 33, "Scale-out, measured").

A throw-away cluster of three OSDs (tools/ceph-test-cluster up --osds 3: pool size 3,
min_size 2; memstore unless --bluestore) and two peers over one pool and namespace (peer A leads
the GC). One prefix is stored once through A; then, alternating "1 peer" (every client on A)
and "2 peers" (client i on peer i mod 2) --reps times, prefix_clients_bench runs 1, 2, 4, ...
clients at once, each its own liboc_client loading the whole prefix by descriptor GETs over
UCX, every load byte-checked. Reported per setup and client count: aggregate GB/s (median over
the repetitions), p50/p99 latency, errors, and CPU seconds per GB delivered of every process
(each peer, every OSD, the monitor and mgr together, read from /proc/<pid>/stat around each
run; the clients over the GET phase, as prefix_clients_bench counts it, and their whole process
as `clients_process`, which adds opening every client's data plane and buffer); and where aggregate throughput stops growing: the first
count whose gain over half as many clients is below STOP_GAIN. On a 2-core machine the OSDs,
the peers and the clients share the cores, so the figures say which process the CPU went to.

  bench/scale_out_bench.py [--build build/release] [--out PREFIX] [--profile reduced]
                           [--bluestore]

Writes PREFIX.json and PREFIX.png (default bench/results/<date>/13-scale-out).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
from common import (BENCH, CLUSTER, Say, cluster_pids, cpu_seconds, free_port, median,  # noqa: E402
                    portable, run, wait_healthy)

ACCESS_KEY = "OCBENCHACCESSKEY0001"
SECRET_KEY = "ocBenchSecretKey000000000000000000000001"
BUCKET = "scale-out"
STOP_GAIN = 1.3  # a doubling of clients that gains less than this has stopped paying

PROFILES = {
    # prefix: [chunks, layers, layer bytes]
    "smallest": {"prefix": [4, 8, 16 << 10], "clients": [1, 2], "requests": 1, "reps": 1,
                 "ucx_tls": "shm"},
    "reduced": {"prefix": [16, 32, 64 << 10], "clients": [1, 2, 4, 8, 16], "requests": 4,
                "reps": 2, "ucx_tls": "shm"},
    "full": {"prefix": [32, 32, 128 << 10], "clients": [1, 2, 4, 8, 16], "requests": 8,
             "reps": 3, "ucx_tls": "shm"},
}


def start_peer(build, root, name, conf, namespace, gc):
    port = free_port()
    cfg = os.path.join(root, f"{name}.toml")
    with open(cfg, "w") as f:
        f.write(f'[storage]\nbackend = "rados"\n[rados]\nconf_file = "{conf}"\n'
                f'client_name = "client.admin"\npool = "oc-test"\nnamespace = "{namespace}"\n'
                f'gc = {"true" if gc else "false"}\n')
    env = dict(os.environ, OC_ACCESS_KEY=ACCESS_KEY, OC_SECRET_KEY=SECRET_KEY)
    log = open(os.path.join(root, f"{name}.log"), "ab")
    proc = subprocess.Popen([os.path.join(build, "gateway", "objectcache"), "serve", "--config",
                             cfg, "--data-dir", os.path.join(root, f"{name}-data"), "--listen",
                             f"127.0.0.1:{port}"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    if not wait_healthy(url, proc):
        raise RuntimeError(f"peer {name} did not start; see {log.name}")
    return proc, url


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def prefix_bench(build, cfg, endpoints, clients, put, log_dir, name, progress, tmp):
    """One prefix_clients_bench run; (its rows, the command, its process's CPU seconds)."""
    js = os.path.join(tmp, name + ".json")
    c, n_layers, s = cfg["prefix"]
    cmd = [os.path.join(build, "bench", "prefix_clients_bench"), "--endpoint", ",".join(endpoints),
           "--bucket", BUCKET, "--prefix", "scale/", "--chunks", str(c), "--layers",
           str(n_layers), "--layer-bytes", str(s), "--clients", str(clients), "--requests",
           str(cfg["requests"]), "--json", js, "--label", name]
    cmd += [] if put else ["--no-put"]
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               UCX_TLS=cfg["ucx_tls"])
    usage0 = os.times()
    run(cmd, log_dir, name, progress, timeout=1800, env=env)
    usage1 = os.times()
    client_cpu = (usage1.children_user - usage0.children_user +
                  usage1.children_system - usage0.children_system)
    return json.load(open(js)), cmd, client_cpu


def measure(cfg, build, log_dir, progress, tmp, bluestore=False):
    d = os.path.join(tmp, "ceph")
    up = [CLUSTER, "up", "--osds", "3"] + (["--bluestore"] if bluestore else []) + [d]
    run(up, log_dir, "cluster-up", progress, timeout=600)
    peers = []
    rows, commands = [], [" ".join(up)]
    try:
        conf = os.path.join(d, "ceph.conf")
        daemons = cluster_pids(d)
        for name, gc in (("peer-a", True), ("peer-b", False)):
            peers.append(start_peer(build, tmp, name, conf, "scale-out", gc))
        urls = [u for _, u in peers]
        _, cmd, _ = prefix_bench(build, cfg, urls[:1], 1, True, log_dir, "store", progress, tmp)
        commands.append(" ".join(cmd))
        for rep in range(cfg["reps"]):
            for setup, endpoints in (("1 peer", urls[:1]), ("2 peers", urls)):
                for n in cfg["clients"]:
                    name = f"get-{setup.replace(' ', '')}-{n}c-r{rep}"
                    procs = {"peer-a": peers[0][0].pid, "peer-b": peers[1][0].pid}
                    procs.update(daemons)
                    before = {k: cpu_seconds(p) for k, p in procs.items()}
                    out, cmd, client_cpu = prefix_bench(build, cfg, endpoints, n, False,
                                                        log_dir, name, progress, tmp)
                    after = {k: cpu_seconds(p) for k, p in procs.items()}
                    get = next(r for r in out if r.get("kind") == "get")
                    cpu = {k: after[k] - before[k] for k in procs}
                    cpu["osds"] = sum(v for k, v in cpu.items() if k.startswith("osd."))
                    cpu["mon+mgr"] = sum(v for k, v in cpu.items()
                                         if k.startswith(("mon.", "mgr.")))
                    # The clients over the GET phase (the bench's own count: its wall time's
                    # window); their whole process also opened 1-16 data planes and buffers.
                    cpu["clients"] = get.get("cpu_s", client_cpu)
                    cpu["clients_process"] = client_cpu
                    moved = get["payload_bytes"] * get["ok"]
                    rows.append({"setup": setup, "clients": n, "rep": rep, "gbps": get["gbps"],
                                 "wall_s": get["wall_s"],
                                 "p50_ms": get["p50_s"] * 1e3, "p99_ms": get["p99_s"] * 1e3,
                                 "errors": get["failed"], "bytes": moved,
                                 "cpu_s": {k: round(v, 3) for k, v in cpu.items()}})
                    if rep == 0:
                        commands.append(" ".join(cmd))
    finally:
        for proc, _ in peers:
            stop(proc)
        subprocess.run([CLUSTER, "down", d], capture_output=True, timeout=300)
    return rows, commands


def summarize(rows, counts):
    out = []
    for setup in ("1 peer", "2 peers"):
        points = []
        for n in counts:
            rs = [r for r in rows if r["setup"] == setup and r["clients"] == n]
            if not rs:
                continue
            gbps = median([r["gbps"] for r in rs])
            moved_gb = sum(r["bytes"] or 0 for r in rs) / 1e9
            cpu = {}
            for r in rs:
                for k, v in r["cpu_s"].items():
                    if k in ("peer-a", "peer-b", "osds", "mon+mgr", "clients",
                             "clients_process"):
                        cpu[k] = cpu.get(k, 0.0) + v
            points.append({"clients": n, "gbps": gbps,
                           "p99_ms": median([r["p99_ms"] for r in rs if r["p99_ms"] is not None]
                                            or [0]),
                           "errors": sum(r["errors"] for r in rs),
                           "cpu_s_per_gb": {k: round(v / moved_gb, 3) if moved_gb else None
                                            for k, v in cpu.items()}})
        stops = None
        for i, p in enumerate(points):
            half = next((q for q in points[:i] if q["clients"] * 2 == p["clients"]), None)
            p["gain_over_half"] = p["gbps"] / half["gbps"] if half and half["gbps"] else None
            if stops is None and p["gain_over_half"] is not None and \
                    p["gain_over_half"] < STOP_GAIN:
                stops = p["clients"]
        out.append({"setup": setup, "points": points, "stops_growing_at": stops})
    return out


def run_scale_out(cfg, build, log_dir, progress, tmp, bluestore=False):
    """The result dict of the scale-out experiment (rows measured before a failure are kept)."""
    result = {"profile_config": cfg, "stop_gain": STOP_GAIN, "osds": 3,
              "objectstore": "bluestore" if bluestore else "memstore", "cores": os.cpu_count()}
    try:
        rows, commands = measure(cfg, build, log_dir, progress, tmp, bluestore)
    except Exception as ex:  # keep the error in the result
        rows, commands = [], []
        result["error"] = f"{type(ex).__name__}: {ex}"
    result.update(rows=rows, commands=commands, summary=summarize(rows, cfg["clients"]))
    return portable(result, tmp)  # committed results name no machine path


def plot(e, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for s in e["summary"]:
        ns = [p["clients"] for p in s["points"]]
        axes[0].plot(ns, [p["gbps"] for p in s["points"]], marker="o", label=s["setup"])
    axes[0].set_xlabel("serving-node clients at once")
    axes[0].set_ylabel("aggregate GB/s (median)")
    axes[0].set_xscale("log", base=2)
    axes[0].grid(alpha=0.3)
    axes[0].legend()
    axes[0].set_title(f"Descriptor GETs from RADOS ({e['objectstore']}, 3 OSDs, "
                      f"{e['cores']} cores)")
    kinds = ["peer-a", "peer-b", "osds", "mon+mgr", "clients"]
    labels, bottoms = [], None
    bars = []
    for s in e["summary"]:
        if s["points"]:
            p = s["points"][-1]
            labels.append(f"{s['setup']}\n{p['clients']} clients")
            bars.append([p["cpu_s_per_gb"].get(k) or 0 for k in kinds])
    x = range(len(bars))
    bottoms = [0.0] * len(bars)
    for i, k in enumerate(kinds):
        vals = [b[i] for b in bars]
        axes[1].bar(x, vals, bottom=bottoms, label=k)
        bottoms = [a + v for a, v in zip(bottoms, vals)]
    axes[1].set_xticks(list(x))
    axes[1].set_xticklabels(labels)
    axes[1].set_ylabel("CPU seconds per GB delivered")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def markdown(e):
    """Report text and one-line finding."""
    lines = [f"Three {e['objectstore']} OSDs (pool size 3) and two `objectcache serve` peers on "
             f"{e['cores']} cores; clients are separate liboc_client instances in one process. "
             "CPU seconds per GB delivered, per process.", "",
             "| setup | clients | GB/s | gain over half | p99 ms | errors | CPU s/GB peers | "
             "OSDs | clients |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    finds = []
    for s in e["summary"]:
        for p in s["points"]:
            c = p["cpu_s_per_gb"]
            peers = (c.get("peer-a") or 0) + (c.get("peer-b") or 0)
            gain = f"{p['gain_over_half']:.2f}x" if p["gain_over_half"] else "-"
            lines.append(f"| {s['setup']} | {p['clients']} | {p['gbps']:.3f} | {gain} | "
                         f"{p['p99_ms']:.1f} | {p['errors']} | {peers:.2f} | "
                         f"{c.get('osds') or 0:.2f} | {c.get('clients') or 0:.2f} |")
        if s["points"]:
            top = max(s["points"], key=lambda p: p["gbps"])
            finds.append(f"{s['setup']}: best {top['gbps']:.2f} GB/s at {top['clients']} clients, "
                         + (f"stops growing at {s['stops_growing_at']}"
                            if s["stops_growing_at"] else "still growing at the last count"))
    if e.get("error"):
        finds.append(f"error: {e['error']}")
    return "\n".join(lines), "; ".join(finds) + "."


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(BENCH), "build", "release"))
    ap.add_argument("--out", help="prefix of the JSON and PNG")
    ap.add_argument("--profile", default="reduced", choices=sorted(PROFILES))
    ap.add_argument("--bluestore", action="store_true", help="BlueStore OSDs on sparse files")
    a = ap.parse_args()
    out = a.out or os.path.join(BENCH, "results", datetime.date.today().isoformat(),
                                "13-scale-out")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-scale-out-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    try:
        e = run_scale_out(PROFILES[a.profile], os.path.abspath(a.build), log_dir, Say(),
                          tmp, a.bluestore)
    finally:
        shutil.rmtree(os.path.join(tmp, "ceph"), ignore_errors=True)
    e["profile"] = a.profile
    with open(out + ".json", "w") as f:
        json.dump(e, f, indent=1)
    plot(e, out + ".png")
    text, finding = markdown(e)
    print(text + "\n\n" + finding)
    print(f"wrote {out}.json, {out}.png (tool logs in {log_dir})", file=sys.stderr)
    return 1 if e.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
