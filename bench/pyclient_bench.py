#!/usr/bin/python3
"""pyclient_bench (issue 18): the objectcache Python package against the C++ client on the same
shapes, in the same run, against one `objectcache serve`.

For each layer size S (L = 32 layers, N chunks so that large S moves tens of MiB) and each path
(ucx: a UCX-allocated buffer reused, the server writing in place; http: the payload in the
response body into a heap buffer), both clients send R descriptor GETs of the same stored
chunks, waiting layer by layer, then for the end:
  cpp  `oc get-layers --repeat R+1` (liboc_client, one process: warm connections and buffer);
       each "repeat" line is one request, call to end of Wait()
  py   objectcache.Client.get_layers + Transfer.wait_layer(l) for each l + wait(), the same loop
The first request of each is a warm-up. Runs alternate cpp, py, cpp, py (--rounds) so machine
drift hits both. Per row: median microseconds per request, GB/s (payload / median), the ratio
py/cpp GB/s, and the Python's added microseconds per request. Targets (issue 18): ratio >= 0.9
at S >= 256 KiB, added <= 50 us at small S.

    bench/pyclient_bench.py --build build/release [--out PREFIX] [--quick] [--repeat R]

Writes PREFIX.json and PREFIX.png (default bench/results/<date>/pyclient).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "harness"))
import common  # noqa: E402

ACCESS, SECRET = "PYBENCHACCESSKEY0001", "pyBenchSecretKey000000000000000000000001"
LAYERS = 32
# (S, N): payload N·L·S from 512 KiB (S = 4 KiB) to 128 MiB (S = 1 MiB).
SHAPES = [(4096, 4), (16384, 4), (65536, 8), (262144, 8), (1048576, 4)]
QUICK = [(4096, 4), (262144, 8)]
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


def cpp_run(build, endpoint, hashes, prefix, s, via, repeat):
    env = dict(os.environ, OC_ENDPOINT=endpoint, AWS_ACCESS_KEY_ID=ACCESS,
               AWS_SECRET_ACCESS_KEY=SECRET)
    p = subprocess.run([os.path.join(build, "client", "oc"), "get-layers", "--bucket", "bench",
                        "--hashes", ",".join(h.hex() for h in hashes), "--prefix", prefix,
                        "--layers", str(LAYERS), "--layer-bytes", str(s), "--via", via,
                        "--quiet", "--repeat", str(repeat + 1)],
                       env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"oc get-layers failed: {p.stderr}")
    return [int(line.split()[2].split("=")[1]) for line in p.stdout.splitlines()
            if line.startswith("repeat ")]


def py_run(oc, client, d, buf, via, repeat):
    times = []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        t = client.get_layers("bench", d, buf, via=via)
        for layer in range(LAYERS):
            t.wait_layer(layer)
        info = t.wait()  # the buffer is free for the next request from here
        elapsed = time.perf_counter() - t0
        if info.matched != len(d):
            raise SystemExit(f"matched {info.matched} of {len(d)}")
        if i > 0:
            times.append(elapsed * 1e6)
    return times


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for via, style in (("ucx", "-"), ("http", "--")):
        sel = [r for r in rows if r["via"] == via]
        xs = [r["layer_bytes"] // 1024 for r in sel]
        a.plot(xs, [r["cpp_gbps"] for r in sel], "o" + style, label=f"C++ {via}")
        a.plot(xs, [r["py_gbps"] for r in sel], "s" + style, label=f"Python {via}")
        b.plot(xs, [r["added_us"] for r in sel], "o" + style, label=via)
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("S, KiB per layer slice (L = 32)")
        ax.legend()
    a.set_ylabel("GB/s (median request)")
    b.set_ylabel("Python added us per request")
    b.axhline(50, color="grey", lw=0.5)
    fig.suptitle("objectcache (Python) vs liboc_client (oc get-layers), same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(common.ROOT, "build", "release"))
    ap.add_argument("--out", default=os.path.join(common.BENCH, "results",
                                                  time.strftime("%Y-%m-%d"), "pyclient"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import numpy as np
    import objectcache as oc

    tmp = tempfile.mkdtemp(prefix="oc-pybench-")
    proc, endpoint = start_server(build, tmp)
    rows = []
    try:
        client = oc.Client(endpoint, ACCESS, SECRET)
        client.create_bucket("bench")
        ns = oc.namespace_string("meta-llama/Llama-3.1-8B")
        for s, n in (QUICK if args.quick else SHAPES):
            prefix = f"b{s}/"
            tokens = np.arange(s, s + n * 16, dtype=np.uint32)
            hashes = oc.chunk_hashes(tokens, 16, ns)
            d = oc.Descriptor(hashes, layers=LAYERS, layer_bytes=s, prefix=prefix)
            kv = np.random.default_rng(s).integers(0, 256, d.payload_bytes, dtype=np.uint8)
            client.put_chunks("bench", d, kv).raise_for_status()
            for via in ("ucx", "http"):
                buf = client.allocate_buffer(d.payload_bytes) if via == "ucx" else \
                    np.zeros(d.payload_bytes, np.uint8)
                cpp, py = [], []
                for _ in range(args.rounds):
                    cpp += cpp_run(build, endpoint, hashes, prefix, s, via, args.repeat)
                    py += py_run(oc, client, d, buf, via, args.repeat)
                c_us, p_us = statistics.median(cpp), statistics.median(py)
                row = {"layer_bytes": s, "chunks": n, "layers": LAYERS, "via": via,
                       "payload_bytes": d.payload_bytes, "requests_each": len(cpp),
                       "cpp_us_median": round(c_us, 1), "py_us_median": round(p_us, 1),
                       "cpp_us_min": min(cpp), "py_us_min": round(min(py), 1),
                       "cpp_gbps": round(d.payload_bytes / c_us / 1e3, 3),
                       "py_gbps": round(d.payload_bytes / p_us / 1e3, 3),
                       "ratio": round(c_us / p_us, 3), "added_us": round(p_us - c_us, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                del buf
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    doc = {"benchmark": "pyclient_bench", "machine": common.machine(),
           "versions": common.versions(build), "load_average": common.load_average(),
           "repeat": args.repeat, "rounds": args.rounds, "rows": rows}
    with open(args.out + ".json", "w") as f:
        json.dump(common.portable(doc, tmp), f, indent=1)
    plot(rows, args.out + ".png")
    print(f"wrote {args.out}.json and .png")


if __name__ == "__main__":
    main()
