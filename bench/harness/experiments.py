"""The experiments of issue 7 (1-8), issue 15 (9), issue 16 (10, 11), issue 32 (12, 15), issue 33
(13) and issue 31 (14), each a function of (ctx)
returning a dict that becomes <id>.json: the configuration, the exact commands, the rows
measured and notes on what the tool could not provide. Sizes per profile (smallest / reduced /
full) are in PROFILES."""
import importlib.util
import inspect
import json
import os
import shutil
import tempfile

from common import BENCH, ROOT, StepFailed, gbench_json, gbench_rows, median, run
from report_paper import load_paper_tables

KiB = 1024
MiB = 1024 * 1024


def bench_module(name):
    """bench/<name>.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name + "_py", os.path.join(BENCH, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RVR = bench_module("rados_vs_rgw")  # experiment 9: its profiles and the comparison itself
WB = bench_module("write_bench")  # experiment 10: the write path, likewise
SB = bench_module("scaling_bench")  # experiment 11: scaling with the server's cores
LB = bench_module("lmcache_bench")  # experiment 12: the LMCache L2 connector (issue 32)
SO = bench_module("scale_out_bench")  # experiment 13: scale-out over a 3-OSD pool (issue 33)
CC = bench_module("churn_bench")  # experiment 14: a cache bucket under churn (issue 31)
VT = bench_module("vllm_tier_bench")  # experiment 15: the vLLM secondary tier (issue 32)

# Experiment 4's server variants, each a restart on the same data measuring the UCX descriptor
# GET only: (label, [kv] layerwise_threshold, data_plane_staging_buffers,
# data_plane_staging_buffer_bytes, data_plane_direct_writes). Θ = 1TiB forces chunkwise, Θ = 1
# byte layerwise; direct writes off sends every byte as a UCX rendezvous message instead of
# writing the client's shared-memory target in place.
AGG_VARIANTS = [
    ("chunkwise", "1TiB", 8, "4MiB", True),
    ("layerwise-4x1MiB", "1", 4, "1MiB", True),
    ("layerwise-8x4MiB", "1", 8, "4MiB", True),
    ("layerwise-16x16MiB", "1", 16, "16MiB", True),
    ("layerwise-8x4MiB-rendezvous", "1", 8, "4MiB", False),
]

PROFILES = {
    "smallest": {
        "storage": {"sizes": [64 * KiB], "threads": [8], "data_bytes": 8 * MiB, "passes": 1,
                    "drop_caches": False},
        "transport": {"sizes": [64 * KiB], "conc": [8], "seconds": 1, "modes": ["embedded"],
                      "dp_filter": "^BM_(Memcpy/65536|Put/[01]/2/65536)(/|$)", "dp_min_time": "0.01"},
        "overhead": {"sizes": [64 * KiB], "samples": 2, "layers": 32, "ucx_tls": "shm"},
        "aggregation": {"groups": [16], "contexts": [256], "hits": [0.5], "repeat": 1,
                        "kv_bench_filter": None, "ucx_tls": "shm",
                        "variants": [("chunkwise", "1TiB", 8, "4MiB", True)]},
        "ttft": {"flag": "--smallest"},
        "rados_vs_rgw": RVR.PROFILES["smallest"],
        "write_bench": WB.PROFILES["smallest"],
        "scaling": SB.PROFILES["smallest"],
        "lmcache": LB.PROFILES["smallest"],
        "scale_out": SO.PROFILES["smallest"],
        "cache_churn": CC.PROFILES["smallest"],
        "vllm_tier": VT.PROFILES["smallest"],
    },
    "reduced": {
        "storage": {"sizes": [64 * KiB, 256 * KiB, MiB, 4 * MiB], "threads": [8, 32],
                    "data_bytes": 256 * MiB, "passes": 2, "drop_caches": True},
        "transport": {"sizes": [64 * KiB, 256 * KiB, MiB, 4 * MiB], "conc": [8], "seconds": 2,
                      "modes": ["embedded"], "dp_filter": "^BM_(Memcpy/|Put/[01]/2/|Put/0/3/)",
                      "dp_min_time": "0.2"},
        "overhead": {"sizes": [64 * KiB, 256 * KiB, MiB, 4 * MiB], "samples": 5, "layers": 32,
                     "ucx_tls": "shm"},
        "aggregation": {"groups": [16, 32, 64, 128, 256, 512], "contexts": [4096],
                        "hits": [0.5], "repeat": 1, "kv_bench_filter": None,
                        "ucx_tls": "shm", "variants": AGG_VARIANTS},
        "ttft": {"flag": "--reduced", "extra": ["--sched-link-gbytes", "0.3"]},
        "rados_vs_rgw": RVR.PROFILES["reduced"],
        "write_bench": WB.PROFILES["reduced"],
        "scaling": SB.PROFILES["reduced"],
        "lmcache": LB.PROFILES["reduced"],
        "scale_out": SO.PROFILES["reduced"],
        "cache_churn": CC.PROFILES["reduced"],
        "vllm_tier": VT.PROFILES["reduced"],
    },
    "full": {
        "storage": {"sizes": [64 * KiB, 256 * KiB, MiB, 4 * MiB], "threads": [8, 32],
                    "data_bytes": 1024 * MiB, "passes": 3, "drop_caches": True},
        "transport": {"sizes": [64 * KiB, 256 * KiB, MiB, 4 * MiB], "conc": [1, 8, 32],
                      "seconds": 5, "modes": ["embedded", "remote"],
                      "dp_filter": "^BM_(Memcpy|Put)/", "dp_min_time": "0.5"},
        "overhead": {"sizes": [16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB],
                     "samples": 20, "layers": 32, "ucx_tls": "shm"},
        "aggregation": {"groups": [16, 32, 64, 128, 256, 512], "contexts": [4096, 16384],
                        "hits": [0.5, 0.875], "repeat": 3,
                        "kv_bench_filter": "^BM_(Deliver|Memcpy)/", "ucx_tls": "shm",
                        "variants": AGG_VARIANTS},
        "ttft": {"flag": "--full", "extra": ["--sched-link-gbytes", "0.3"]},
        "rados_vs_rgw": RVR.PROFILES["full"],
        "write_bench": WB.PROFILES["full"],
        "scaling": SB.PROFILES["full"],
        "lmcache": LB.PROFILES["full"],
        "scale_out": SO.PROFILES["full"],
        "cache_churn": CC.PROFILES["full"],
        "vllm_tier": VT.PROFILES["full"],
    },
}

# Planned seconds per experiment and profile (for the progress estimate only).
PLANNED = {
    "smallest": {"storage": 5, "transport": 15, "overhead": 8, "aggregation": 10, "ttft": 30,
                 "rados_vs_rgw": RVR.PLANNED_S["smallest"],
                 "write_bench": WB.PLANNED_S["smallest"], "scaling": SB.planned_s("smallest"),
                 "lmcache": LB.PLANNED_S["smallest"], "scale_out": 40,
                 "cache_churn": CC.PLANNED_S["smallest"],
                 "vllm_tier": VT.PLANNED_S["smallest"]},
    "reduced": {"storage": 140, "transport": 90, "overhead": 40, "aggregation": 240,
                "ttft": 980, "rados_vs_rgw": RVR.PLANNED_S["reduced"],
                "write_bench": WB.PLANNED_S["reduced"], "scaling": SB.planned_s("reduced"),
                "lmcache": LB.PLANNED_S["reduced"], "scale_out": 300,
                "cache_churn": CC.PLANNED_S["reduced"],
                "vllm_tier": VT.PLANNED_S["reduced"]},
    "full": {"storage": 400, "transport": 600, "overhead": 200, "aggregation": 1800,
             "ttft": 1800, "rados_vs_rgw": RVR.PLANNED_S["full"],
             "write_bench": WB.PLANNED_S["full"], "scaling": SB.planned_s("full"),
             "lmcache": LB.PLANNED_S["full"], "scale_out": 900,
             "cache_churn": CC.PLANNED_S["full"],
             "vllm_tier": VT.PLANNED_S["full"]},
}


def binary(ctx, rel):
    path = os.path.join(ctx["build_dir"], rel)
    if not os.path.exists(path):
        raise StepFailed(f"{path} is not built")
    return path


def server_env(ctx):
    env = dict(os.environ)
    env["OC_OBJECTCACHE_BIN"] = os.path.join(ctx["build_dir"], "gateway", "objectcache")
    env["OC_GATEWAY_BIN"] = os.path.join(ctx["build_dir"], "gateway", "oc-gateway")
    env["OC_STORAGE_SERVER_BIN"] = os.path.join(ctx["build_dir"], "storage-server", "bin",
                                                "oc-storage-server")
    return env


def objectcache_bench_module():
    """bench/objectcache_bench.py as a module: its server start and credentials are reused."""
    spec = importlib.util.spec_from_file_location(
        "objectcache_bench_py", os.path.join(BENCH, "objectcache_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def start_server(ctx, ocb, root, tls, extra_toml=None):
    """`objectcache serve` on a free port with a temp data dir, through objectcache_bench.py's
    start() (whichever signature it has now), UCX_TLS = tls for the server, `extra_toml`
    appended to its configuration. Returns (proc, url)."""
    saved = os.environ.get("UCX_TLS")
    os.environ["UCX_TLS"] = tls
    try:
        data = os.path.join(root, "data")
        if "tls" in inspect.signature(ocb.start).parameters:
            return ocb.start(ctx["build_dir"], data, root, extra_toml, tls=tls)
        return ocb.start(ctx["build_dir"], data, root, extra_toml)
    finally:
        if saved is None:
            os.environ.pop("UCX_TLS", None)
        else:
            os.environ["UCX_TLS"] = saved


# --- 1. storage baseline ---------------------------------------------------------------------

def storage(ctx):
    p = ctx["config"]["storage"]
    exe = binary(ctx, "bench/storage_bench")
    cmd = [exe, "--block_sizes=" + ",".join(str(s) for s in p["sizes"]),
           "--block_threads=" + ",".join(str(t) for t in p["threads"]),
           f"--block_data_bytes={p['data_bytes']}", f"--block_passes={p['passes']}",
           "--block_drop_caches=" + ("true" if p["drop_caches"] else "false"),
           "--benchmark_filter=^BM_BlockRead/", "--benchmark_format=json"]
    out = run(cmd, ctx["log_dir"], "storage_bench", ctx["progress"], timeout=1800)
    rows = []
    for r in gbench_rows(gbench_json(out), "BM_BlockRead"):
        if "error" in r:
            raise StepFailed(f"{r['name']}: {r['error']}")
        b, t, cold = r["args"][:3]
        rows.append({"block_bytes": b, "threads": t, "cold": bool(cold), "gbps": r["GBps"],
                     "ops_per_s": r["ops_per_s"], "p50_us": r["p50_us"], "p99_us": r["p99_us"],
                     "objects": int(r["objects"]), "passes": int(r["iterations"]),
                     "cache_dropped": bool(r["cache_dropped"])})
    notes = []
    cold_rows = [r for r in rows if r["cold"]]
    if cold_rows and not p["drop_caches"]:
        notes.append("The page cache was not dropped in this profile (it would slow everything "
                     "else on the machine, e.g. during the test suite): the cold rows had an "
                     "empty RocksDB block cache but a warm page cache.")
    elif cold_rows and not all(r["cache_dropped"] for r in cold_rows):
        notes.append("Cold could not be made: writing /proc/sys/vm/drop_caches failed, so the "
                     "cold rows had an empty RocksDB block cache but possibly a warm page cache.")
    return {"commands": [" ".join(cmd)], "rows": rows, "notes": notes}


# --- 2. S3 transport baseline ----------------------------------------------------------------

def transport(ctx):
    p = ctx["config"]["transport"]
    notes, commands = [], []
    http_rows = []
    if shutil.which("wrk") is None:
        notes.append("HTTP GET/PUT not measured: wrk is not installed (tools/bootstrap).")
    else:
        out_json = os.path.join(ctx["tmp"], "gateway_bench.json")
        cmd = ["/usr/bin/python3", os.path.join(BENCH, "gateway_bench.py"),
               "--seconds", str(p["seconds"]), "--modes", ",".join(p["modes"]),
               "--sizes", ",".join(str(s) for s in p["sizes"]),
               "--conc", ",".join(str(c) for c in p["conc"]), "--ops", "GET,HEAD,PUT",
               "--out", out_json]
        commands.append(" ".join(cmd))
        run(cmd, ctx["log_dir"], "gateway_bench", ctx["progress"], timeout=1800,
            env=server_env(ctx))
        for r in json.load(open(out_json))["results"]:
            http_rows.append({k: r.get(k) for k in (
                "mode", "op", "size", "concurrency", "ops_per_s", "mb_per_s", "p50_ms",
                "p99_ms", "server_cpu_us_per_req", "requests", "errors")})
    exe = binary(ctx, "bench/data_plane_bench")
    cmd = [exe, "--benchmark_filter=" + p["dp_filter"], "--benchmark_min_time=" + p["dp_min_time"],
           "--benchmark_format=json"]
    commands.append(" ".join(cmd))
    doc = gbench_json(run(cmd, ctx["log_dir"], "data_plane_bench", ctx["progress"], timeout=1800))
    memcpy = {r["args"][0]: r.get("bytes_per_second", 0) / 1e9
              for r in gbench_rows(doc, "BM_Memcpy") if "error" not in r}
    ucx_rows = []
    for r in gbench_rows(doc, "BM_Put"):
        if "error" in r:
            notes.append(f"{r['name']}: {r['error']}")
            continue
        tls, order, size = r["args"][:3]
        ucx_rows.append({"transport": ["shm", "tcp"][tls],
                         "write_mode": ["put+flush", "put+fence", "rendezvous", "in-place"][order],
                         "layer_bytes": size, "layers": 16,
                         "gbps": r.get("bytes_per_second", 0) / 1e9,
                         "memcpy_gbps": memcpy.get(size),
                         "vs_memcpy": r.get("vs_memcpy"), "iterations": r.get("iterations")})
    notes.append("The UCX rows are data_plane_bench's BM_Put: one request of 16 layers of the "
                 "given size put from the server's staging buffers into a client buffer (two UCX "
                 "contexts in one process); 'put' over UCX here is the data plane's write path, "
                 "not an S3 PUT.")
    return {"commands": commands, "http": http_rows, "ucx": ucx_rows, "notes": notes}


# --- 3. per-request overhead -----------------------------------------------------------------

def create_bucket(url, ocb, name):
    os.environ.setdefault("BOTO_DISABLE_CRT", "true")
    import boto3  # Debian's python3-boto3
    s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=ocb.ACCESS_KEY,
                      aws_secret_access_key=ocb.SECRET_KEY, region_name="us-east-1")
    s3.create_bucket(Bucket=name)


def _kv_fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def overhead(ctx):
    p = ctx["config"]["overhead"]
    oc = binary(ctx, "client/oc")
    ocb = objectcache_bench_module()
    root = tempfile.mkdtemp(prefix="oc-overhead-", dir=ctx["tmp"])
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ocb.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=ocb.SECRET_KEY,
               UCX_TLS=p["ucx_tls"])
    layers = p["layers"]
    rows, commands = [], []
    proc, url = start_server(ctx, ocb, root, p["ucx_tls"])
    try:
        env["OC_ENDPOINT"] = url
        for i, size in enumerate(p["sizes"]):
            layer_bytes = size // layers
            h = f"{i + 1:032x}"
            shape = ["--hashes", h, "--prefix", "ovh/", "--layers", str(layers),
                     "--layer-bytes", str(layer_bytes), "--chunk-tokens", "16",
                     "--bucket", "ovh"]
            data = os.path.join(root, f"chunk-{size}")
            with open(data, "wb") as f:
                f.write(os.urandom(layers * layer_bytes))
            if i == 0:
                create_bucket(url, ocb, "ovh")
            put = [oc, "put-chunks", *shape, "--data", data, "--via", "http"]
            run(put, ctx["log_dir"], f"overhead-put-{size}", ctx["progress"], 120, env=env)
            for via in ("ucx", "http"):
                get = [oc, "get-layers", *shape, "--via", via, "--quiet"]
                if size == p["sizes"][0]:
                    commands.append(" ".join(get) + f"  (x{p['samples'] + 1}, first discarded)")
                for k in range(p["samples"] + 1):
                    out = run(get, ctx["log_dir"], f"overhead-{via}-{size}", ctx["progress"], 120,
                              env=env, quiet=k > 0)
                    f = _kv_fields([l for l in out.splitlines() if l.startswith("matched=")][-1])
                    if k == 0:
                        continue  # warm-up: page cache, block cache
                    rows.append({"object_bytes": size, "via": via, "sample": k,
                                 "mode": f["mode"], "total_us": int(f["total_us"]),
                                 "gateway_us": int(f["gateway_us"]),
                                 "storage_us": int(f["storage_us"]),
                                 "transfer_us": int(f["transfer_us"])})
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)
    summary = []
    for size in p["sizes"]:
        for via in ("ucx", "http"):
            rs = [r for r in rows if r["object_bytes"] == size and r["via"] == via]
            if not rs:
                continue
            m = {k: median([r[k] for r in rs]) for k in
                 ("total_us", "gateway_us", "storage_us", "transfer_us")}
            # Medians of each sample's sum, so server_us is one request's server time.
            m["server_us"] = median([r["gateway_us"] + r["storage_us"] + r["transfer_us"]
                                     for r in rs]) if via == "ucx" else None
            m["client_and_rest_us"] = (max(0, m["total_us"] - m["server_us"])
                                       if via == "ucx" else None)
            summary.append({"object_bytes": size, "via": via, "mode": rs[0]["mode"],
                            "samples": len(rs), **m})
    notes = [
        f"Each sample is one `oc get-layers` process: a one-chunk descriptor GET (L = {layers}, "
        "S = object size / L, kv_l2td) against `objectcache serve` (embedded store), i.e. a "
        f"single-object GET, UCX_TLS={p['ucx_tls']} for server and client. total_us is the "
        "client's wall time from sending the request; "
        "gateway_us, storage_us and transfer_us are the server's x-oc-gateway-us, "
        "x-oc-storage-us and x-oc-transfer-us (docs/protocol.md). Medians over the samples.",
        "`oc get-layers` starts its clock before it creates its UCX context and maps its "
        "buffer, and each sample is a new process (new UCX worker, so the server also creates "
        "an endpoint to it): the client's total and the 'client + rest' remainder include that "
        "one-time setup, which a long-lived serving node pays once. The server-side figures "
        "(control plane + storage + transfer = server µs) are per request.",
        "Over HTTP the timing headers precede the body, so only x-oc-gateway-us (time to the "
        "plan) is sent: storage and transfer are not separable there (n/a in the table).",
    ]
    return {"commands": commands, "rows": rows, "summary": summary, "notes": notes}


# --- 4. aggregation --------------------------------------------------------------------------

def aggregation(ctx):
    p = ctx["config"]["aggregation"]
    exe = binary(ctx, "bench/objectcache_bench")
    ocb = objectcache_bench_module()
    root = tempfile.mkdtemp(prefix="oc-agg-", dir=ctx["tmp"])
    args = ["--groups", ",".join(str(g) for g in p["groups"]),
            "--contexts", ",".join(str(c) for c in p["contexts"]),
            "--hits", ",".join(str(h) for h in p["hits"]), "--repeat", str(p["repeat"])]
    json_path = os.path.join(root, "objectcache_bench.json")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ocb.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=ocb.SECRET_KEY,
               UCX_TLS=p["ucx_tls"])
    proc, url = start_server(ctx, ocb, root, p["ucx_tls"])
    cmd = [exe, "--endpoint", url, "--json", json_path, "--label", "server-theta", *args]
    variant_rows = []
    variant_commands = []
    try:
        try:
            run(cmd, ctx["log_dir"], "objectcache_bench", ctx["progress"], timeout=3600, env=env)
            rows = json.load(open(json_path))["results"]
        finally:
            proc.terminate()
            proc.wait()
        # The same stored chunks, the UCX descriptor GET only, per server variant.
        for label, theta, buffers, buffer_bytes, direct in p.get("variants", []):
            toml = (f'[kv]\nlayerwise_threshold = "{theta}"\n'
                    f"data_plane_staging_buffers = {buffers}\n"
                    f'data_plane_staging_buffer_bytes = "{buffer_bytes}"\n'
                    f"data_plane_direct_writes = {str(direct).lower()}\n")
            vjson = os.path.join(root, f"{label}.json")
            vcmd = [exe, "--endpoint", url, "--json", vjson, "--label", label, *args,
                    "--no-put", "--methods", "ucx"]
            proc, url = start_server(ctx, ocb, root, p["ucx_tls"], toml)
            vcmd[2] = url
            try:
                run(vcmd, ctx["log_dir"], f"objectcache_bench {label}", ctx["progress"],
                    timeout=3600, env=env)
                for r in json.load(open(vjson))["results"]:
                    variant_rows.append({**r, "variant": label, "theta": theta,
                                         "staging_buffers": buffers,
                                         "staging_buffer_bytes": buffer_bytes,
                                         "direct_writes": direct})
            finally:
                proc.terminate()
                proc.wait()
            variant_commands.append(
                f"[kv] layerwise_threshold = {theta}, data_plane_staging_buffers = {buffers}, "
                f"data_plane_staging_buffer_bytes = {buffer_bytes}, "
                f"data_plane_direct_writes = {str(direct).lower()}: " +
                " ".join(vcmd[:1] + ["--endpoint", "<objectcache serve>"] + vcmd[3:4] +
                         ["<json>"] + vcmd[5:]))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    speedups = []
    shapes = sorted({(r["G"], r["context"], r["hit"]) for r in rows})
    for g, c, h in shapes:
        m = {r["method"]: r for r in rows if (r["G"], r["context"], r["hit"]) == (g, c, h)}
        e = {"G": g, "context": c, "hit": h, "chunks": next(iter(m.values()))["chunks"],
             "payload_bytes": next(iter(m.values()))["payload_bytes"],
             "ucx_mode": m["ucx"]["mode"] if "ucx" in m else None}
        for agg in ("ucx", "http-body"):
            for base in ("http-range", "http-object"):
                if agg in m and base in m:
                    e[f"{agg}_vs_{base}"] = m[base]["total_s"] / m[agg]["total_s"]
        speedups.append(e)
    commands = [" ".join(cmd[:1] + ["--endpoint", "<objectcache serve>"] + cmd[3:4] +
                         ["<json>"] + cmd[5:])] + variant_commands
    notes = [
        f"UCX_TLS={p['ucx_tls']} for the server and the client: with TCP allowed, UCX 1.13 puts "
        "the whole endpoint on TCP (docs/decisions/data-plane-vanished-client.md).",
        "Server: `objectcache serve` (embedded store) with a 4 GiB block cache (one G's largest "
        "data set is 1.75 GiB, so reads are warm) and otherwise the default configuration: "
        "Θ = 128 MiB picks layerwise or chunkwise (the ucx mode column), staging 8 x 4 MiB.",
        "Variants: the server restarted on the same data with [kv] layerwise_threshold and "
        "data_plane_staging_buffers x data_plane_staging_buffer_bytes set, measuring the UCX "
        "descriptor GET only (Θ = 1TiB forces chunkwise, Θ = 1 layerwise).",
    ]
    kv_rows = []
    if p["kv_bench_filter"]:
        exe = binary(ctx, "bench/kv_bench")
        kcmd = [exe, "--benchmark_filter=" + p["kv_bench_filter"], "--benchmark_min_time=0.2",
                "--benchmark_format=json"]
        commands.append(" ".join(kcmd))
        doc = gbench_json(run(kcmd, ctx["log_dir"], "kv_bench", ctx["progress"], timeout=3600))
        for r in gbench_rows(doc, "BM_Deliver"):
            if "error" in r:
                notes.append(f"{r['name']}: {r['error']}")
                continue
            g, context, hit, mode = r["args"][:4]
            kv_rows.append({"G": g, "context": context, "hit": hit / 1000,
                            "mode": ["layerwise-ucx", "chunkwise-ucx", "layerwise-body-sink",
                                     "layerwise-ucx-rendezvous", "layerwise-ucx-staging"][mode],
                            "gbps": r.get("bytes_per_second", 0) / 1e9,
                            "ttfl_us": r.get("ttfl_us"), "read_us": r.get("read_us")})
    else:
        notes.append("kv_bench (in-process layerwise vs chunkwise at G = 16, 64, 256) runs only "
                     "in --full: it fills 1.75 GiB per G before measuring.")
    return {"commands": commands, "rows": rows, "speedups": speedups, "kv_bench": kv_rows,
            "variants": variant_rows, "notes": notes}


# --- 5-8. TTFT (ttft_emulator) ---------------------------------------------------------------

TTFT_EXPERIMENTS = [("e2e", 5), ("bandwidth", 6), ("sched", 7), ("model", 8)]


def ttft(ctx):
    """One ttft_emulator run for experiments 5-8; returns {experiment: dict} plus PNGs copied
    into the output directory by the caller (ctx['png'] list)."""
    exe = binary(ctx, "bench/ttft_emulator")
    flag = ctx["config"]["ttft"]["flag"]
    out = os.path.join(ctx["tmp"], "ttft.json")
    # delta (the calibrated margin's rate sweep) is reported with experiment 7.
    # Exp. 7 at a fixed scale (the paper's 100 Gbps = 0.3 GB/s): the calibrated data-plane rate
    # follows the machine's load, and at its top compute per layer is too short for loaded cores
    # to time (docs/decisions/ttft-one-target-buffer.md).
    cmd = [exe, flag, "--experiments", ",".join([n for n, _ in TTFT_EXPERIMENTS] + ["delta"]),
           "--out", out] + ctx["config"]["ttft"].get("extra", [])
    failure = None
    try:
        run(cmd, ctx["log_dir"], "ttft_emulator", ctx["progress"], timeout=7200)
    except StepFailed as e:
        failure = str(e)
    doc = json.load(open(out)) if os.path.exists(out) else {}
    pngs = []
    if doc:
        prefix = os.path.join(ctx["tmp"], "ttft.png")
        try:
            listed = run(["/usr/bin/python3", os.path.join(ROOT, "tools", "plot_ttft.py"), out,
                          prefix], ctx["log_dir"], "plot_ttft", ctx["progress"], timeout=300)
            pngs = [l.strip() for l in listed.splitlines() if l.strip().endswith(".png")]
        except StepFailed as e:
            failure = (failure + "; " if failure else "") + str(e)
    common = {"commands": [" ".join(cmd)], "tool_mode": doc.get("mode"),
              "tool_machine": doc.get("machine"), "scaling": doc.get("scaling")}
    results = {}
    for name, _ in TTFT_EXPERIMENTS:
        e = {**common, "data": doc.get(name), "notes": []}
        if failure:
            e["notes"].append("ttft_emulator did not finish cleanly: " + failure)
        if doc and doc.get(name) is None:
            e["notes"].append(f"ttft_emulator's JSON has no '{name}' section.")
        png = [x for x in pngs if x.endswith(f"-{name}.png")]
        if name == "sched":
            png = [x for x in pngs if x.endswith("ttft.png") or x.endswith("-delta.png")]
            if isinstance(e["data"], dict):
                # The paper's measured Tables A10/A11 and A12 travel with the run, so the report's
                # side-by-side table is computed from this JSON alone (report_paper.py).
                e["data"] = {**e["data"], "delta": doc.get("delta"),
                             "paper_tables": load_paper_tables()}
        results[name] = (e, png)
    return results


# --- 9. ObjectCache on RADOS vs Ceph RGW -----------------------------------------------------

def rados_vs_rgw(ctx):
    """bench/rados_vs_rgw.py's comparison on a throw-away cluster (tools/ceph-test-cluster).
    A failed step leaves "error" in the result with the rows measured before it."""
    tmp = tempfile.mkdtemp(prefix="oc-rvr-", dir=ctx["tmp"])
    try:
        return RVR.run(ctx["config"]["rados_vs_rgw"], ctx["build_dir"], ctx["log_dir"],
                       ctx["progress"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- 10. the write path ------------------------------------------------------------------------

def write_bench(ctx):
    """bench/write_bench.py: descriptor and S3 PUTs, server CPU, write amplification and reads
    under writes, beside dd's ceiling and Ceph RGW (its own throw-away cluster). A failed step
    leaves "error" in the result with the rows measured before it."""
    tmp = tempfile.mkdtemp(prefix="oc-wb-", dir=ctx["tmp"])
    try:
        return WB.run(ctx["config"]["write_bench"], ctx["build_dir"], ctx["log_dir"],
                      ctx["progress"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- 11. scaling with the server's cores -----------------------------------------------------

def scaling(ctx):
    """bench/scaling_bench.py: the same loads at 1, 2, 4, ... server threads up to the usable
    cores. A failed step leaves "error" in the result with the rows measured before it."""
    tmp = tempfile.mkdtemp(prefix="oc-scale-", dir=ctx["tmp"])
    try:
        return SB.run_scaling(ctx["config"]["scaling"], ctx["build_dir"], ctx["log_dir"],
                              ctx["progress"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- 12. the LMCache L2 connector ----------------------------------------------------------

def lmcache(ctx):
    """bench/lmcache_bench.py: a batch get of 256 chunks through the native_plugin connector
    against one GET per key (LMCache's S3 adapter's way), and batch exists under 16 callers."""
    return LB.run(ctx["config"]["lmcache"], ctx["build_dir"])


# --- 13. scale-out over a replicated pool --------------------------------------------------------

def scale_out(ctx):
    """bench/scale_out_bench.py: serving nodes loading a warm prefix from one and from two
    `objectcache serve` peers over a 3-OSD pool (its own throw-away cluster)."""
    tmp = tempfile.mkdtemp(prefix="oc-so-", dir=ctx["tmp"])
    try:
        return SO.run_scale_out(ctx["config"]["scale_out"], ctx["build_dir"], ctx["log_dir"],
                                ctx["progress"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- 14. a cache bucket under churn ------------------------------------------------------------

def cache_churn(ctx):
    """bench/churn_bench.py: the churn workload offline (eviction policies simulated) and online
    (bounded and unbounded buckets on RocksDB and on its own throw-away RADOS cluster)."""
    tmp = tempfile.mkdtemp(prefix="oc-churn-", dir=ctx["tmp"])
    try:
        return CC.run_churn(ctx["config"]["cache_churn"], ctx["build_dir"], ctx["log_dir"],
                            ctx["progress"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- 15. the vLLM secondary tier --------------------------------------------------------------

def vllm_tier(ctx):
    """bench/vllm_tier_bench.py: the vLLM secondary tier's scheduler-path calls timed one by one,
    idle, while a load runs and while the gateway is stalled."""
    return VT.run_bench(ctx["config"]["vllm_tier"], ctx["build_dir"])
