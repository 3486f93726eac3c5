#!/usr/bin/python3
"""gateway_bench: S3 GET and PUT throughput and latency of the gateway, driven by wrk
(Debian's package) with presigned SigV4 URLs, so every request is authenticated as a real
client's would be.

Benchmarks (each at concurrency 1, 8 and 32, embedded store and remote store):
  GET 4 KiB / 64 KiB / 1 MiB   one hot object per size, repeated GETs
  PUT 4 KiB / 64 KiB / 1 MiB   durable PUTs (sync_writes = true) overwriting one key
Reported per run: ops/s, MB/s, p50 and p99 latency (wrk --latency), server CPU per request
(utime + stime of the server processes from /proc, divided by the requests served).

Usage: bench/gateway_bench.py [--seconds 5] [--modes embedded,remote] [--sizes 4096,...]
       [--conc 1,8,32] [--ops GET,PUT] [--out FILE]
--out defaults to bench/results/<YYYY-MM-DD>/gateway_bench.json (UTC date).
Binaries: OC_OBJECTCACHE_BIN, OC_GATEWAY_BIN, OC_STORAGE_SERVER_BIN (default: build/release).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from conftest import Server  # noqa: E402

BENCH_CONFIG = """
access_log = false
"""

PUT_SCRIPT = """
wrk.method = "PUT"
local f = io.open(os.getenv("OC_BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
"""


def cpu_seconds(pids):
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def parse_latency(text, label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m:
        return None
    v = float(m.group(1))
    return v * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]


def run_wrk(url, conc, seconds, script=None, env=None):
    threads = 1 if conc == 1 else 2
    cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", f"{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds + 60).stdout
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"requests": reqs, "errors": errors, "ops_per_s": rps,
            "p50_ms": parse_latency(out, "50"), "p99_ms": parse_latency(out, "99")}


def bench_mode(mode, args, results):
    root = tempfile.mkdtemp(prefix="oc-bench-")
    srv = Server(mode, root, extra_config=BENCH_CONFIG)
    srv.start()
    try:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="bench")
        pids = [p.pid for p in srv.procs]
        for size in args.sizes:
            body_path = os.path.join(root, f"body-{size}")
            with open(body_path, "wb") as f:
                f.write(os.urandom(size))
            key = f"obj-{size}"
            s3.put_object(Bucket="bench", Key=key, Body=open(body_path, "rb").read())
            for op in args.ops:
                method = "get_object" if op == "GET" else "put_object"
                url = s3.generate_presigned_url(method, Params={"Bucket": "bench", "Key": key},
                                                ExpiresIn=3600)
                script = None
                env = dict(os.environ)
                if op == "PUT":
                    script = os.path.join(root, "put.lua")
                    with open(script, "w") as f:
                        f.write(PUT_SCRIPT)
                    env["OC_BENCH_BODY"] = body_path
                for conc in args.conc:
                    cpu0 = cpu_seconds(pids)
                    r = run_wrk(url, conc, args.seconds, script, env)
                    cpu = cpu_seconds(pids) - cpu0
                    r.update({"mode": mode, "op": op, "size": size, "concurrency": conc,
                              # Failed requests (non-2xx, socket errors) move no object.
                              "mb_per_s": r["ops_per_s"] * size / 1e6 *
                                          (r["requests"] - r["errors"]) / max(r["requests"], 1),
                              "server_cpu_us_per_req": cpu * 1e6 / max(r["requests"], 1)})
                    results.append(r)
                    print(f"{mode:8} {op} {size:>8} c={conc:<3} {r['ops_per_s']:>9.0f} ops/s "
                          f"{r['mb_per_s']:>8.1f} MB/s p50={r['p50_ms']}ms p99={r['p99_ms']}ms "
                          f"cpu={r['server_cpu_us_per_req']:.1f}us/req errors={r['errors']}",
                          flush=True)
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--modes", default="embedded,remote")
    ap.add_argument("--sizes", default="4096,65536,1048576")
    ap.add_argument("--conc", default="1,8,32")
    ap.add_argument("--ops", default="GET,PUT")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d", time.gmtime()), "gateway_bench.json"))
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.conc = [int(x) for x in args.conc.split(",")]
    args.ops = [op.upper() for op in args.ops.split(",")]
    if not set(args.ops) <= {"GET", "PUT"}:
        ap.error(f"--ops takes GET and/or PUT, not {','.join(args.ops)}")
    build = os.path.join(ROOT, "build", "release")
    os.environ.setdefault("OC_OBJECTCACHE_BIN", os.path.join(build, "gateway", "objectcache"))
    os.environ.setdefault("OC_GATEWAY_BIN", os.path.join(build, "gateway", "oc-gateway"))
    os.environ.setdefault("OC_STORAGE_SERVER_BIN",
                          os.path.join(build, "storage-server", "bin", "oc-storage-server"))
    results = []
    for mode in args.modes.split(","):
        if mode == "remote" and not os.path.exists(os.environ["OC_STORAGE_SERVER_BIN"]):
            print("remote: oc-storage-server not built, skipped", flush=True)
            continue
        bench_mode(mode, args, results)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "gateway_bench", "results": results}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
