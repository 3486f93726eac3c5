"""write_bench's "clients" part (issue 33, "Writes at disk speed from every client"): one
prefix of N chunks (the profile's client_shape (G, N); --reduced: 224 chunks x 32 layers x
64 KiB = 448 MiB) stored with one descriptor PUT by each client the product ships, alternating
client by client and repetition by repetition, each into a fresh server of the first
configuration:

  lib-http  the Python package, Client.put_chunks(via="http") from a numpy array
  cli-http  `oc put-chunks --via http --data FILE` (the file is in the page cache)
  lib-ucx   the Python package, put_chunks(via="ucx") from allocate_buffer (the server pulls)
  cli-ucx   `oc put-chunks --via ucx --data FILE`

Each row has the wall time of the PUT (the library: the put_chunks call, and the same call
again from the same memory; the CLI: the whole process, start to exit), the client's CPU seconds (process_time in the library's process; the
CLI's rusage) and the server's CPU (write_bench_systems.Meter). The report sets them against
dd with fdatasync and RGW's per-chunk PUTs of the same G and N from the same run (the
"ceiling" and "desc" parts).

Targets (issue 33): cli-http >= 80% of lib-http; lib-ucx >= lib-http; lib-http and cli-http
each >= 60% of dd fdatasync and >= 4x RGW's per-chunk PUTs."""
import json
import os
import subprocess
import sys
import time

import common
from write_bench_systems import BYTES_PER_TOKEN_LAYER, BUCKET, LAYERS, Meter

METHODS = ["lib-http", "cli-http", "lib-ucx", "cli-ucx"]
TARGET_CLI_VS_LIB = 0.8
TARGET_UCX_VS_HTTP = 1.0
TARGET_VS_FDATASYNC = 0.6
TARGET_VS_RGW = 4.0

# The library's side of one measurement, run by /usr/bin/python3 in a process of its own (so
# its CPU is its own): argv = python dir, endpoint, access, secret, bucket, via, tokens file,
# G, L, S, data file. The bytes are loaded before the clock starts; prints one JSON line.
LIB_PUT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import objectcache as oc
endpoint, access, secret, bucket, via, tokens_path = sys.argv[2:8]
g, layers, s = (int(x) for x in sys.argv[8:11])
tokens = np.array(open(tokens_path).read().split(), dtype=np.uint32)
c = oc.Client(endpoint, access, secret, timeout=600)
d = oc.Descriptor(oc.chunk_hashes(tokens, g, oc.namespace_string("model", "bfloat16")),
                  layers=layers, layer_bytes=s, chunk_tokens=g, prefix="bench/")
data = np.fromfile(sys.argv[11], dtype=np.uint8)
if via == "ucx":
    buf = c.allocate_buffer(data.nbytes)
    oc.as_array(buf)[:] = data
    data = buf
# Untimed: the connection and (UCX) the data plane, with the first chunk.
c.put_chunks(bucket, d[:1], data[:layers * s] if via == "http" else data,
             via=via).raise_for_status()
cpu0, t0 = time.process_time(), time.monotonic()
r = c.put_chunks(bucket, d, data, via=via).raise_for_status()
secs, cpu = time.monotonic() - t0, time.process_time() - cpu0
# The same PUT again from the same memory: a serving node's registered KV pool is reused, and
# the server keeps a source it attached (its first touch of each page is the first PUT's).
t1 = time.monotonic()
c.put_chunks(bucket, d, data, via=via).raise_for_status()
again = time.monotonic() - t1
print(json.dumps({"seconds": secs, "client_cpu_s": cpu, "bytes": r.bytes,
                  "seconds_again": again}))
"""


def prepare(bench, g, n):
    """The tokens file and the N chunks' bytes, written and synced once per run (so no
    writeback of them runs during a measurement); the data stays in the page cache. Both go
    in the run's data dir, which the run removes (the log dir is kept)."""
    tokens = os.path.join(bench.data, f"clients-tokens-{g}-{n}.txt")
    data = os.path.join(bench.data, f"clients-data-{g}-{n}.bin")
    if not os.path.exists(data):
        with open(tokens, "w") as f:
            f.write(" ".join(str(i) for i in range(g * n)))
        chunk = LAYERS * g * BYTES_PER_TOKEN_LAYER
        block = os.urandom(chunk)
        with open(data, "wb") as f:
            for j in range(n):
                f.write(block[j % 251:] + block[:j % 251])  # distinct chunks, cheaply
            f.flush()
            os.fsync(f.fileno())
    return tokens, data


def put_once(bench, method, system, g, n, tokens, data):
    """One descriptor PUT of the prefix by `method` into `system`; the row."""
    url, access, secret, pids = bench.target(system)
    kind, via = method.split("-")
    s = g * BYTES_PER_TOKEN_LAYER
    env = dict(os.environ, AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret,
               OC_ENDPOINT=url)
    m = Meter(pids)
    if kind == "lib":
        cmd = ["/usr/bin/python3", "-c", LIB_PUT, os.path.join(bench.build, "python"), url,
               access, secret, BUCKET, via, tokens, str(g), str(LAYERS), str(s), data]
        bench.record("/usr/bin/python3 -c <write_bench_clients.LIB_PUT> ... " + via +
                     "   # objectcache.Client.put_chunks, timed around the call")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if p.returncode != 0:
            raise common.StepFailed(f"{method}: exit {p.returncode}: {p.stderr[-600:]}")
        row = json.loads(p.stdout.strip().splitlines()[-1])
    else:
        cmd = [os.path.join(bench.build, "client", "oc"), "put-chunks", "--bucket", BUCKET,
               "--tokens", tokens, "--chunk-tokens", str(g), "--prefix", "bench/",
               "--layers", str(LAYERS), "--layer-bytes", str(s), "--data", data, "--via", via]
        bench.record(" ".join(os.path.basename(c) if c in (tokens, data) else c
                              for c in cmd[1:]) + "   # timed start to exit, rusage CPU")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        secs = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
        if proc.returncode != 0 or f"chunks={n} " not in out:
            raise common.StepFailed(f"{method}: exit {proc.returncode}: {(out + err)[-600:]}")
        row = {"seconds": secs, "client_cpu_s": usage.ru_utime + usage.ru_stime,
               "bytes": n * LAYERS * s}
    row.update(m.done())
    row.update({"method": method, "system": system, "G": g, "chunks": n,
                "gbps": row["bytes"] / row["seconds"] / 1e9})
    return row


def measure(bench):
    """The part: every method, alternating, each repetition into fresh servers."""
    g, n = bench.p["client_shape"]
    tokens, data = prepare(bench, g, n)
    system = bench.systems(with_rgw=False)[0]
    for rep in range(bench.p["reps"]):
        for method in METHODS:
            with bench.fresh(system, "clients"):
                row = put_once(bench, method, system, g, n, tokens, data)
            row["rep"] = rep
            bench.doc.setdefault("clients", []).append(row)
            bench.say(f"clients {rep + 1}/{bench.p['reps']} {method}: {row['gbps']:.3f} GB/s, "
                      f"client CPU {row['client_cpu_s']:.2f} s")


def _median(values):
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def summarize(doc, fdatasync, desc):
    """(rows per method, targets) from doc["clients"]; `fdatasync` is the run's dd median,
    `desc` the summarized descriptor-PUT rows (RGW's per-chunk PUTs among them)."""
    rows = []
    raw = doc.get("clients") or []
    for method in METHODS:
        rs = [r for r in raw if r["method"] == method]
        if not rs:
            continue
        g, n, nbytes = rs[0]["G"], rs[0]["chunks"], rs[0]["bytes"]
        gbps = nbytes / _median([r["seconds"] for r in rs]) / 1e9
        rgw = next((d["gbps"] for d in desc if d["system"] == "rgw" and d["G"] == g
                    and d["chunks"] == n), None)
        rows.append({
            "method": method, "system": rs[0]["system"], "G": g, "chunks": n,
            "payload_bytes": nbytes, "reps": len(rs), "gbps": gbps,
            "gbps_reps": [r["gbps"] for r in rs],
            # The library's second PUT from the same memory (None for the CLI).
            "gbps_again": nbytes / _median([r["seconds_again"] for r in rs]) / 1e9
            if all("seconds_again" in r for r in rs) else None,
            "client_cpu_s": _median([r["client_cpu_s"] for r in rs]),
            # Over every PUT the row's client made (the library's two).
            "server_cpu_s_per_gb": sum(sum(r["cpu_s"].values()) for r in rs) /
            sum(nbytes * (2 if "seconds_again" in r else 1) / 1e9 for r in rs),
            "vs_fdatasync": gbps / fdatasync if fdatasync else None,
            "rgw_gbps": rgw, "vs_rgw": gbps / rgw if rgw else None})
    by = {r["method"]: r for r in rows}
    out = []

    def add(target, figures, met):
        out.append({"target": target, "system": "clients", "figures": figures, "met": met})

    if "cli-http" in by and "lib-http" in by:
        x = by["cli-http"]["gbps"] / by["lib-http"]["gbps"]
        add(f"CLI descriptor PUT >= {TARGET_CLI_VS_LIB:.0%} of the library's (HTTP body)",
            f"{x:.2f}x", x >= TARGET_CLI_VS_LIB)
    if "lib-ucx" in by and "lib-http" in by:
        x = by["lib-ucx"]["gbps"] / by["lib-http"]["gbps"]
        add("UCX-pulled PUT >= the HTTP body (library)", f"{x:.2f}x", x >= TARGET_UCX_VS_HTTP)
        if by["lib-ucx"]["gbps_again"] and by["lib-http"]["gbps_again"]:
            x = by["lib-ucx"]["gbps_again"] / by["lib-http"]["gbps_again"]
            add("UCX-pulled PUT >= the HTTP body (library, second PUT from the same memory)",
                f"{x:.2f}x", x >= TARGET_UCX_VS_HTTP)
    for method in ("lib-http", "cli-http"):
        r = by.get(method)
        if r is None:
            continue
        add(f"{method} descriptor PUT >= {TARGET_VS_FDATASYNC:.0%} of dd fdatasync",
            "" if r["vs_fdatasync"] is None else f"{r['vs_fdatasync']:.2f}x",
            None if r["vs_fdatasync"] is None else r["vs_fdatasync"] >= TARGET_VS_FDATASYNC)
        add(f"{method} descriptor PUT >= {TARGET_VS_RGW:g}x RGW's per-chunk PUTs",
            "" if r["vs_rgw"] is None else f"{r['vs_rgw']:.2f}x",
            None if r["vs_rgw"] is None else r["vs_rgw"] >= TARGET_VS_RGW)
    return rows, out


def markdown(rows, num, size_label, table):
    """The section of the report (the report's own formatting helpers passed in)."""
    if not rows:
        return []
    return ["### One prefix from every client (issue 33)", "",
            table(["client", "G", "chunks", "payload", "GB/s", "reps (GB/s)",
                   "GB/s, same memory again", "client CPU s", "server CPU s/GB",
                   "vs fdatasync", "vs RGW"],
                  [[r["method"], r["G"], r["chunks"], size_label(r["payload_bytes"]),
                    num(r["gbps"]), ", ".join(f"{x:.3f}" for x in r["gbps_reps"]),
                    num(r.get("gbps_again")),
                    num(r["client_cpu_s"]), num(r["server_cpu_s_per_gb"]),
                    num(r["vs_fdatasync"]), num(r["vs_rgw"])] for r in rows]), ""]


if __name__ == "__main__":
    sys.exit("run through bench/write_bench.py --parts clients")
