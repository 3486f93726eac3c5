#!/usr/bin/env python3
"""ctest for `oc schedule` (client/bin/oc_schedule.cc): hand-computed rates for every policy,
the output shape, stdin input, and malformed input -> non-zero exit with one stderr line.

usage: oc_schedule_test.py PATH/TO/oc
"""
import json
import os
import subprocess
import sys
import tempfile

OC = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, stdin=None):
    p = subprocess.run([OC, "schedule"] + args, input=stdin, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


# Three requests under B = 100 Gbps, worked by hand (r* = s / (125 c) Gbps with s in bytes
# and c in µs; sqrt(s) in units of 1000: 1, 2, 3):
#   a: s = 1e6, c = 800  -> r* =  10      W = 32e6
#   b: s = 4e6, c = 160  -> r* = 200 (target capped at B = 100)   W = 64e6
#   c: s = 9e6, c = 1200 -> r* =  60      W = 224e6
# equal: 100/3. kv-prop: 100 * (1, 2, 7) / 10. bw-prop (r* uncapped): 100 * (10, 200, 60) / 270.
# stall-opt: breakpoints t/sqrt(s) = 10, 50, 20; level 100/6 >= 10 caps a at 10, then
#   90/5 = 18 < 20: b = 36, c = 54.
# cal-stall-opt (δ = 5): targets 15, 100, 65; breakpoints 15, 50, 21.7; 100/6 >= 15 caps a
#   at 15, then 85/5 = 17 < 21.7: b = 34, c = 51.
REQUESTS = [
    {"id": "a", "layer_bytes": 1000000, "compute_us": 800, "total_bytes": 32000000},
    {"id": "b", "layer_bytes": 4000000, "compute_us": 160, "total_bytes": 64000000},
    {"id": "c", "layer_bytes": 9000000, "compute_us": 1200.0, "total_bytes": 224000000},
]
EXPECTED = {
    "equal": [100 / 3, 100 / 3, 100 / 3],
    "kv-prop": [10, 20, 70],
    "bw-prop": [1000 / 270, 20000 / 270, 6000 / 270],
    "stall-opt": [10, 36, 54],
    "cal-stall-opt": [15, 34, 51],
    # fewest bytes first (W = 32e6, 64e6, 224e6): a gets its r* 10, b min(100, 90), c nothing.
    "shortest-first": [10, 90, 0],
}

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "requests.json")
    with open(path, "w") as f:
        json.dump(REQUESTS, f)

    # --policy all: one object per policy, in the documented order.
    code, out, err = run(["--policy", "all", "--cap-gbps", "100", "--margin-gbps", "5", path])
    check(code == 0, f"--policy all exits 0 (got {code}, stderr {err!r})")
    doc = json.loads(out) if code == 0 else []
    check([o.get("policy") for o in doc] == list(EXPECTED), "policies in order")
    for obj in doc:
        want = EXPECTED[obj["policy"]]
        check(list(obj.keys()) == ["policy", "cap_gbps", "rates_gbps"],
              f"{obj['policy']}: keys {list(obj.keys())}")
        check(obj["cap_gbps"] == 100, f"{obj['policy']}: cap_gbps")
        check(list(obj["rates_gbps"].keys()) == ["a", "b", "c"], f"{obj['policy']}: ids in order")
        got = list(obj["rates_gbps"].values())
        check(all(abs(g - w) <= 2e-6 for g, w in zip(got, want)),
              f"{obj['policy']}: rates {got} want {want}")

    # One policy: a single object; --flag=value form; stdin.
    code, out, err = run(["--policy=stall-opt", "--cap-gbps=100", "-"], stdin=json.dumps(REQUESTS))
    check(code == 0, f"stdin exits 0 (got {code}, {err!r})")
    if code == 0:
        obj = json.loads(out)
        check(isinstance(obj, dict) and obj["policy"] == "stall-opt", "single object")
        check(obj["rates_gbps"] == {"a": 10, "b": 36, "c": 54}, f"stall-opt rates {obj}")

    # Degenerate: zero compute window absorbs the cap; B = 0 gives zeros; empty list.
    code, out, _ = run(["--policy", "stall-opt", "--cap-gbps", "40", "-"],
                       stdin='[{"id": "x", "layer_bytes": 100, "compute_us": 0}]')
    check(code == 0 and json.loads(out)["rates_gbps"] == {"x": 40}, f"c = 0: {out!r}")
    code, out, _ = run(["--policy", "equal", "--cap-gbps", "0", path])
    check(code == 0 and set(json.loads(out)["rates_gbps"].values()) == {0}, f"B = 0: {out!r}")
    code, out, _ = run(["--policy", "kv-prop", "--cap-gbps", "10", "-"], stdin="[]")
    check(code == 0 and json.loads(out)["rates_gbps"] == {}, f"empty list: {out!r}")

    # --config: the [scheduler] table supplies policy, cap and margin; flags override it.
    conf = os.path.join(tmp, "server.toml")
    with open(conf, "w") as f:
        f.write('[gateway]\nlisten = "x"\n[scheduler]\npolicy = "cal-stall-opt"\n'
                'cap_gbps = 100\nmargin_gbps = 5\n')
    code, out, err = run(["--config", conf, path])
    check(code == 0, f"--config exits 0 ({code}, {err!r})")
    if code == 0:
        obj = json.loads(out)
        check(obj["policy"] == "cal-stall-opt" and obj["cap_gbps"] == 100, f"--config: {obj}")
        check(list(obj["rates_gbps"].values()) == [15, 34, 51], f"--config rates: {obj}")
    code, out, err = run(["--config", conf, "--policy", "stall-opt", path])
    check(code == 0 and list(json.loads(out)["rates_gbps"].values()) == [10, 36, 54],
          f"--config + --policy: {out!r} {err!r}")
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "conf",
                           "scheduler.toml")
    code, out, err = run(["--config", shipped, path])
    check(code == 0 and json.loads(out)["policy"] == "cal-stall-opt", f"shipped conf: {err!r}")
    bad_conf = os.path.join(tmp, "bad.toml")
    with open(bad_conf, "w") as f:
        f.write('[scheduler]\npolicy = "fastest"\n')
    code, out, err = run(["--config", bad_conf, path])
    check(code == 1 and out == "" and err.count("\n") == 1, f"bad config: {code} {err!r}")

    # Malformed input: non-zero exit, nothing on stdout, exactly one line on stderr.
    bad_inputs = {
        "not json": "[{",
        "not an array": '{"id": "a"}',
        "element not an object": "[1]",
        "missing compute_us": '[{"id": "a", "layer_bytes": 1}]',
        "negative layer_bytes": '[{"id": "a", "layer_bytes": -1, "compute_us": 1}]',
        "fractional layer_bytes": '[{"id": "a", "layer_bytes": 1.5, "compute_us": 1}]',
        "negative compute_us": '[{"id": "a", "layer_bytes": 1, "compute_us": -3}]',
        "string compute_us": '[{"id": "a", "layer_bytes": 1, "compute_us": "5"}]',
        "empty id": '[{"id": "", "layer_bytes": 1, "compute_us": 1}]',
        "unknown field": '[{"id": "a", "layer_bytes": 1, "compute_ms": 1}]',
        "duplicate id": '[{"id": "a", "layer_bytes": 1, "compute_us": 1},'
                        ' {"id": "a", "layer_bytes": 2, "compute_us": 1}]',
    }
    for name, text in bad_inputs.items():
        code, out, err = run(["--policy", "all", "--cap-gbps", "10", "-"], stdin=text)
        check(code == 1, f"{name}: exit {code}, want 1")
        check(out == "", f"{name}: stdout {out!r}")
        check(err.count("\n") == 1 and err.startswith("oc schedule: "), f"{name}: stderr {err!r}")

    bad_flags = {
        "unknown policy": ["--policy", "fastest", "--cap-gbps", "10", path],
        "missing cap": ["--policy", "equal", path],
        "negative cap": ["--policy", "equal", "--cap-gbps", "-1", path],
        "cap not a number": ["--policy", "equal", "--cap-gbps", "lots", path],
        "missing file arg": ["--policy", "equal", "--cap-gbps", "10"],
        "unknown flag": ["--policy", "equal", "--cap-gbps", "10", "--fast", "1", path],
        "flag without value": ["--policy", "equal", path, "--cap-gbps"],
    }
    for name, args in bad_flags.items():
        code, out, err = run(args)
        check(code == 2, f"{name}: exit {code}, want 2")
        check(out == "" and err.count("\n") == 1, f"{name}: stdout {out!r} stderr {err!r}")

    code, out, err = run(["--policy", "equal", "--cap-gbps", "10", os.path.join(tmp, "nope.json")])
    check(code == 1 and err.count("\n") == 1, f"missing file: {code} {err!r}")

# The dispatcher: usage lists the subcommand; unknown commands fail.
p = subprocess.run([OC], capture_output=True, text=True)
check(p.returncode == 2 and "schedule" in p.stderr, f"bare oc: {p.returncode} {p.stderr!r}")
p = subprocess.run([OC, "frobnicate"], capture_output=True, text=True)
check(p.returncode == 2, "unknown command exits 2")
p = subprocess.run([OC, "schedule", "--help"], capture_output=True, text=True)
check(p.returncode == 0 and "--cap-gbps" in p.stdout, "schedule --help")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("oc schedule: all checks passed")
