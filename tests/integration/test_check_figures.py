"""tools/check-figures (issue 29, "figures typed by hand"): a checked table in a markdown file is
recomputed from the JSON its rows name. Each case writes a small results file and a document
into a temp dir and runs the real tool on them: a good table passes, and every kind of bad row
fails naming the row. (ctest docs.figures runs the tool on the repository's own documents.)"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "check-figures")
HEADER = "| figure | value | commit | source |\n| --- | --- | --- | --- |\n"
RESULTS = {
    "rows": [{"op": "GET", "size": 65536, "ops_per_s": 16340.34, "ratio": 0.7017909900329714},
             {"op": "GET", "size": 1048576, "ops_per_s": 1475.2, "ratio": 1.3134},
             {"op": "PUT", "size": 65536, "ops_per_s": 2096.46, "ratio": 1.1107}],
    "data": {"workloads": [{"name": "B", "runs": [
        {"policy": "equal", "variant": "admission", "sum_added_ttft_ms": 1141.3,
         "sum_eq3_policy_added_ms": 1138.6},
        {"policy": "stall-opt", "variant": "admission", "sum_added_ttft_ms": 475.2,
         "sum_eq3_policy_added_ms": 432.9}]}]},
}
SRC = "`bench/results/x/run.json`"


def run(tmp_path, doc, results=RESULTS):
    os.makedirs(tmp_path / "bench/results/x", exist_ok=True)
    (tmp_path / "bench/results/x/run.json").write_text(json.dumps(results))
    (tmp_path / "doc.md").write_text(doc)
    p = subprocess.run([sys.executable, TOOL, "--root", str(tmp_path), "doc.md"],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def table(*rows):
    return "# Figures\n\nSome text.\n\n" + HEADER + "".join(rows) + "\nAfter.\n"


GOOD_ROWS = [
    f'| 64 KiB GET | 16,340 ops/s | aa141af | {SRC} `row(j["rows"], op="GET", size=65536)["ops_per_s"]` |\n',
    f'| 64 KiB GET vs nginx | 0.70 | aa141af | {SRC} `row(j["rows"], op="GET", size=65536)["ratio"]` |\n',
    f'| the same, one decimal | 0.7× | aa141af | {SRC} `row(j["rows"], op="GET", size=65536)["ratio"]` |\n',
    f'| GET ratios, 64 KiB / 1 MiB | 0.70× / 1.31× | aa141af | {SRC} `pick(j["rows"], "ratio", op="GET")` |\n',
    f'| GET ops/s range | 1,475–16,340 ops/s | aa141af | {SRC} `span(pick(j["rows"], "ops_per_s", op="GET"))` |\n',
    f'| stall-opt over Eq. 3 in B | +9.8% | b89cc2c | {SRC} `over_eq3(j, "B", "stall-opt")` |\n',
    f'| equal / stall-opt in B | 2.40× | b89cc2c | {SRC} `ratio(j, "B", "equal", "stall-opt")` |\n',
    f'| Eq. 3 below measured, B equal | -0.2% | b89cc2c | {SRC} `-over_eq3(j, "B", "equal")` |\n',
    f'| median ops/s | 2,096 ops/s | aa141af | {SRC} `median(r["ops_per_s"] for r in j["rows"] if r["op"] == "PUT")` |\n',
    '| kv_bench layerwise GB/s | unrecorded (a hand run whose output was not kept) | — | unrecorded |\n',
]


def test_a_good_table_passes(tmp_path):
    rc, out = run(tmp_path, table(*GOOD_ROWS))
    assert rc == 0, out
    assert "9 figures match their results files; 1 unrecorded" in out


def test_a_wrong_value_fails_naming_the_row(tmp_path):
    bad = f'| stall-opt over Eq. 3 in B | +7.0% | b89cc2c | {SRC} `over_eq3(j, "B", "stall-opt")` |\n'
    rc, out = run(tmp_path, table(GOOD_ROWS[0], bad))
    assert rc == 1, out
    assert "doc.md:8: stall-opt over Eq. 3 in B" in out
    assert "typed 7.0" in out and "rounded 9.8" in out


@pytest.mark.parametrize("value", ["0.71", "0.69", "0.7017", "1.70", "+0.70 / 1.31"])
def test_a_value_off_in_its_last_typed_digit_or_count_fails(tmp_path, value):
    row = f'| vs nginx | {value} | aa141af | {SRC} `row(j["rows"], op="GET", size=65536)["ratio"]` |\n'
    rc, out = run(tmp_path, table(row))
    assert rc == 1, out
    assert "vs nginx" in out


def test_a_missing_results_file_fails(tmp_path):
    row = '| gone | 1.0 | aa141af | `bench/results/y/none.json` `j["a"]` |\n'
    rc, out = run(tmp_path, table(GOOD_ROWS[0], row))
    assert rc == 1, out
    assert "gone" in out and "bench/results/y/none.json is missing" in out


def test_a_row_without_source_fails(tmp_path):
    rc, out = run(tmp_path, table(GOOD_ROWS[0], "| typed by hand | 3.1 GB/s | aa141af |  |\n"))
    assert rc == 1, out
    assert "typed by hand: no source" in out


def test_an_empty_checked_table_fails(tmp_path):
    rc, out = run(tmp_path, "# Figures\n\n" + HEADER + "\ntext\n\n" + table(GOOD_ROWS[0]))
    assert rc == 1, out
    assert "doc.md:3" in out and "without rows" in out


def test_a_document_without_a_checked_table_fails(tmp_path):
    rc, out = run(tmp_path, "# Figures\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n")
    assert rc == 1, out
    assert "no checked table" in out


def test_a_table_in_a_code_fence_is_not_checked(tmp_path):
    fenced = "```\n" + HEADER + "| x | 9.9 | aa141af | `nowhere.json` `j` |\n```\n"
    rc, out = run(tmp_path, fenced + table(GOOD_ROWS[0]))
    assert rc == 0, out


@pytest.mark.parametrize("row, why", [
    ("| kv_bench | unrecorded | — | unrecorded |\n", "unrecorded (why)"),
    ("| kv_bench | 3.1 GB/s | — | unrecorded |\n", "unrecorded (why)"),
    ("| kv_bench (target met) | unrecorded (no JSON) | — | unrecorded |\n", "presented as met"),
    ("| kv_bench | unrecorded (no JSON; met) | — | unrecorded |\n", "presented as met"),
    ("| kv_bench | unrecorded (no JSON) | 0463c64 | unrecorded |\n", "names no commit"),
])
def test_unrecorded_needs_its_reason_and_is_never_met(tmp_path, row, why):
    rc, out = run(tmp_path, table(row))
    assert rc == 1, out
    assert why in out


@pytest.mark.parametrize("expr, why", [
    ('open("doc.md")', "NameError"),
    ('__import__("os")', "NameError"),
    ('j["nope"]', "KeyError"),
    ('row(j["rows"], op="GET")["ratio"]', "2 entries"),
    ('row(j["rows"], op="HEAD")["ratio"]', "no entry"),
    ('"0.70"', "not a number"),
])
def test_an_expression_that_fails_or_reaches_past_the_helpers_fails(tmp_path, expr, why):
    rc, out = run(tmp_path, table(f"| bad expr | 0.70 | aa141af | {SRC} `{expr}` |\n"))
    assert rc == 1, out
    assert "bad expr" in out and why in out


@pytest.mark.parametrize("header", ["| figure | value | source |\n| --- | --- | --- |\n",
                                    "| what | value | commit | source |\n| --- | --- | --- | --- |\n"])
def test_a_checked_table_needs_the_four_columns(tmp_path, header):
    rc, out = run(tmp_path, "# F\n\n" + header + "| a | 1 | aa141af | x |\n")
    assert rc == 1, out
    assert "figure | value | commit | source" in out


def test_a_recorded_row_needs_a_commit(tmp_path):
    row = f'| GET | 16,340 ops/s | main | {SRC} `row(j["rows"], op="GET", size=65536)["ops_per_s"]` |\n'
    rc, out = run(tmp_path, table(row))
    assert rc == 1, out
    assert "commit 'main'" in out

