"""write_bench's "clients" part (issue 33, "Writes at disk speed from every client"): one
prefix of N chunks (the profile's client_shape (G, N); --reduced: 224 chunks x 32 layers x
64 KiB = 448 MiB) stored with one descriptor PUT by each client the product ships, alternating
client by client and repetition by repetition, each into a fresh server of the first
configuration:

  lib-http  the Python package, Client.put_chunks(via="http") from a numpy array
  cli-http  `oc put-chunks --via http --data FILE` (the file is in the page cache)
  lib-ucx   the Python package, put_chunks(via="ucx") from allocate_buffer (the server pulls)
  cli-ucx   `oc put-chunks --via ucx --data FILE`

Each row has the wall time of the PUT: the library's is the put_chunks call alone (after an
untimed PUT of the first chunk that opens the connection, and the data plane for UCX), plus
the same call again from the same memory; the CLI's is the whole process, start to exit
(exec, flags, the tokens file and its hashes, the file's mapping, for UCX the data plane and
the copy into its buffer, the PUT, exit), and the PUT call alone as the CLI prints it
(put_us: request sent, connection included, to the answer read), so the CLI's fixed cost is
the difference. Before its timed PUT the CLI, too, puts the prefix's first chunk, untimed for
`gbps`, in a process of its own (since 2026-12-03; before, its PUT went into a server that
had stored nothing), so the server has stored one chunk before either client's timed PUT;
that process's own times are kept (one_chunk_*: a 2 MiB PUT, nearly all fixed cost). Also the client's CPU seconds (process_time in the library's process; the
CLI's rusage) and the server's CPU (write_bench_systems.Meter). The report sets them against
dd with fdatasync and RGW's per-chunk PUTs of the same G and N from the same run (the
"ceiling" and "desc" parts).

Targets (issue 33): cli-http >= 80% of lib-http; lib-ucx >= lib-http; lib-http and cli-http
each >= 60% of dd fdatasync and >= 4x RGW's per-chunk PUTs. The CLI's are judged twice, on
the whole process and on its PUT call (the library's timing), and each target names which."""
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
    """The tokens file and the N chunks' bytes, and the same for the first chunk alone (the
    CLI's untimed first PUT), written and synced once per run (so no writeback of them runs
    during a measurement); the data stays in the page cache. They go in the run's data dir,
    which the run removes (the log dir is kept)."""
    chunk = LAYERS * g * BYTES_PER_TOKEN_LAYER
    block = os.urandom(chunk)
    files = []
    for count in (n, 1):
        tokens = os.path.join(bench.data, f"clients-tokens-{g}-{count}.txt")
        data = os.path.join(bench.data, f"clients-data-{g}-{count}.bin")
        if not os.path.exists(data):
            with open(tokens, "w") as f:
                f.write(" ".join(str(i) for i in range(g * count)))
            with open(data, "wb") as f:
                for j in range(count):
                    f.write(block[j % 251:] + block[:j % 251])  # distinct chunks, cheaply
                f.flush()
                os.fsync(f.fileno())
        files.append((tokens, data))
    return files


def run_cli(cmd, env, n, method):
    """One `oc put-chunks` process: (wall seconds start to exit, rusage CPU seconds, the PUT
    call's seconds from its put_us field)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if proc.returncode != 0 or f"chunks={n} " not in out:
        raise common.StepFailed(f"{method}: exit {proc.returncode}: {(out + err)[-600:]}")
    fields = dict(kv.split("=", 1) for kv in out.splitlines()[0].split())
    return secs, usage.ru_utime + usage.ru_stime, int(fields["put_us"]) / 1e6


def put_once(bench, method, system, g, n, files):
    """One descriptor PUT of the prefix by `method` into `system`; the row."""
    (tokens, data), (tokens1, data1) = files
    url, access, secret, pids = bench.target(system)
    kind, via = method.split("-")
    s = g * BYTES_PER_TOKEN_LAYER
    env = dict(os.environ, AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret,
               OC_ENDPOINT=url)
    if kind == "lib":
        m = Meter(pids)
        cmd = ["/usr/bin/python3", "-c", LIB_PUT, os.path.join(bench.build, "python"), url,
               access, secret, BUCKET, via, tokens, str(g), str(LAYERS), str(s), data]
        bench.record("/usr/bin/python3 -c <write_bench_clients.LIB_PUT> ... " + via +
                     "   # objectcache.Client.put_chunks, timed around the call")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if p.returncode != 0:
            raise common.StepFailed(f"{method}: exit {p.returncode}: {p.stderr[-600:]}")
        row = json.loads(p.stdout.strip().splitlines()[-1])
    else:
        def cmd(tokens_file, data_file):
            return [os.path.join(bench.build, "client", "oc"), "put-chunks", "--bucket", BUCKET,
                    "--tokens", tokens_file, "--chunk-tokens", str(g), "--prefix", "bench/",
                    "--layers", str(LAYERS), "--layer-bytes", str(s), "--data", data_file,
                    "--via", via]
        # First the prefix's first chunk alone, as the library's untimed first PUT: the
        # server has stored one chunk before the timed PUT either way. Its own times are
        # kept: a process whose PUT is small is nearly all fixed cost.
        bench.record(" ".join(os.path.basename(c) if c in (tokens1, data1) else c
                              for c in cmd(tokens1, data1)[1:]) +
                     "   # the first chunk alone, untimed for gbps; its start-to-exit kept")
        one_secs, _, one_call = run_cli(cmd(tokens1, data1), env, 1, method)
        bench.record(" ".join(os.path.basename(c) if c in (tokens, data) else c
                              for c in cmd(tokens, data)[1:]) +
                     "   # timed start to exit (and put_us), rusage CPU")
        m = Meter(pids)
        secs, cpu, call = run_cli(cmd(tokens, data), env, n, method)
        row = {"seconds": secs, "client_cpu_s": cpu, "bytes": n * LAYERS * s,
               # The PUT call alone (oc put-chunks' put_us); seconds minus it is the process.
               "seconds_put_call": call,
               "one_chunk_seconds": one_secs, "one_chunk_seconds_put_call": one_call}
    row.update(m.done())
    row.update({"method": method, "system": system, "G": g, "chunks": n,
                "gbps": row["bytes"] / row["seconds"] / 1e9})
    if "seconds_put_call" in row:
        row["gbps_put_call"] = row["bytes"] / row["seconds_put_call"] / 1e9
    return row


def measure(bench):
    """The part: every method, alternating, each repetition into fresh servers."""
    g, n = bench.p["client_shape"]
    files = prepare(bench, g, n)
    system = bench.systems(with_rgw=False)[0]
    for rep in range(bench.p["reps"]):
        for method in METHODS:
            with bench.fresh(system, "clients"):
                row = put_once(bench, method, system, g, n, files)
            row["rep"] = rep
            bench.doc.setdefault("clients", []).append(row)
            call = (f" ({row['gbps_put_call']:.3f} GB/s in the PUT call)"
                    if "gbps_put_call" in row else "")
            bench.say(f"clients {rep + 1}/{bench.p['reps']} {method}: {row['gbps']:.3f} GB/s"
                      f"{call}, client CPU {row['client_cpu_s']:.2f} s")


def _median(values):
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def summarize(doc, ceiling, desc):
    """(rows per method, targets) from doc["clients"]; `ceiling` the run's medians per
    ceiling mode (dd's "fdatasync", the target's base; "fdatasync-kept" and "tcp" when the
    run measured them), `desc` the summarized descriptor-PUT rows (RGW's per-chunk PUTs among
    them).

    `gbps` keeps its meaning: the library's put_chunks call, the CLI's whole process.
    `gbps_put_call` is the PUT call alone for both (the library's timing is already the call;
    None for CLI rows recorded before `oc put-chunks` printed put_us), `overhead_s` the CLI's
    median whole process minus its PUT call."""
    fdatasync = ceiling.get("fdatasync")
    rows = []
    raw = doc.get("clients") or []
    for method in METHODS:
        rs = [r for r in raw if r["method"] == method]
        if not rs:
            continue
        g, n, nbytes = rs[0]["G"], rs[0]["chunks"], rs[0]["bytes"]
        gbps = nbytes / _median([r["seconds"] for r in rs]) / 1e9
        cli = method.startswith("cli-")
        call = None
        overhead = None
        if not cli:
            call = gbps
        elif all("seconds_put_call" in r for r in rs):
            call = nbytes / _median([r["seconds_put_call"] for r in rs]) / 1e9
            overhead = _median([r["seconds"] - r["seconds_put_call"] for r in rs])
        rgw = next((d["gbps"] for d in desc if d["system"] == "rgw" and d["G"] == g
                    and d["chunks"] == n), None)
        rows.append({
            "method": method, "system": rs[0]["system"], "G": g, "chunks": n,
            "payload_bytes": nbytes, "reps": len(rs), "gbps": gbps,
            "gbps_reps": [r["gbps"] for r in rs],
            "timing": "whole process, start to exit" if cli else "the put_chunks call",
            "gbps_put_call": call,
            "gbps_put_call_reps": [r["gbps_put_call"] for r in rs] if cli and call else None,
            "overhead_s": overhead,
            "overhead_s_reps": [r["seconds"] - r["seconds_put_call"] for r in rs]
            if overhead is not None else None,
            # The CLI's untimed first PUT of one chunk (2 MiB at G = 16): start to exit, and
            # start to exit minus its PUT call.
            "one_chunk_seconds": _median([r["one_chunk_seconds"] for r in rs])
            if all("one_chunk_seconds" in r for r in rs) else None,
            "one_chunk_overhead_s":
            _median([r["one_chunk_seconds"] - r["one_chunk_seconds_put_call"] for r in rs])
            if all("one_chunk_seconds" in r for r in rs) else None,
            # The library's second PUT from the same memory (None for the CLI).
            "gbps_again": nbytes / _median([r["seconds_again"] for r in rs]) / 1e9
            if all("seconds_again" in r for r in rs) else None,
            "client_cpu_s": _median([r["client_cpu_s"] for r in rs]),
            # Over every PUT the row's client made (the library's two).
            "server_cpu_s_per_gb": sum(sum(r["cpu_s"].values()) for r in rs) /
            sum(nbytes * (2 if "seconds_again" in r else 1) / 1e9 for r in rs),
            "vs_fdatasync": gbps / fdatasync if fdatasync else None,
            "vs_fdatasync_put_call": call / fdatasync if fdatasync and call else None,
            "vs_fdatasync_kept": gbps / ceiling["fdatasync-kept"]
            if ceiling.get("fdatasync-kept") else None,
            "vs_tcp": gbps / ceiling["tcp"] if ceiling.get("tcp") else None,
            "rgw_gbps": rgw, "vs_rgw": gbps / rgw if rgw else None,
            "vs_rgw_put_call": call / rgw if rgw and call else None})
    by = {r["method"]: r for r in rows}
    out = []

    def add(target, figures, met):
        out.append({"target": target, "system": "clients", "figures": figures, "met": met})

    def judge(target, x, bound):
        add(target, "" if x is None else f"{x:.2f}x", None if x is None else x >= bound)

    # Each target names its timing: the library is timed around its put_chunks call; the CLI
    # start to exit and, like the library, around its PUT call.
    if "cli-http" in by and "lib-http" in by:
        lib = by["lib-http"]
        judge(f"CLI descriptor PUT >= {TARGET_CLI_VS_LIB:.0%} of the library's (HTTP body; "
              "CLI whole process / library call)", by["cli-http"]["gbps"] / lib["gbps"],
              TARGET_CLI_VS_LIB)
        call = by["cli-http"]["gbps_put_call"]
        judge(f"CLI descriptor PUT >= {TARGET_CLI_VS_LIB:.0%} of the library's (HTTP body; "
              "both the PUT call)", call / lib["gbps_put_call"] if call else None,
              TARGET_CLI_VS_LIB)
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
        timings = [(r["timing"], "vs_fdatasync", "vs_rgw")]
        if method.startswith("cli-"):
            timings.append(("the PUT call", "vs_fdatasync_put_call", "vs_rgw_put_call"))
        for timing, fds_key, rgw_key in timings:
            judge(f"{method} descriptor PUT >= {TARGET_VS_FDATASYNC:.0%} of dd fdatasync "
                  f"({timing})", r[fds_key], TARGET_VS_FDATASYNC)
            judge(f"{method} descriptor PUT >= {TARGET_VS_RGW:g}x RGW's per-chunk PUTs "
                  f"({timing})", r[rgw_key], TARGET_VS_RGW)
    return rows, out


def markdown(rows, num, size_label, table):
    """The section of the report (the report's own formatting helpers passed in)."""
    if not rows:
        return []
    return ["### One prefix from every client (issue 33)", "",
            "GB/s: the library's put_chunks call; the CLI's whole process, start to exit. "
            "PUT call: the request alone for both (the CLI's put_us); process overhead: the "
            "CLI's whole process minus its PUT call (median of the repetitions' differences). "
            "Each client first puts the prefix's first chunk, untimed (the library in its "
            "process, the CLI in a process of its own, whose times are the 1-chunk column).",
            "",
            table(["client", "G", "chunks", "payload", "GB/s", "reps (GB/s)",
                   "GB/s, PUT call", "process overhead s", "1-chunk process s (overhead s)",
                   "GB/s, same memory again",
                   "client CPU s", "server CPU s/GB", "vs fdatasync",
                   "vs fdatasync-kept", "vs tcp floor", "vs RGW", "vs RGW, PUT call"],
                  [[r["method"], r["G"], r["chunks"], size_label(r["payload_bytes"]),
                    num(r["gbps"]), ", ".join(f"{x:.3f}" for x in r["gbps_reps"]),
                    num(r.get("gbps_put_call")), num(r.get("overhead_s")),
                    f"{num(r.get('one_chunk_seconds'))} ({num(r.get('one_chunk_overhead_s'))})"
                    if r.get("one_chunk_seconds") is not None else "—",
                    num(r.get("gbps_again")),
                    num(r["client_cpu_s"]), num(r["server_cpu_s_per_gb"]),
                    num(r["vs_fdatasync"]), num(r.get("vs_fdatasync_kept")),
                    num(r.get("vs_tcp")), num(r["vs_rgw"]), num(r.get("vs_rgw_put_call"))]
                   for r in rows]), ""]


if __name__ == "__main__":
    sys.exit("run through bench/write_bench.py --parts clients")
