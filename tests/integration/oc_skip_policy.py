"""Skips are visible and reviewed (a pytest plugin every integration ctest loads with
`-p oc_skip_policy`; tests/integration/CMakeLists.txt).

Each pytest file is one ctest, so a file whose tests all skip would pass, and a skip line never
reaches the CI log. This plugin
- appends one line per skipped test or module, `SKIP <node id> :: <reason>`, to the file named
  by OC_SKIP_LOG (tools/test prints them all after ctest, allowed or not);
- under OC_SKIPS=strict (set by tools/test, the README's test command) turns every skip that no
  row of skip-allowlist.txt allows into a failure naming the skip and the list.

A row of skip-allowlist.txt is `<node id glob> | <reason substring> | <why this skip is fine>`;
both the glob (fnmatch over the node id, e.g. `test_sigv2.py::*aws_cli_v1*`) and the substring
must match. Keep the list short: each row is coverage that a fresh Debian 12 machine does not
run, and says why.
"""
import fnmatch
import os
import pathlib

import pytest

# OC_SKIP_ALLOWLIST names another list (test_skip_policy.py's own cases only).
ALLOWLIST = pathlib.Path(os.environ.get("OC_SKIP_ALLOWLIST") or
                         pathlib.Path(__file__).with_name("skip-allowlist.txt"))


def load_allowlist(path=ALLOWLIST):
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 3 or not all(fields):
            raise ValueError(f"{path}:{n}: expected `glob | reason substring | why`, got {line!r}")
        rows.append((fields[0], fields[1]))
    return rows


def skip_reason(report):
    """The reason pytest recorded for a skipped report (longrepr is (path, line, text))."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    return text.removeprefix("Skipped: ")


def allowed(nodeid, reason, rows):
    return any(fnmatch.fnmatchcase(nodeid, glob) and sub in reason for glob, sub in rows)


class SkipPolicy:
    def __init__(self, strict, log_path):
        self.strict = strict
        self.log_path = log_path
        self.rows = load_allowlist()

    def review(self, nodeid, report):
        reason = skip_reason(report)
        ok = allowed(nodeid, reason, self.rows)
        if self.log_path:
            verdict = "allowed" if ok else "NOT ALLOWED"
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"SKIP {nodeid} :: {reason} ({verdict})\n")
        if self.strict and not ok:
            report.outcome = "failed"
            report.longrepr = (f"skipped ({reason}), and no row of {ALLOWLIST.name} allows it: "
                               "a skip hides coverage; run the test, or add a reviewed row")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.skipped and not hasattr(report, "wasxfail"):
            self.review(item.nodeid, report)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        # A module that skips itself at import (pytest.skip(..., allow_module_level=True)).
        outcome = yield
        report = outcome.get_result()
        if report.skipped:
            self.review(collector.nodeid, report)


def pytest_configure(config):
    strict = os.environ.get("OC_SKIPS", "") == "strict"
    config.pluginmanager.register(SkipPolicy(strict, os.environ.get("OC_SKIP_LOG")),
                                  "oc_skip_policy_impl")
