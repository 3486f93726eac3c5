"""Child process of test_pyclient_args.py: passes each timeout of VALUES to one call of the
objectcache package, against the server named in the environment, and prints one JSON line per
value ("start" before the call, then its outcome). A call that crashes the interpreter ends
this process by a signal; the parent reports the signal and the value in progress.

    OC_PYTHON_DIR=... OC_TEST_ENDPOINT=... OC_TEST_ACCESS_KEY=... OC_TEST_SECRET_KEY=...
    OC_TEST_BUCKET=... OC_TEST_PREFIX=... python3 timeout_child.py CALL
"""
import json
import math
import os
import sys

import numpy as np

from pyclient_util import descriptor, oc

# (label, value): what a caller may pass as a timeout. The parent holds the expected outcomes.
VALUES = [
    ("int", 30),
    ("float", 30.0),
    ("None", None),
    ("numpy.float64", np.float64(30)),
    ("numpy.int64", np.int64(30)),
    ("inf", math.inf),
    ("huge int", 10**30),
    ("negative int", -1),
    ("negative float", -0.5),
    ("nan", math.nan),
    ("str", "30"),
    ("list", [30]),
]

# The stored chunks the parent put: 2 chunks of 4 layers of 64 bytes.
SHAPE = dict(n=2, n_layers=4, s=64, g=4)


def main():
    call = sys.argv[1]
    env = os.environ
    endpoint, bucket = env["OC_TEST_ENDPOINT"], env["OC_TEST_BUCKET"]
    keys = (env["OC_TEST_ACCESS_KEY"], env["OC_TEST_SECRET_KEY"])
    c = oc.Client(endpoint, *keys)
    d = descriptor("compact", SHAPE["n"], SHAPE["n_layers"], SHAPE["s"], SHAPE["g"],
                   env["OC_TEST_PREFIX"])

    def transfer():
        return c.get_layers(bucket, d, np.zeros(d.payload_bytes, np.uint8), via="http")

    def check_transfer(t):  # after a refused timeout the transfer is still whole
        assert t.wait().matched == SHAPE["n"]

    def check_future(f):
        assert f.result().matched == SHAPE["n"]

    # CALL -> (make the object, call it with a timeout, check it afterwards)
    calls = {
        "Transfer.wait_layer": (transfer, lambda t, v: t.wait_layer(0, v), check_transfer),
        "Transfer.wait": (transfer, lambda t, v: t.wait(timeout=v), check_transfer),
        "Transfer.result": (transfer, lambda t, v: t.result(v), check_transfer),
        "Future.result": (lambda: c.probe_async(bucket, d), lambda f, v: f.result(v),
                          check_future),
        "Future.exception": (lambda: c.probe_async(bucket, d),
                             lambda f, v: f.exception(timeout=v), check_future),
        "Client": (lambda: None, lambda _, v: oc.Client(endpoint, *keys, timeout=v).ping(bucket),
                   lambda _: None),
    }
    make, use, check = calls[call]
    for label, value in VALUES:
        print(json.dumps({"start": label}), flush=True)
        obj = make()
        try:
            use(obj, value)
            outcome = "ok"
        except (ValueError, TypeError) as e:
            outcome = "ValueError" if isinstance(e, ValueError) else "TypeError"
            if isinstance(e, ValueError) and not isinstance(e, oc.InvalidArgument):
                outcome = "ValueError (not objectcache.InvalidArgument)"
        except Exception as e:  # noqa: BLE001 (reported to the parent)
            outcome = f"{type(e).__name__}: {e}"
        check(obj)
        print(json.dumps({"case": label, "outcome": outcome}), flush=True)


if __name__ == "__main__":
    main()
