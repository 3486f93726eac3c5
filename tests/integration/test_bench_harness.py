"""bench/run-all --smallest: the evaluation harness (issue 7) runs every experiment's smallest
configuration against the built binaries and writes well-formed JSON, plots and report.md into
a temp dir. Nothing here checks a figure or a duration: only that every experiment ran, its
rows have the fields the report reads, and the report names every experiment.

Needs OC_BUILD_DIR (set by tests/integration/CMakeLists.txt) with the benchmark targets built;
skipped in builds without benchmarks (OC_BUILD_BENCH=OFF, e.g. the asan preset)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEMS = ["1-storage", "2-transport", "3-overhead", "4-aggregation", "5-ttft-e2e",
         "6-ttft-bandwidth", "7-ttft-scheduling", "8-ttft-model"]
BENCHES = ["storage_bench", "data_plane_bench", "objectcache_bench", "ttft_emulator"]


def test_run_all_smallest(tmp_path):
    build = os.environ.get("OC_BUILD_DIR")
    if not build:
        pytest.skip("OC_BUILD_DIR is not set")
    missing = [b for b in BENCHES if not os.path.exists(os.path.join(build, "bench", b))]
    if missing:
        pytest.skip("benchmarks not built: " + ", ".join(missing))
    out = tmp_path / "results"
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "run-all"), "--smallest",
                        "--no-build", "--build-dir", build, "--out", str(out)],
                       capture_output=True, text=True, timeout=800)
    sys.stderr.write(r.stderr[-4000:])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "experiment 5 of 5" in r.stderr  # progress was shown

    run = json.loads((out / "run.json").read_text())
    assert run["profile"] == "smallest" and run["failed_experiments"] == 0
    for key in ("cpu", "cores", "ram_gib", "kernel"):
        assert run["machine"][key]
    assert len(run["load_start"]) == 3 and len(run["load_end"]) == 3
    assert run["versions"]["git_commit"]

    docs = {}
    for stem in STEMS:
        e = json.loads((out / f"{stem}.json").read_text())
        assert "error" not in e, (stem, e.get("error"))
        assert e["config"] and e["commands"] and e["duration_s"] >= 0
        docs[stem] = e
    s = docs["1-storage"]["rows"]
    assert {(r["cold"], r["threads"], r["block_bytes"]) for r in s} == {(False, 8, 65536),
                                                                          (True, 8, 65536)}
    assert all(r["gbps"] > 0 and r["p99_us"] >= r["p50_us"] > 0 for r in s)
    t = docs["2-transport"]
    assert {(r["op"], r["size"]) for r in t["http"]} == {("GET", 65536), ("PUT", 65536)}
    assert all(r["ops_per_s"] > 0 and r["errors"] == 0 for r in t["http"])
    assert {r["transport"] for r in t["ucx"]} == {"shm", "tcp"}
    o = docs["3-overhead"]["summary"]
    assert {r["via"] for r in o} == {"ucx", "http"}
    ucx = next(r for r in o if r["via"] == "ucx")
    assert ucx["mode"] and ucx["total_us"] > 0 and ucx["server_us"] > 0
    a = docs["4-aggregation"]
    assert {r["method"] for r in a["rows"]} == {"ucx", "http-body", "http-object", "http-range"}
    assert all(r["gbps"] > 0 for r in a["rows"]) and "ucx_vs_http-range" in a["speedups"][0]
    for stem in STEMS[4:]:
        assert docs[stem]["data"] is not None, stem

    report = (out / "report.md").read_text()
    for title in ("1. Storage baseline", "2. S3 transport baseline", "3. Per-request overhead",
                  "4. Aggregation", "5. End-to-end TTFT", "6. Bandwidth sensitivity",
                  "7. Scheduling under shared caps", "8. TTFT model"):
        assert f"## {title}" in report
    assert report.count("**Finding.**") == len(STEMS)
    assert "load average at start" in report and "RocksDB" in report and "UCX" in report
    for line in report.splitlines():
        if line.startswith("!["):
            png = line.rsplit("](", 1)[1].rstrip(")")
            assert (out / png).stat().st_size > 0, png
