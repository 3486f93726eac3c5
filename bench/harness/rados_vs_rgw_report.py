"""Experiment 9's analysis (bench/rados_vs_rgw.py): the raw rows of alternating repetitions
summarised per row (median, p50/p99, CPU seconds per GB per process), the ratios to RGW within
the run, issue 33's targets judged on them, the plot, and the report section's markdown.
Everything is computed from the JSON document, so `bench/run-all --report-only` redoes it."""
KiB = 1024
MiB = 1024 * KiB

# Issue 33's targets (same cluster, same run): descriptor GET over UCX >= 1.3x RGW's per-object
# GETs and >= 85% of `rados bench -t 8` random reads of whole chunk objects; the server's CPU per
# GB <= 1.5x the `rados bench` client's; first layer <= 1/3 of RGW's range GETs'; descriptor PUT
# >= 1.5x RGW's per-chunk PUTs; 64 KiB S3 PUTs (one key, new keys) >= RGW's ops/s.
TARGET_UCX_VS_OBJECT = 1.3
TARGET_UCX_VS_FLOOR = 0.85
TARGET_CPU_VS_FLOOR_CLIENT = 1.5
TARGET_TTFL_VS_RANGE = 1 / 3
TARGET_PUT_VS_RGW = 1.5
TARGET_G = 16


# --- summaries, ratios, targets (from the raw rows; report.py calls these too) -------------

def quantile(values, q):
    """Nearest-rank quantile: with 3 repetitions p50 is the median and p99 the slowest."""
    v = sorted(values)
    rank = max(1, min(len(v), -(-int(q * 1000) * len(v) // 1000)))
    return v[rank - 1]


def per_gb(rows, nbytes, key):
    """Per process: the rows' `key` counters (cpu_s, minor_faults) summed, per GB they moved."""
    total = {}
    for r in rows:
        for name, s in (r.get(key) or {}).items():
            total[name] = total.get(name, 0.0) + s
    gb = nbytes * len(rows) / 1e9
    return {name: s / gb for name, s in sorted(total.items())} if gb else {}


def summarize(doc):
    """Per (system, method, shape): medians and p99 over the alternating repetitions."""
    reads = {}
    for r in doc["reads"]:
        reads.setdefault((r["system"], r["method"], r["G"], r["context"], r["hit"]), []).append(r)
    order = [(x[0], x[1]) for x in SERIES]

    def read_key(item):  # shape first, then the plot's series order
        system, method, g, context, hit = item[0]
        rank = order.index((system, method)) if (system, method) in order else len(order)
        return (g, context, hit, rank, system, method)

    read_rows = []
    for (system, method, g, context, hit), rs in sorted(reads.items(), key=read_key):
        totals = [x["total_s"] for x in rs]
        ttfls = [x["ttfl_s"] for x in rs]
        payload = rs[0]["payload_bytes"]
        read_rows.append({
            "system": system, "method": method, "G": g, "context": context, "hit": hit,
            "chunks": rs[0]["chunks"], "layer_bytes": rs[0]["layer_bytes"],
            "payload_bytes": payload, "mode": rs[0]["mode"], "reps": len(rs),
            "gbps": payload / quantile(totals, 0.5) / 1e9,
            "gbps_reps": [payload / t / 1e9 for t in totals],
            "total_p50_s": quantile(totals, 0.5), "total_p99_s": quantile(totals, 0.99),
            "ttfl_p50_s": quantile(ttfls, 0.5), "ttfl_p99_s": quantile(ttfls, 0.99),
            "cpu_s_per_gb": per_gb(rs, payload, "cpu_s"),
            "faults_per_gb": per_gb(rs, payload, "minor_faults")})
    loads = {}
    for r in doc["loads"]:
        loads.setdefault((r["system"], r["method"], r["G"]), []).append(r)
    load_rows = []
    for (system, method, g), rs in sorted(loads.items(), key=lambda i: (i[0][2], i[0][0])):
        totals = [x["total_s"] for x in rs]
        load_rows.append({
            "system": system, "method": method, "G": g, "chunks": rs[0]["chunks"],
            "payload_bytes": rs[0]["payload_bytes"], "concurrency": rs[0]["concurrency"],
            "reps": len(rs), "gbps": rs[0]["payload_bytes"] / quantile(totals, 0.5) / 1e9,
            "total_p50_s": quantile(totals, 0.5), "total_p99_s": quantile(totals, 0.99),
            "cpu_s_per_gb": per_gb(rs, rs[0]["payload_bytes"], "cpu_s"),
            "faults_per_gb": per_gb(rs, rs[0]["payload_bytes"], "minor_faults")})
    ops = {}
    for r in doc["s3ops"]:
        ops.setdefault((r["system"], r["op"], r["size"], r["concurrency"]), []).append(r)
    s3_rows = []
    for (system, op, size, conc), rs in sorted(ops.items(),
                                               key=lambda i: (i[0][1], i[0][2], i[0][3], i[0][0])):
        per = {}
        osd = {}
        for x in rs:
            for name, us in (x.get("cpu_us_per_req") or {}).items():
                per.setdefault(name, []).append(us)
            for name, n in (x.get("osd_ops_per_req") or {}).items():
                osd.setdefault(name, []).append(n)
        ok = [x["ops_per_s"] * (x["requests"] - x["errors"]) / max(x["requests"], 1)
              for x in rs]
        s3_rows.append({
            "system": system, "op": op, "size": size, "concurrency": conc, "reps": len(rs),
            # Successful operations only: wrk counts a failed request as one done.
            "ops_per_s": quantile(ok, 0.5), "ops_per_s_reps": ok,
            "p50_ms": quantile([x["p50_ms"] for x in rs if x["p50_ms"] is not None] or [0], 0.5),
            "p99_ms": quantile([x["p99_ms"] for x in rs if x["p99_ms"] is not None] or [0],
                               0.99),
            "errors": sum(x["errors"] for x in rs), "requests": sum(x["requests"] for x in rs),
            "non_2xx": sum(x.get("non_2xx", 0) for x in rs),
            "socket_errors": sum(x.get("socket_errors", 0) for x in rs),
            "cpu_us_per_req": {n: quantile(v, 0.5) for n, v in sorted(per.items())},
            "osd_ops_per_req": {n: quantile(v, 0.5) for n, v in sorted(osd.items())}})
    return {"reads": read_rows, "loads": load_rows, "s3ops": s3_rows}


def _per_rep_ratios(doc, num, den, shape):
    """num/den speed ratios of one shape, repetition by repetition (rep r of RGW against rep
    r of ours: neighbours in the alternation)."""
    def times(key):
        return {r["rep"]: r["total_s"] for r in doc["reads"]
                if (r["system"], r["method"]) == key and (r["G"], r["context"], r["hit"]) == shape}
    a, b = times(num), times(den)
    return [b[k] / a[k] for k in sorted(a) if k in b]


def ratios(doc, summary):
    """Speed ratios to RGW within the run (medians over repetitions)."""
    by = {(r["system"], r["method"], r["G"], r["context"], r["hit"]): r
          for r in summary["reads"]}
    shapes = sorted({(r["G"], r["context"], r["hit"]) for r in summary["reads"]})
    reads = []
    for g, c, h in shapes:
        e = {"G": g, "context": c, "hit": h}
        for num in (("oc-rados", "ucx"), ("oc-rados", "http-body"),
                    ("oc-rados-slices", "ucx"), ("oc-rados-1h", "ucx"),
                    ("oc-rados-base-read", "ucx"), ("oc-rocksdb", "ucx"),
                    ("oc-rocksdb", "http-body")):
            for den in (("rgw", "http-object"), ("rgw", "http-range")):
                a, b = by.get((*num, g, c, h)), by.get((*den, g, c, h))
                if a and b:
                    key = f"{num[0]}:{num[1]} vs {den[0]}:{den[1]}"
                    e[key] = a["gbps"] / b["gbps"]
                    e[key + " per rep"] = _per_rep_ratios(doc, num, den, (g, c, h))
        a, b = by.get(("oc-rados", "ucx", g, c, h)), by.get(("rgw", "http-range", g, c, h))
        if a and b:
            e["ttfl rgw:http-range / oc-rados:ucx"] = b["ttfl_p50_s"] / a["ttfl_p50_s"]
        reads.append(e)
    loads = []
    for g in sorted({r["G"] for r in summary["loads"]}):
        m = {r["system"]: r for r in summary["loads"] if r["G"] == g}
        if "rgw" in m:
            loads.append({"G": g, **{f"{s} vs rgw": m[s]["gbps"] / m["rgw"]["gbps"]
                                     for s in ("oc-rados", "oc-rocksdb") if s in m}})
    s3 = []
    for r in summary["s3ops"]:
        if r["system"] != "rgw":
            continue
        e = {"op": r["op"], "size": r["size"], "concurrency": r["concurrency"]}
        for x in summary["s3ops"]:
            if (x["op"], x["size"], x["concurrency"]) == (r["op"], r["size"], r["concurrency"]) \
                    and x["system"] != "rgw":
                e[f"{x['system']} vs rgw"] = x["ops_per_s"] / r["ops_per_s"]
                # Repetition k of one against repetition k of RGW (neighbours in time).
                e[f"{x['system']} vs rgw per rep"] = [
                    a / b for a, b in zip(x["ops_per_s_reps"], r["ops_per_s_reps"]) if b > 0]
        s3.append(e)
    return {"reads": reads, "loads": loads, "s3ops": s3}


# The S3 operations as the report names them (gateway_bench's op names).
OP_LABEL = {"GET": "GET", "PUT": "PUT (one key, every connection overwriting it)",
            "PUT-DISTINCT": "PUT (a new key each)"}


def targets(summary, ratio, floor=()):
    """Issue 33's targets, each with the figures (ratios) it was judged on and met / not met
    (None: not measured in this run)."""
    reads = {(r["system"], r["method"], r["G"], r["context"], r["hit"]): r
             for r in summary["reads"]}
    rand = {f["G"]: f for f in floor if f["what"] == "object" and f["mode"] == "rand"}
    shapes = sorted({k[2:] for k in reads if k[:2] == ("oc-rados", "ucx")})

    def judged(text, figures, ok):
        return {"target": text, "figures": figures,
                "met": all(ok(f["ratio"]) for f in figures) if figures else None}

    def per_shape(value):
        out = []
        for g, c, h in shapes:
            v = value(reads[("oc-rados", "ucx", g, c, h)], g, c, h)
            if v is not None:
                out.append({"G": g, "context": c, "hit": h, "ratio": v})
        return out

    def vs_object(ours, g, c, h):
        rgw = reads.get(("rgw", "http-object", g, c, h))
        return ours["gbps"] / rgw["gbps"] if rgw else None

    def vs_floor(ours, g, c, h):
        return ours["gbps"] / rand[g]["gbps"] if g in rand and rand[g]["gbps"] else None

    def cpu_vs_client(ours, g, c, h):
        mine = ours["cpu_s_per_gb"].get("objectcache")
        theirs = (rand.get(g) or {}).get("cpu_s_per_gb", {}).get("client")
        return mine / theirs if mine is not None and theirs else None

    def ttfl_vs_range(ours, g, c, h):
        rgw = reads.get(("rgw", "http-range", g, c, h))
        return ours["ttfl_p50_s"] / rgw["ttfl_p50_s"] if rgw and rgw["ttfl_p50_s"] else None

    out = [
        judged(f"descriptor GET over UCX (RADOS) >= {TARGET_UCX_VS_OBJECT:g}x RGW per-object "
               "GETs", per_shape(vs_object), lambda v: v >= TARGET_UCX_VS_OBJECT),
        judged(f"descriptor GET over UCX (RADOS) >= {TARGET_UCX_VS_FLOOR:.0%} of `rados bench "
               "-t 8` random reads of whole chunk objects", per_shape(vs_floor),
               lambda v: v >= TARGET_UCX_VS_FLOOR),
        judged(f"server CPU per GB of that GET <= {TARGET_CPU_VS_FLOOR_CLIENT:g}x the `rados "
               "bench` client's", per_shape(cpu_vs_client),
               lambda v: v <= TARGET_CPU_VS_FLOOR_CLIENT),
        judged("time to first layer over UCX <= 1/3 of RGW's per-layer range GETs'",
               per_shape(ttfl_vs_range), lambda v: v <= TARGET_TTFL_VS_RANGE),
        judged(f"descriptor PUT (RADOS) >= {TARGET_PUT_VS_RGW:g}x RGW's per-chunk PUTs",
               [{"G": x["G"], "ratio": x["oc-rados vs rgw"]} for x in ratio["loads"]
                if "oc-rados vs rgw" in x], lambda v: v >= TARGET_PUT_VS_RGW),
    ]
    for op in ("PUT", "PUT-DISTINCT"):
        got = [(e["concurrency"], e["oc-rados vs rgw"]) for e in ratio["s3ops"]
               if e["op"] == op and e["size"] == 64 * KiB and "oc-rados vs rgw" in e]
        if op == "PUT-DISTINCT" and not got:
            continue  # runs before the distinct-key PUTs existed
        out.append(judged(f"64 KiB S3 {OP_LABEL[op]} through ObjectCache on RADOS >= RGW's "
                          "ops/s", [{"concurrency": c, "ratio": r} for c, r in got],
                          lambda v: v >= 1.0))
    return out


def osd_costs(doc):
    """Per OSD cost row (bench/rados_vs_rgw.py, Bench.osd_costs): the OSD's read ops, extent
    reads and CPU per chunk object and per GB delivered."""
    out = []
    for r in doc.get("osd_costs", []):
        chunks, gb = max(r["chunks"], 1), max(r["payload_bytes"], 1) / 1e9
        ext = r["osd_extent_reads"]
        out.append({**{k: r[k] for k in ("G", "context", "hit", "system", "method")},
                    "read_ops_per_chunk": r["osd_read_ops"] / chunks,
                    "extent_reads_per_chunk": ext / chunks if ext is not None else None,
                    "bytes_out_per_payload": r["osd_bytes_out"] / max(r["payload_bytes"], 1),
                    "osd_cpu_s_per_gb": r["osd_cpu_s"] / gb,
                    "osd_cpu_us_per_extent_read": r["osd_cpu_s"] / ext * 1e6 if ext else None})
    return out


def cpu_budget(doc, summary):
    """What CPU alone allows each way of reading on the machine's cores: every process's CPU
    seconds per GB summed (OSD, monitor, gateway or server, client), and cores / that sum, the
    speed at which the cores would be busy all the time. Ours and RGW's per-object GETs per read
    shape; the `rados bench -t 8` random whole-object reads of the shape's G."""
    cores = (doc.get("machine") or {}).get("cores")
    if not cores:
        return []
    rand = {f["G"]: f for f in doc.get("floor", []) if f["what"] == "object" and
            f["mode"] == "rand"}
    out = []
    for x in summary["reads"]:
        if (x["system"], x["method"]) not in (("oc-rados", "ucx"), ("rgw", "http-object")):
            continue
        rows = [(x["system"], x["method"], x["gbps"], x["cpu_s_per_gb"])]
        f = rand.get(x["G"])
        if x["system"] == "rgw" and f and f.get("cpu_s_per_gb"):
            rows.append(("rados-bench", "rand", f["gbps"], f["cpu_s_per_gb"]))
        for system, method, gbps, per in rows:
            total = sum(per.values())
            if total <= 0:
                continue
            out.append({"G": x["G"], "context": x["context"], "hit": x["hit"],
                        "system": system, "method": method, "cpu_s_per_gb": per,
                        "total_cpu_s_per_gb": total, "cores": cores,
                        "cpu_bound_gbps": cores / total, "gbps": gbps,
                        "of_cpu_bound": gbps * total / cores})
    return out


def analyse(doc):
    """Every derived part of the document, from its raw rows (a run's end, --report-only)."""
    doc["summary"] = summarize(doc)
    doc["ratios"] = ratios(doc, doc["summary"])
    doc["targets"] = targets(doc["summary"], doc["ratios"], doc.get("floor", []))
    doc["cpu_budget"] = cpu_budget(doc, doc["summary"])


# --- plot ---------------------------------------------------------------------------------

SERIES = [("rgw", "http-object", "RGW per-object GETs (8)"),
          ("rgw", "http-range", "RGW range GETs (8)"),
          ("oc-rados", "ucx", "ours on RADOS: descriptor GET, UCX"),
          ("oc-rados", "http-body", "ours on RADOS: descriptor GET, HTTP body"),
          ("oc-rados-slices", "ucx", "ours on RADOS, a read per slice: UCX"),
          ("oc-rados-1h", "ucx", "ours on RADOS, one cluster handle: UCX"),
          ("oc-rados-base-read", "ucx", "ours on RADOS, baseline build: UCX"),
          ("oc-rocksdb", "ucx", "ours on RocksDB (ceiling): UCX"),
          ("oc-rocksdb", "http-body", "ours on RocksDB (ceiling): HTTP body")]


def plot(doc, png):
    """Four panels: read GB/s and time to first layer per shape (bars: median, whiskers:
    slowest and fastest repetition; the rados bench floor as markers), load GB/s per G, and
    64 KiB S3 ops/s."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = doc.get("summary") or summarize(doc)
    shapes = sorted({(r["G"], r["context"], r["hit"]) for r in s["reads"]})
    fig = plt.figure(figsize=(max(12, 1.3 * len(shapes) + 4), 14))
    grid = fig.add_gridspec(3, 2)
    top = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, :])]
    axes = [top, [fig.add_subplot(grid[2, 0]), fig.add_subplot(grid[2, 1])]]
    width = 0.8 / len(SERIES)
    for i, (system, method, label) in enumerate(SERIES):
        gb, lo, hi, tt = [], [], [], []
        for shape in shapes:
            r = next((x for x in s["reads"] if (x["system"], x["method"]) == (system, method)
                      and (x["G"], x["context"], x["hit"]) == shape), None)
            gb.append(r["gbps"] if r else 0)
            lo.append(r["gbps"] - min(r["gbps_reps"]) if r else 0)
            hi.append(max(r["gbps_reps"]) - r["gbps"] if r else 0)
            tt.append(r["ttfl_p50_s"] * 1e3 if r else 0)
        xs = [k + i * width for k in range(len(shapes))]
        axes[0][0].bar(xs, gb, width, yerr=[lo, hi], label=label, capsize=2)
        axes[0][1].bar(xs, tt, width, label=label)
    for what, marker in (("object", "v"), ("slice", "^")):
        ys = []
        for g, _, _ in shapes:
            f = [x["gbps"] for x in doc["floor"] if x["G"] == g and x["what"] == what and
                 x["mode"] == "rand"]
            ys.append(f[0] if f else None)
        xs = [k + 0.4 - width / 2 for k in range(len(shapes))]
        pts = [(x, y) for x, y in zip(xs, ys) if y]
        if pts:
            axes[0][0].plot([p[0] for p in pts], [p[1] for p in pts], marker, color="black",
                            label=f"rados bench rand, {what} size, -t 8 (floor)")
    labels = [f"G={g}\n{c // 1024}K ctx\n{h:.3g} hit" if c >= 1024 else
              f"G={g}\n{c} ctx\n{h:.3g} hit" for g, c, h in shapes]
    for ax in axes[0]:
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(shapes))])
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_yscale("log")
    axes[0][0].set_ylabel("GB/s (median of repetitions)")
    axes[0][0].set_title("Reads: one request's KV payload")
    axes[0][0].legend(fontsize=6)
    axes[0][1].set_ylabel("time to first layer, ms (p50)")
    axes[0][1].set_title("Time to first layer")
    gs = sorted({r["G"] for r in s["loads"]})
    systems = [("rgw", "RGW: S3 PUT per chunk (8)"), ("oc-rados", "ours on RADOS: descriptor PUT"),
               ("oc-rocksdb", "ours on RocksDB: descriptor PUT")]
    w = 0.8 / len(systems)
    for i, (system, label) in enumerate(systems):
        ys = [next((r["gbps"] for r in s["loads"] if r["system"] == system and r["G"] == g), 0)
              for g in gs]
        axes[1][0].bar([k + i * w for k in range(len(gs))], ys, w, label=label)
    axes[1][0].set_xticks([k + 0.4 - w / 2 for k in range(len(gs))])
    axes[1][0].set_xticklabels([f"G={g}" for g in gs])
    axes[1][0].set_ylabel("GB/s")
    axes[1][0].set_title("Loads (median of repetitions)")
    axes[1][0].legend(fontsize=7)
    points = sorted({(r["op"], r["concurrency"]) for r in s["s3ops"] if r["size"] == 64 * KiB})
    if any(r["system"] == "oc-rados-base" for r in s["s3ops"]):
        systems = systems + [("oc-rados-base", "ours on RADOS, baseline build")]
        w = 0.8 / len(systems)
    for i, (system, label) in enumerate(systems):
        ys = [next((r["ops_per_s"] for r in s["s3ops"] if r["system"] == system and
                    (r["op"], r["concurrency"]) == p and r["size"] == 64 * KiB), 0)
              for p in points]
        axes[1][1].bar([k + i * w for k in range(len(points))], ys, w,
                       label=label.split(":")[0])
    axes[1][1].set_xticks([k + 0.4 - w / 2 for k in range(len(points))])
    axes[1][1].set_xticklabels([f"{op} c={c}" for op, c in points], fontsize=7)
    axes[1][1].set_ylabel("ops/s (median)")
    axes[1][1].set_title("64 KiB S3 GET / PUT (wrk)")
    axes[1][1].legend(fontsize=7)
    fig.suptitle("ObjectCache on RADOS vs Ceph RGW, same OSD (Llama-3.1-8B chunks, L = 32)")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png


# --- report section ---------------------------------------------------------------------------

LABEL = {("rgw", "http-object"): "RGW per-object GETs", ("rgw", "http-range"): "RGW range GETs",
         ("oc-rados", "ucx"): "ours on RADOS, UCX", ("oc-rados", "http-body"):
         "ours on RADOS, HTTP body", ("oc-rados-slices", "ucx"):
         "ours on RADOS, a read per slice, UCX", ("oc-rados-1h", "ucx"):
         "ours on RADOS, one cluster handle, UCX", ("oc-rados-base-read", "ucx"):
         "ours on RADOS, baseline build, UCX", ("oc-rocksdb", "ucx"): "ours on RocksDB, UCX",
         ("oc-rocksdb", "http-body"): "ours on RocksDB, HTTP body",
         ("rados-bench", "rand"): "`rados bench -t 8` random whole-object reads"}


def _size(n):
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n // KiB} KiB"


def _f(v, digits=3):
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.{digits}g}"


def _cpu(per):
    return ", ".join(f"{n} {_f(v, 2)}" for n, v in per.items() if v > 0) or "-"


def _table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _where(f):
    """A target figure's shape: G, context and hit of a read; G of a load; concurrency of an
    S3 op."""
    if "context" in f:
        return f"G={f['G']} {f['context'] // 1024}K·{f['hit']:g}"
    return f"G={f['G']}" if "G" in f else f"c={f['concurrency']}"


def _verdict(t):
    return {True: "**met**", False: "**not met**", None: "not measured"}[t["met"]]


def markdown(e):
    """(text, finding) of the report's section for experiment 9's JSON document `e`."""
    s = e.get("summary") or summarize(e)
    r = e.get("ratios") or ratios(e, s)
    t = e.get("targets") or targets(s, r, e.get("floor", []))
    parts = ["Targets of issue 33 (same cluster, same run; each figure a ratio of medians "
             "over the alternating repetitions: ours / RGW, ours / the `rados bench` floor, "
             "ours / the `rados bench` client's CPU per GB, our first layer / RGW's):", "",
             _table(["target", "figures", "verdict"],
                    [[x["target"], ", ".join(f"{_where(f)}: {f['ratio']:.2f}x"
                                             for f in x["figures"]) or "-", _verdict(x)]
                     for x in t]), ""]
    costs = osd_costs(e)
    if costs:
        parts += ["What the OSD does per way of reading (one more pass each, one process, the "
                  "OSD's `perf dump` read counters and CPU around it; extent reads are "
                  "BlueStore's reads, one per extent an op reads):", "",
                  _table(["G", "context · hit", "what", "OSD read ops per chunk",
                          "extent reads per chunk", "OSD bytes out / payload",
                          "OSD CPU s/GB", "OSD CPU µs per extent read"],
                         [[x["G"], f"{x['context']} · {x['hit']:g}",
                           LABEL.get((x["system"], x["method"]), x["system"]),
                           _f(x["read_ops_per_chunk"]), _f(x["extent_reads_per_chunk"]),
                           _f(x["bytes_out_per_payload"]), _f(x["osd_cpu_s_per_gb"]),
                           _f(x["osd_cpu_us_per_extent_read"])] for x in costs]), ""]
    budget = cpu_budget(e, s)
    if budget:
        parts += [f"What CPU alone allows on this machine's {budget[0]['cores']} cores, which "
                  "every process shares (CPU seconds per GB summed over the OSD, monitor, "
                  "gateway or server and client; cores / that sum is the speed at which the "
                  "cores would always be busy):", "",
                  _table(["G", "context · hit", "what", "CPU s/GB, all processes",
                          "of which", "CPU-bound GB/s", "GB/s", "share of the bound"],
                         [[x["G"], f"{x['context']} · {x['hit']:g}",
                           LABEL.get((x["system"], x["method"]), x["system"]),
                           _f(x["total_cpu_s_per_gb"]), _cpu(x["cpu_s_per_gb"]),
                           _f(x["cpu_bound_gbps"]), _f(x["gbps"]),
                           f"{x['of_cpu_bound']:.0%}"] for x in budget]), ""]
    if s["reads"] or s["loads"] or e.get("floor"):  # else the S3 part alone (--s3-only)
        parts += ["Reads (GB/s = payload / median time; p50/p99 over the repetitions; CPU seconds "
                  "per GB moved, per process):", "",
                  _table(["G (S)", "context · hit", "what", "mode", "GB/s", "p50 / p99 s",
                          "first layer p50 / p99 ms", "CPU s/GB"],
                         [[f"{x['G']} ({_size(x['layer_bytes'])})",
                           f"{x['context']} · {x['hit']:g}",
                           LABEL.get((x["system"], x["method"]), x["system"] + " " + x["method"]),
                           x["mode"], _f(x["gbps"]),
                           f"{_f(x['total_p50_s'])} / {_f(x['total_p99_s'])}",
                           f"{_f(x['ttfl_p50_s'] * 1e3)} / {_f(x['ttfl_p99_s'] * 1e3)}",
                           _cpu(x["cpu_s_per_gb"])] for x in s["reads"]]), ""]
        keys = ["oc-rados:ucx vs rgw:http-object", "oc-rados:ucx vs rgw:http-range",
                "oc-rados:http-body vs rgw:http-object", "oc-rados:http-body vs rgw:http-range",
                "oc-rados-slices:ucx vs rgw:http-object", "oc-rados-1h:ucx vs rgw:http-object",
                "oc-rados-base-read:ucx vs rgw:http-object",
                "oc-rocksdb:ucx vs rgw:http-object", "oc-rocksdb:ucx vs rgw:http-range"]
        parts += ["Speed ratios to RGW (median; per repetition in brackets):", "",
                  _table(["G", "context · hit"] + [k.replace(" vs ", " / ") for k in keys],
                         [[x["G"], f"{x['context']} · {x['hit']:g}"] +
                          [f"{x[k]:.2f} [{', '.join(f'{v:.2f}' for v in x[k + ' per rep'])}]"
                           if k in x else "n/a" for k in keys] for x in r["reads"]]), ""]
        parts += ["Loads (the largest shape's chunks; RGW: one S3 PUT per chunk, 8 concurrent; "
                  "ours: descriptor PUTs of up to 128 chunks, one at a time):", "",
                  _table(["G", "chunks", "system", "method", "GB/s", "p50 / p99 s", "CPU s/GB",
                          "page faults per MB"],
                         [[x["G"], x["chunks"], x["system"], x["method"], _f(x["gbps"]),
                           f"{_f(x['total_p50_s'])} / {_f(x['total_p99_s'])}",
                           _cpu(x["cpu_s_per_gb"]),
                           _cpu({n: v / 1e3 for n, v in x.get("faults_per_gb", {}).items()})]
                          for x in s["loads"]]), ""]
        parts += ["Floor: `rados bench -t 8` writes, then reads, of whole objects in the same "
                  "pool:", "",
                  _table(["G", "object size", "mode", "GB/s", "ops/s", "mean / max latency ms",
                          "CPU s/GB"],
                         [[x["G"], f"{_size(x['op_bytes'])} ({x['what']})", x["mode"],
                           _f(x["gbps"]), _f(x["iops"]),
                           f"{_f(x['avg_latency_ms'])} / {_f(x['max_latency_ms'])}",
                           _cpu(x.get("cpu_s_per_gb", {}))] for x in e.get("floor", [])]),
                  ""]
    parts += ["64 KiB S3 operations (wrk, presigned URLs; successful operations per second, "
              "median of the repetitions; wrk gives up on a request after 2 s, a socket "
              "error; OSD ops per request from its op counters, median):", "",
              _table(["op", "size", "concurrency", "system", "ops/s", "p50 / p99 ms",
                      "server CPU µs/request", "OSD ops/request",
                      "failed (non-2xx / socket) of requests"],
                     [[OP_LABEL.get(x["op"], x["op"]), _size(x["size"]), x["concurrency"],
                       x["system"], _f(x["ops_per_s"]), f"{_f(x['p50_ms'])} / {_f(x['p99_ms'])}",
                       _cpu(x["cpu_us_per_req"]),
                       _f((x.get("osd_ops_per_req") or {}).get("op"), 3),
                       f"{x.get('non_2xx', 0)} / {x.get('socket_errors', 0)} of "
                       f"{x.get('requests', 0):,}"] for x in s["s3ops"]]), ""]
    others = sorted({k[:-len(" vs rgw")] for x in r["s3ops"] for k in x if k.endswith(" vs rgw")})
    if others:
        parts += ["64 KiB S3 ops/s ratios to RGW (median; per repetition in brackets):", "",
                  _table(["op", "concurrency"] + [f"{o} / rgw" for o in others],
                         [[OP_LABEL.get(x["op"], x["op"]), x["concurrency"]] +
                          [f"{x[o + ' vs rgw']:.2f} [" +
                           ", ".join(f"{v:.2f}" for v in x[o + " vs rgw per rep"]) + "]"
                           if o + " vs rgw" in x else "n/a" for o in others]
                          for x in r["s3ops"] if x["size"] == 64 * KiB]), ""]
    return "\n".join(parts), finding(e, s, r, t)


def finding(e, s, r, t):
    if not s["reads"] and any(x["system"] == "oc-rados" for x in s["s3ops"]):
        # The S3 part alone (--s3-only): its targets, and the baseline build's if measured.
        out = [f"{x['target']}: " + (", ".join(f"c={f['concurrency']}: {f['ratio']:.2f}x"
                                               for f in x["figures"]) or "no figure") +
               f" ({_verdict(x).strip('*')})" for x in t if x["figures"]]
        base = [f"{OP_LABEL.get(x['op'], x['op'])} c={x['concurrency']}: "
                f"{x['oc-rados-base vs rgw']:.2f}x" for x in r["s3ops"]
                if "oc-rados-base vs rgw" in x and x["op"] != "GET"]
        return "; ".join(out) + "." + (" The baseline build (oc-rados-base) in the same run: "
                                       + ", ".join(base) + "." if base else "")
    if "oc-rados" not in {x["system"] for x in s["reads"]}:
        why = next((n for n in e.get("notes", []) if n.startswith("oc-rados")), "")
        rocks = [x for x in r["reads"] if "oc-rocksdb:ucx vs rgw:http-object" in x]
        text = ("ObjectCache on RADOS was not measured" +
                (f" ({why.split(':', 2)[-1].strip()[:160]})" if why else "") + ".")
        if rocks:
            x = rocks[0]
            text += (f" The RocksDB ceiling's UCX descriptor GET ran at "
                     f"{x['oc-rocksdb:ucx vs rgw:http-object']:.1f}x RGW's per-object GETs and "
                     f"{x['oc-rocksdb:ucx vs rgw:http-range']:.1f}x its range GETs at G = "
                     f"{x['G']}, {x['context']} tokens, {x['hit']:g} hit.")
        return text
    out = []
    for x in t:
        figs = ", ".join(f"{f['ratio']:.2f}x" for f in x["figures"]) or "no figure"
        out.append(f"{x['target']}: {figs} ({_verdict(x).strip('*')})")
    text = "; ".join(out) + "."
    costs = {(x["system"], x["G"], x["context"]): x for x in osd_costs(e)}
    named = []
    for (system, g, c), x in sorted(costs.items()):
        rgw = costs.get(("rgw", g, c))
        if system != "oc-rados" or rgw is None or x["extent_reads_per_chunk"] is None:
            continue
        named.append(f"G = {g}, {c // 1024}K: {_f(x['extent_reads_per_chunk'])} extent reads "
                     f"per chunk against RGW's {_f(rgw['extent_reads_per_chunk'])}, OSD "
                     f"{_f(x['osd_cpu_s_per_gb'])} CPU-s/GB against "
                     f"{_f(rgw['osd_cpu_s_per_gb'])}")
    if named:
        text += " The OSD's side of the reads (ours over UCX, RGW's per-object GETs): " + \
            "; ".join(named) + "."
    budget = {(x["system"], x["G"], x["context"]): x for x in cpu_budget(e, s)}
    bound = []
    for (system, g, c), x in sorted(budget.items()):
        rgw, floor = budget.get(("rgw", g, c)), budget.get(("rados-bench", g, c))
        if system != "oc-rados" or rgw is None:
            continue
        bound.append(f"G = {g}, {c // 1024}K: ours {_f(x['cpu_bound_gbps'])} GB/s "
                     f"({_f(x['total_cpu_s_per_gb'])} CPU-s/GB: {_cpu(x['cpu_s_per_gb'])}; ran "
                     f"at {x['of_cpu_bound']:.0%} of it), RGW {_f(rgw['cpu_bound_gbps'])}" +
                     (f", the floor {_f(floor['cpu_bound_gbps'])}" if floor else ""))
    if bound:
        text += (f" CPU alone, on {next(iter(budget.values()))['cores']} cores shared by every "
                 "process, allows: " + "; ".join(bound) + ".")
    key = "oc-rados-slices:ucx vs rgw:http-object"
    chunk = [x for x in r["reads"] if x["G"] == TARGET_G and key in x]
    if chunk:
        text += (" The same data read without the read-ahead (one RADOS read per slice instead "
                 "of growing windows) by a second server over the pool: " +
                 ", ".join(f"{x[key]:.2f}x" for x in chunk) +
                 f" RGW's per-object GETs at G = {TARGET_G}.")
    return text
