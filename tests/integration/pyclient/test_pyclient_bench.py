"""bench/pyclient_bench.py (issue 18's Python-against-C++ comparison) measures client CPU per
request beside wall time: `oc get-layers --repeat` reports each request's process CPU and its
calling thread's, and the benchmark's JSON carries both clients' CPU per request (process and
calling thread), the Python's added CPU and the server's CPU per request. Nothing here checks a figure against a target: only that every measure is
there, well formed and positive, so the README's comparison can be regenerated."""
import json
import os
import subprocess

import numpy as np

from pyclient_util import PYTHON_DIR, client, oc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def test_oc_get_layers_repeat_reports_cpu_per_request(server, made_bucket):
    c = client(server)
    ns = oc.namespace_string("meta-llama/Llama-3.1-8B")
    hashes = oc.chunk_hashes(np.arange(0, 32, dtype=np.uint32), 16, ns)
    d = oc.Descriptor(hashes, layers=4, layer_bytes=4096, prefix="rep/")
    c.put_chunks(made_bucket, d, np.ones(d.payload_bytes, np.uint8)).raise_for_status()
    env = dict(os.environ, OC_ENDPOINT=server.endpoint, AWS_ACCESS_KEY_ID=server.access_key,
               AWS_SECRET_ACCESS_KEY=server.secret_key)
    for via in ("ucx", "http"):
        r = subprocess.run([os.environ["OC_CLI_BIN"], "get-layers", "--bucket", made_bucket,
                            "--hashes", ",".join(h.hex() for h in hashes), "--prefix", "rep/",
                            "--layers", "4", "--layer-bytes", "4096", "--via", via, "--quiet",
                            "--repeat", "3"], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        lines = [line.split() for line in r.stdout.splitlines() if line.startswith("repeat ")]
        assert [line[1] for line in lines] == ["1", "2"], r.stdout
        for line in lines:
            f = dict(field.split("=", 1) for field in line[2:])
            assert set(f) == {"total_us", "matched", "cpu_us", "thread_cpu_us"}, line
            assert int(f["matched"]) == 2 and int(f["total_us"]) > 0
            # the calling thread's CPU is part of the process's
            assert 0 < float(f["thread_cpu_us"]) <= float(f["cpu_us"]), line


def test_bench_reports_client_and_server_cpu_per_request(tmp_path):
    build = os.path.dirname(PYTHON_DIR)
    out = tmp_path / "pyclient"
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "pyclient_bench.py"),
                        "--build", build, "--out", str(out), "--shapes", "4096:2",
                        "--repeat", "3", "--rounds", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((tmp_path / "pyclient.json").read_text())
    assert (tmp_path / "pyclient.png").stat().st_size > 0
    assert len(doc["load_average_start"]) == 3 and len(doc["load_average"]) == 3
    assert {row["via"] for row in doc["rows"]} == {"ucx", "http"}
    for row in doc["rows"]:
        assert row["requests_each"] == 6 and len(row["rounds"]) == 2
        for key in ("cpp_us_median", "py_us_median", "cpp_cpu_us_median", "py_cpu_us_median",
                    "cpp_thread_cpu_us_median", "py_thread_cpu_us_median", "py_rusage_us",
                    "server_cpu_us_py"):
            assert row[key] > 0, (key, row)
        # Differences of two `oc` runs (R+1 requests less 1): present, any sign, since the
        # setup of either run can cost more than the R = 3 requests.
        for key in ("cpp_rusage_us", "server_cpu_us_cpp"):
            assert isinstance(row[key], (int, float)), (key, row)
        assert abs(row["added_cpu_us"] -
                   (row["py_cpu_us_median"] - row["cpp_cpu_us_median"])) <= 0.2
        assert abs(row["added_thread_cpu_us"] - (row["py_thread_cpu_us_median"] -
                                                 row["cpp_thread_cpu_us_median"])) <= 0.2
        assert len(row["added_cpu_us_by_round"]) == 2
        assert len(row["added_thread_cpu_us_by_round"]) == 2
        assert len(row["load_average"]) == 2
