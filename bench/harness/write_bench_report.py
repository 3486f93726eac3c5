"""Experiment 10's analysis (bench/write_bench.py): the raw rows of alternating repetitions
summarised per row (medians, server CPU seconds per GB, bytes written per byte stored), the
ratios to the disk's ceiling and to RGW within the run, issue 16's targets judged on them (and
issue 33's for the clients part: write_bench_clients.py), the
plot and the report's markdown. Everything is computed from the JSON document, so
`bench/run-all --report-only` redoes it."""
import statistics

import write_bench_clients

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# Issue 16's targets on this machine (the same run's disk and RGW).
TARGET_DESC_VS_FDATASYNC = 0.5
CEILING_MODES = ("fdatasync", "direct", "fdatasync-kept", "tcp")
TARGET_DESC_VS_RGW = 4.0
TARGET_4MIB_CPU_US = 4000
TARGET_64KIB_CPU_US = 150
TARGET_64KIB_OPS = 4000
TARGET_64KIB_CONC = 8
TARGET_WA = 1.3
TARGET_FILL_BYTES = 4 * GiB
CLIENT = "client"  # objectcache_bench's own process: not the server's CPU
# The default layout first, the peer last.
ORDER = ["oc-data_files", "oc-sst", "oc-blob", "rgw"]


def rank(system):
    return ORDER.index(system) if system in ORDER else len(ORDER)


# How each figure was measured (bench/write_bench.py); the report lists them under its tables.
NOTES = [
    "Systems: `objectcache serve` (embedded store, sync_writes = true: a PUT is acknowledged "
    "once its data and its record are fsynced) with the run's [storage] configurations "
    "(oc-data_files: extent_layout = \"data_files\", the default; oc-sst: \"sst\"; oc-blob: "
    "\"blob\"), each a fresh data dir in the same filesystem as the dd ceiling; Ceph RGW 16 "
    "(beast, one OSD: BlueStore on a sparse file, memstore in --smallest) via "
    "tools/ceph-test-cluster, its daemons with tcmalloc preloaded (since 2026-12-03; before, "
    "Debian's glibc malloc slowed RGW's writes 2-3x). Every part alternates the systems repetition by repetition.",
    "Descriptor PUTs: objectcache_bench --put-mode descriptor sends up to 128 chunks (at most "
    "256 MiB) per request, one request at a time; RGW's row is objectcache_bench --put-mode "
    "object: one S3 PUT per chunk object from 8 threads (the issue's per-chunk comparison). "
    "GB/s = payload / wall time; RGW's loads overwrite the previous repetition's chunks.",
    "Server CPU: utime + stime of the server processes (objectcache; radosgw + ceph-osd + "
    "ceph-mon for RGW) from /proc/<pid>/stat around each measurement (10 ms ticks). Bytes "
    "written: write_bytes of /proc/<pid>/io (counted when a page is dirtied, so WAL, flushes "
    "and compactions are charged to the server as they happen).",
    "Single PUTs: wrk with presigned SigV4 URLs (UNSIGNED-PAYLOAD), one distinct key per "
    "request (a row says if a thread ran out of keys and reused some). Latencies are wrk's "
    "(client side).",
    "Every descriptor load, single-PUT run and multipart upload of ours runs on a fresh "
    "server (empty data dir; its bucket created, and one untimed chunk or small object "
    "stored before a load or an upload), removed afterwards: the systems and repetitions "
    "start from the same state, and the disk holds one measurement at a time.",
    "Write amplification: a fresh server per configuration, then distinct G = 16 chunks by "
    "descriptor PUTs. 'after fill' counts write_bytes up to the last PUT's reply; 'settled' "
    "once /stats reports no pending or running compaction and write_bytes has not moved for "
    "the profile's quiet time. The memtable still holds unflushed data then (its WAL copy is "
    "counted, its flush is not): 'settled + memtable' adds it as the flush still to come.",
    "Reads under writes: wrk GETs (a few connections) cycling over pre-stored 64 KiB objects: "
    "idle before the fill, while the fill runs (stopped when it ends), idle after settling.",
]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def size_label(n):
    if n >= GiB:
        return f"{n / GiB:.3g} GiB"
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


def server_cpu(row):
    return sum(v for k, v in (row.get("cpu_s") or {}).items() if k != CLIENT)


def written(row):
    return sum((row.get("write_bytes") or {}).values())


def _per(rows, nbytes, fn):
    total = nbytes * len(rows)
    return sum(fn(r) for r in rows) / total if total else None


def summarize(doc):
    """(summary, targets) from the raw rows."""
    ceiling = {m: median([r["gbps"] for r in doc["ceiling"] if r["mode"] == m])
               for m in CEILING_MODES}
    fds = ceiling["fdatasync"]
    groups = {}
    for r in doc["desc"]:
        groups.setdefault((r["G"], r["chunks"], r["system"]), []).append(r)
    desc = []
    for (g, n, system), rs in sorted(groups.items(), key=lambda i: (i[0][:2], rank(i[0][2]))):
        payload = rs[0]["payload_bytes"]
        gbps = payload / median([x["total_s"] for x in rs]) / 1e9
        desc.append({"system": system, "G": g, "chunks": n, "payload_bytes": payload,
                     "method": rs[0]["method"], "concurrency": rs[0]["concurrency"],
                     "reps": len(rs), "gbps": gbps, "gbps_reps": [x["gbps"] for x in rs],
                     "vs_fdatasync": gbps / fds if fds else None,
                     "server_cpu_s_per_gb": _per(rs, payload / 1e9, server_cpu),
                     "written_per_byte": _per(rs, payload, written)})
    rgw = {(d["G"], d["chunks"]): d["gbps"] for d in desc if d["system"] == "rgw"}
    for d in desc:
        base = rgw.get((d["G"], d["chunks"]))
        d["vs_rgw"] = d["gbps"] / base if base and d["system"] != "rgw" else None
    groups = {}
    for r in doc["s3put"]:
        groups.setdefault((r["size"], r["concurrency"], r["system"]), []).append(r)
    s3put = []
    for (size, conc, system), rs in sorted(groups.items(),
                                           key=lambda i: (-i[0][0], i[0][1], rank(i[0][2]))):
        reqs = sum(x["requests"] for x in rs)
        cpu = sum(server_cpu(x) for x in rs)
        s3put.append({"system": system, "size": size, "concurrency": conc, "reps": len(rs),
                      "ops_per_s": median([x["ops_per_s"] for x in rs]),
                      "gbps": median([x["gbps"] for x in rs]),
                      "cpu_us_per_put": cpu / reqs * 1e6 if reqs else None,
                      "server_cpu_s_per_gb": cpu / (reqs * size / 1e9) if reqs else None,
                      "written_per_byte": sum(written(x) for x in rs) / (reqs * size)
                      if reqs else None,
                      "p50_ms": median([x["p50_ms"] for x in rs]),
                      "p99_ms": median([x["p99_ms"] for x in rs]),
                      "errors": sum(x["errors"] for x in rs),
                      "keys_reused": any(x["keys_reused"] for x in rs)})
    groups = {}
    for r in doc["multipart"]:
        groups.setdefault(r["system"], []).append(r)
    multipart = []
    for system, rs in sorted(groups.items(), key=lambda i: rank(i[0])):
        size = rs[0]["object_bytes"]
        multipart.append({"system": system, "object_bytes": size,
                          "part_bytes": rs[0]["part_bytes"], "parts": rs[0]["parts"],
                          "reps": len(rs),
                          "gbps": size / median([x["total_s"] for x in rs]) / 1e9,
                          "server_cpu_s_per_gb": _per(rs, size / 1e9, server_cpu),
                          "written_per_byte": _per(rs, size, written)})
    fill = [dict(r, server_cpu_s_per_gb=server_cpu(r) / (r["stored_bytes"] / 1e9))
            for r in doc["fill"]]
    clients, client_targets = write_bench_clients.summarize(doc, ceiling, desc)
    summary = {"ceiling": ceiling, "desc": desc, "clients": clients, "s3put": s3put,
               "multipart": multipart, "fill": fill, "reads": doc["reads"]}
    return summary, targets(summary) + client_targets


def _verdict(values, ok):
    if not values:
        return None
    return all(ok(v) for v in values)


def targets(s):
    """One verdict per (target, ObjectCache configuration): True, False or None (not
    measured in this run)."""
    systems = sorted({d["system"] for d in s["desc"] + s["s3put"] + s["fill"]
                      if d["system"] != "rgw"}, key=rank)
    out = []

    def add(target, system, figures, met):
        out.append({"target": target, "system": system, "figures": figures, "met": met})

    for system in systems:
        desc = [d for d in s["desc"] if d["system"] == system]
        v = [(d["G"], d["vs_fdatasync"]) for d in desc if d["vs_fdatasync"] is not None]
        add(f"descriptor PUT >= {TARGET_DESC_VS_FDATASYNC:.0%} of the disk's fdatasync "
            "bandwidth", system, ", ".join(f"G={g}: {x:.2f}x" for g, x in v),
            _verdict([x for _, x in v], lambda x: x >= TARGET_DESC_VS_FDATASYNC))
        v = [(d["G"], d["vs_rgw"]) for d in desc if d["vs_rgw"] is not None]
        add(f"descriptor PUT >= {TARGET_DESC_VS_RGW:g}x RGW's per-chunk PUTs", system,
            ", ".join(f"G={g}: {x:.2f}x" for g, x in v),
            _verdict([x for _, x in v], lambda x: x >= TARGET_DESC_VS_RGW))

        def put_row(size):
            # A cell where no PUT completed in its window has no CPU per PUT: not measured.
            rows = [r for r in s["s3put"] if r["system"] == system and r["size"] == size
                    and r.get("cpu_us_per_put") is not None]
            at = [r for r in rows if r["concurrency"] == TARGET_64KIB_CONC]
            return (at or sorted(rows, key=lambda r: r["concurrency"])[-1:] or [None])[0]

        r = put_row(4 * MiB)
        add(f"4 MiB PUT <= {TARGET_4MIB_CPU_US / 1000:g} ms server CPU", system,
            f"{r['cpu_us_per_put'] / 1000:.2f} ms (c={r['concurrency']})" if r else "",
            None if r is None else r["cpu_us_per_put"] <= TARGET_4MIB_CPU_US)
        r = put_row(64 * KiB)
        add(f"64 KiB PUT <= {TARGET_64KIB_CPU_US} µs server CPU", system,
            f"{r['cpu_us_per_put']:.0f} µs (c={r['concurrency']})" if r else "",
            None if r is None else r["cpu_us_per_put"] <= TARGET_64KIB_CPU_US)
        ok = r is not None and r["concurrency"] == TARGET_64KIB_CONC
        add(f"64 KiB PUT >= {TARGET_64KIB_OPS / 1000:g}k ops/s at concurrency "
            f"{TARGET_64KIB_CONC}", system, f"{r['ops_per_s']:.0f} ops/s" if ok else "",
            (r["ops_per_s"] >= TARGET_64KIB_OPS and r["errors"] == 0) if ok else None)
        f = [x for x in s["fill"] if x["system"] == system]
        if f:
            f = f[0]
            wa = f["wa_settled_with_memtable"]
            met = wa <= TARGET_WA
            note = ""
            if f["stored_bytes"] < TARGET_FILL_BYTES:
                note = f"; fill {size_label(f['stored_bytes'])}, not 4 GiB"
                met = False if not met else None  # WA only grows with the fill
            if not f["settled"]:
                note += "; compaction had not settled"
                met = False if not met else None
            add(f"write amplification <= {TARGET_WA} over a 4 GiB fill", system,
                f"{wa:.2f} settled + memtable ({f['wa_fill']:.2f} right after the fill{note})",
                met)
        else:
            add(f"write amplification <= {TARGET_WA} over a 4 GiB fill", system, "", None)
    return out


# --- markdown ----------------------------------------------------------------------------------

def num(v, digits=3):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def markdown(doc):
    """(the section's markdown, a one-paragraph finding), both computed from `doc`."""
    s, tg = summarize(doc)  # from the raw rows, so a report redone by newer code is current
    md = []
    systems = sorted({t["system"] for t in tg}, key=rank)
    names = sorted({t["target"] for t in tg}, key=[t["target"] for t in tg].index)
    verdict = {True: "met", False: "**NOT MET**", None: "not measured"}
    md += ["### Targets (issue 16; clients: issue 33)", "", table(["target"] + systems, [
        [n] + [next(((f"{verdict[t['met']]}: {t['figures']}" if t["figures"] else
                      verdict[t["met"]]) for t in tg if t["target"] == n and t["system"] == x),
                    "")
               for x in systems] for n in names]), ""]
    c = s["ceiling"]
    md += ["### Ceiling: the disk, sequential 1 MiB writes (dd; fdatasync-kept: into a file "
           "that stays, so into pages the kernel did not just free; tcp: tcp_file_floor, "
           "loopback TCP into a file)", "",
           table(["mode", "GB/s (median)", "runs (GB/s)"], [
               [m, num(c[m]), ", ".join(f"{r['gbps']:.2f} ({r['when']})" for r in doc["ceiling"]
                                        if r["mode"] == m)]
               for m in CEILING_MODES if c.get(m)]),
           ""]
    md += ["### Descriptor PUTs (RGW: per-chunk S3 PUTs, 8 concurrent)", "",
           table(["G", "chunks", "payload", "system", "GB/s", "reps (GB/s)", "vs fdatasync",
                  "vs RGW", "server CPU s/GB", "written / stored"],
                 [[d["G"], d["chunks"], size_label(d["payload_bytes"]), d["system"],
                   num(d["gbps"]), ", ".join(f"{x:.3f}" for x in d["gbps_reps"]),
                   num(d["vs_fdatasync"]), num(d["vs_rgw"]), num(d["server_cpu_s_per_gb"]),
                   num(d["written_per_byte"])] for d in s["desc"]]), ""]
    md += write_bench_clients.markdown(s.get("clients", []), num, size_label, table)
    md += ["### Single S3 PUTs (distinct keys)", "",
           table(["size", "conc", "system", "ops/s", "GB/s", "server CPU µs/PUT",
                  "server CPU s/GB", "p50 ms", "p99 ms", "written / stored", "errors"],
                 [[size_label(r["size"]), r["concurrency"], r["system"], num(r["ops_per_s"]),
                   num(r["gbps"]), num(r["cpu_us_per_put"]), num(r["server_cpu_s_per_gb"]),
                   num(r["p50_ms"]), num(r["p99_ms"]), num(r["written_per_byte"]),
                   f"{r['errors']}" + (" (keys reused)" if r["keys_reused"] else "")]
                  for r in s["s3put"]]), ""]
    md += ["### Multipart uploads", "",
           table(["system", "object", "parts", "GB/s", "server CPU s/GB", "written / stored"],
                 [[m["system"], size_label(m["object_bytes"]),
                   f"{m['parts']} x {size_label(m['part_bytes'])}", num(m["gbps"]),
                   num(m["server_cpu_s_per_gb"]), num(m["written_per_byte"])]
                  for m in s["multipart"]]), ""]
    md += ["### Fill: write amplification (bytes written / bytes stored)", "",
           table(["system", "stored", "fill GB/s", "server CPU s/GB (with the reads)",
                  "WA after fill",
                  "WA settled", "settled + memtable", "settled in", "disk / stored"],
                 [[f["system"], size_label(f["stored_bytes"]), num(f["gbps"]),
                   num(f["server_cpu_s_per_gb"]), num(f["wa_fill"]), num(f["wa_settled"]),
                   num(f["wa_settled_with_memtable"]),
                   f"{f['settle_s']:.0f} s" + ("" if f["settled"] else " (timed out)"),
                   num(f["space_amplification"])] for f in s["fill"]]), ""]
    md += ["### 64 KiB GETs of pre-stored objects, idle and during the fill", "",
           table(["system", "phase", "readers", "ops/s", "p50 ms", "p99 ms", "p99.9 ms",
                  "errors"],
                 [[r["system"], r["phase"] + ("" if r["phase"] != "during-fill" or
                                              not r["wrk_ended_first"] else " (partly)"),
                   r["readers"], num(r["ops_per_s"]), num(r["p50_ms"]), num(r["p99_ms"]),
                   num(r["p999_ms"]), r["errors"]] for r in s["reads"]])]
    return "\n".join(md), finding(s, tg)


def finding(s, tg):
    parts = []
    fds = s["ceiling"]["fdatasync"]
    small_g = min((d["G"] for d in s["desc"]), default=None)
    for d in s["desc"]:
        if d["G"] == small_g and d["system"] != "rgw":
            rgw = f", {d['vs_rgw']:.2f}x RGW" if d["vs_rgw"] else ""
            parts.append(f"{d['system']} {d['gbps']:.3f} GB/s "
                         f"({d['vs_fdatasync']:.0%} of fdatasync{rgw})"
                         if d["vs_fdatasync"] else f"{d['system']} {d['gbps']:.3f} GB/s")
    text = ""
    if parts:
        text = (f"Descriptor PUTs at G = {small_g}: " + "; ".join(parts) +
                (f" (the disk: {fds:.2f} GB/s with fdatasync)." if fds else "."))
    wa = [f"{f['system']} {f['wa_settled_with_memtable']:.2f} over {size_label(f['stored_bytes'])}"
          for f in s["fill"]]
    if wa:
        text += " Write amplification once settled: " + ", ".join(wa) + "."
    judged = [t for t in tg if t["met"] is not None]
    text += (f" {sum(1 for t in judged if t['met'])} of {len(judged)} judged targets met "
             f"({len(tg) - len(judged)} not measured).")
    return text.strip()


# --- plot --------------------------------------------------------------------------------------

def plot(doc, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = summarize(doc)[0]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    systems = sorted({d["system"] for d in s["desc"]}, key=rank)
    colors = {x: f"C{i}" for i, x in enumerate(ORDER + sorted(set(systems) - set(ORDER)))}
    ax = axes[0][0]
    shapes = sorted({(d["G"], d["chunks"]) for d in s["desc"]})
    width = 0.8 / max(1, len(systems))
    for i, system in enumerate(systems):
        ys = [next((d["gbps"] for d in s["desc"] if (d["G"], d["chunks"]) == sh
                    and d["system"] == system), 0) for sh in shapes]
        ax.bar([k + i * width for k in range(len(shapes))], ys, width, label=system,
               color=colors[system])
    for mode, style in (("fdatasync", "--"), ("direct", ":")):
        if s["ceiling"][mode]:
            ax.axhline(s["ceiling"][mode], color="k", linestyle=style, label=f"dd {mode}")
            if mode == "fdatasync":
                ax.axhline(s["ceiling"][mode] * TARGET_DESC_VS_FDATASYNC, color="r",
                           linestyle="--", label="target: 50% of fdatasync")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(shapes))])
    ax.set_xticklabels([f"G={g}\nN={n}" for g, n in shapes], fontsize=8)
    ax.set_ylabel("GB/s")
    ax.set_title("descriptor PUTs (RGW: per-chunk PUTs, 8 concurrent)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0][1]
    for system in sorted({r["system"] for r in s["s3put"]}, key=rank):
        for conc, marker in ((1, "o"), (8, "s")):
            rows = sorted((r for r in s["s3put"] if r["system"] == system
                           and r["concurrency"] == conc), key=lambda r: r["size"])
            if rows:
                ax.plot([r["size"] / KiB for r in rows], [r["cpu_us_per_put"] for r in rows],
                        marker=marker, color=colors.get(system), label=f"{system} c={conc}")
    ax.plot([4 * MiB / KiB], [TARGET_4MIB_CPU_US], "r*", markersize=12, label="targets")
    ax.plot([64], [TARGET_64KIB_CPU_US], "r*", markersize=12)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("object size (KiB)")
    ax.set_ylabel("server CPU µs per PUT")
    ax.set_title("single S3 PUTs, distinct keys", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1][0]
    fills = s["fill"]
    labels = ["after fill", "settled", "settled + memtable (bound)"]
    for i, f in enumerate(fills):
        ax.bar([k + i * 0.8 / max(1, len(fills)) for k in range(3)],
               [f["wa_fill"], f["wa_settled"], f["wa_settled_with_memtable"]],
               0.8 / max(1, len(fills)), color=colors.get(f["system"]),
               label=f"{f['system']} ({size_label(f['stored_bytes'])})")
    ax.axhline(TARGET_WA, color="r", linestyle="--", label=f"target {TARGET_WA}")
    ax.set_xticks([k + 0.4 - 0.4 / max(1, len(fills)) for k in range(3)])
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("bytes written / bytes stored")
    ax.set_title("write amplification of a fill", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1][1]
    phases = ["idle-before", "during-fill", "idle-after"]
    rsys = sorted({r["system"] for r in s["reads"]}, key=rank)
    for i, system in enumerate(rsys):
        for q, alpha in (("p99_ms", 0.45), ("p50_ms", 1.0)):
            ys = [next((r[q] for r in s["reads"] if r["system"] == system
                        and r["phase"] == p), 0) for p in phases]
            ax.bar([k + i * 0.8 / len(rsys) for k in range(3)], ys, 0.8 / len(rsys),
                   color=colors.get(system), alpha=alpha,
                   label=f"{system} {q.split('_')[0]}")
    ax.set_xticks([k + 0.4 - 0.4 / max(1, len(rsys)) for k in range(3)])
    ax.set_xticklabels(phases, fontsize=8)
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.set_title("64 KiB GETs of stored objects (wrk), idle and during the fill", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("ObjectCache write path (issue 16); ratios within one run", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
