#!/usr/bin/python3
"""Plots ttft_emulator results: added TTFT over the unthrottled run, per policy and epoch variant,
one panel per workload (mean over requests as bars, the worst request as a marker).

Usage: /usr/bin/python3 tools/plot_ttft.py results.json out.png   (Debian's python3-matplotlib)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        res = json.load(f)
    workloads = res["workloads"]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        policies = []
        for r in w["runs"]:
            if r["policy"] not in policies:
                policies.append(r["policy"])
        width = 0.38
        for k, variant in enumerate(["epoch", "work-conserving"]):
            runs = {r["policy"]: r for r in w["runs"] if r["variant"] == variant}
            xs = [i + (k - 0.5) * width for i in range(len(policies))]
            ax.bar(xs, [runs[p]["mean_added_ttft_ms"] for p in policies], width, label=variant + " (mean)")
            ax.plot(xs, [runs[p]["max_added_ttft_ms"] for p in policies], "k_", markersize=12)
        ax.set_xticks(range(len(policies)))
        ax.set_xticklabels(policies, rotation=30, ha="right")
        ax.set_ylabel("added TTFT over unthrottled, ms")
        ax.set_title("workload %s: %d requests, demand %.1f / cap %.1f Gbps"
                     % (w["name"], len(w["unthrottled_ttft_ms"]), w["demand_gbps"], w["cap_gbps"]),
                     fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("TTFT emulator (%s mode: L=%d, times / %g); bars mean, dashes worst request"
                 % (res["mode"], res["layers"], res["time_scale"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
