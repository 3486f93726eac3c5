#!/usr/bin/python3
"""put_cpu_bench: server CPU per S3 PUT, by request shape, A/B between server binaries in one
alternating run (issue 16 step 3, "fewer copies and less hashing per byte").

What a PUT costs the server depends on what the client asks it to check: the SigV4 payload
hash (x-amz-content-sha256 = the body's SHA-256) or UNSIGNED-PAYLOAD, and a Content-MD5
header or none. Every PUT also pays the MD5 of its ETag. This bench sends the same bodies in
each shape and reports the server's CPU per PUT (utime + stime of `objectcache serve` from
/proc/<pid>/stat over a wrk run, divided by the PUTs answered 200) and its user-space part
(utime alone: the copies and hashes, without the kernel's page-cache and socket work), ops/s
and p50:

  unsigned       presigned URL (X-Amz-Content-Sha256 is UNSIGNED-PAYLOAD)
  unsigned-md5   presigned URL + Content-MD5
  signed         Authorization header, x-amz-content-sha256 = hex SHA-256 of the body
  signed-md5     signed + Content-MD5 (signed too, as botocore signs it)

Every (layout, size, shape) cell runs each binary (--bin NAME=PATH, several) in turn on a
fresh server (empty data dir, [storage] extent_layout from --layouts), the order reversed
every repetition, so the A/B ratio is taken within seconds on the shared machine. Every PUT
goes to a key not written before in that server (as write_bench.py's single PUTs), so no
cell pays for an earlier cell's compactions. Requests whose status is not 200 are counted
as errors and excluded from CPU/PUT.

  bench/put_cpu_bench.py --bin main=/path/objectcache --bin new=build/release/gateway/objectcache
      [--layouts sst,data_files] [--sizes 65536,4194304] [--shapes unsigned,signed,...]
      [--conc 8] [--seconds 3] [--reps 3] [--perf DIR] [--out PREFIX]

Writes PREFIX.json and PREFIX.md (default bench/results/<UTC date>/put_cpu_bench).
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
import common  # noqa: E402
from presign import Presigner  # noqa: E402

ACCESS = "OCPUTCPUBENCHACCESS1"
SECRET = "ocPutCpuBenchSecret0000000000000000000001"
BUCKET = "putcpu"
SHAPES = ["unsigned", "unsigned-md5", "signed", "signed-md5"]
# Distinct keys per second of a cell (more than these rates would be overwrites).
KEYS_PER_S = {64 << 10: 8000, 1 << 20: 3000, 4 << 20: 1000}

# wrk script: thread t of n cycles through lines t, t + n, ... of OC_PB_PATHS; a line is the
# path, then tab-separated "name: value" headers. done() prints one parseable line.
WRK_LUA = r"""
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  paths, hdrs, counter, non200 = {}, {}, 0, 0
  local n = tonumber(os.getenv("OC_PB_THREADS"))
  local f = io.open(os.getenv("OC_PB_BODY"), "rb")
  body = f:read("*a")
  f:close()
  local i = 0
  for line in io.lines(os.getenv("OC_PB_PATHS")) do
    if i % n == id then
      local fields = {}
      for field in string.gmatch(line, "[^\t]+") do fields[#fields + 1] = field end
      local headers = {}
      for k = 2, #fields do
        local name, value = string.match(fields[k], "^([^:]+): (.*)$")
        headers[name] = value
      end
      paths[#paths + 1] = fields[1]
      hdrs[#hdrs + 1] = headers
    end
    i = i + 1
  end
end
function request()
  counter = counter + 1
  local i = (counter - 1) % #paths + 1
  return wrk.format("PUT", paths[i], hdrs[i], body)
end
function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("non200") end
  local e = summary.errors
  io.write(string.format(
    "OCPB requests=%d duration_us=%d non200=%d socket_errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, bad, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def size_label(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def proc_cpu(pid):
    """(user, system) CPU seconds of the process so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


class HeaderSigner(Presigner):
    """SigV4 header authentication of a PUT with a signed payload hash (botocore's shape)."""

    def headers(self, bucket, key, body_sha256, content_md5=None):
        uri = "/" + urllib.parse.quote(bucket, safe="")
        if key:
            uri += "/" + urllib.parse.quote(key, safe="/~")
        hdrs = {"host": self.host, "x-amz-content-sha256": body_sha256,
                "x-amz-date": self.amz_date}
        if content_md5:
            hdrs["content-md5"] = content_md5
        names = sorted(hdrs)
        canonical = ("PUT\n" + uri + "\n\n" + "".join(f"{n}:{hdrs[n]}\n" for n in names) + "\n" +
                     ";".join(names) + "\n" + body_sha256)
        to_sign = (f"AWS4-HMAC-SHA256\n{self.amz_date}\n{self.scope}\n"
                   + hashlib.sha256(canonical.encode()).hexdigest())
        sig = hmac.new(self.signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
        hdrs["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access}/{self.scope}, "
                                 f"SignedHeaders={';'.join(names)}, Signature={sig}")
        del hdrs["host"]  # wrk sends its own
        return uri, hdrs


def request_lines(url, shape, size, body, keys):
    signer = HeaderSigner(url, ACCESS, SECRET, expires=7200)
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    sha = hashlib.sha256(body).hexdigest()
    lines = []
    for i in range(keys):
        key = f"s{size}/{i:06d}"
        if shape.startswith("unsigned"):
            line = signer.path("PUT", BUCKET, key)
            if shape == "unsigned-md5":
                line += "\tContent-MD5: " + md5
        else:
            uri, hdrs = signer.headers(BUCKET, key, sha, md5 if shape == "signed-md5" else None)
            line = uri + "".join(f"\t{k}: {v}" for k, v in hdrs.items())
        lines.append(line)
    return lines


class Run:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.rows = []

    def start(self, name, binary, layout):
        port = common.free_port()
        root = os.path.join(self.tmp, f"{name}-{layout}")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        conf = os.path.join(root, "objectcache.toml")
        with open(conf, "w") as f:
            f.write('[gateway]\nmax_object_bytes = "4GiB"\naccess_log = false\n'
                    f'[storage]\nextent_layout = "{layout}"\n')
        env = dict(os.environ, OC_ACCESS_KEY=ACCESS, OC_SECRET_KEY=SECRET)
        log = open(os.path.join(root, "server.log"), "ab")
        proc = subprocess.Popen([binary, "serve", "--config", conf, "--data-dir",
                                 os.path.join(root, "data"), "--listen", f"127.0.0.1:{port}"],
                                env=env, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        if not common.wait_healthy(url, proc):
            raise SystemExit(f"{name} {layout}: server did not start, see {root}/server.log")
        signer = HeaderSigner(url, ACCESS, SECRET)
        sha = hashlib.sha256(b"").hexdigest()
        uri, hdrs = signer.headers(BUCKET, "", sha)
        req = urllib.request.Request(url + "/" + BUCKET, method="PUT", headers=hdrs)
        urllib.request.urlopen(req, timeout=10)
        return proc, url, proc.pid

    @staticmethod
    def stop(proc):
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def wrk(self, url, pid, lines, body_path, perf_name=None):
        threads = 1 if self.a.conc == 1 else 2
        paths = os.path.join(self.tmp, "paths.txt")
        with open(paths, "w") as f:
            f.write("\n".join(lines) + "\n")
        script = os.path.join(self.tmp, "put.lua")
        with open(script, "w") as f:
            f.write(WRK_LUA)
        env = dict(os.environ, OC_PB_PATHS=paths, OC_PB_THREADS=str(threads),
                   OC_PB_BODY=body_path)
        perf = None
        if perf_name and self.a.perf:
            perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o",
                                     os.path.join(self.a.perf, perf_name + ".data")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        user0, sys0 = proc_cpu(pid)
        out = subprocess.run(["wrk", "-t", str(threads), "-c", str(self.a.conc), "-d",
                              f"{int(self.a.seconds)}s", "-s", script, url], env=env,
                             capture_output=True, text=True, timeout=self.a.seconds + 120)
        user1, sys1 = proc_cpu(pid)
        user, cpu = user1 - user0, user1 - user0 + sys1 - sys0
        if perf is not None:
            perf.send_signal(2)
            perf.wait()
        line = [x for x in out.stdout.splitlines() if x.startswith("OCPB ")]
        if not line:
            raise SystemExit(f"wrk failed: {out.stdout[-400:]} {out.stderr[-400:]}")
        r = {k: int(v) for k, v in (kv.split("=") for kv in line[-1].split()[1:])}
        ok = r["requests"] - r["non200"]
        secs = r["duration_us"] / 1e6
        return {"requests": r["requests"], "errors": r["non200"] + r["socket_errors"],
                "ops_per_s": ok / secs, "cpu_s": cpu,
                "cpu_us_per_put": cpu / ok * 1e6 if ok else None, "user_s": user,
                "user_us_per_put": user / ok * 1e6 if ok else None,
                "p50_ms": r["p50_us"] / 1e3, "p99_ms": r["p99_us"] / 1e3}

    def measure(self):
        bins = list(self.a.bin)
        for rep in range(self.a.reps):
            order = bins if rep % 2 == 0 else bins[::-1]
            for layout in self.a.layouts:
                for size in self.a.sizes:
                    body = os.urandom(size)
                    body_path = os.path.join(self.tmp, "body.bin")
                    with open(body_path, "wb") as f:
                        f.write(body)
                    keys = int(KEYS_PER_S[size] * self.a.seconds) + 64
                    for shape in self.a.shapes:
                        for name in order:
                            proc, url, pid = self.start(name, self.a.paths[name], layout)
                            try:
                                lines = request_lines(url, shape, size, body, keys)
                                r = self.wrk(url, pid, lines, body_path,
                                             f"{name}-{layout}-{size}-{shape}-{rep}")
                            finally:
                                self.stop(proc)
                            r.update({"bin": name, "layout": layout, "size": size,
                                      "shape": shape, "rep": rep, "conc": self.a.conc,
                                      "load": os.getloadavg()[0]})
                            self.rows.append(r)
                            cpu = r["cpu_us_per_put"]
                            print(f"rep {rep} {layout} {size_label(size)} {shape:12s} {name:8s}"
                                  f" {r['ops_per_s']:7.0f} ops/s "
                                  f"{cpu if cpu is not None else float('nan'):8.0f} us CPU/PUT"
                                  f" (user {r['user_us_per_put'] or float('nan'):.0f})"
                                  f" errors {r['errors']} load {r['load']:.1f}",
                                  file=sys.stderr)


def markdown(doc):
    rows = doc["rows"]
    bins = doc["bins"]
    out = [f"put_cpu_bench {doc['started']}: concurrency {doc['conc']}, {doc['seconds']} s per "
           f"cell, {doc['reps']} repetitions alternating {', '.join(bins)}; load average "
           f"{min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}. Medians; "
           "server CPU µs per PUT (ops/s), then its user-space part alone (the kernel's page-cache "
           "and socket work varies most with the machine's load); ratios total / user.", "",
           "| layout | size | shape | " + " | ".join(bins) + " | " +
           " | ".join(f"{b}/{bins[0]}" for b in bins[1:]) + " |",
           "| --- | --- | --- |" + " --- |" * (2 * len(bins) - 1)]
    cells = {}
    for r in rows:
        cells.setdefault((r["layout"], r["size"], r["shape"]), {}).setdefault(r["bin"], []).append(r)
    for (layout, size, shape), per in cells.items():
        med, medu = {}, {}
        texts = []
        for b in bins:
            rs = per.get(b, [])
            cpu = [r["cpu_us_per_put"] for r in rs if r["cpu_us_per_put"] is not None]
            user = [r["user_us_per_put"] for r in rs if r.get("user_us_per_put") is not None]
            ops = [r["ops_per_s"] for r in rs]
            med[b] = statistics.median(cpu) if cpu else None
            medu[b] = statistics.median(user) if user else None
            text = f"{med[b]:.0f} ({statistics.median(ops):.0f})" if cpu else "-"
            texts.append(text + (f", user {medu[b]:.0f}" if user else ""))

        def ratio(m, b):
            return f"{m[b] / m[bins[0]]:.2f}" if m[b] and m[bins[0]] else "-"
        ratios = [f"{ratio(med, b)} / {ratio(medu, b)}" for b in bins[1:]]
        out.append(f"| {layout} | {size_label(size)} | {shape} | " + " | ".join(texts) + " | " +
                   " | ".join(ratios) + " |")
    errors = sum(r["errors"] for r in rows)
    out += ["", f"Requests not answered 200: {errors}."]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--layouts", default="sst,data_files")
    ap.add_argument("--sizes", default="65536,4194304")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--conc", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data-dir", help="parent of the servers' data dirs (default /tmp)")
    ap.add_argument("--perf", metavar="DIR", help="perf record -g the server of every cell "
                    "into DIR/<bin>-<layout>-<size>-<shape>-<rep>.data")
    ap.add_argument("--out")
    a = ap.parse_args()
    bins = {}
    for spec in a.bin:
        name, _, path = spec.partition("=")
        bins[name] = os.path.abspath(path)
    a.bin = list(bins)
    a.layouts = a.layouts.split(",")
    a.sizes = [int(s) for s in a.sizes.split(",")]
    a.shapes = a.shapes.split(",")
    started = datetime.datetime.now(datetime.timezone.utc)
    out = a.out or os.path.join(HERE, "results", started.strftime("%Y-%m-%d"), "put_cpu_bench")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-put-cpu-", dir=a.data_dir)
    run = Run(a, tmp)
    a.paths = bins
    try:
        run.measure()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc = {"started": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "bins": a.bin, "conc": a.conc,
           "seconds": a.seconds, "reps": a.reps, "rows": run.rows}
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    text = markdown(doc)
    with open(out + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
