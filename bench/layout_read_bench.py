#!/usr/bin/python3
"""layout_read_bench: warm reads of the extent layouts side by side, in one run (issue 16 step
2: "the read side must not lose what it has").

One `objectcache serve` per layout ([storage] extent_layout = "sst", "data_files", ...) runs
for the whole run, each with its own data dir and the same chunks and objects. Every
repetition measures every layout, and the order of the layouts alternates from one
repetition to the next, so a slow minute of the shared machine lands on both. Per
repetition and layout:

  desc      layerwise descriptor GETs of Llama-3.1-8B chunks (objectcache_bench: L = 32,
            S = 4 KiB·G per layer slice) for each G, over UCX shared memory ("ucx") and in
            the HTTP body ("http-body"); objectcache_bench's own --warmup 1 --repeat R, the
            figure is the median of its R
  s3get     64 KiB and 1 MiB S3 GETs of one stored object each, wrk with a presigned URL at
            concurrency 8 (bench/gateway_bench.py --endpoint), ops/s and server CPU per GET

The report (PREFIX.json, PREFIX.md) gives per layout and figure the median over the
repetitions, the spread (min..max) and the ratio of medians against the first layout, plus
the load average at every repetition.

  bench/layout_read_bench.py [--layouts sst,data_files] [--reps 5] [--groups 16,64,256]
                             [--context 8192] [--hit 0.875] [--inner-repeat 3] [--seconds 5]
                             [--build DIR] [--out PREFIX] [--quick]

--out defaults to bench/results/<YYYY-MM-DD>/layout-read (UTC date). --quick: 2 repetitions,
G = 16, 2 s wrk runs (a smoke run; its figures mean little).
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
import common  # noqa: E402

ACCESS = "OCLAYOUTREADBENCH001"
SECRET = "ocLayoutReadBench000000000000000000000001"
BUCKET = "lbench"
S3_SIZES = [64 * 1024, 1024 * 1024]
S3_CONCURRENCY = 8


def say(text):
    print(f"[layout-read {time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {text}",
          file=sys.stderr, flush=True)


class Server:
    """`objectcache serve` with one extent layout, warm for the whole run."""

    def __init__(self, build, root, layout):
        self.layout = layout
        self.root = os.path.join(root, layout)
        os.makedirs(self.root)
        port = common.free_port()
        conf = os.path.join(self.root, "objectcache.toml")
        with open(conf, "w") as f:
            # The block cache holds every G's data set (as bench/objectcache_bench.py's), so
            # SST extents are read from it warm; data-file extents from the page cache.
            f.write('[gateway]\nmax_object_bytes = "4GiB"\naccess_log = false\n'
                    f'[storage]\nblock_cache_bytes = "4GiB"\nextent_layout = "{layout}"\n')
        env = dict(os.environ, UCX_TLS="shm", OC_ACCESS_KEY=ACCESS, OC_SECRET_KEY=SECRET)
        self.log = open(os.path.join(root, f"{layout}.log"), "ab")
        self.proc = subprocess.Popen(
            [os.path.join(build, "gateway", "objectcache"), "serve", "--config", conf,
             "--data-dir", os.path.join(self.root, "data"), "--listen", f"127.0.0.1:{port}"],
            env=env, stdout=self.log, stderr=self.log)
        self.url = f"http://127.0.0.1:{port}"
        if not common.wait_healthy(self.url, self.proc):
            raise RuntimeError(f"{layout}: server did not start; see {self.log.name}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def objectcache_bench(build, server, tmp, args, extra):
    out = os.path.join(tmp, f"ocb-{server.layout}.json")
    cmd = [os.path.join(build, "bench", "objectcache_bench"), "--endpoint", server.url,
           "--bucket", BUCKET, "--json", out, "--label", server.layout,
           "--groups", ",".join(str(g) for g in args.groups), "--contexts", str(args.context),
           "--hits", str(args.hit), "--cpu-pids", f"server={server.proc.pid}", *extra]
    env = dict(os.environ, UCX_TLS="shm", AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(tmp, f"ocb-{server.layout}.err"), "ab"))
    return json.load(open(out))


def s3_gets(server, tmp, seconds):
    out = os.path.join(tmp, f"gw-{server.layout}.json")
    cmd = [sys.executable, os.path.join(HERE, "gateway_bench.py"), "--endpoint", server.url,
           "--access-key", ACCESS, "--secret-key", SECRET, "--label", server.layout,
           "--bucket", BUCKET, "--ops", "GET", "--sizes", ",".join(map(str, S3_SIZES)),
           "--conc", str(S3_CONCURRENCY), "--seconds", str(seconds),
           "--cpu-pids", f"server={server.proc.pid}", "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(tmp, f"gw-{server.layout}.err"), "ab"))
    return json.load(open(out))["results"]


def measure(build, servers, tmp, args):
    rows = []
    for rep in range(args.reps):
        order = servers if rep % 2 == 0 else list(reversed(servers))
        for s in order:
            load = os.getloadavg()
            doc = objectcache_bench(build, s, tmp, args,
                                    ["--no-put", "--methods", "ucx,http-body", "--repeat",
                                     str(args.inner_repeat), "--warmup", "1"])
            for r in doc["results"]:
                payload = r["gbps"] * r["total_s"]  # GB
                row = {"rep": rep, "layout": s.layout, "figure": f"{r['method']} G={r['G']}",
                       "unit": "GB/s", "value": payload / r["total_p50_s"],
                       "best": r["gbps"], "load": load}
                cpu = r.get("cpu_s", {}).get("server")
                if cpu is not None:  # summed over the timed repetitions
                    row["server_cpu_s_per_gb"] = cpu / (payload * args.inner_repeat)
                rows.append(row)
                say(f"rep {rep + 1}/{args.reps} {s.layout:10} {row['figure']:16} "
                    f"{row['value']:.2f} GB/s")
            for r in s3_gets(s, tmp, args.seconds):
                size = "64 KiB" if r["size"] < 1 << 20 else "1 MiB"
                row = {"rep": rep, "layout": s.layout, "figure": f"S3 GET {size} c=8",
                       "unit": "ops/s", "value": r["ops_per_s"], "errors": r["errors"],
                       "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
                       "server_cpu_us_per_req": r["server_cpu_us_per_req"], "load": load}
                rows.append(row)
                say(f"rep {rep + 1}/{args.reps} {s.layout:10} {row['figure']:16} "
                    f"{row['value']:.0f} ops/s, {r['server_cpu_us_per_req']:.0f} µs CPU/GET")
    return rows


def summarize(rows, layouts):
    out = []
    figures = list(dict.fromkeys(r["figure"] for r in rows))
    for fig in figures:
        entry = {"figure": fig}
        for layout in layouts:
            rs = [r for r in rows if r["figure"] == fig and r["layout"] == layout]
            vals = [r["value"] for r in rs]
            if not vals:
                continue
            cpu_key = "server_cpu_s_per_gb" if "server_cpu_s_per_gb" in rs[0] else \
                "server_cpu_us_per_req"
            cpus = [r[cpu_key] for r in rs if cpu_key in r]
            entry[layout] = {"unit": rs[0]["unit"], "median": statistics.median(vals),
                             "min": min(vals), "max": max(vals), "n": len(vals),
                             cpu_key: statistics.median(cpus) if cpus else None}
        base = layouts[0]
        for layout in layouts[1:]:
            if base in entry and layout in entry:
                entry[f"{layout}/{base}"] = entry[layout]["median"] / entry[base]["median"]
                # Paired per repetition: the two layouts ran back to back.
                pairs = []
                for rep in sorted({r["rep"] for r in rows}):
                    a = [r["value"] for r in rows if r["figure"] == fig and r["rep"] == rep
                         and r["layout"] == base]
                    b = [r["value"] for r in rows if r["figure"] == fig and r["rep"] == rep
                         and r["layout"] == layout]
                    if a and b and a[0] > 0:
                        pairs.append(b[0] / a[0])
                if pairs:
                    entry[f"{layout}/{base} per rep"] = {
                        "median": statistics.median(pairs), "min": min(pairs), "max": max(pairs)}
        out.append(entry)
    return out


def markdown(doc):
    layouts = doc["layouts"]
    base = layouts[0]
    head = "| figure | " + " | ".join(f"{l} median (min..max)" for l in layouts) + \
        "".join(f" | {l}/{base} (paired: median, min..max)" for l in layouts[1:]) + " | CPU |"
    lines = [head, "|" + " --- |" * (len(layouts) + len(layouts[1:]) + 2)]
    for e in doc["summary"]:
        cells = [e["figure"]]
        cpu = []
        for l in layouts:
            s = e.get(l)
            if not s:
                cells.append("—")
                continue
            f = ("{:.2f}" if s["unit"] == "GB/s" else "{:,.0f}").format
            cells.append(f"{f(s['median'])} ({f(s['min'])}..{f(s['max'])}) {s['unit']}")
            if s.get("server_cpu_s_per_gb") is not None:
                cpu.append(f"{l} {s['server_cpu_s_per_gb']:.2f} s/GB")
            elif s.get("server_cpu_us_per_req") is not None:
                cpu.append(f"{l} {s['server_cpu_us_per_req']:.0f} µs/GET")
        for l in layouts[1:]:
            p = e.get(f"{l}/{base} per rep")
            cells.append(f"{e[f'{l}/{base}']:.2f} ({p['median']:.2f}, "
                         f"{p['min']:.2f}..{p['max']:.2f})" if p else "—")
        cells.append(", ".join(cpu))
        lines.append("| " + " | ".join(cells) + " |")
    loads = sorted({round(r["load"][0], 1) for r in doc["rows"]})
    return ("\n".join(lines) + f"\n\nLoad average (1 min) at the repetitions: "
            f"{loads[0]}..{loads[-1]}.\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layouts", default="sst,data_files")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--groups", default="16,64,256")
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--hit", type=float, default=0.875)
    ap.add_argument("--inner-repeat", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.groups, args.seconds = 2, "16", 2
    args.groups = [int(g) for g in args.groups.split(",")]
    layouts = args.layouts.split(",")
    out = os.path.abspath(args.out or os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d", time.gmtime()), "layout-read"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="oc-layout-read-")
    servers = []
    doc = {"layouts": layouts, "args": {k: v for k, v in vars(args).items() if k != "out"},
           "load_start": common.load_average()}
    try:
        for layout in layouts:
            servers.append(Server(build, tmp, layout))
            say(f"{layout}: {servers[-1].url} pid {servers[-1].proc.pid}; storing the chunks")
            objectcache_bench(build, servers[-1], tmp, args, ["--methods", ""])
        doc["rows"] = measure(build, servers, tmp, args)
    finally:
        for s in servers:
            s.stop()
        doc["load_end"] = common.load_average()
        shutil.rmtree(tmp, ignore_errors=True)
    doc["summary"] = summarize(doc["rows"], layouts)
    doc["machine"] = common.machine()
    doc["versions"] = common.versions(build)
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(f"# Warm reads by extent layout ({args.reps} alternating repetitions)\n\n"
                f"Commit {doc['versions']['git_commit']}; load average "
                f"{doc['load_start'][0]:.2f} at start, {doc['load_end'][0]:.2f} at end.\n\n"
                + markdown(doc))
    print(open(out + ".md").read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
