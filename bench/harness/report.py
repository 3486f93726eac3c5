"""report.md and the PNG plots from the experiment JSONs of one results directory. Every
figure and every finding sentence is computed from the JSONs; rerun with
`bench/run-all --report-only DIR` to regenerate them."""
import json
import os

from common import median
from report_format import (KiB, num, pyplot, save_figure, size_label, size_ticks, table,
                           tokens_label)
from report_ttft import bandwidth_section, e2e_section, model_section, sched_section

# --- 1 ---------------------------------------------------------------------------------------

def storage_section(e, out_dir):
    rows = e["rows"]
    lines = [table(["block", "threads", "cache", "GB/s", "reads/s", "p50 µs", "p99 µs",
                    "objects", "passes", "page cache dropped"],
                   [[size_label(r["block_bytes"]), r["threads"], "cold" if r["cold"] else "warm",
                     r["gbps"], r["ops_per_s"], r["p50_us"], r["p99_us"], r["objects"],
                     r["passes"], r["cache_dropped"] if r["cold"] else "-"] for r in rows])]
    warm = [r for r in rows if not r["cold"]]
    cold = [r for r in rows if r["cold"]]
    finding = "No rows were measured."
    if warm:
        bw = max(warm, key=lambda r: r["gbps"])
        finding = (f"Warm reads (block cache) peak at {bw['gbps']:.2f} GB/s "
                   f"({size_label(bw['block_bytes'])} blocks, {bw['threads']} threads)")
        if cold:
            bc = max(cold, key=lambda r: r["gbps"])
            pairs = [(w, c) for w in warm for c in cold
                     if (w["block_bytes"], w["threads"]) == (c["block_bytes"], c["threads"])
                     and c["gbps"] > 0]
            ratios = [w["gbps"] / c["gbps"] for w, c in pairs]
            finding += (f"; cold reads peak at {bc['gbps']:.2f} GB/s "
                        f"({size_label(bc['block_bytes'])}, {bc['threads']} threads)")
            if ratios:
                span = (f"{min(ratios):.1f}x" if len(ratios) == 1 else
                        f"{min(ratios):.1f}-{max(ratios):.1f}x")
                finding += f", and warm is {span} cold at the same block size and concurrency"
        small = [r for r in warm if r["block_bytes"] == min(x["block_bytes"] for x in warm)]
        large = [r for r in warm if r["block_bytes"] == max(x["block_bytes"] for x in warm)]
        if small and large and small[0] is not large[0]:
            finding += (f"; warm {size_label(small[0]['block_bytes'])} blocks reach "
                        f"{max(r['gbps'] for r in small):.2f} GB/s against "
                        f"{max(r['gbps'] for r in large):.2f} GB/s at "
                        f"{size_label(large[0]['block_bytes'])}")
        finding += "."
    png = None
    if rows:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        for t in sorted({r["threads"] for r in rows}):
            for cold_flag in (False, True):
                rs = sorted([r for r in rows if r["threads"] == t and r["cold"] == cold_flag],
                            key=lambda r: r["block_bytes"])
                if rs:
                    ax.plot([r["block_bytes"] / KiB for r in rs], [r["gbps"] for r in rs],
                            marker="o", linestyle="--" if cold_flag else "-",
                            label=f"{'cold' if cold_flag else 'warm'}, {t} threads")
        ax.set_xscale("log", base=2)
        size_ticks(ax, [r["block_bytes"] for r in rows])
        png = save_figure(fig, ax, out_dir, "1-storage.png",
                    xlabel="block (object) size",
                    ylabel="GB/s",
                    title="1. Store read throughput (Store::Get, RocksDB)")
    return "\n\n".join(lines), finding, [png] if png else []


# --- 2 ---------------------------------------------------------------------------------------

def transport_section(e, out_dir):
    parts = []
    http = e.get("http", [])
    if http:
        parts.append("HTTP (gateway_bench, wrk, presigned SigV4 URLs):\n\n" + table(
            ["store", "op", "size", "conc", "ops/s", "MB/s", "p50 ms", "p99 ms",
             "server CPU µs/req", "errors"],
            [[r["mode"], r["op"], size_label(r["size"]), r["concurrency"], r["ops_per_s"],
              r["mb_per_s"], r["p50_ms"], r["p99_ms"], r["server_cpu_us_per_req"], r["errors"]]
             for r in http]))
    ucx = e.get("ucx", [])
    if ucx:
        parts.append("UCX data plane (data_plane_bench BM_Put, 16 layers per request):\n\n" + table(
            ["transport", "write mode", "bytes per layer", "GB/s", "memcpy GB/s (same run)",
             "vs memcpy"],
            [[r["transport"], r["write_mode"], size_label(r["layer_bytes"]), r["gbps"],
              r["memcpy_gbps"], r["vs_memcpy"]] for r in ucx]))
    sentences = []
    for op in ("GET", "PUT"):
        rs = [r for r in http if r["op"] == op and r["mode"] == "embedded"]
        if rs:
            lo = min(rs, key=lambda r: r["size"])
            hi = max(rs, key=lambda r: r["size"])
            best = max(rs, key=lambda r: r["mb_per_s"])
            text = (f"HTTP {op} moves {lo['mb_per_s']:.0f} MB/s at {size_label(lo['size'])} "
                    f"({lo['ops_per_s']:.0f} ops/s, concurrency {lo['concurrency']})")
            if hi['size'] != lo['size']:
                text += (f" and {hi['mb_per_s']:.0f} MB/s at {size_label(hi['size'])}, best "
                         f"{best['mb_per_s']:.0f} MB/s ({size_label(best['size'])}, "
                         f"concurrency {best['concurrency']})")
            sentences.append(text)
    heads = [r for r in http if r["op"] == "HEAD" and r["mode"] == "embedded"]
    if heads:  # a KV client's hit check: one HEAD per key (LMCache)
        best = max(heads, key=lambda r: r["ops_per_s"])
        gets = [r for r in http if r["op"] == "GET" and r["mode"] == "embedded"
                and r["size"] == best["size"] and r["concurrency"] == best["concurrency"]]
        sentences.append(f"HTTP HEAD answers {best['ops_per_s']:.0f} ops/s at concurrency "
                         f"{best['concurrency']}" +
                         (f" (GET of the same {size_label(best['size'])} object: "
                          f"{gets[0]['ops_per_s']:.0f} ops/s)" if gets else ""))
    shm = [r for r in ucx if r["transport"] == "shm" and r["write_mode"] == "rendezvous"]
    if shm:  # the data plane's default write mode
        hi = max(shm, key=lambda r: r["layer_bytes"])
        sentences.append(
            f"the UCX shm data plane (rendezvous writes) delivers {hi['gbps']:.2f} GB/s at "
            f"{size_label(hi['layer_bytes'])} per layer ({num(hi['vs_memcpy'])} of memcpy in the "
            f"same run)")
        tcp = [r for r in ucx if r["transport"] == "tcp" and r["write_mode"] == "rendezvous"
               and r["layer_bytes"] == hi["layer_bytes"]]
        if tcp:
            sentences[-1] += f" and {tcp[0]['gbps']:.2f} GB/s over TCP"
        inplace = [r for r in ucx if r["transport"] == "shm" and r["write_mode"] == "in-place"
                   and r["layer_bytes"] == hi["layer_bytes"]]
        if inplace:
            sentences[-1] += (f"; written in place (a shared-memory target) "
                              f"{inplace[0]['gbps']:.2f} GB/s ({num(inplace[0]['vs_memcpy'])} "
                              f"of memcpy)")
    finding = ("; ".join(sentences) + ".") if sentences else "No rows were measured."
    finding = finding[0].upper() + finding[1:]
    png = None
    if http or ucx:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        for op in ("GET", "PUT"):
            for conc in sorted({r["concurrency"] for r in http}):
                rs = sorted([r for r in http if r["op"] == op and r["concurrency"] == conc
                             and r["mode"] == "embedded"], key=lambda r: r["size"])
                if rs:
                    ax.plot([r["size"] / KiB for r in rs], [r["mb_per_s"] / 1e3 for r in rs],
                            marker="o", label=f"HTTP {op}, conc {conc}")
        for t, mode in (("shm", "rendezvous"), ("tcp", "rendezvous"), ("shm", "in-place")):
            rs = sorted([r for r in ucx if r["transport"] == t and r["write_mode"] == mode],
                        key=lambda r: r["layer_bytes"])
            if rs:
                ax.plot([r["layer_bytes"] / KiB for r in rs], [r["gbps"] for r in rs],
                        marker="s", linestyle="--", label=f"UCX {t} write ({mode})")
        ax.set_xscale("log", base=2)
        size_ticks(ax, [r["size"] for r in http] + [r["layer_bytes"] for r in ucx])
        png = save_figure(fig, ax, out_dir, "2-transport.png",
                    xlabel="object / layer size",
                    ylabel="GB/s",
                    title="2. S3 over HTTP vs the UCX data plane")
    return "\n\n".join(parts), finding, [png] if png else []


# --- 3 ---------------------------------------------------------------------------------------

def overhead_section(e, out_dir):
    s = e.get("summary", [])
    text = table(["object", "via", "mode", "samples", "client total µs",
                  "control plane (gateway) µs", "storage µs", "transfer µs", "server µs",
                  "client + rest µs"],
                 [[size_label(r["object_bytes"]), r["via"], r["mode"], r["samples"],
                   r["total_us"], r["gateway_us"],
                   r["storage_us"] if r["via"] == "ucx" else "n/a",
                   r["transfer_us"] if r["via"] == "ucx" else "n/a",
                   r.get("server_us") if r["via"] == "ucx" else "n/a",
                   r["client_and_rest_us"] if r["via"] == "ucx" else "n/a"] for r in s])
    ucx = sorted([r for r in s if r["via"] == "ucx"], key=lambda r: r["object_bytes"])
    finding = "No rows were measured."
    if ucx:
        def shares(r):
            parts = (r["gateway_us"], r["storage_us"], r["transfer_us"])
            t = max(sum(parts), 1)
            return [100 * p / t for p in parts]
        lo, hi = ucx[0], ucx[-1]
        a, b = shares(lo), shares(hi)
        finding = (f"Over UCX (each sample a new client process, so transfer includes the "
                   f"server connecting to it) the server spends {lo['server_us']:.0f} µs on a "
                   f"{size_label(lo['object_bytes'])} single-object GET (control plane "
                   f"{a[0]:.0f}%, storage {a[1]:.0f}%, transfer {a[2]:.0f}%)")
        if hi is not lo:
            finding += (f" and {hi['server_us']:.0f} µs at {size_label(hi['object_bytes'])} "
                        f"(control plane {b[0]:.0f}%, storage {b[1]:.0f}%, transfer {b[2]:.0f}%)")
        rest = 100 * (lo["client_and_rest_us"] or 0) / max(lo["total_us"], 1)
        finding += (f"; the client's wall time is {lo['total_us']:.0f} µs at "
                    f"{size_label(lo['object_bytes'])}, {rest:.0f}% of it outside the server's "
                    f"three timings (the client process's one-time UCX setup is part of it)")
        http = [r for r in s if r["via"] == "http" and r["object_bytes"] == lo["object_bytes"]]
        if http:
            finding += (f", and the same GET over HTTP takes {http[0]['total_us']:.0f} µs at the "
                        f"client, {http[0]['gateway_us']:.0f} µs of it in the gateway before "
                        f"the body")
        finding += "."
    png = None
    if ucx:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        labels = [size_label(r["object_bytes"]) for r in ucx]
        bottom = [0.0] * len(ucx)
        for key, name in (("gateway_us", "control plane"), ("storage_us", "storage"),
                          ("transfer_us", "transfer")):
            vals = [(r[key] or 0) / 1e3 for r in ucx]
            ax.bar(labels, vals, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, vals)]
        png = save_figure(fig, ax, out_dir, "3-overhead.png",
                    xlabel="object size (one-chunk descriptor GET over UCX)",
                    ylabel="server time, ms (median)",
                    title="3. Per-request latency breakdown")
    return text, finding, [png] if png else []


# --- 4 ---------------------------------------------------------------------------------------

def aggregation_section(e, out_dir):
    rows = e.get("rows", [])
    methods = ["ucx", "http-body", "http-object", "http-range"]
    shapes = sorted({(r["G"], r["context"], r["hit"]) for r in rows})
    trows = []
    for g, c, h in shapes:
        m = {r["method"]: r for r in rows if (r["G"], r["context"], r["hit"]) == (g, c, h)}
        sp = next((x for x in e.get("speedups", []) if (x["G"], x["context"], x["hit"]) ==
                   (g, c, h)), {})
        trows.append([g, tokens_label(c), h, sp.get("chunks"), sp.get("ucx_mode") or "-",
                      *[m[k]["gbps"] if k in m else None for k in methods],
                      *[m[k]["ttfl_s"] * 1e3 if k in m else None for k in ("ucx", "http-range")],
                      sp.get("ucx_vs_http-range"), sp.get("http-body_vs_http-range"),
                      sp.get("ucx_vs_http-object")])
    parts = [table(["G", "context", "hit", "chunks", "ucx mode", "ucx GB/s", "http-body GB/s",
                    "http-object GB/s", "http-range GB/s", "ucx first layer ms",
                    "range first layer ms", "ucx / range speedup", "body / range speedup",
                    "ucx / object speedup"], trows)]
    variants = e.get("variants", [])
    labels = list(dict.fromkeys(r["variant"] for r in variants))
    if variants:
        vrows = []
        for g, c, h in sorted({(r["G"], r["context"], r["hit"]) for r in variants}):
            m = {r["variant"]: r for r in variants if (r["G"], r["context"], r["hit"]) == (g, c, h)}
            vrows.append([g, tokens_label(c), h,
                          *[m[k]["gbps"] if k in m else None for k in labels],
                          *[m[k]["ttfl_s"] * 1e3 if k in m else None for k in labels]])
        parts.append("Server variants, UCX descriptor GET only (Θ and staging buffers x bytes "
                     "from the server's [kv] configuration):\n\n" + table(
                         ["G", "context", "hit", *[f"{k} GB/s" for k in labels],
                          *[f"{k} first layer ms" for k in labels]], vrows))
    kv = e.get("kv_bench", [])
    if kv:
        parts.append("kv_bench (in process, staging 8 x 4 MiB):\n\n" + table(
            ["G", "context", "hit", "mode", "GB/s", "first layer µs", "read µs"],
            [[r["G"], r["context"], r["hit"], r["mode"], r["gbps"], r["ttfl_us"], r["read_us"]]
             for r in kv]))
    sp = e.get("speedups", [])
    finding = "No rows were measured."
    if sp:
        lo = min(sp, key=lambda x: (x["G"], -x["context"]))
        hi = max(sp, key=lambda x: (x["G"], x["context"]))
        def describe(x):
            parts = []
            for k, name in (("ucx_vs_http-range", "UCX"), ("http-body_vs_http-range", "the HTTP "
                                                                                   "body")):
                if k in x:
                    parts.append(f"{name} {x[k]:.1f}x")
            return ", ".join(parts)
        finding = (f"Against per-chunk-per-layer range GETs the aggregated descriptor GET is "
                   f"{describe(lo)} faster at G = {lo['G']} ({lo['chunks']} chunks, "
                   f"{tokens_label(lo['context'])} context)")
        if hi is not lo:
            finding += f" and {describe(hi)} at G = {hi['G']} ({hi['chunks']} chunks)"
        finding += "."
    lw = [r for r in variants if r["variant"] == "layerwise-8x4MiB"]
    cw = {(r["G"], r["context"], r["hit"]): r for r in variants if r["variant"] == "chunkwise"}
    pairs = [(r, cw[(r["G"], r["context"], r["hit"])]) for r in lw
             if (r["G"], r["context"], r["hit"]) in cw]
    if pairs:
        finding += (f" Forced layerwise against forced chunkwise (staging 8 x 4 MiB, median over "
                    f"{len(pairs)} shapes): {median([a['gbps'] / b['gbps'] for a, b in pairs]):.2f}"
                    f"x the throughput, first layer after "
                    f"{median([a['ttfl_s'] / b['ttfl_s'] for a, b in pairs]):.2f}x the time.")
    rndv = {(r["G"], r["context"], r["hit"]): r for r in variants
            if r["variant"] == "layerwise-8x4MiB-rendezvous"}
    pairs = [(r, rndv[(r["G"], r["context"], r["hit"])]) for r in lw
             if (r["G"], r["context"], r["hit"]) in rndv]
    if pairs:
        finding += (f" Writing the client's shared-memory target in place against sending every "
                    f"byte as a UCX rendezvous message (median over {len(pairs)} shapes): "
                    f"{median([a['gbps'] / b['gbps'] for a, b in pairs]):.2f}x the throughput.")
    if len(labels) > 1:
        best = {}
        for r in variants:
            if r["variant"].startswith("layerwise"):
                best.setdefault(r["variant"], []).append(r["gbps"])
        if best:
            finding += " Median layerwise GB/s by staging: " + ", ".join(
                f"{k.split('-', 1)[1]} {median(v):.2f}" for k, v in best.items()) + "."
    png = None
    if rows:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        for c, h in sorted({(s[1], s[2]) for s in shapes}):
            for k in methods:
                rs = sorted([r for r in rows if r["method"] == k and r["context"] == c
                             and r["hit"] == h], key=lambda r: r["G"])
                if rs:
                    ax.plot([r["G"] for r in rs], [r["gbps"] for r in rs], marker="o",
                            label=f"{k} ({tokens_label(c)}, {h:g})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        gs = sorted({r["G"] for r in rows})
        ax.set_xticks(gs)
        ax.set_xticklabels([str(g) for g in gs])
        ax.minorticks_off()
        png = save_figure(fig, ax, out_dir, "4-aggregation.png",
                    xlabel="G (tokens per chunk)",
                    ylabel="GB/s",
                    title="4. Aggregated descriptor GET vs per-object / per-range GETs",
                    legend_size=7)
    return "\n\n".join(parts), finding, [png] if png else []


# --- 9 ---------------------------------------------------------------------------------------

def rados_vs_rgw_section(e, out_dir):
    import rados_vs_rgw_report
    if not e.get("reads") and not e.get("s3ops"):
        return "No rows were measured.", "The experiment did not measure anything.", []
    text, finding = rados_vs_rgw_report.markdown(e)
    png = rados_vs_rgw_report.plot(e, os.path.join(out_dir, "9-rados-vs-rgw.png"))
    return text, finding, [os.path.basename(png)]


# --- 10 --------------------------------------------------------------------------------------

def write_bench_section(e, out_dir):
    import write_bench_report
    if not e.get("desc") and not e.get("fill"):
        return "No rows were measured.", "The experiment did not measure anything.", []
    text, finding = write_bench_report.markdown(e)
    png = write_bench_report.plot(e, os.path.join(out_dir, "10-write-bench.png"))
    return text, finding, [os.path.basename(png)]


def scaling_section(e, out_dir):
    import importlib.util
    if not e.get("summary"):
        return "No rows were measured.", "The experiment did not measure anything.", []
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "scaling_bench.py")
    spec = importlib.util.spec_from_file_location("scaling_bench_py", path)
    sb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sb)
    text, finding = sb.markdown(e)
    png = sb.plot(e, os.path.join(out_dir, "11-scaling.png"))
    return text, finding, [os.path.basename(png)]


# --- 12 --------------------------------------------------------------------------------------

def lmcache_section(e, out_dir):
    import experiments
    if not e.get("get"):
        return "No rows were measured.", "The experiment did not measure anything.", []
    text, finding = experiments.LB.markdown(e)
    png = os.path.join(out_dir, "12-lmcache.png")
    experiments.LB.plot(e, png)
    return text, finding, [os.path.basename(png)]


# --- 13 --------------------------------------------------------------------------------------

def scale_out_section(e, out_dir):
    import experiments
    if not e.get("rows"):
        return "No rows were measured.", ("The experiment did not measure anything"
                                          + (f": {e['error']}." if e.get("error") else ".")), []
    text, finding = experiments.SO.markdown(e)
    png = experiments.SO.plot(e, os.path.join(out_dir, "13-scale-out.png"))
    return text, finding, [os.path.basename(png)]


# --- 14 --------------------------------------------------------------------------------------

def cache_churn_section(e, out_dir):
    import experiments
    if not e.get("summary"):
        return "No rows were measured.", ("The experiment did not measure anything"
                                          + (f": {e['error']}." if e.get("error") else ".")), []
    text, finding = experiments.CC.markdown(e)
    png = experiments.CC.plot(e, os.path.join(out_dir, "14-cache-churn.png"))
    return text, finding, [os.path.basename(png)]


def vllm_tier_section(e, out_dir):
    import experiments
    if not e.get("target"):
        return "No rows were measured.", ("The experiment did not measure anything"
                                          + (f": {e['error']}." if e.get("error") else ".")), []
    text, finding = experiments.VT.markdown(e)
    png = experiments.VT.plot(e, os.path.join(out_dir, "15-vllm-tier.png"))
    return text, finding, [os.path.basename(png)]


SECTIONS = [
    ("1-storage", "1. Storage baseline", storage_section),
    ("2-transport", "2. S3 transport baseline", transport_section),
    ("3-overhead", "3. Per-request overhead", overhead_section),
    ("4-aggregation", "4. Aggregation", aggregation_section),
    ("5-ttft-e2e", "5. End-to-end TTFT", e2e_section),
    ("6-ttft-bandwidth", "6. Bandwidth sensitivity", bandwidth_section),
    ("7-ttft-scheduling", "7. Scheduling under shared caps", sched_section),
    ("8-ttft-model", "8. TTFT model (Equation 3) vs measured", model_section),
    ("9-rados-vs-rgw", "9. ObjectCache on RADOS vs Ceph RGW", rados_vs_rgw_section),
    ("10-write-bench", "10. Write path: PUTs, server CPU, write amplification",
     write_bench_section),
    ("11-scaling", "11. Scaling with the server's cores", scaling_section),
    ("12-lmcache", "12. LMCache L2 connector: batch get and exists", lmcache_section),
    ("13-scale-out", "13. Scale-out: one and two peers over a 3-OSD pool", scale_out_section),
    ("14-cache-churn", "14. Cache churn: a bounded bucket against an unbounded one",
     cache_churn_section),
    ("15-vllm-tier", "15. vLLM secondary tier: scheduler-path call latency", vllm_tier_section),
]


def write(out_dir):
    run_info = json.load(open(os.path.join(out_dir, "run.json")))
    m, v = run_info["machine"], run_info["versions"]
    md = [f"# ObjectCache evaluation — {run_info['date']} ({run_info['profile']})", ""]
    md.append(f"Generated by `bench/run-all --{run_info['profile']}` in "
              f"{run_info['duration_s'] / 60:.1f} min, started {run_info['started_utc']} UTC. "
              "Every figure below is read from the JSON files next to this report; every "
              "sentence under **Finding** is computed from them.")
    md += ["", "## Machine and versions", "",
           table(["", ""], [
               ["CPU", f"{m['cpu']} ({m['cores']} cores)"], ["RAM", f"{m['ram_gib']} GiB"],
               ["kernel", m["kernel"]], ["OS", m.get("os") or "?"],
               ["load average at start (1/5/15 min)",
                " / ".join(f"{x:.2f}" for x in run_info["load_start"])],
               ["load average at end", " / ".join(f"{x:.2f}" for x in run_info["load_end"])],
               ["git commit", f"{v['git_commit']}"
                + (" (the working tree had modified tracked files)"
                   if v["git_tree_modified"] else "")],
               ["binaries linked (UTC)", ", ".join(
                   f"{k} {t}" for k, t in sorted(v.get("binaries_linked_utc", {}).items()))
                or "?"],
               ["compiler", v["compiler"] or "?"], ["build type", v["build_type"] or "?"],
               ["RocksDB", v["rocksdb"] or "?"], ["UCX", v["ucx"] or "?"],
               ["Boost", v["boost"] or "?"], ["wrk", v["wrk"] or "?"],
               ["Python", v["python"]]]), "",
           "Two shared vCPUs: each experiment's load average is printed with it (the benchmark "
           "clients and servers themselves load the machine), so compare rows within one table "
           "(measured in the same run) rather than with other runs or machines.", ""]
    md += ["## Summary", ""]
    body = []
    for stem, title, fn in SECTIONS:
        path = os.path.join(out_dir, stem + ".json")
        body += [f"## {title}", ""]
        if not os.path.exists(path):
            body += ["Not run.", ""]
            md.append(f"- **{title}**: not run.")
            continue
        e = json.load(open(path))
        result = fn(e, out_dir)
        text, finding = result[0], result[1]
        pngs = list(result[2]) if len(result) > 2 else []
        pngs += e.get("pngs", [])
        md.append(f"- **{title}**: {finding}")
        body.append(f"Configuration: `{json.dumps(e.get('config'), sort_keys=True)}`; "
                    f"took {e.get('duration_s', 0):.0f} s; load average "
                    f"{e.get('load_start', [0])[0]:.2f} → {e.get('load_end', [0])[0]:.2f}.")
        body.append("")
        if e.get("scaling"):
            body += ["ttft_emulator's scaling of the paper's sizes, rates and times to this "
                     f"machine: `{json.dumps(e['scaling'], sort_keys=True)}`", ""]
        if e.get("tool_machine"):
            body += [f"Measured by ttft_emulator first: `{json.dumps(e['tool_machine'])}`", ""]
        for c in e.get("commands", []):
            body.append(f"    {c}")
        body.append("")
        if e.get("error"):
            body += [f"**The experiment failed:** {e['error']}", ""]
        body += [text, "", f"**Finding.** {finding}", ""]
        for n in e.get("notes", []):
            body.append(f"- {n}")
        if e.get("notes"):
            body.append("")
        for p in pngs:
            body += [f"![{title}]({p})", ""]
    md += [""] + body
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
