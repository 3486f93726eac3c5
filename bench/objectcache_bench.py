#!/usr/bin/python3
"""Runs objectcache_bench end to end (issue 5's benchmark) and plots it.

Starts `objectcache serve` on a free port with a temp data dir, stores the Llama-3.1-8B chunks,
measures every method with the default Θ (large requests go layerwise), optionally restarts
the server with --chunkwise-toml (a Θ above every payload) on the same data and measures UCX
again, then writes
the JSON (results, ratios, environment) and a PNG with matplotlib (Debian's
python3-matplotlib).

  bench/objectcache_bench.py --build build/cli [--out PREFIX] [--quick]

--out defaults to bench/results/<YYYY-MM-DD>/objectcache (UTC date): PREFIX.json, PREFIX.png.

--quick uses G = 16, 256, context 4K and 16K at 87.5% hit only (fewer range GETs).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ACCESS_KEY = "OCBENCHACCESSKEY0001"
SECRET_KEY = "ocBenchSecretKey000000000000000000000001"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ucx_env(tls):
    """UCX_TLS for the server and the bench client: the same transports on both ends. With
    peer error handling UCX 1.13 picks TCP whenever TCP is allowed
    (docs/decisions/data-plane-vanished-client.md), so the
    default "shm" is what measures UCX shared memory; "" leaves UCX's own choice."""
    env = dict(os.environ)
    if tls:
        env["UCX_TLS"] = tls
    else:
        env.pop("UCX_TLS", None)
    return env


def start(build, data_dir, root, extra_toml, tls):
    port = free_port()
    conf = os.path.join(root, f"bench-{port}.toml")
    with open(conf, "w") as f:
        # The block cache holds one G's largest data set (16K context at 87.5%: 1.75 GiB), so
        # every method reads a warm store, as the targets assume; extra_toml may add [kv].
        f.write("[gateway]\nmax_object_bytes = \"4GiB\"\n"
                "[storage]\nblock_cache_bytes = \"4GiB\"\n" + (extra_toml or ""))
    env = dict(ucx_env(tls), OC_ACCESS_KEY=ACCESS_KEY, OC_SECRET_KEY=SECRET_KEY)
    log = open(os.path.join(root, "server.log"), "ab")
    proc = subprocess.Popen([os.path.join(build, "gateway", "objectcache"), "serve", "--config",
                             conf, "--data-dir", data_dir, "--listen", f"127.0.0.1:{port}"],
                            env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("server exited; see " + log.name)
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def bench(build, url, json_path, label, args, tls):
    env = dict(ucx_env(tls), AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    cmd = [os.path.join(build, "bench", "objectcache_bench"), "--endpoint", url, "--json",
           json_path, "--label", label, *args]
    subprocess.run(cmd, env=env, check=True)
    return json.load(open(json_path))["results"]


def ratios(rows):
    out = []
    key = lambda r: (r["G"], r["context"], r["hit"])
    by_shape = {}
    for r in rows:
        by_shape.setdefault(key(r), {})[r["label"] + ":" + r["method"]] = r
    for shape, m in sorted(by_shape.items()):
        agg = m.get("layerwise:ucx")
        entry = {"G": shape[0], "context": shape[1], "hit": shape[2]}
        bases = sorted(k for k in m if k.startswith(("layerwise:http-range",
                                                      "layerwise:http-object")))
        for base in bases:
            for name in ("layerwise:ucx", "chunkwise:ucx", "layerwise:http-body"):
                if base in m and name in m:
                    entry[f"{name} vs {base}"] = m[base]["total_s"] / m[name]["total_s"]
        if agg and "chunkwise:ucx" in m:
            entry["ttfl chunkwise/layerwise"] = m["chunkwise:ucx"]["ttfl_s"] / agg["ttfl_s"]
        out.append(entry)
    return out


def plot(rows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shapes = sorted({(r["G"], r["context"], r["hit"]) for r in rows})
    series = sorted({r["label"] + ":" + r["method"] for r in rows})
    fig, axes = plt.subplots(2, 1, figsize=(max(8, len(shapes) * 1.2), 8))
    width = 0.8 / max(1, len(series))
    for i, name in enumerate(series):
        gb, tt = [], []
        for s in shapes:
            r = [x for x in rows if (x["G"], x["context"], x["hit"]) == s
                 and x["label"] + ":" + x["method"] == name]
            gb.append(r[0]["gbps"] if r else 0)
            tt.append(r[0]["ttfl_s"] * 1e3 if r else 0)
        xs = [k + i * width for k in range(len(shapes))]
        axes[0].bar(xs, gb, width, label=name)
        axes[1].bar(xs, tt, width, label=name)
    labels = [f"G={g}\n{c // 1024}K\n{h:.3g}" for g, c, h in shapes]
    for ax in axes:
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(shapes))])
        ax.set_xticklabels(labels, fontsize=7)
    axes[0].set_ylabel("GB/s")
    axes[0].set_yscale("log")
    axes[1].set_ylabel("time to first layer (ms)")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[0].set_title("ObjectCache descriptor reads, Llama-3.1-8B (L=32, 4 KiB/token/layer)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results",
        time.strftime("%Y-%m-%d", time.gmtime()), "objectcache"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", default="3")
    # TOML appended to the server's config for the chunkwise pass: a Θ above every payload
    # (the store's KvOptions::layerwise_threshold_bytes, once the storage config reads it).
    ap.add_argument("--chunkwise-toml", default="")
    ap.add_argument("--ucx-tls", default="shm",
                    help='UCX_TLS for server and client ("" = UCX default, TCP here)')
    ap.add_argument("--range-concurrency", default="1,8",
                    help="threads issuing the per-chunk-per-layer range GETs (list)")
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    root = tempfile.mkdtemp(prefix="oc-bench-")
    data = os.path.join(root, "data")
    shape_args = ["--repeat", a.repeat, "--range-concurrency", a.range_concurrency]
    if a.quick:
        shape_args += ["--groups", "16,256", "--contexts", "4096,16384", "--hits", "0.875"]
    rows = []
    try:
        proc, url = start(a.build, data, root, None, a.ucx_tls)
        try:
            rows += bench(a.build, url, os.path.join(root, "layerwise.json"), "layerwise",
                          shape_args, a.ucx_tls)
        finally:
            proc.terminate()
            proc.wait()
        if a.chunkwise_toml:
            proc, url = start(a.build, data, root, a.chunkwise_toml, a.ucx_tls)
            try:
                rows += bench(a.build, url, os.path.join(root, "chunkwise.json"), "chunkwise",
                              shape_args + ["--no-put", "--methods", "ucx"], a.ucx_tls)
            finally:
                proc.terminate()
                proc.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = {"results": rows, "ratios": ratios(rows),
           "environment": {"ucx_tls": a.ucx_tls or "(UCX default)",
                           "load_average_after": os.getloadavg(),
                           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}}
    with open(a.out + ".json", "w") as f:
        json.dump(out, f, indent=2)
    plot(rows, a.out + ".png")
    print(json.dumps(out["ratios"], indent=1))


if __name__ == "__main__":
    sys.exit(main())
