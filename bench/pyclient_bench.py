#!/usr/bin/python3
"""pyclient_bench (issue 18): the objectcache Python package against the C++ client on the same
shapes, in the same run, against one `objectcache serve`.

For each layer size S (L = 32 layers, N chunks so that large S moves tens of MiB) and each path
(ucx: a UCX-allocated buffer reused, the server writing in place; http: the payload in the
response body into a heap buffer), both clients send R descriptor GETs of the same stored
chunks, waiting layer by layer, then for the end:
  cpp  `oc get-layers --repeat R+1` (liboc_client, one process: warm connections and buffer);
       each "repeat" line is one request, call to end of Wait() and the handle freed, with the
       process CPU time it took (all threads, user + system)
  py   objectcache.Client.get_layers + Transfer.wait_layer(l) for each l + wait(), the same
       loop, timed and CPU-clocked (time.process_time_ns: the same clock) per request
The first request of each is a warm-up. Runs alternate cpp, py, cpp, py (--rounds) so machine
drift hits both. Two measures per request:
  wall  median microseconds per request, GB/s (payload / median), the ratio py/cpp GB/s and
        the Python's added microseconds: moves by milliseconds when other work shares the cores
  cpu   median client CPU microseconds per request, and the Python's added CPU per request:
        what each client process itself spends, far less sensitive to the machine's load.
        Cross-checked with the kernel's rusage of the oc child (os.wait4) less that of an
        `oc get-layers --repeat 1` run (its setup and warm-up), per request.
Beside them, the server's CPU per request (objectcache serve's process CPU clock, i.e.
/proc/<pid>/stat's utime + stime at nanosecond resolution), over the Python loop and over the
C++ run less the --repeat 1 run, so a difference in what the server did is visible.
Targets (issue 18): ratio >= 0.9 at S >= 256 KiB, added <= 50 us per request at small S.

    bench/pyclient_bench.py --build build/release [--out PREFIX] [--quick | --shapes S:N,...]
                            [--repeat R] [--rounds K]

Writes PREFIX.json and PREFIX.png (default bench/results/<date>/pyclient).
"""
import argparse
import json
import os
import resource
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


def process_cpu_ns(pid):
    """CPU time of process `pid` so far (every thread, user + system), in nanoseconds: its
    process CPU clock (clock_getcpuclockid's id: ((~pid) << 3) | CPUCLOCK_SCHED), the exact
    sum of what /proc/<pid>/stat's utime + stime count in 10 ms ticks."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def fields(line):
    """{"total_us": ..., "cpu_us": ...} of a "repeat <i> k=v k=v" line of oc get-layers."""
    return {k: float(v) for k, v in (f.split("=", 1) for f in line.split()[2:])}


def cpp_run(build, endpoint, hashes, prefix, s, via, repeat, server_pid):
    """One `oc get-layers --repeat repeat+1` process (repeat = 0: setup and the warm-up only).

    Returns (wall us per request, client process CPU us per request as oc reports it, the
    child's rusage user and system seconds, the server's CPU ns over the whole run, the
    calling thread's CPU us per request)."""
    env = dict(os.environ, OC_ENDPOINT=endpoint, AWS_ACCESS_KEY_ID=ACCESS,
               AWS_SECRET_ACCESS_KEY=SECRET)
    cmd = [os.path.join(build, "client", "oc"), "get-layers", "--bucket", "bench",
           "--hashes", ",".join(h.hex() for h in hashes), "--prefix", prefix,
           "--layers", str(LAYERS), "--layer-bytes", str(s), "--via", via,
           "--quiet", "--repeat", str(repeat + 1)]
    server0 = process_cpu_ns(server_pid)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        server = process_cpu_ns(server_pid) - server0
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if proc.returncode != 0:
            raise SystemExit(f"oc get-layers failed: {err.read().decode(errors='replace')}")
    lines = [fields(line) for line in text.splitlines() if line.startswith("repeat ")]
    if len(lines) != repeat:
        raise SystemExit(f"oc get-layers printed {len(lines)} repeat lines, not {repeat}")
    return ([f["total_us"] for f in lines], [f["cpu_us"] for f in lines],
            usage.ru_utime, usage.ru_stime, server, [f["thread_cpu_us"] for f in lines])


def py_run(oc, client, d, buf, via, repeat, server_pid):
    """The Python loop. Returns what cpp_run does, over the timed requests (the warm-up
    excluded): wall us, process CPU us per request, user and system seconds, the server's CPU
    ns, the calling thread's CPU us per request."""
    times, cpu, thread_cpu = [], [], []
    for i in range(repeat + 1):
        if i == 1:
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            server0 = process_cpu_ns(server_pid)
        t0 = time.perf_counter_ns()
        c0 = time.process_time_ns()
        tc0 = time.thread_time_ns()
        t = client.get_layers("bench", d, buf, via=via)
        for layer in range(LAYERS):
            t.wait_layer(layer)
        info = t.wait()  # the buffer is free for the next request from here
        tc1 = time.thread_time_ns()
        c1 = time.process_time_ns()
        t1 = time.perf_counter_ns()
        if info.matched != len(d):
            raise SystemExit(f"matched {info.matched} of {len(d)}")
        if i > 0:
            times.append((t1 - t0) / 1e3)
            cpu.append((c1 - c0) / 1e3)
            thread_cpu.append((tc1 - tc0) / 1e3)
    server = process_cpu_ns(server_pid) - server0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    return (times, cpu, ru1.ru_utime - ru0.ru_utime, ru1.ru_stime - ru0.ru_stime, server,
            thread_cpu)


def measure(oc, client, build, endpoint, server_pid, hashes, prefix, d, buf, s, via, args):
    """--rounds alternating rounds of each client on one shape; one row of medians."""
    cpp, cpp_cpu, cpp_thread, py, py_cpu, py_thread, rounds = [], [], [], [], [], [], []
    load0 = common.load_average()
    for _ in range(args.rounds):
        base = cpp_run(build, endpoint, hashes, prefix, s, via, 0, server_pid)
        c = cpp_run(build, endpoint, hashes, prefix, s, via, args.repeat, server_pid)
        p = py_run(oc, client, d, buf, via, args.repeat, server_pid)
        cpp += c[0]
        cpp_cpu += c[1]
        cpp_thread += c[5]
        py += p[0]
        py_cpu += p[1]
        py_thread += p[5]
        r = args.repeat
        rounds.append({
            "cpp_us_median": round(statistics.median(c[0]), 1),
            "py_us_median": round(statistics.median(p[0]), 1),
            "cpp_cpu_us_median": round(statistics.median(c[1]), 1),
            "py_cpu_us_median": round(statistics.median(p[1]), 1),
            "cpp_thread_cpu_us_median": round(statistics.median(c[5]), 1),
            "py_thread_cpu_us_median": round(statistics.median(p[5]), 1),
            "cpp_cpu_us_mean": round(statistics.fmean(c[1]), 1),
            "py_cpu_us_mean": round(statistics.fmean(p[1]), 1),
            # the kernel's view: the oc child's rusage less its --repeat 1 run's, per request
            "cpp_rusage_user_us": round((c[2] - base[2]) / r * 1e6, 1),
            "cpp_rusage_sys_us": round((c[3] - base[3]) / r * 1e6, 1),
            "py_rusage_user_us": round(p[2] / r * 1e6, 1),
            "py_rusage_sys_us": round(p[3] / r * 1e6, 1),
            "server_cpu_us_cpp": round((c[4] - base[4]) / r / 1e3, 1),
            "server_cpu_us_py": round(p[4] / r / 1e3, 1),
        })
    c_us, p_us = statistics.median(cpp), statistics.median(py)
    c_cpu, p_cpu = statistics.median(cpp_cpu), statistics.median(py_cpu)

    def med(key):
        return round(statistics.median(x[key] for x in rounds), 1)

    return {"layer_bytes": s, "chunks": len(d), "layers": LAYERS, "via": via,
            "payload_bytes": d.payload_bytes, "requests_each": len(cpp),
            "cpp_us_median": round(c_us, 1), "py_us_median": round(p_us, 1),
            "cpp_us_min": round(min(cpp), 1), "py_us_min": round(min(py), 1),
            "cpp_gbps": round(d.payload_bytes / c_us / 1e3, 3),
            "py_gbps": round(d.payload_bytes / p_us / 1e3, 3),
            "ratio": round(c_us / p_us, 3), "added_us": round(p_us - c_us, 1),
            "cpp_cpu_us_median": round(c_cpu, 1), "py_cpu_us_median": round(p_cpu, 1),
            "added_cpu_us": round(p_cpu - c_cpu, 1),
            "added_cpu_us_mean": round(statistics.fmean(py_cpu) - statistics.fmean(cpp_cpu), 1),
            "added_cpu_us_by_round": [round(x["py_cpu_us_median"] - x["cpp_cpu_us_median"], 1)
                                      for x in rounds],
            "cpp_thread_cpu_us_median": round(statistics.median(cpp_thread), 1),
            "py_thread_cpu_us_median": round(statistics.median(py_thread), 1),
            "added_thread_cpu_us": round(statistics.median(py_thread) -
                                         statistics.median(cpp_thread), 1),
            "added_thread_cpu_us_by_round": [
                round(x["py_thread_cpu_us_median"] - x["cpp_thread_cpu_us_median"], 1)
                for x in rounds],
            "cpp_rusage_us": round(med("cpp_rusage_user_us") + med("cpp_rusage_sys_us"), 1),
            "py_rusage_us": round(med("py_rusage_user_us") + med("py_rusage_sys_us"), 1),
            "server_cpu_us_cpp": med("server_cpu_us_cpp"),
            "server_cpu_us_py": med("server_cpu_us_py"),
            "load_average": [load0, common.load_average()], "rounds": rounds}


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.2))
    for via, style in (("ucx", "-"), ("http", "--")):
        sel = [r for r in rows if r["via"] == via]
        xs = [r["layer_bytes"] // 1024 for r in sel]
        a.plot(xs, [r["cpp_gbps"] for r in sel], "o" + style, label=f"C++ {via}")
        a.plot(xs, [r["py_gbps"] for r in sel], "s" + style, label=f"Python {via}")
        b.plot(xs, [r["added_us"] for r in sel], "o" + style, label=f"wall {via}")
        b.plot(xs, [r["added_cpu_us"] for r in sel], "s" + style, label=f"process CPU {via}")
        b.plot(xs, [r["added_thread_cpu_us"] for r in sel], "^" + style,
               label=f"calling-thread CPU {via}")
        c.plot(xs, [r["cpp_cpu_us_median"] for r in sel], "o" + style, label=f"C++ client {via}")
        c.plot(xs, [r["py_cpu_us_median"] for r in sel], "s" + style, label=f"Python client {via}")
        c.plot(xs, [r["server_cpu_us_py"] for r in sel], "^" + style,
               label=f"server (Python run) {via}")
    for ax in (a, b, c):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("S, KiB per layer slice (L = 32)")
        ax.legend(fontsize=7)
    a.set_ylabel("GB/s (median request)")
    b.set_ylabel("Python added us per request (median)")
    b.set_yscale("symlog", linthresh=100)
    b.axhline(50, color="grey", lw=0.5)
    c.set_ylabel("CPU us per request (median)")
    c.set_yscale("log")
    fig.suptitle("objectcache (Python) vs liboc_client (oc get-layers), same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(common.ROOT, "build", "release"))
    ap.add_argument("--out", default=os.path.join(common.BENCH, "results",
                                                  time.strftime("%Y-%m-%d"), "pyclient"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", help="S:N,... (layer bytes : chunks) instead of the default "
                    "shapes (tests: a small one)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import numpy as np
    import objectcache as oc

    load_start = common.load_average()
    tmp = tempfile.mkdtemp(prefix="oc-pybench-")
    proc, endpoint = start_server(build, tmp)
    rows = []
    try:
        client = oc.Client(endpoint, ACCESS, SECRET)
        client.create_bucket("bench")
        ns = oc.namespace_string("meta-llama/Llama-3.1-8B")
        shapes = QUICK if args.quick else SHAPES
        if args.shapes:
            shapes = [tuple(int(x) for x in shape.split(":")) for shape in args.shapes.split(",")]
        for s, n in shapes:
            prefix = f"b{s}/"
            tokens = np.arange(s, s + n * 16, dtype=np.uint32)
            hashes = oc.chunk_hashes(tokens, 16, ns)
            d = oc.Descriptor(hashes, layers=LAYERS, layer_bytes=s, prefix=prefix)
            kv = np.random.default_rng(s).integers(0, 256, d.payload_bytes, dtype=np.uint8)
            client.put_chunks("bench", d, kv).raise_for_status()
            for via in ("ucx", "http"):
                buf = client.allocate_buffer(d.payload_bytes) if via == "ucx" else \
                    np.zeros(d.payload_bytes, np.uint8)
                row = measure(oc, client, build, endpoint, proc.pid, hashes, prefix, d, buf, s,
                              via, args)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
                del buf
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    doc = {"benchmark": "pyclient_bench", "machine": common.machine(),
           "versions": common.versions(build), "load_average_start": load_start,
           "load_average": common.load_average(),
           "repeat": args.repeat, "rounds": args.rounds, "rows": rows}
    with open(args.out + ".json", "w") as f:
        json.dump(common.portable(doc, tmp), f, indent=1)
    plot(rows, args.out + ".png")
    print(f"wrote {args.out}.json and .png")


if __name__ == "__main__":
    main()
