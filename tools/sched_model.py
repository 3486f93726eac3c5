#!/usr/bin/python3
"""The paper's scheduling workloads in the model, no system involved (bench/README.md,
"ttft_emulator"). Reads Table A8 (bench/data/objectcache-table-a8.csv):
request i moves L = 32 layers of s_i = cached tokens x 4096 bytes and computes each for
c_i = total compute / 32; added TTFT is over L * c_i (infinite bandwidth).

  fixed       the paper's protocol: each request keeps its policy rate for the whole load
              (Eq. 3 with x_i = s_i / r_i; Tables A9-A12)
  redistrib.  work-conserving sharing, simulated in small time steps: rates recomputed whenever
              a request's transfer ends, layers land in order, layer l's compute starts when it
              has landed and layer l-1's compute is done

Policies: equal, kv-prop, bw-prop, stall-opt, cal-stall-opt (delta 5 Gbps) and, under
redistribution, shortest-first: requests in order of remaining bytes each get min(r*_i, what
is left), the surplus goes to the first (stall-aware, work-conserving).

Usage: /usr/bin/python3 tools/sched_model.py [--dt SECONDS]   prints one Markdown table
       /usr/bin/python3 tools/sched_model.py --delta-sweep   Eq. 3's equal / cal-stall-opt under
                                        the paper's protocol for delta = 0..10 Gbps, per workload
"""
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L = 32
DELTA = 5e9 / 8
FOUR = [(16384, 0.5), (16384, 0.875), (65536, 0.5), (65536, 0.875)]
WORKLOADS = {"A": (80, FOUR), "B": (50, FOUR),
             "C": (50, [(16384, 0.5), (16384, 0.875), (32768, 0.5), (32768, 0.875),
                        (65536, 0.5), (65536, 0.875)])}


def table_a8():
    rows = {}
    header = None
    for line in open(os.path.join(ROOT, "bench", "data", "objectcache-table-a8.csv")):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.strip().split(",")
        if header is None:
            header = f
            continue
        r = dict(zip(header, f))
        rows[(int(r["context_tokens"]), float(r["hit_rate"]))] = float(r["total_compute_ms"])
    return rows


def water_fill(s, t, cap):
    if sum(t) <= cap:
        return list(t)
    r = [0.0] * len(s)
    act = [i for i in range(len(s)) if s[i] > 0 and t[i] > 0]
    left = cap
    while act:
        tot = sum(math.sqrt(s[i]) for i in act)
        capped = [i for i in act if left * math.sqrt(s[i]) / tot >= t[i]]
        if not capped:
            for i in act:
                r[i] = left * math.sqrt(s[i]) / tot
            break
        for i in capped:
            r[i] = t[i]
            left -= t[i]
        act = [i for i in act if i not in capped]
    return r


def allocate(policy, s, rstar, remaining, cap, delta=None):
    n = len(s)
    if policy == "equal":
        return [cap / n] * n
    if policy == "kv-prop":
        return [cap * x / sum(s) for x in s]
    if policy == "bw-prop":
        return [cap * x / sum(rstar) for x in rstar]
    if policy in ("stall-opt", "cal-stall-opt"):
        d = (DELTA if delta is None else delta) if policy == "cal-stall-opt" else 0
        return water_fill(s, [x + d for x in rstar], cap)
    if policy == "shortest-first":
        order = sorted(range(n), key=lambda i: (remaining[i], i))
        r, left = [0.0] * n, cap
        for i in order:
            r[i] = min(rstar[i], left)
            left -= r[i]
        r[order[0]] += left
        return r
    raise ValueError(policy)


def fixed(s, c, rates):
    out = []
    for si, ci, ri in zip(s, c, rates):
        x = si / ri
        out.append((x + (L - 1) * max(x, ci) + ci - L * ci) * 1e3)
    return out


def redistributed(policy, s, c, rstar, cap, dt):
    n = len(s)
    got = [0.0] * n
    done = [0] * n          # layers whose compute is scheduled
    end = [0.0] * n         # when the last scheduled compute ends
    t, key, rates = 0.0, None, None
    while min(done) < L:
        act = [i for i in range(n) if got[i] < L * s[i] - 1e-6]
        if act != key:      # an arrival or departure: reallocate
            key = act
            sub = allocate(policy, [s[i] for i in act], [rstar[i] for i in act],
                           [L * s[i] - got[i] for i in act], cap) if act else []
            rates = [0.0] * n
            for k, i in enumerate(act):
                rates[i] = sub[k]
        t += dt
        for i in range(n):
            got[i] = min(L * s[i], got[i] + rates[i] * dt)
            while done[i] < L and got[i] >= (done[i] + 1) * s[i] - 1e-6:
                end[i] = max(end[i], t) + c[i]
                done[i] += 1
    return [(end[i] - L * c[i]) * 1e3 for i in range(n)]


def delta_sweep(a8):
    """Eq. 3 under fixed rates: equal's sum of added TTFT over cal-stall-opt's, per delta."""
    deltas = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]
    print("| workload | " + " | ".join(f"delta {d}" for d in deltas) + " |")
    print("| --- |" + " --- |" * len(deltas))
    for name, (gbps, profiles) in WORKLOADS.items():
        cap = gbps * 1e9 / 8
        s = [round(ctx * hit) * 4096 for ctx, hit in profiles]
        c = [a8[p] / 32 / 1e3 for p in profiles]
        rstar = [si / ci for si, ci in zip(s, c)]
        eq = sum(fixed(s, c, allocate("equal", s, rstar, s, cap)))
        cells = []
        for d in deltas:
            cal = sum(fixed(s, c, allocate("cal-stall-opt", s, rstar, s, cap, d * 1e9 / 8)))
            cells.append(f"{eq / cal:.2f}x")
        print(f"| {name} ({gbps} Gbps) | " + " | ".join(cells) + " |")
    return 0


def main(argv):
    dt = float(argv[argv.index("--dt") + 1]) if "--dt" in argv else 5e-5
    a8 = table_a8()
    if "--delta-sweep" in argv:
        return delta_sweep(a8)
    print("| workload | sharing | policy | sum added TTFT ms | equal / policy |")
    print("| --- | --- | --- | --- | --- |")
    for name, (gbps, profiles) in WORKLOADS.items():
        cap = gbps * 1e9 / 8
        s = [round(ctx * hit) * 4096 for ctx, hit in profiles]
        c = [a8[p] / 32 / 1e3 for p in profiles]
        rstar = [si / ci for si, ci in zip(s, c)]
        res = {}
        for p in ["equal", "kv-prop", "bw-prop", "stall-opt", "cal-stall-opt"]:
            res[("fixed", p)] = sum(fixed(s, c, allocate(p, s, rstar, s, cap)))
        for p in ["equal", "stall-opt", "cal-stall-opt", "shortest-first"]:
            res[("redistributed", p)] = sum(redistributed(p, s, c, rstar, cap, dt))
        for (sharing, p), v in res.items():
            eq = res[(sharing, "equal")]
            print(f"| {name} ({gbps} Gbps) | {sharing} | {p} | {v:.1f} | {eq / v:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
