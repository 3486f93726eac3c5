#!/usr/bin/python3
"""one_get_cores: one descriptor GET before and after the read-ahead pipeline and the parallel
copy engine (docs/decisions/one-descriptor-get-several-cores.md), in one alternating run.

For each build (--before DIR, --after DIR: build trees holding gateway/objectcache and
bench/objectcache_bench) and each repetition, in turn: starts `objectcache serve` (UCX_TLS=shm),
stores the chunks, and times objectcache_bench's "ucx" (into a shared-memory target) and
"http-body" methods at G = 16, 64, 256 (S = 64 KiB, 256 KiB, 1 MiB), 4K context, 87.5% hit,
while a sampler reads every server thread's run time (/proc/<pid>/task/*/schedstat, ns) every
5 ms. Reported per build, method and G: GB/s (best of the repetitions), server CPU seconds per
GB, and the busy fraction of the copy threads ("oc-copy"), of the readers (the request's
descriptor worker "oc-descriptor" and the assembly workers "oc-assemble"), and the time both
were busy at once, estimated per 5 ms sample as min(copy busy, reader busy) (an upper bound;
max(0, copy + reader - 1) per sample is the lower bound, also given).

  bench/one_get_cores.py --before DIR --after DIR [--reps 2] [--out FILE.json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objectcache_bench as ocb  # noqa: E402

SAMPLE_S = 0.005


def thread_times(pid):
    out = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            comm = open(f"{base}/{tid}/comm").read().strip()
            ns = int(open(f"{base}/{tid}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = (comm, ns)
    return out


def role(comm):
    if comm.startswith("oc-copy"):
        return "copy"
    if comm.startswith(("oc-assemble", "oc-descriptor")):
        return "reader"
    return "other"


class Sampler:
    """Busy time per role per sample interval, while running."""

    def __init__(self, pid):
        self.pid = pid
        self.samples = []  # (dt, {role: busy ns})
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        prev, t_prev = thread_times(self.pid), time.monotonic()
        while not self.stop.is_set():
            time.sleep(SAMPLE_S)
            cur, t = thread_times(self.pid), time.monotonic()
            busy = {"copy": 0, "reader": 0, "other": 0}
            for tid, (comm, ns) in cur.items():
                busy[role(comm)] += ns - prev.get(tid, (comm, ns))[1]
            self.samples.append((t - t_prev, busy))
            prev, t_prev = cur, t

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self):
        """Busy fractions over the samples in which the server worked at all."""
        work = [(dt, b) for dt, b in self.samples if sum(b.values()) > 0.05 * dt * 1e9]
        wall = sum(dt for dt, _ in work) or 1e-9
        out = {"wall_s": wall}
        for r in ("copy", "reader", "other"):
            out[r + "_busy"] = sum(b[r] for _, b in work) / 1e9 / wall
        hi = lo = 0.0
        for dt, b in work:
            c = min(1.0, b["copy"] / 1e9 / dt)  # one copy thread busy = 1; more caps at 1
            rd = min(1.0, b["reader"] / 1e9 / dt)
            hi += min(c, rd) * dt
            lo += max(0.0, c + rd - 1) * dt
        out["overlap_upper"] = hi / wall
        out["overlap_lower"] = lo / wall
        return out


def measure(build, label, groups, root, rep):
    data = os.path.join(root, f"data-{label}")
    proc, url = ocb.start(build, data, root, "", tls="shm")
    rows = []
    try:
        env = dict(ocb.ucx_env("shm"), AWS_ACCESS_KEY_ID=ocb.ACCESS_KEY,
                   AWS_SECRET_ACCESS_KEY=ocb.SECRET_KEY)
        exe = os.path.join(build, "bench", "objectcache_bench")
        base = ["--endpoint", url, "--contexts", "4096", "--hits", "0.875"]
        for g in groups:
            subprocess.run([exe, *base, "--groups", str(g), "--methods", "ucx", "--repeat", "1",
                            "--warmup", "0", "--json", os.path.join(root, "load.json")],
                           env=env, check=True, capture_output=True)
            for method in ("ucx", "http-body"):
                js = os.path.join(root, f"{label}-{g}-{method}.json")
                cpu0 = ocb_cpu(proc.pid)
                with Sampler(proc.pid) as s:
                    subprocess.run([exe, *base, "--groups", str(g), "--methods", method,
                                    "--no-put", "--repeat", "3", "--json", js],
                                   env=env, check=True, capture_output=True)
                cpu = ocb_cpu(proc.pid) - cpu0
                r = json.load(open(js))["results"][0]
                moved = r["gbps"] * r["total_s"] * 1e9  # bytes of one request
                reps = 4  # the warm-up and the three timed repetitions ran on the server
                row = {"build": label, "rep": rep, "G": g, "S": 4096 * g, "method": method,
                       "gbps": r["gbps"], "mode": r.get("mode"),
                       "server_cpu_s_per_gb": cpu / (moved * reps / 1e9)}
                row.update(s.summary())
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)
    return rows


def ocb_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--groups", default="16,64,256")
    ap.add_argument("--out", default="one_get_cores.json")
    a = ap.parse_args()
    groups = [int(g) for g in a.groups.split(",")]
    root = tempfile.mkdtemp(prefix="oc-onecore-")
    rows = []
    try:
        for rep in range(a.reps):
            for label, build in (("before", a.before), ("after", a.after)):
                rows += measure(os.path.abspath(build), label, groups, root, rep)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump({"rows": rows, "groups": groups, "reps": a.reps,
                   "load_end": os.getloadavg()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
