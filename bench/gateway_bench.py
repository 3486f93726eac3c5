#!/usr/bin/python3
"""gateway_bench: S3 GET and PUT throughput and latency of the gateway, driven by wrk
(Debian's package) with presigned SigV4 URLs, so every request is authenticated as a real
client's would be.

Benchmarks (each at concurrency 1, 8 and 32, embedded store and remote store):
  GET 4 KiB / 64 KiB / 1 MiB            one hot object per size, repeated GETs
  HEAD 4 KiB / 64 KiB / 1 MiB           HEADs of the same object (a KV client's hit check:
                                        LMCache sends one per key; beside GET by default),
                                        driven by run_heads, not wrk (wrk cannot parse HEAD
                                        answers): rows say driver = "python"
  PUT 4 KiB / 64 KiB / 1 MiB            durable PUTs (sync_writes = true) overwriting ONE key
                                        (c connections race on it; rows say keys = "one")
  PUT-DISTINCT 4 KiB / 64 KiB / 1 MiB   durable PUTs, each to a key never written before
                                        (keys = "distinct"; a wrk script walks presigned URLs)
Reported per run: ops/s, MB/s, p50 and p99 latency (wrk --latency), server CPU per request
(utime + stime of the server processes from /proc, divided by the requests served) and, with
--osd-asok, the Ceph OSD's ops per request (its `perf dump` op counters around the run).

nginx (mode "nginx", GET only) serves the same sizes as static files with sendfile, no auth
and as many workers as the process may use cores, driven by the same wrk: the ceiling a GET
is compared with (`nginx_ratio` in the output: our ops/s over nginx's per size and
concurrency). --reps alternates the modes that many times.

Usage: bench/gateway_bench.py [--seconds 5] [--modes embedded,remote,nginx] [--sizes 4096,...]
       [--conc 1,8,32] [--ops GET,HEAD,PUT] [--reps 1] [--out FILE]
       bench/gateway_bench.py --endpoint URL --access-key K --secret-key S [--label NAME]
       [--cpu-pids name=pid,...] [--bucket B] [--seconds ...] [--sizes ...] [--conc ...]
       [--osd-asok PATH] [--ops GET,HEAD,PUT,PUT-DISTINCT]
--out defaults to bench/results/<YYYY-MM-DD>/gateway_bench.json (UTC date).
Binaries: OC_OBJECTCACHE_BIN, OC_GATEWAY_BIN, OC_STORAGE_SERVER_BIN (default: build/release).
--bin NAME=PATH makes mode NAME the embedded server run from the objectcache binary PATH (an
A/B between two builds in one run: list both names in --modes and --reps alternates them);
--baseline NAME adds "ratios": every other mode's median ops/s and server CPU per request over
NAME's, per op, size and concurrency.
--endpoint measures a server that is already running (any S3 server: Ceph RGW, `objectcache
serve` on RADOS) instead of starting ours: rows get mode = --label, and server CPU comes from
the --cpu-pids processes (per process in "cpu_us_per_req", summed in server_cpu_us_per_req).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, "harness"))
from conftest import Server, free_port, stop_processes, wait_port  # noqa: E402
from presign import Presigner  # noqa: E402

BENCH_CONFIG = """
access_log = false
"""

PUT_SCRIPT = """
wrk.method = "PUT"
local f = io.open(os.getenv("OC_BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
"""

# PUT-DISTINCT: thread t of n sends lines t, t + n, t + 2n, ... of OC_BENCH_PATHS (one presigned
# path + query per line, each a different key), so no key is written twice while the list
# lasts; `done` reports how many requests ran past its end (they would be overwrites).
PUT_DISTINCT_SCRIPT = """
local threads = {}
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  local nthreads = tonumber(os.getenv("OC_BENCH_THREADS"))
  local f = io.open(os.getenv("OC_BENCH_BODY"), "rb")
  body = f:read("*a")
  f:close()
  paths = {}
  local i = 0
  for line in io.lines(os.getenv("OC_BENCH_PATHS")) do
    if i % nthreads == tid then
      table.insert(paths, line)
    end
    i = i + 1
  end
  next_path = 1
  wrapped = 0
end
function request()
  if next_path > #paths then
    next_path = 1
    wrapped = wrapped + 1
  end
  local p = paths[next_path]
  next_path = next_path + 1
  return wrk.format("PUT", p, nil, body)
end
function done(summary, latency, requests)
  local w = 0
  for _, t in ipairs(threads) do
    w = w + (t:get("wrapped") or 0)
  end
  io.write(string.format("oc-bench wrapped %d\\n", w))
end
"""
# Presigned URLs made per second of a PUT-DISTINCT run: above any PUT rate seen on this machine.
DISTINCT_KEYS_PER_SECOND = 5000


def osd_ops(asok):
    """The OSD's op counters (`ceph daemon osd.N perf dump`: op, op_r, op_w, op_rw)."""
    out = subprocess.run(["ceph", "--admin-daemon", asok, "perf", "dump"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    osd = json.loads(out)["osd"]
    return {k: osd[k] for k in ("op", "op_r", "op_w", "op_rw")}


def cpu_seconds(pids):
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def parse_latency(text, label):
    m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m:
        return None
    v = float(m.group(1))
    return v * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]


def wrk_threads(conc):
    return 1 if conc == 1 else 2


def run_wrk(url, conc, seconds, script=None, env=None):
    cmd = ["wrk", "-t", str(wrk_threads(conc)), "-c", str(conc), "-d", f"{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds + 60).stdout
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    non_2xx = socket_errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        non_2xx = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:  # a timeout is a request wrk gave up on after 2 s
        socket_errors = sum(int(x) for x in m.groups())
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"^oc-bench wrapped (\d+)$", out, re.M)
    if m and int(m.group(1)) > 0:  # a PUT-DISTINCT list ran out: later PUTs overwrote keys
        print(f"warning: the distinct-key list wrapped {m.group(1)} times", file=sys.stderr)
    return {"requests": reqs, "wrapped": int(m.group(1)) if m else 0,
            "errors": non_2xx + socket_errors, "non_2xx": non_2xx,
            "socket_errors": socket_errors, "ops_per_s": rps,
            "p50_ms": parse_latency(out, "50"), "p99_ms": parse_latency(out, "99")}


def _head_worker(host, port, target, deadline, out):
    """One keep-alive connection sending HEAD `target` until `deadline`: its latencies (s) and
    errors, put on `out`."""
    import socket
    request = (f"HEAD {target} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n").encode()
    lat, errors = [], 0
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while time.time() < deadline:
        t0 = time.perf_counter()
        s.sendall(request)
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                out.put((lat, errors + 1))
                return
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        lat.append(time.perf_counter() - t0)
        if not head.startswith(b"HTTP/1.1 2"):
            errors += 1
    s.close()
    out.put((lat, errors))


def run_heads(url, conc, seconds):
    """HEADs of `url` over `conc` keep-alive connections, one process each, as run_wrk reports.
    wrk cannot drive HEAD (its parser waits for the Content-Length body that a HEAD answer
    announces but does not carry), so this small driver does; it is Python, so at high
    concurrency the driver, not the server, may be the limit: compare server CPU per request."""
    import multiprocessing
    u = urllib.parse.urlsplit(url)
    target = u.path + ("?" + u.query if u.query else "")
    out = multiprocessing.Queue()
    deadline = time.time() + seconds
    procs = [multiprocessing.Process(target=_head_worker,
                                     args=(u.hostname, u.port, target, deadline, out))
             for _ in range(conc)]
    t0 = time.time()
    for p in procs:
        p.start()
    lat, errors = [], 0
    for _ in procs:
        l, e = out.get()
        lat += l
        errors += e
    for p in procs:
        p.join()
    elapsed = max(time.time() - t0, 1e-9)
    lat.sort()
    pct = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3, 3) if lat else 0.0)
    return {"requests": len(lat), "wrapped": 0, "errors": errors, "non_2xx": errors,
            "socket_errors": 0, "ops_per_s": len(lat) / elapsed, "p50_ms": pct(0.5),
            "p99_ms": pct(0.99), "driver": "python"}


def bench_mode(mode, args, results):
    root = tempfile.mkdtemp(prefix="oc-bench-")
    # A --variant is the embedded server with one [storage] setting changed; rows keep its name.
    storage = args.variants.get(mode)
    binary = args.bins.get(mode)
    extra = BENCH_CONFIG + (f"[storage]\n{storage}\n" if storage else "")
    srv = Server("embedded" if storage or binary else mode, root, extra_config=extra)
    default_bin = os.environ["OC_OBJECTCACHE_BIN"]
    os.environ["OC_OBJECTCACHE_BIN"] = binary or default_bin  # read by Server.start
    try:
        srv.start()
    finally:
        os.environ["OC_OBJECTCACHE_BIN"] = default_bin
    try:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="bench")
        pids = {f"server{i}": p.pid for i, p in enumerate(srv.procs)}
        bench_server(mode, s3, "bench", pids, root, args, results)
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


NGINX_CONFIG = """
daemon off;
worker_processes {workers};
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  client_body_temp_path {root}/tmp;
  proxy_temp_path {root}/tmp;
  fastcgi_temp_path {root}/tmp;
  uwsgi_temp_path {root}/tmp;
  scgi_temp_path {root}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {root}/www;
  }}
}}
"""


def bench_nginx(args, results):
    """GETs of static files of args.sizes from nginx (sendfile, no auth): the ceiling."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        print("nginx: not installed (tools/bootstrap installs nginx-light), skipped", flush=True)
        return
    root = tempfile.mkdtemp(prefix="oc-bench-nginx-")
    os.chmod(root, 0o755)  # the workers run as nginx's unprivileged user when we are root
    os.makedirs(os.path.join(root, "www", "bench"))
    os.makedirs(os.path.join(root, "tmp"))
    port = free_port()
    nworkers = len(os.sched_getaffinity(0))
    conf = os.path.join(root, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONFIG.format(workers=nworkers, root=root, port=port))
    for size in args.sizes:
        with open(os.path.join(root, "www", "bench", f"obj-{size}"), "wb") as f:
            f.write(os.urandom(size))
    proc = subprocess.Popen([nginx, "-c", conf, "-p", root], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        deadline = time.time() + 10
        while True:  # the master forks its workers after it listens
            workers = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)],
                                                      capture_output=True,
                                                      text=True).stdout.split()]
            if len(workers) >= nworkers or time.time() > deadline:
                break
            time.sleep(0.05)
        pids = {f"nginx#{p}": p for p in [proc.pid] + workers}
        for size in args.sizes:
            url = f"http://127.0.0.1:{port}/bench/obj-{size}"
            for conc in args.conc:
                measure(results, "nginx", "GET", size, conc, url, None, dict(os.environ), pids,
                        args)
    finally:
        stop_processes([proc])
        shutil.rmtree(root, ignore_errors=True)


def nginx_ratios(results):
    """Per GET row of ours, ops/s over nginx's median at the same size and concurrency."""
    ref = {}
    for r in results:
        if r["mode"] == "nginx":
            ref.setdefault((r["size"], r["concurrency"]), []).append(r["ops_per_s"])
    out = []
    for (size, conc), v in sorted(ref.items()):
        for mode in sorted({r["mode"] for r in results} - {"nginx"}):
            ours = [r["ops_per_s"] for r in results if r["mode"] == mode and r["op"] == "GET"
                    and r["size"] == size and r["concurrency"] == conc]
            if ours:
                ratio = median(ours) / median(v)
                out.append({"mode": mode, "size": size, "concurrency": conc,
                            "ops_per_s": median(ours), "nginx_ops_per_s": median(v),
                            "ratio": ratio})
                print(f"GET {size} c={conc}: {mode} {median(ours):.0f} ops/s, nginx "
                      f"{median(v):.0f} ops/s: {ratio:.2f} of nginx", flush=True)
    return out


def mode_ratios(results, baseline):
    """Per (op, size, concurrency): each mode's median ops/s and server CPU per request over
    the baseline mode's."""
    cells = {}
    for r in results:
        cells.setdefault((r["op"], r["size"], r["concurrency"]), {}).setdefault(
            r["mode"], []).append(r)
    out = []
    for (op, size, conc), by_mode in sorted(cells.items()):
        base = by_mode.get(baseline)
        if not base:
            continue
        for mode, rows in sorted(by_mode.items()):
            if mode == baseline:
                continue
            ops = median([r["ops_per_s"] for r in rows]) / median([r["ops_per_s"] for r in base])
            cpu = (median([r["server_cpu_us_per_req"] for r in rows])
                   / median([r["server_cpu_us_per_req"] for r in base]))
            out.append({"op": op, "size": size, "concurrency": conc, "mode": mode,
                        "baseline": baseline, "ops_ratio": ops, "cpu_per_req_ratio": cpu,
                        "runs": len(rows), "baseline_runs": len(base)})
            print(f"{op} {size} c={conc}: {mode}/{baseline} ops/s {ops:.2f}, "
                  f"server CPU per request {cpu:.2f}", flush=True)
    return out


def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def bench_endpoint(args, results):
    """The --endpoint mode: a running S3 server, its processes' PIDs from --cpu-pids."""
    os.environ.setdefault("BOTO_DISABLE_CRT", "true")
    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=args.endpoint, aws_access_key_id=args.access_key,
                      aws_secret_access_key=args.secret_key, region_name="us-east-1",
                      config=Config(signature_version="s3v4",
                                    s3={"addressing_style": "path"}))
    try:
        s3.create_bucket(Bucket=args.bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    pids = {}
    for item in filter(None, (args.cpu_pids or "").split(",")):
        name, _, pid = item.partition("=")
        pids[f"{name}#{pid}"] = int(pid)
    root = tempfile.mkdtemp(prefix="oc-bench-")
    try:
        bench_server(args.label, s3, args.bucket, pids, root, args, results)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def presigner_for(s3):
    """A Presigner with s3's endpoint and credentials, checked against botocore's own URL."""
    creds = s3._request_signer._credentials.get_frozen_credentials()
    ref = s3.generate_presigned_url("put_object", Params={"Bucket": "b-check", "Key": "k/1~x"},
                                    ExpiresIn=3600)
    when = datetime.datetime.strptime(
        urllib.parse.parse_qs(urllib.parse.urlparse(ref).query)["X-Amz-Date"][0],
        "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    p = Presigner(s3.meta.endpoint_url, creds.access_key, creds.secret_key,
                  region=s3.meta.region_name, now=when)
    mine = p.endpoint + p.path("PUT", "b-check", "k/1~x")

    def parts(url):  # the query's order is botocore's choice, not part of the signature
        u = urllib.parse.urlparse(url)
        return u.scheme, u.netloc, u.path, sorted(urllib.parse.parse_qsl(u.query))
    if parts(mine) != parts(ref):
        sys.exit(f"gateway_bench: presigned URL differs from botocore's:\n {mine}\n {ref}")
    return Presigner(s3.meta.endpoint_url, creds.access_key, creds.secret_key,
                     region=s3.meta.region_name)


def bench_server(mode, s3, bucket, pids, root, args, results):
    """Every (size, op, concurrency) of args against one server; pids = {name: pid} of the
    processes whose CPU counts as the server's ("name#pid" keys sum per name)."""
    presigner = presigner_for(s3) if "PUT-DISTINCT" in args.ops else None
    run_id = f"{int(time.time() * 1000):x}"  # distinct keys of this run never existed before
    for size in args.sizes:
        body_path = os.path.join(root, f"body-{size}")
        with open(body_path, "wb") as f:
            f.write(os.urandom(size))
        key = f"obj-{size}"
        s3.put_object(Bucket=bucket, Key=key, Body=open(body_path, "rb").read())
        for op in args.ops:
            method = {"GET": "get_object", "HEAD": "head_object"}.get(op, "put_object")
            url = s3.generate_presigned_url(method, Params={"Bucket": bucket, "Key": key},
                                            ExpiresIn=3600)
            script = None
            env = dict(os.environ)
            if op == "PUT":
                script = os.path.join(root, "put.lua")
                with open(script, "w") as f:
                    f.write(PUT_SCRIPT)
                env["OC_BENCH_BODY"] = body_path
            for conc in args.conc:
                if op == "PUT-DISTINCT":
                    script = os.path.join(root, "put-distinct.lua")
                    with open(script, "w") as f:
                        f.write(PUT_DISTINCT_SCRIPT)
                    paths = os.path.join(root, "paths")
                    with open(paths, "w") as f:
                        for i in range(DISTINCT_KEYS_PER_SECOND * args.seconds):
                            f.write(presigner.path("PUT", bucket,
                                                   f"new-{run_id}-{size}-{conc}-{i:07d}") + "\n")
                    env.update(OC_BENCH_BODY=body_path, OC_BENCH_PATHS=paths,
                               OC_BENCH_THREADS=str(wrk_threads(conc)))
                measure(results, mode, op, size, conc, url, script, env, pids, args)


def measure(results, mode, op, size, conc, url, script, env, pids, args):
    """One wrk run; appends its row (ops/s, latency, server CPU per request) to results."""
    cpu0 = {n: cpu_seconds([p]) for n, p in pids.items()}
    osd0 = osd_ops(args.osd_asok) if args.osd_asok else None
    r = run_heads(url, conc, args.seconds) if op == "HEAD" else run_wrk(url, conc, args.seconds,
                                                                         script, env)
    osd1 = osd_ops(args.osd_asok) if args.osd_asok else None
    per = {}
    for n, p in pids.items():
        name = n.split("#")[0]
        per[name] = per.get(name, 0) + cpu_seconds([p]) - cpu0[n]
    cpu = sum(per.values())
    reqs = max(r["requests"], 1)
    r.update({"mode": mode, "op": op, "size": size, "concurrency": conc,
              "keys": {"GET": "one", "HEAD": "one", "PUT": "one"}.get(op, "distinct"),
              # Failed requests (non-2xx, socket errors) move no object; a HEAD moves none.
              "mb_per_s": (0 if op == "HEAD" else r["ops_per_s"] * size / 1e6 *
                           (r["requests"] - r["errors"]) / reqs),
              "server_cpu_us_per_req": cpu * 1e6 / reqs,
              "cpu_us_per_req": {n: v * 1e6 / reqs for n, v in per.items()},
              "loadavg": os.getloadavg()[0]})
    if osd0 is not None:
        r["osd_ops_per_req"] = {k: (osd1[k] - osd0[k]) / reqs for k in osd0}
    results.append(r)
    print(f"{mode:8} {op} {size:>8} c={conc:<3} {r['ops_per_s']:>9.0f} ops/s "
          f"{r['mb_per_s']:>8.1f} MB/s p50={r['p50_ms']}ms p99={r['p99_ms']}ms "
          f"cpu={r['server_cpu_us_per_req']:.1f}us/req errors={r['errors']}" +
          (f" osd_ops/req={r['osd_ops_per_req']['op']:.2f}" if osd0 else ""), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--modes", default="embedded,remote")
    ap.add_argument("--sizes", default="4096,65536,1048576")
    ap.add_argument("--conc", default="1,8,32")
    ap.add_argument("--ops", default="GET,HEAD,PUT")
    ap.add_argument("--reps", type=int, default=1, help="alternate the modes this many times")
    ap.add_argument("--endpoint", help="measure this running S3 server instead of ours")
    ap.add_argument("--access-key", default=os.environ.get("AWS_ACCESS_KEY_ID"))
    ap.add_argument("--secret-key", default=os.environ.get("AWS_SECRET_ACCESS_KEY"))
    ap.add_argument("--label", default="external", help="the rows' mode with --endpoint")
    ap.add_argument("--bucket", default="bench", help="bucket used with --endpoint")
    ap.add_argument("--cpu-pids", help="name=pid,... of the --endpoint server's processes")
    ap.add_argument("--osd-asok", help="a Ceph OSD's admin socket: its ops per request")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=SETTING",
                    help="mode NAME: the embedded server with this [storage] setting, e.g. "
                    "'small-in-files=data_file_min_bytes = 0' (repeatable; list NAME in --modes)")
    ap.add_argument("--bin", action="append", default=[], metavar="NAME=PATH",
                    help="mode NAME: the embedded server run from the objectcache binary PATH "
                    "(repeatable; list NAME in --modes)")
    ap.add_argument("--baseline", help="a mode: report the others' ratios over it")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d", time.gmtime()), "gateway_bench.json"))
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.conc = [int(x) for x in args.conc.split(",")]
    args.ops = [op.upper() for op in args.ops.split(",")]
    args.variants = {}
    for v in args.variant:
        name, sep, setting = v.partition("=")
        if not sep or not name or not setting:
            ap.error(f"--variant takes NAME=SETTING, not {v}")
        args.variants[name] = setting
    args.bins = {}
    for b in args.bin:
        name, sep, path = b.partition("=")
        if not sep or not name or not os.access(path, os.X_OK):
            ap.error(f"--bin takes NAME=PATH of an executable, not {b}")
        args.bins[name] = os.path.abspath(path)
    if not set(args.ops) <= {"GET", "HEAD", "PUT", "PUT-DISTINCT"}:
        ap.error(f"--ops takes GET, HEAD, PUT and/or PUT-DISTINCT, not {','.join(args.ops)}")
    results = []
    if args.endpoint:
        if not (args.access_key and args.secret_key):
            ap.error("--endpoint needs --access-key and --secret-key (or AWS_* variables)")
        bench_endpoint(args, results)
        write(args.out, results, args.baseline)
        return
    build = os.path.join(ROOT, "build", "release")
    os.environ.setdefault("OC_OBJECTCACHE_BIN", os.path.join(build, "gateway", "objectcache"))
    os.environ.setdefault("OC_GATEWAY_BIN", os.path.join(build, "gateway", "oc-gateway"))
    os.environ.setdefault("OC_STORAGE_SERVER_BIN",
                          os.path.join(build, "storage-server", "bin", "oc-storage-server"))
    for _ in range(args.reps):
        for mode in args.modes.split(","):
            if mode == "nginx":
                bench_nginx(args, results)
                continue
            if mode == "remote" and not os.path.exists(os.environ["OC_STORAGE_SERVER_BIN"]):
                print("remote: oc-storage-server not built, skipped", flush=True)
                continue
            bench_mode(mode, args, results)
    write(args.out, results, args.baseline)


def write(out, results, baseline=None):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    doc = {"benchmark": "gateway_bench", "results": results}
    if any(r["mode"] == "nginx" for r in results):
        doc["nginx_ratio"] = nginx_ratios(results)
    if baseline:
        doc["ratios"] = mode_ratios(results, baseline)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
