#!/usr/bin/python3
"""write_bench: ObjectCache's write path in one run, beside the disk's own ceiling and Ceph
RGW (issue 16, step 1 "Measure first").

Every part alternates the systems repetition by repetition, so ratios are taken within the run
on a shared, noisy machine. Systems: `objectcache serve` with the [storage] configurations of
CONFIGS (the profile's "configs", or --configs): extent_layout = "data_files" (the default:
extents appended once to data files), "sst" (SST blocks) or "blob" (integrated blob files);
and Ceph RGW on a throw-away single-node cluster (tools/ceph-test-cluster up --rgw
[--bluestore]) as the peer for descriptor PUTs. Llama-3.1-8B chunks: L = 32, 4 KiB per token
per layer, S = 4 KiB·G per layer slice, one chunk object = L·S.

  ceiling    `dd if=/dev/zero bs=1M conv=fdatasync` and `oflag=direct` in the filesystem of
             the servers' data dirs, at the start and at the end of the run
  desc       descriptor PUTs (objectcache_bench --put-mode descriptor: up to 128 chunks per
             request, one request at a time) for each (G, N) of the profile; RGW: one S3 PUT
             per chunk object, 8 concurrent (--put-mode object), the same chunks
  clients    (only when named in --parts) one prefix (224 chunks at G = 16: 448 MiB) stored
             by one descriptor PUT from each client: the Python package and `oc put-chunks`,
             each over the HTTP body and pulled over UCX (bench/harness/write_bench_clients.py),
             beside dd and RGW
  s3put      single S3 PUTs of 4 MiB / 1 MiB / 64 KiB, every request a distinct key (wrk with
             presigned SigV4 URLs, a Lua script cycling through them), concurrency 1 and 8
  multipart  64 MiB objects of 8 MiB parts (boto3, parts uploaded by 4 threads)
  fill       per configuration, a fresh server: 64 KiB GETs of pre-stored objects (a few wrk
             connections) idle, then during a fill of distinct chunks by descriptor PUTs, then
             idle again once settled. Write amplification = bytes the server process wrote
             (/proc/<pid>/io write_bytes) / bytes stored, right after the fill and once RocksDB
             reports no pending or running compaction and write_bytes stops moving (polled).

Server CPU seconds come from /proc/<pid>/stat (utime + stime) before and after each
measurement, bytes written from /proc/<pid>/io. The issue's targets are judged in the report.
Writes PREFIX.json, PREFIX.png and PREFIX.md.

  bench/write_bench.py [--smallest | --reduced | --full] [--build DIR] [--out PREFIX]
                       [--data-dir DIR] [--no-rgw] [--configs a,b] [--parts desc,s3put,...]
  bench/write_bench.py --report-only PREFIX     # PREFIX.md and .png again from PREFIX.json

--smallest takes seconds and tiny sizes (the test suite's; RGW on memstore; its figures mean
nothing); --reduced (default) a few minutes, with a 1 GiB fill (less than the issue's 4 GiB,
and the report says so); --full larger loads and a fill of 3,584 chunks at G = 16 (7 GiB)
when the disk has room for it, else 4 GiB (the report says which). Data dirs go in a temp dir
on the repository's filesystem unless /tmp is that filesystem and not tmpfs (--data-dir
overrides). Progress goes to stderr, each tool's output to a log directory (printed).
bench/run-all runs this as experiment 10. The systems (servers, cluster, disk, /proc meters)
are bench/harness/write_bench_systems.py; the analysis and report bench/harness/
write_bench_report.py.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import signal
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
import write_bench_clients  # noqa: E402
from presign import Presigner  # noqa: E402
from write_bench_report import NOTES, markdown, plot, summarize  # noqa: E402
from write_bench_systems import (  # noqa: E402
    BUCKET, BYTES_PER_TOKEN_LAYER, CONFIGS, GiB, KiB, LAYERS, MiB, Meter, Systems, proc_cpu,
    proc_io, s3_client, size_label)

RGW_CONCURRENCY = 8  # an S3 KV connector's usual in-flight PUTs
# Keys per second each wrk run may use before it has to reuse one (then the row says so).
PUT_RATE_CAP = {64 * KiB: 8000, MiB: 3000, 4 * MiB: 1000}

PROFILES = {
    "smallest": {"configs": ["data_files", "sst"], "reps": 1, "rgw": True, "bluestore": False,
                 "desc_shapes": [[16, 4], [256, 1]], "put_sizes": [4 * MiB, 64 * KiB],
                 "put_conc": [8], "put_seconds": 1, "multipart_bytes": 16 * MiB,
                 "part_bytes": 8 * MiB, "fill_g": 16, "fill_chunks": 16, "read_objects": 16,
                 "readers": 2, "read_seconds": 1, "settle_timeout_s": 30, "settle_quiet_s": 2,
                 "dd_bytes": 16 * MiB, "client_shape": [16, 4]},
    "reduced": {"configs": ["data_files", "sst"], "reps": 3, "rgw": True, "bluestore": True,
                "desc_shapes": [[16, 224], [64, 56], [256, 14]],
                "put_sizes": [4 * MiB, MiB, 64 * KiB], "put_conc": [1, 8], "put_seconds": 3,
                "multipart_bytes": 64 * MiB, "part_bytes": 8 * MiB, "fill_g": 16,
                "fill_chunks": 512, "read_objects": 64, "readers": 4, "read_seconds": 3,
                "settle_timeout_s": 180, "settle_quiet_s": 3, "dd_bytes": GiB,
                "client_shape": [16, 224]},
    "full": {"configs": ["data_files", "sst"], "reps": 3, "rgw": True, "bluestore": True,
             "desc_shapes": [[16, 224], [64, 112], [256, 28]],
             "put_sizes": [4 * MiB, MiB, 64 * KiB], "put_conc": [1, 8], "put_seconds": 5,
             "multipart_bytes": 64 * MiB, "part_bytes": 8 * MiB, "fill_g": 16,
             "fill_chunks": 3584, "fill_chunks_min": 2048, "read_objects": 256, "readers": 4,
             "read_seconds": 5, "settle_timeout_s": 900, "settle_quiet_s": 5,
             "dd_bytes": 4 * GiB, "client_shape": [16, 224]},
}
PARTS = ["ceiling", "desc", "clients", "s3put", "multipart", "fill"]
# Without --parts: all but "clients" (issue 33's per-client PUTs run when named, so run-all's
# experiment 10 keeps its length and its rows).
DEFAULT_PARTS = [p for p in PARTS if p != "clients"]
PLANNED_S = {"smallest": 75, "reduced": 480, "full": 2400}

# wrk script: each thread cycles through its share of the presigned paths in OC_WB_PATHS
# (line i goes to thread i mod threads), sending OC_WB_BODY's bytes as the body if set; done()
# prints one parseable line (latencies in µs) and whether a thread ran out of distinct keys.
WRK_LUA = r"""
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  paths, counter, body = {}, 0, nil
  local n = tonumber(os.getenv("OC_WB_THREADS"))
  local i = 0
  for line in io.lines(os.getenv("OC_WB_PATHS")) do
    if i % n == id then paths[#paths + 1] = line end
    i = i + 1
  end
  npaths = #paths
  local b = os.getenv("OC_WB_BODY")
  if b then
    local f = io.open(b, "rb")
    body = f:read("*a")
    f:close()
  end
end
function request()
  counter = counter + 1
  return wrk.format(os.getenv("OC_WB_METHOD"), paths[(counter - 1) % #paths + 1], nil, body)
end
function done(summary, latency, requests)
  local reused = 0
  for _, t in ipairs(threads) do
    if t:get("counter") > t:get("npaths") then reused = 1 end
  end
  local e = summary.errors
  io.write(string.format(
    "OCWB requests=%d duration_us=%d status_errors=%d socket_errors=%d p50_us=%d p99_us=%d " ..
    "p999_us=%d keys_reused=%d\n",
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), reused))
end
"""


class Bench(Systems):
    """One run: the systems (write_bench_systems.Systems) and the measurements (self.doc)."""

    # --- descriptor PUTs and RGW's per-chunk PUTs --------------------------------------------

    def load(self, system, g, chunks, label, background=False):
        """objectcache_bench storing `chunks` chunks at G = g (descriptor PUTs, or RGW's
        per-chunk S3 PUTs). Returns the Popen when background, else the "puts" row."""
        url, access, secret, pids = self.target(system)
        out = os.path.join(self.tmp, f"{label}.json")
        mode = ["--put-mode", "object", "--put-concurrency", str(RGW_CONCURRENCY)] \
            if system == "rgw" else ["--put-mode", "descriptor"]
        cmd = [os.path.join(self.build, "bench", "objectcache_bench"), "--endpoint", url,
               "--bucket", BUCKET, "--json", out, "--label", system, "--groups", str(g),
               "--contexts", str(g * chunks), "--hits", "1", "--methods", "", *mode]
        env = dict(os.environ, AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret)
        self.record(" ".join(c if c not in (url, out) else "<endpoint>" if c == url else "<json>"
                             for c in cmd))
        if background:
            log = open(os.path.join(self.log_dir, f"{label}.err"), "wb")
            return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log), out
        self.run(cmd, label, timeout=3600, env=env, record=False)
        return json.load(open(out))["puts"][0]

    def desc(self):
        for rep in range(self.p["reps"]):
            for g, n in self.p["desc_shapes"]:
                for system in self.systems(with_rgw=True):
                    with self.fresh(system, "desc"):
                        if system != "rgw":  # untimed: the bucket's first files, connections
                            self.load(system, 16, 1, f"prime-{system}")
                        m = Meter(self.target(system)[3])
                        row = self.load(system, g, n, f"desc-{system}-g{g}-n{n}-{rep}")
                        row.update(m.done())  # the server's CPU replaces the client's
                    row.update({"system": system, "rep": rep})
                    self.doc["desc"].append(row)
                    self.say(f"desc {rep + 1}/{self.p['reps']} G={g} N={n} {system} "
                             f"({row['method']}): {row['gbps']:.3f} GB/s")

    # --- single PUTs and multipart uploads ---------------------------------------------------

    def wrk(self, url, method, paths, conc, seconds, body=None, stop=None):
        """wrk over `paths` (distinct keys in turn); returns its OCWB line as a dict. With
        `stop` (a Popen), runs until that process exits, then interrupts wrk."""
        threads = 1 if conc == 1 else 2
        paths_file = os.path.join(self.tmp, "wrk-paths.txt")
        with open(paths_file, "w") as f:
            f.write("\n".join(paths) + "\n")
        script = os.path.join(self.tmp, "write_bench.lua")
        with open(script, "w") as f:
            f.write(WRK_LUA)
        env = dict(os.environ, OC_WB_PATHS=paths_file, OC_WB_THREADS=str(threads),
                   OC_WB_METHOD=method)
        if body:
            env["OC_WB_BODY"] = body
        cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", f"{seconds}s", "-s", script, url]
        self.record(" ".join(cmd[:-3] + ["<write_bench.lua>", "<endpoint>"]) +
                    f"   # {method}, presigned paths cycled per thread")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        ran_out = False
        if stop is not None:
            while proc.poll() is None and stop.poll() is None:
                time.sleep(0.05)
            ran_out = proc.poll() is not None  # wrk's duration ended before the writes did
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=seconds + 120)
        lines = [l for l in out.splitlines() if l.startswith("OCWB ")]
        if proc.returncode != 0 or not lines:
            raise common.StepFailed(f"wrk {method}: exit {proc.returncode}: {(out + err)[-400:]}")
        r = {k: int(v) for k, v in (kv.split("=") for kv in lines[-1].split()[1:])}
        secs = r["duration_us"] / 1e6
        errors = r["status_errors"] + r["socket_errors"]
        return {"requests": r["requests"], "errors": errors, "seconds": secs,
                "ops_per_s": r["requests"] / secs if secs else 0.0,
                "p50_ms": r["p50_us"] / 1e3, "p99_ms": r["p99_us"] / 1e3,
                "p999_ms": r["p999_us"] / 1e3, "keys_reused": bool(r["keys_reused"]),
                "wrk_ended_first": ran_out}

    def body(self, size):
        if size not in self.body_files:
            path = os.path.join(self.tmp, f"body-{size}")
            with open(path, "wb") as f:
                f.write(os.urandom(size))
            self.body_files[size] = path
        return self.body_files[size]

    def s3put(self):
        for rep in range(self.p["reps"]):
            for size in self.p["put_sizes"]:
                for conc in self.p["put_conc"]:
                    for system in self.systems(with_rgw=False):
                        with self.fresh(system, "put"):
                            url, access, secret, pids = self.target(system)
                            signer = Presigner(url, access, secret, expires=7200)
                            n = int(PUT_RATE_CAP[size] * self.p["put_seconds"]) + 64
                            paths = [signer.path("PUT", BUCKET, f"put/{i:07d}") for i in range(n)]
                            m = Meter(pids)
                            r = self.wrk(url, "PUT", paths, conc, self.p["put_seconds"],
                                         self.body(size))
                            r.update(m.done())
                        r.update({"system": system, "rep": rep, "size": size,
                                  "concurrency": conc, "keys": n,
                                  "gbps": (r["requests"] - r["errors"]) * size / r["seconds"] /
                                  1e9 if r["seconds"] else 0.0})
                        self.doc["s3put"].append(r)
                        cpu = sum(r["cpu_s"].values()) / max(1, r["requests"]) * 1e6
                        self.say(f"S3 PUT {rep + 1}/{self.p['reps']} {size_label(size)} c={conc} "
                                 f"{system}: {r['ops_per_s']:.0f} ops/s, {cpu:.0f} µs CPU/PUT, "
                                 f"errors {r['errors']}")

    def multipart(self):
        size, part = self.p["multipart_bytes"], self.p["part_bytes"]
        parts = -(-size // part)
        data = os.urandom(part)
        self.record(f"boto3 create_multipart_upload, {parts} x upload_part of "
                    f"{size_label(part)} from 4 threads, complete_multipart_upload")
        for rep in range(self.p["reps"]):
            for system in self.systems(with_rgw=False):
                with self.fresh(system, "multipart"):
                    row = self.upload(system, size, part, data)
                row.update({"system": system, "rep": rep})
                self.doc["multipart"].append(row)
                self.say(f"multipart {rep + 1}/{self.p['reps']} {system}: {row['gbps']:.3f} GB/s")

    def upload(self, system, size, part, data):
        """One multipart upload of `size` bytes in parts of `part`, 4 parts in flight."""
        url, access, secret, pids = self.target(system)
        s3 = s3_client(url, access, secret)
        parts = -(-size // part)
        s3.put_object(Bucket=BUCKET, Key="warm-up", Body=b"x")  # connections, first files
        m = Meter(pids)
        t0 = time.monotonic()
        up = s3.create_multipart_upload(Bucket=BUCKET, Key="multipart")["UploadId"]

        def put(k):
            body = data[:min(part, size - k * part)]
            return s3.upload_part(Bucket=BUCKET, Key="multipart", UploadId=up,
                                  PartNumber=k + 1, Body=body)["ETag"]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            etags = list(pool.map(put, range(parts)))
        s3.complete_multipart_upload(
            Bucket=BUCKET, Key="multipart", UploadId=up,
            MultipartUpload={"Parts": [{"ETag": e, "PartNumber": k + 1}
                                       for k, e in enumerate(etags)]})
        secs = time.monotonic() - t0
        return {"object_bytes": size, "part_bytes": part, "parts": parts, "total_s": secs,
                "gbps": size / secs / 1e9, **m.done()}

    # --- fill: write amplification and reads under writes ------------------------------------

    def stats(self, url):
        with urllib.request.urlopen(url + "/stats", timeout=10) as r:
            return json.load(r).get("store", {})

    def reads(self, system, phase, paths, stop=None):
        url = self.target(system)[0]
        r = self.wrk(url, "GET", paths, self.p["readers"], self.p["read_seconds"] if stop is None
                     else 3600, stop=stop)
        r.update({"system": system, "phase": phase, "size": 64 * KiB,
                  "readers": self.p["readers"]})
        self.doc["reads"].append(r)
        self.say(f"reads {phase} {system}: {r['ops_per_s']:.0f} ops/s, p50 {r['p50_ms']:.2f} ms, "
                 f"p99 {r['p99_ms']:.2f} ms")
        return r

    def fill(self, system):
        """A fresh server: reads idle, a fill with reads running, settling, reads idle again."""
        self.start_server(system, "fill")
        try:
            url, access, secret, pids = self.target(system)
            pid = pids["objectcache"][0]
            s3 = s3_client(url, access, secret)
            body = open(self.body(64 * KiB), "rb").read()
            keys = [f"read/{i:05d}" for i in range(self.p["read_objects"])]
            for k in keys:
                s3.put_object(Bucket=BUCKET, Key=k, Body=body)
            signer = Presigner(url, access, secret, expires=7200)
            paths = [signer.path("GET", BUCKET, k) for k in keys]
            self.reads(system, "idle-before", paths)
            g, n = self.p["fill_g"], self.p["fill_chunks"]
            stored = g * LAYERS * BYTES_PER_TOKEN_LAYER * n
            io0, cpu0 = proc_io(pid), proc_cpu(pid)
            t0 = time.monotonic()
            proc, _ = self.load(system, g, n, f"fill-{system}", background=True)
            try:
                read = self.reads(system, "during-fill", paths, stop=proc)
            except BaseException:
                proc.kill()  # the reads failed: stop the fill too
                proc.wait()
                raise
            if proc.wait() != 0:
                raise common.StepFailed(f"fill {system}: objectcache_bench exit {proc.returncode} "
                                        f"(log {self.log_dir}/fill-{system}.err)")
            fill_s = time.monotonic() - t0
            io1, cpu1 = proc_io(pid), proc_cpu(pid)
            after_fill = self.stats(url)
            self.say(f"fill {system}: {stored / GiB:.2f} GiB in {fill_s:.1f} s, write_bytes "
                     f"{(io1['write_bytes'] - io0['write_bytes']) / stored:.2f}x; settling")
            settled, last, quiet, t1 = False, io1["write_bytes"], 0.0, time.monotonic()
            step = 1.0
            while time.monotonic() - t1 < self.p["settle_timeout_s"]:
                time.sleep(step)
                st, now = self.stats(url), proc_io(pid)["write_bytes"]
                idle = (st.get("pending_compaction_bytes", 0) == 0
                        and st.get("running_compactions", 0) == 0)
                quiet = quiet + step if idle and now == last else 0.0
                last = now
                if quiet >= self.p["settle_quiet_s"]:
                    settled = True
                    break
            settle_s = time.monotonic() - t1
            io2, st2 = proc_io(pid), self.stats(url)
            du = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in
                     os.walk(os.path.join(self.servers[system][2], "data")) for f in fs)
            self.reads(system, "idle-after", paths)
            wb = io2["write_bytes"] - io0["write_bytes"]
            row = {"system": system, "G": g, "chunks": n, "stored_bytes": stored,
                   "total_s": fill_s, "gbps": stored / fill_s / 1e9,
                   "cpu_s": {"objectcache": cpu1 - cpu0},
                   "write_bytes_fill": io1["write_bytes"] - io0["write_bytes"],
                   "wa_fill": (io1["write_bytes"] - io0["write_bytes"]) / stored,
                   "write_bytes_settled": wb, "wa_settled": wb / stored,
                   "cancelled_write_bytes": io2["cancelled_write_bytes"] -
                   io0["cancelled_write_bytes"],
                   "settled": settled, "settle_s": settle_s,
                   "pending_compaction_bytes_after_fill":
                   after_fill.get("pending_compaction_bytes"),
                   "memtable_bytes_settled": st2.get("memtable_bytes"),
                   "wa_settled_with_memtable": (wb + st2.get("memtable_bytes", 0)) / stored,
                   "disk_bytes_settled": du, "space_amplification": du / stored,
                   "reads_covered_fill": not read["wrk_ended_first"]}
            self.doc["fill"].append(row)
            self.say(f"fill {system}: WA {row['wa_fill']:.2f} after the fill, "
                     f"{row['wa_settled']:.2f} settled ({'settled' if settled else 'timed out'} "
                     f"after {settle_s:.0f} s)")
        finally:
            self.stop_server(system)

    def measure(self):
        parts = self.p.get("parts", DEFAULT_PARTS)
        st = os.statvfs(self.data)
        self.doc["disk"]["free_bytes_at_start"] = st.f_bavail * st.f_frsize
        if "ceiling" in parts:
            self.ceiling("start")
        if "desc" in parts:
            if self.want_rgw and self.room_for_rgw(st.f_bavail * st.f_frsize):
                self.cluster_up()
            if self.rgw:
                self.say("priming rgw (one chunk: RGW creates its data pool on the first write)")
                self.load("rgw", 16, 1, "prime-rgw")
            self.desc()
            self.cluster_down()
        if "clients" in parts:
            write_bench_clients.measure(self)
        if "s3put" in parts:
            self.s3put()
        if "multipart" in parts:
            self.multipart()
        if "fill" in parts:
            self.check_disk()
            for system in self.systems(with_rgw=False):
                self.fill(system)
        if "ceiling" in parts:
            self.ceiling("end")


def run(config, build, log_dir, progress, tmp, data_dir=None, rgw=True):
    """Runs every part; returns the JSON document (raw rows, summary, targets, commands,
    notes; "error" if a step failed, with the rows measured before it). Servers and the
    cluster are stopped and the data dirs removed in any case."""
    b = Bench(dict(config), build, log_dir, progress, tmp, data_dir, rgw)
    failure = None
    try:
        b.measure()
    except (common.StepFailed, OSError, KeyError, ValueError, RuntimeError) as e:
        failure = f"{type(e).__name__}: {e}"
        b.say("failed: " + failure)
    except Exception as e:  # boto3's ClientError and friends: keep what was measured
        failure = f"{type(e).__name__}: {e}"
        b.say("failed: " + failure)
    finally:
        for system in list(b.servers):
            b.stop_server(system)
        b.cluster_down()
        shutil.rmtree(b.data, ignore_errors=True)
    doc = dict(b.doc)
    doc["effective"] = {k: b.p[k] for k in ("fill_chunks", "fill_g")}
    doc["summary"], doc["targets"] = summarize(doc)
    doc["commands"] = b.commands
    doc["notes"] = b.notes + NOTES
    if failure:
        doc["error"] = failure
    return doc


def write_report(doc, out):
    """PREFIX.json (with the summary and targets), PREFIX.png and PREFIX.md."""
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    plot(doc, out + ".png")
    text, finding = markdown(doc)
    with open(out + ".md", "w") as f:
        f.write(f"# ObjectCache write path ({doc['profile']})\n\n**Finding.** {finding}\n\n"
                f"Load average {doc['load_start'][0]:.2f} at start, {doc['load_end'][0]:.2f} at "
                f"end; commit {doc['versions']['git_commit']}.\n\n{text}\n\n"
                f"![plot]({os.path.basename(out)}.png)\n\n" +
                "".join(f"- {n}\n" for n in doc["notes"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    for name in PROFILES:
        size.add_argument("--" + name, dest="profile", action="store_const", const=name)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="PREFIX of PREFIX.json, .png and .md (default "
                    "bench/results/<YYYY-MM-DD>/write-bench)")
    ap.add_argument("--data-dir", help="parent of the servers' data dirs (default: see above)")
    ap.add_argument("--no-rgw", action="store_true", help="skip the Ceph RGW peer")
    ap.add_argument("--configs", help="comma-separated configurations of ours (default: the "
                    f"profile's; known: {', '.join(CONFIGS)})")
    ap.add_argument("--parts", help=f"comma-separated parts to run, of {', '.join(PARTS)} "
                    f"(default: {', '.join(DEFAULT_PARTS)})")
    ap.add_argument("--report-only", metavar="PREFIX",
                    help="rewrite PREFIX.md and PREFIX.png from PREFIX.json")
    a = ap.parse_args()
    if a.report_only:
        doc = json.load(open(a.report_only + ".json"))
        doc["summary"], doc["targets"] = summarize(doc)
        write_report(doc, a.report_only)
        return 0
    profile = a.profile or "reduced"
    out = os.path.abspath(a.out or os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d", time.gmtime()), "write-bench"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-write-bench-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    progress = common.Progress([("write bench", PLANNED_S[profile])])
    progress.begin(0)
    progress.say(f"profile {profile}; tool logs in {log_dir}")
    config = dict(PROFILES[profile])
    if a.configs:
        config["configs"] = a.configs.split(",")
        unknown = [c for c in config["configs"] if c not in CONFIGS]
        if unknown:
            ap.error(f"unknown configuration(s): {', '.join(unknown)}")
    if a.parts:
        config["parts"] = a.parts.split(",")
        unknown = [x for x in config["parts"] if x not in PARTS]
        if unknown:
            ap.error(f"unknown part(s): {', '.join(unknown)}")
    doc = {"profile": profile, "config": config, "load_start": common.load_average()}
    try:
        doc.update(run(config, os.path.abspath(a.build), log_dir, progress, tmp, a.data_dir,
                       not a.no_rgw))
    finally:
        doc["load_end"] = common.load_average()
    doc["machine"] = common.machine()
    doc["versions"] = common.versions(os.path.abspath(a.build))
    doc = common.portable(doc, tmp)
    write_report(doc, out)
    for t in doc["targets"]:
        verdict = {True: "met", False: "NOT MET", None: "not measured"}[t["met"]]
        progress.say(f"target {verdict}: {t['target']}: {t['figures']}")
    progress.say(f"wrote {out}.json, {out}.png and {out}.md")
    return 1 if doc.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
