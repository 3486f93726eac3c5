"""Experiment 7 beside the paper (issue 34): the emulator's added TTFT per policy and workload
beside the paper's Table A12, and per request beside its Tables A10/A11, as ratios to equal on
both sides (the paper's absolute times belong to an A100 and DAOS, the emulator's to a scaled
2-core run). The paper's rows come from the experiment's JSON (experiments.py copies them there
from bench/data/) or, for results written before that, from bench/data/ itself. Used by
report_ttft.py."""
import csv
import os

from common import ROOT
from report_format import table

PAPER_FILES = {"a10_a11": "objectcache-table-a10-a11.csv", "a12": "objectcache-table-a12.csv"}
POLICIES = ["equal", "kv-prop", "bw-prop", "stall-opt", "cal-stall-opt"]
# The emulator's run that follows the paper's protocol (a rate fixed at admission, held from the
# first byte).
PAPER_VARIANT = "admission"


def read_csv(path):
    """Rows of one of bench/data's CSVs (comment lines start with '#'), numbers as floats."""
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for r in rows:
        for k, v in r.items():
            try:
                r[k] = float(v)
            except (TypeError, ValueError):
                pass
    return rows


def load_paper_tables():
    """{"a10_a11": rows, "a12": rows, "sources": {...}} from bench/data/."""
    out = {"sources": {}}
    for key, name in PAPER_FILES.items():
        path = os.path.join(ROOT, "bench", "data", name)
        out[key] = read_csv(path)
        out["sources"][key] = os.path.join("bench", "data", name)
    return out


def profile_key(label):
    """'1:16K@87.5%' -> (16384, 0.875)."""
    text = label.split(":")[-1]
    context, hit = text.split("@")
    return int(context.rstrip("K")) * 1024, float(hit.rstrip("%")) / 100


def _emulator_runs(workload):
    """{policy: run} of the paper-protocol variant."""
    return {r["policy"]: r for r in workload.get("runs", []) if r.get("variant") == PAPER_VARIANT}


def _order(values):
    """Policies from least to most added TTFT."""
    return [p for p, _ in sorted(values.items(), key=lambda kv: kv[1])]


def _swaps(paper_order, emu_order):
    """Pairs (a, b) the paper puts a before b and the emulator b before a."""
    out = []
    for i, a in enumerate(paper_order):
        for b in paper_order[i + 1:]:
            if a in emu_order and b in emu_order and emu_order.index(b) < emu_order.index(a):
                out.append((a, b))
    return out


def _pair_detail(name, a, b, paper_req, emu_req):
    """Per request, b's TTFT minus a's on both sides: where b gains or loses against a."""
    bits = []
    for key in paper_req.get(a, {}):
        pa, pb = paper_req[a].get(key), paper_req.get(b, {}).get(key)
        ea, eb = emu_req.get(a, {}).get(key), emu_req.get(b, {}).get(key)
        label = f"{key[0] // 1024}K@{key[1] * 100:g}%"
        side = []
        if pa is not None and pb is not None:
            side.append(f"paper {pb - pa:+.0f} ms ({pb / pa - 1:+.0%})")
        if ea is not None and eb is not None:
            side.append(f"emulator {eb - ea:+.1f} ms ({eb / ea - 1:+.0%})")
        bits.append(f"{label} " + " / ".join(side))
    return (f"{name}: {b} against {a}, each request's TTFT difference: " + "; ".join(bits))


def side_by_side(data):
    """(markdown text, list of finding sentences) for experiment 7's JSON `data`."""
    paper = data.get("paper_tables") if isinstance(data, dict) else None
    if not paper:
        paper = load_paper_tables()
    workloads = data.get("workloads", []) if isinstance(data, dict) else []
    a12 = {(r["workload"], r["policy"]): r for r in paper["a12"]}
    a10 = {}
    for r in paper["a10_a11"]:
        a10.setdefault((r["workload"], r["policy"]), {})[
            (int(r["context_tokens"]), r["hit_rate"])] = r
    total_rows, request_rows, findings = [], [], []
    for w in workloads:
        name = w.get("name")
        runs = _emulator_runs(w)
        if not runs or (name, "equal") not in a12:
            continue
        paper_eq = a12[(name, "equal")]["delta_ttft_ms"]
        emu_eq = runs.get("equal", {}).get("sum_added_ttft_ms")
        paper_added, emu_added = {}, {}
        for p in POLICIES:
            if (name, p) not in a12:
                continue
            paper_added[p] = a12[(name, p)]["delta_ttft_ms"]
            if p in runs:
                emu_added[p] = runs[p].get("sum_added_ttft_ms")
        paper_order = _order(paper_added)
        emu_order = _order({p: v for p, v in emu_added.items() if v is not None})
        for p in POLICIES:
            if p not in paper_added:
                continue
            e = emu_added.get(p)
            total_rows.append([name, p, a12[(name, p)]["delta_ttft_ms"], paper_added[p] / paper_eq,
                               paper_order.index(p) + 1, e,
                               e / emu_eq if e is not None and emu_eq else None,
                               emu_order.index(p) + 1 if p in emu_order else None])
        # Per request: TTFT and its ratio to the same request's TTFT under equal.
        paper_req, emu_req = {}, {}
        for p in POLICIES:
            for key, r in a10.get((name, p), {}).items():
                paper_req.setdefault(p, {})[key] = r["avg_ttft_ms"]
            for q in runs.get(p, {}).get("requests", []):
                emu_req.setdefault(p, {})[profile_key(q["profile"])] = q.get("ttft_ms")
        emu_added_req = {p: {profile_key(q["profile"]): q.get("added_ttft_ms")
                             for q in runs.get(p, {}).get("requests", [])} for p in POLICIES}
        for p in POLICIES:
            for key, pt in sorted(paper_req.get(p, {}).items()):
                peq = paper_req.get("equal", {}).get(key)
                et = emu_req.get(p, {}).get(key)
                eeq = emu_req.get("equal", {}).get(key)
                rate = a10[(name, p)][key]["rate_gbps"]
                request_rows.append([name, f"{key[0] // 1024}K@{key[1] * 100:g}%", p, rate, pt,
                                     pt / peq if peq else None, et,
                                     et / eeq if et is not None and eeq else None,
                                     emu_added_req.get(p, {}).get(key)])
        sentence = (f"{name}: the paper orders the policies (least added TTFT first) "
                    + " < ".join(paper_order) + "; the emulator " + " < ".join(emu_order))
        swaps = _swaps(paper_order, emu_order)
        if not swaps:
            sentence += " (the same order)."
            findings.append(sentence)
            continue
        sentence += " (" + ", ".join(f"{b} ahead of {a}" for a, b in swaps) + ")."
        findings.append(sentence)
        for a, b in swaps:
            findings.append(_pair_detail(name, a, b, paper_req, emu_req) + ".")
    if not total_rows:
        return "", []
    text = ("Beside the paper (experiment 7's `admission` runs, the paper's protocol; "
            "policy ÷ equal on both sides, rank 1 = least added TTFT). Per workload, beside "
            "Table A12 (" + paper["sources"].get("a12", "") + "):\n\n"
            + table(["workload", "policy", "paper added TTFT ms", "paper ÷ equal", "paper rank",
                     "emulator added TTFT ms", "emulator ÷ equal", "emulator rank"], total_rows)
            + "\n\nPer request, beside Tables A10/A11 (" + paper["sources"].get("a10_a11", "")
            + "; the paper's rate, Gbps, is Table A9's):\n\n"
            + table(["workload", "request", "policy", "paper Gbps", "paper TTFT ms",
                     "paper ÷ equal", "emulator TTFT ms", "emulator ÷ equal",
                     "emulator added ms"], request_rows))
    return text, findings
