#!/usr/bin/python3
"""Plots ttft_emulator results (bench/README.md), one PNG per experiment present in the JSON:
  OUT.png            sched: sum of added TTFT over each request alone per policy and way of sharing,
                     one panel per workload (dashes: Eq. 3 at the policy's rates, admission)
  OUT-delta.png      delta: the rate a request effectively got against the rate assigned, and
                     Eq. 3 against the measured TTFT, over a rate sweep (the calibrated margin)
  OUT-e2e.png        e2e: TTFT overhead vs opt-local-LW per path, one panel per context x G
  OUT-bandwidth.png  bandwidth: TTFT increase with each path capped at 10% of its bandwidth
  OUT-model.png      model: Equation 3's TTFT against the measured one
Prints the files written, one per line.

Usage: /usr/bin/python3 tools/plot_ttft.py results.json OUT.png   (Debian's python3-matplotlib)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PATHS = ["opt-local-LW", "Local-CW", "Local-LW", "S3Batch-CW", "S3Agg-LW"]


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def title(res):
    m = res.get("machine", {})
    return "%s run; data plane %.2f GB/s, load avg %.1f -> %.1f" % (
        res["mode"], m.get("data_plane_gbytes_per_s", 0),
        m.get("load_average_start", [0])[0], m.get("load_average_end", [0])[0])


def plot_sched(res, path):
    workloads = res["sched"]["workloads"]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        policies = []
        for r in w["runs"]:
            if r["policy"] not in policies:
                policies.append(r["policy"])
        variants = []
        for r in w["runs"]:
            if r["variant"] not in variants:
                variants.append(r["variant"])
        width = 0.8 / len(variants)
        for k, variant in enumerate(variants):
            runs = {r["policy"]: r for r in w["runs"] if r["variant"] == variant}
            xs = [i + (k - (len(variants) - 1) / 2) * width for i in range(len(policies))]
            ax.bar(xs, [runs[p].get("sum_added_ttft_ms", runs[p]["mean_added_ttft_ms"])
                        for p in policies], width, label=variant)
            if variant == "admission" and "sum_eq3_policy_added_ms" in runs[policies[0]]:
                ax.plot(xs, [runs[p]["sum_eq3_policy_added_ms"] or float("nan") for p in policies],
                        "k_",
                        markersize=10, label="Eq. 3 at the policy's rates")
        ax.set_xticks(range(len(policies)))
        ax.set_xticklabels(policies, rotation=30, ha="right")
        ax.set_ylabel("sum of added TTFT over each request alone, ms")
        ax.set_title("workload %s: %d requests, demand/cap %.2f (%.2f / %.2f Gbps)"
                     % (w["name"], len(w["unthrottled"]), w["demand_over_cap"], w["demand_gbps"],
                        w["cap_gbps"]), fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("scheduling under a shared cap: " + title(res), fontsize=10)
    save(fig, path)


def plot_e2e(res, path):
    rows = res["e2e"]["rows"]
    panels = sorted({(r["context"], r["g"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4), squeeze=False)
    for ax, (ctx, g) in zip(axes[0], panels):
        hits = sorted({r["hit"] for r in rows if r["context"] == ctx and r["g"] == g})
        width = 0.8 / len(PATHS)
        for k, p in enumerate(PATHS):
            vals = []
            for h in hits:
                v = [r["overhead_pct"] for r in rows
                     if r["context"] == ctx and r["g"] == g and r["hit"] == h and r["path"] == p]
                vals.append(v[0] if v else 0)
            ax.bar([i + (k - 2) * width for i in range(len(hits))], vals, width, label=p)
        ax.set_xticks(range(len(hits)))
        ax.set_xticklabels(["%g%%" % (h * 100) for h in hits])
        ax.set_xlabel("hit rate")
        ax.set_ylabel("TTFT overhead vs opt-local-LW, %")
        ax.set_title("%dK context, G=%d" % (ctx // 1024, g), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("end-to-end TTFT: " + title(res), fontsize=10)
    save(fig, path)


def plot_bandwidth(res, path):
    rows = res["bandwidth"]["rows"]
    configs = []
    for r in rows:
        c = (r["context"], r["hit"])
        if c not in configs:
            configs.append(c)
    fig, ax = plt.subplots(figsize=(max(6, 2 * len(configs)), 4))
    width = 0.8 / len(PATHS)
    for k, p in enumerate(PATHS):
        vals = []
        for c in configs:
            v = [r["increase_pct"] for r in rows if (r["context"], r["hit"]) == c and r["path"] == p]
            vals.append(v[0] if v else 0)
        ax.bar([i + (k - 2) * width for i in range(len(configs))], vals, width, label=p)
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels(["%dK@%g%%" % (c // 1024, h * 100) for c, h in configs])
    ax.set_ylabel("TTFT increase at 10% bandwidth, %")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("bandwidth sensitivity (G=%d): %s" % (rows[0]["g"], title(res)), fontsize=9)
    save(fig, path)


def plot_model(res, path):
    rows = res["model"]["rows"]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for exp, marker in [("e2e", "o"), ("bandwidth", "s"), ("sched", "^")]:
        pts = [(r["measured_ms"], r["eq3_ms"]) for r in rows if r["experiment"] == exp]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=14, label=exp)
    lim = max([max(r["measured_ms"], r["eq3_ms"]) for r in rows] + [1])
    ax.plot([1, lim], [1, lim], "k--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured TTFT, ms")
    ax.set_ylabel("Equation 3 TTFT, ms")
    ax.legend(fontsize=8)
    ax.set_title("Eq. 3 vs measured: " + title(res), fontsize=8)
    save(fig, path)


def plot_delta(res, path):
    d = res["delta"]
    rows = d["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    ax = axes[0]
    pts = [(r["assigned_paper_gbps"], r["effective_paper_gbps"]) for r in rows
           if r.get("effective_paper_gbps") is not None]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="effective (from TTFT)")
    lim = max([r["assigned_paper_gbps"] for r in rows] + [1])
    ax.plot([0, lim], [0, lim], "k--", linewidth=0.8, label="assigned")
    ax.axvline(d["r_star_paper_gbps"], color="gray", linestyle=":", label="r*")
    ax.set_xlabel("assigned rate, paper Gbps")
    ax.set_ylabel("effective rate, paper Gbps")
    ax.set_title("%s, L = %d: delta = %.2f paper Gbps (paper: 5)"
                 % (d["profile"], d["layers"], d["delta_paper_gbps"]), fontsize=8)
    ax.legend(fontsize=8)
    ax = axes[1]
    xs = [r["assigned_over_r_star"] for r in rows]
    ax.plot(xs, [r["ttft_ms"] for r in rows], "o-", label="measured")
    ax.plot(xs, [r["eq3_ms"] for r in rows], "s--", label="Eq. 3")
    ax.axhline(d["alone_uncapped_ms"], color="gray", linestyle=":", label="alone, uncapped")
    ax.set_xlabel("assigned rate / r*")
    ax.set_ylabel("TTFT, ms")
    ax.legend(fontsize=8)
    fig.suptitle("rate sweep (Figure 15 analogue): " + title(res), fontsize=10)
    save(fig, path)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        res = json.load(f)
    stem = argv[2][:-4] if argv[2].endswith(".png") else argv[2]
    plots = [("sched", stem + ".png", plot_sched), ("e2e", stem + "-e2e.png", plot_e2e),
             ("bandwidth", stem + "-bandwidth.png", plot_bandwidth),
             ("delta", stem + "-delta.png", plot_delta),
             ("model", stem + "-model.png", plot_model)]
    for key, path, fn in plots:
        if key in res and res[key]:
            if key == "model" and not res[key]["rows"]:
                continue
            fn(res, path)
            print(os.path.abspath(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
