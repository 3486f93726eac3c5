"""The skip policy (oc_skip_policy.py) and tools/test-report: a skip that no reviewed row allows
fails the run under OC_SKIPS=strict, an allowed one passes, and every skip is logged with its
reason; a ctest that did not run fails the report. Each case runs a real pytest or the real
script in a subprocess over a small test file written here."""
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPORT = HERE.parent.parent / "tools" / "test-report"

CASES = '''
import pytest

@pytest.mark.skipif(True, reason="the tool is missing here")
def test_listed():
    pass

def test_unlisted():
    pytest.skip("no server binary")

def test_runs():
    assert True
'''


def run_pytest(tmp_path, strict, allowlist_rows):
    (tmp_path / "test_cases.py").write_text(CASES)
    allow = tmp_path / "allow.txt"
    allow.write_text("# reviewed\n" + "".join(r + "\n" for r in allowlist_rows))
    log = tmp_path / "skips.log"
    env = dict(os.environ, PYTHONPATH=str(HERE), OC_SKIP_LOG=str(log),
               OC_SKIP_ALLOWLIST=str(allow), OC_SKIPS="strict" if strict else "")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "oc_skip_policy", str(tmp_path / "test_cases.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return r, log.read_text().splitlines()


LISTED = "test_cases.py::test_listed | tool is missing | a test of the policy"


def test_unlisted_skip_fails_under_strict(tmp_path):
    r, log = run_pytest(tmp_path, strict=True, allowlist_rows=[LISTED])
    assert r.returncode == 1, r.stdout + r.stderr
    # A skip in the test body becomes a failure, one in setup (a skipif mark) an error.
    assert "1 failed, 1 passed, 1 skipped" in r.stdout, r.stdout
    assert "no row of allow.txt allows it" in r.stdout
    assert log == ["SKIP test_cases.py::test_listed :: the tool is missing here (allowed)",
                   "SKIP test_cases.py::test_unlisted :: no server binary (NOT ALLOWED)"]


def test_allowed_skips_pass_under_strict(tmp_path):
    rows = [LISTED, "test_cases.py::test_unl* | server binary | a test of the policy"]
    r, log = run_pytest(tmp_path, strict=True, allowlist_rows=rows)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 2 skipped" in r.stdout, r.stdout
    assert all(line.endswith("(allowed)") for line in log) and len(log) == 2


def test_without_strict_skips_are_logged_not_failed(tmp_path):
    r, log = run_pytest(tmp_path, strict=False, allowlist_rows=[])
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(log) == 2 and all(line.endswith("(NOT ALLOWED)") for line in log)


def test_the_row_must_match_reason_and_node(tmp_path):
    # The right node with another reason is not allowed: a row names why, not only where.
    rows = ["test_cases.py::test_listed | another reason | a test of the policy"]
    r, _ = run_pytest(tmp_path, strict=True, allowlist_rows=rows)
    assert r.returncode == 1 and "1 failed, 1 passed, 1 error" in r.stdout, r.stdout


def test_the_shipped_allowlist_parses():
    import oc_skip_policy
    rows = oc_skip_policy.load_allowlist(HERE / "skip-allowlist.txt")
    assert 0 < len(rows) <= 10  # short and reviewed


JUNIT = '''<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="Linux" tests="3" failures="0" disabled="0" skipped="{skipped}" time="9">
  <testcase name="unit.A" classname="unit.A" time="7.5" status="run"><system-out/></testcase>
  <testcase name="unit.B" classname="unit.B" time="0.5" status="run"><system-out/></testcase>
  {third}
</testsuite>
'''


def run_report(tmp_path, third, skipped, skip_lines=()):
    junit = tmp_path / "ctest.xml"
    junit.write_text(JUNIT.format(third=third, skipped=skipped))
    log = tmp_path / "skips.log"
    log.write_text("".join(line + "\n" for line in skip_lines))
    return subprocess.run([str(REPORT), str(junit), "--skips", str(log), "--slowest", "2"],
                          capture_output=True, text=True, timeout=60)


def test_report_lists_the_slowest_and_passes_a_clean_run(tmp_path):
    r = run_report(tmp_path, '<testcase name="unit.C" time="2" status="run"/>', 0,
                   ["SKIP x.py::t :: tool missing (allowed)"])
    assert r.returncode == 0, r.stdout + r.stderr
    slow = [line.split()[-1] for line in r.stdout.splitlines() if line.startswith("  ") and " s  " in line]
    assert slow == ["unit.A", "unit.C"]


def test_report_fails_on_a_ctest_that_did_not_run(tmp_path):
    third = ('<testcase name="unit.C" time="0" status="notrun">'
             '<skipped message="Skipped"/></testcase>')
    r = run_report(tmp_path, third, 1)
    assert r.returncode == 1 and "ctest unit.C did not run" in r.stdout, r.stdout


def test_report_fails_on_an_unallowed_pytest_skip(tmp_path):
    r = run_report(tmp_path, '<testcase name="unit.C" time="2" status="run"/>', 0,
                   ["SKIP x.py::t :: no binary (NOT ALLOWED)"])
    assert r.returncode == 1 and "FAILED" in r.stderr, r.stdout + r.stderr
