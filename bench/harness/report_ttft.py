"""report.md's sections for experiments 5-8 (ttft_emulator: end-to-end TTFT, bandwidth
sensitivity, scheduling under shared caps, Equation 3 against the measurements), each computed
from its experiment's JSON. Used by report.py."""
from common import median
from report_format import table, tokens_label
from report_paper import side_by_side


# --- 5-8 -------------------------------------------------------------------------------------

def _ttft_rows_table(rows, prefer):
    if not rows:
        return "(no rows)"
    keys = [k for k in prefer if any(k in r for r in rows)]
    extra = [k for k in rows[0] if k not in keys and not isinstance(rows[0][k], (dict, list))]
    keys += extra[:max(0, 12 - len(keys))]
    return table(keys, [[r.get(k) if not isinstance(r.get(k), (dict, list)) else "…"
                         for k in keys] for r in rows])


def e2e_section(e, out_dir):
    data = e.get("data") or {}
    rows = data.get("rows", [])
    text = _ttft_rows_table(rows, ["path", "context", "tokens", "hit", "g", "layers", "chunks",
                                   "layer_bytes", "compute_us", "ttft_ms", "eq3_ms",
                                   "overhead_pct", "ok"])
    finding = "ttft_emulator gave no end-to-end rows."
    ov = [r for r in rows if r.get("overhead_pct") is not None and r.get("path") != "opt-local-LW"]
    if ov:
        groups = {}
        for r in ov:
            groups.setdefault((r["context"], r["path"]), []).append(r["overhead_pct"])
        bits = []
        for context in sorted({c for c, _ in groups}):
            per = [f"{p} {median(v):+.1f}%" for (c, p), v in sorted(groups.items())
                   if c == context]
            bits.append(f"at context {tokens_label(context)}: " + ", ".join(per))
        finding = ("TTFT overhead relative to opt-local-LW (median over hit rates and G) "
                   + "; ".join(bits) + ".")
    return text, finding


def bandwidth_section(e, out_dir):
    data = e.get("data") or {}
    rows = data.get("rows", [])
    text = _ttft_rows_table(rows, ["path", "context", "hit", "g", "uncapped_gbytes_per_s",
                                   "cap_gbytes_per_s", "uncapped_ttft_ms", "capped_ttft_ms",
                                   "increase_pct", "eq3_capped_ms", "ok"])
    finding = "ttft_emulator gave no bandwidth-sensitivity rows."
    inc = [r for r in rows if r.get("increase_pct") is not None]
    if inc:
        by_path = {}
        for r in inc:
            by_path.setdefault(r["path"], []).append(r["increase_pct"])
        finding = ("With each path capped at 10% of its uncapped rate, TTFT grows by (median "
                   "over configurations) " + ", ".join(
                       f"{p} {median(v):+.0f}%" for p, v in sorted(by_path.items())) + ".")
    return text, finding


def sched_section(e, out_dir):
    data = e.get("data") or {}
    workloads = data.get("workloads", [])
    trows = []
    summary = {}
    vs_eq3 = {}
    for w in workloads if isinstance(workloads, list) else []:
        for p in w.get("runs", []):
            added = p.get("sum_added_ttft_ms")
            trows.append([w.get("name", "?"), w.get("demand_over_cap"), p.get("policy", "?"),
                          p.get("variant", "?"), len(p.get("requests", [])), added,
                          p.get("sum_eq3_policy_added_ms"), p.get("sum_eq3_added_ms"),
                          p.get("baseline_failures")])
            if added is not None:
                summary.setdefault((w.get("name"), p.get("variant")), {})[p.get("policy")] = added
            if (added is not None and p.get("policy") == "cal-stall-opt"
                    and p.get("sum_eq3_policy_added_ms")):
                vs_eq3[(w.get("name"), p.get("variant"))] = added / p["sum_eq3_policy_added_ms"] - 1
    text = table(["workload", "demand / cap", "policy", "sharing", "requests",
                  "sum added TTFT ms", "Eq. 3 sum at policy rates", "Eq. 3 sum at held rates",
                  "baseline failures"], trows) if trows else "(no rows)"
    finding = "ttft_emulator gave no scheduling rows."
    if summary:
        bits = []
        for (w, variant), pol in sorted(summary.items()):
            best = min(pol, key=pol.get)
            eq = pol.get("equal")
            bits.append(f"{w} ({variant}): lowest sum of added TTFT {best} {pol[best]:.1f} ms"
                        + (f" vs equal {eq:.1f} ms" if eq is not None and best != "equal" else "")
                        + (f", equal / cal-stall-opt {eq / pol['cal-stall-opt']:.2f}x"
                           if eq and pol.get("cal-stall-opt") else "")
                        + (f", cal-stall-opt {vs_eq3[(w, variant)]:+.0%} vs Eq. 3 at its rates"
                           if variant.startswith("admission") and (w, variant) in vs_eq3 else ""))
        finding = "; ".join(bits) + "."
    delta = data.get("delta") if isinstance(data, dict) else None
    if delta:
        if delta.get("competing_rows"):
            finding += (f" Calibrated margin from a rate sweep of {delta.get('profile')} beside "
                        f"a competing {delta.get('competing_profile', '').split(':')[-1]}: "
                        f"δ = {delta.get('delta_paper_gbps', 0):.2f} paper Gbps (alone "
                        f"{delta.get('delta_alone_paper_gbps', 0):.2f}; the paper's 5).")
        else:
            finding += (f" Calibrated margin from a rate sweep of {delta.get('profile')}: "
                        f"δ = {delta.get('delta_paper_gbps', 0):.2f} paper Gbps (the paper's 5).")
    paper_text, paper_findings = side_by_side(data)
    if paper_text:
        text += "\n\n" + paper_text
        finding += " Beside the paper: " + " ".join(paper_findings)
    return text, finding


def model_section(e, out_dir):
    data = e.get("data") or {}
    rows = data.get("rows", [])
    text = _ttft_rows_table(rows, ["experiment", "config", "measured_ms", "eq3_ms",
                                   "error_pct"])
    finding = "ttft_emulator gave no model rows."
    err = [abs(r["error_pct"]) for r in rows if r.get("error_pct") is not None]
    if err:
        err.sort()
        finding = (f"Equation 3 predicts the measured TTFT within {err[len(err) // 2]:.1f}% "
                   f"(median absolute error over {len(err)} configurations; worst "
                   f"{err[-1]:.1f}%).")
    return text, finding
