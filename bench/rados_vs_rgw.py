#!/usr/bin/python3
"""rados_vs_rgw: ObjectCache on Ceph RADOS against Ceph RGW on the same cluster (issue 15).

One throw-away cluster (tools/ceph-test-cluster up --rgw [--bluestore]): the same OSD under
RGW and under `objectcache serve` with `[storage] backend = "rados"`, so the difference
isolates the gateway and the aggregation. Llama-3.1-8B chunks (L = 32, 4 KiB per token per
layer, S = 4 KiB·G per layer slice, one chunk object = L·S):

  loads   RGW: one S3 PUT per chunk, 8 concurrent   ours: descriptor PUTs (RADOS and RocksDB)
  reads   RGW: per-object GETs and per-chunk-per-layer range GETs, 8 concurrent
          ours on RADOS: one descriptor GET over UCX and over the HTTP body
          ceiling: the same against `objectcache serve` on RocksDB
          floor: `rados bench` writes, seq and rand reads, -t 8, at the object and the slice
          size; the Ceph daemons run with tcmalloc (tools/ceph-test-cluster --tcmalloc)
  s3ops   64 KiB S3 GET and PUT ops/s (wrk, presigned URLs; bench/gateway_bench.py
          --endpoint) through RGW, ours on RADOS and ours on RocksDB: GET of one hot object,
          PUT overwriting ONE key from every connection, PUT-DISTINCT a new key per PUT; with
          the OSD's ops per request (its admin socket's op counters around each run)

Every load, read and S3 row runs in alternating repetitions (RGW, ours on RADOS, ours on
RocksDB, RGW, ...); a row reports the median and p99 over them (GB/s, time to first layer)
and the CPU seconds per GB of each process (radosgw, ceph-osd, ceph-mon, objectcache and the
bench client; utime + stime from /proc/<pid>/stat around each measurement). Ratios to RGW are
taken within the run. Writes PREFIX.json, PREFIX.png and PREFIX.md (the tables).

  bench/rados_vs_rgw.py [--smallest | --reduced | --targets | --full] [--build DIR] [--out PREFIX]
                        [--cluster-dir DIR] [--keep-cluster] [--s3-only]
                        [--baseline-build DIR]
  bench/rados_vs_rgw.py --report-only PREFIX      # PREFIX.md and .png again from PREFIX.json

--reduced (default, ~3.5 min) takes G = 16 (the targets' G) at a 4K context with 87.5% hits;
--targets (~20 min) issue 33's rows: G = 16 and 64 at 4K and 16K contexts, 87.5% hits, one
cluster per G, the 64 KiB S3 PUTs in 5 repetitions;
--full (~45 min) G = 16, 64, 256 at 4K and 16K contexts, 50% and 87.5% hits, one cluster per G
(RGW and our store keep overwritten data for hours; the disk stays bounded) and the S3 ops at
concurrency 8 and 32; --smallest one tiny shape on memstore (the test suite's; its figures
mean nothing). --s3-only runs only the 64 KiB S3 part (the profile's repetitions, concurrency
8 and 32, 5 s per point; ~8 min with --reduced). --baseline-build DIR adds `oc-rados-base`:
DIR's `objectcache serve` over the same pool (its own namespace), alternated with the others in
the S3 part, and `oc-rados-base-read`: DIR's server reading oc-rados' data in the read part, so a
change is measured before and after in one sitting. Progress
goes to stderr; each tool's output to a log directory (printed). bench/run-all runs this as
experiment 9.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
import common  # noqa: E402
import rados_bench_floor  # noqa: E402
from rados_bench_floor import size_name  # noqa: E402
from rados_vs_rgw_report import analyse, markdown, plot  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
LAYERS = 32
BYTES_PER_TOKEN_LAYER = 4096
OC_ACCESS = "OCRADOSBENCHACCESS01"
OC_SECRET = "ocRadosBenchSecret0000000000000000000001"
BUCKET = "rvr"
OC_POOL = "objectcache"
CONCURRENCY = 8  # S3 KV connectors' usual in-flight GETs and PUTs

PROFILES = {
    "smallest": {"bluestore": False, "groups": [16], "contexts": [256], "hits": [0.5],
                 "reps": 2, "warmup": 1, "s3_sizes": [64 * KiB], "s3_conc": [CONCURRENCY],
                 "s3_seconds": 1, "floor_seconds": 1, "floor_bytes": 8 * MiB},
    "reduced": {"bluestore": True, "groups": [16], "contexts": [4096], "hits": [0.875],
                "reps": 3, "warmup": 1, "s3_sizes": [64 * KiB], "s3_conc": [CONCURRENCY],
                "s3_seconds": 2, "floor_seconds": 2, "floor_bytes": 256 * MiB},
    "full": {"bluestore": True, "groups": [16, 64, 256], "contexts": [4096, 16384],
             "hits": [0.5, 0.875], "reps": 3, "warmup": 1, "s3_sizes": [64 * KiB],
             "s3_conc": [CONCURRENCY, 32], "s3_seconds": 5, "floor_seconds": 5,
             "floor_bytes": 1024 * MiB, "cluster_per_g": True},
    # Issue 33's targets in one run: G = 16 and 64 at 4K and 16K contexts (87.5% hits), and
    # the 64 KiB S3 PUTs in 5 alternating repetitions (the reads and loads in 3).
    "targets": {"bluestore": True, "groups": [16, 64], "contexts": [4096, 16384],
                "hits": [0.875], "reps": 3, "s3_reps": 5, "warmup": 1,
                "s3_sizes": [64 * KiB], "s3_conc": [CONCURRENCY], "s3_seconds": 2,
                "floor_seconds": 2, "floor_bytes": 256 * MiB, "cluster_per_g": True},
}
PLANNED_S = {"smallest": 60, "reduced": 200, "full": 2700, "targets": 1200}

# The systems, in the order of every alternation: (name, what, objectcache_bench's read
# methods, how it is loaded). oc-rados-slices is a second `objectcache serve` over the same
# pool and namespace with [rados] read_ahead_window_bytes = 0: it reads what oc-rados stored
# one RADOS read per slice (M·L per request), as before the read-ahead, instead of windows
# of 1, 2, 4, ... slices per chunk (no load, no S3 ops of its own). oc-rados-1h likewise
# reads oc-rados' data with [rados] cluster_handles = 1: every byte through one librados
# messenger connection, as before the read handles (oc-rados takes the default, one per core).
# With --baseline-build, oc-rados-base-read is that build's server reading oc-rados' data too.
SYSTEMS = [
    ("rgw", "Ceph RGW", ["http-object", "http-range"], "object"),
    ("oc-rados", "ObjectCache on RADOS", ["ucx", "http-body"], "descriptor"),
    ("oc-rados-slices", "ObjectCache on RADOS, no read-ahead", ["ucx"], None),
    ("oc-rados-1h", "ObjectCache on RADOS, one cluster handle", ["ucx"], None),
    ("oc-rados-base-read", "ObjectCache on RADOS, baseline build", ["ucx"], None),
    ("oc-rocksdb", "ObjectCache on RocksDB (ceiling)", ["ucx", "http-body"], "descriptor"),
]

# The reads whose cost at the OSD is measured on its own (Bench.osd_costs).
COST_ROWS = [("rgw", "http-object"), ("oc-rados", "ucx"), ("oc-rados-slices", "ucx"),
             ("oc-rados-base-read", "ucx")]


class Bench:
    """One run: the cluster, the two ObjectCache servers, the measurements (self.doc)."""

    def __init__(self, config, build, log_dir, progress, tmp, cluster_dir=None,
                 baseline_build=None):
        self.p = config
        self.build = build
        self.baseline_build = baseline_build
        self.log_dir = log_dir
        self.progress = progress
        self.tmp = tmp
        self.cluster_dir = cluster_dir or os.path.join(tmp, "ceph")
        self.servers = {}  # name -> (proc, url)
        self.session = 0
        self.cluster_pids = {}  # comm -> [pid]
        self.env = {}
        self.commands = []
        self.notes = []
        self.doc = {"loads": [], "reads": [], "osd_costs": [], "floor": [], "s3ops": []}

    # --- processes -------------------------------------------------------------------------

    def say(self, text):
        self.progress.say("rados-vs-rgw: " + text)

    def run(self, cmd, name, timeout, env=None, record=True):
        if record:
            self.commands.append(" ".join(cmd))
        return common.run(cmd, self.log_dir, name, self.progress, timeout=timeout, env=env)

    def cluster_up(self):
        script = os.path.join(ROOT, "tools", "ceph-test-cluster")
        if not os.path.exists(script):
            raise common.StepFailed(f"{script} is missing (the RADOS test cluster script)")
        # Ceph's daemons with tcmalloc, as upstream builds link them (Debian 12's use glibc's
        # malloc: docs/decisions/server-allocator-tcmalloc.md).
        cmd = [script, "up", "--rgw", "--tcmalloc"] + (["--bluestore"] if self.p["bluestore"]
                                                        else [])
        env = dict(os.environ)
        if self.p["bluestore"]:
            # Sparse: RGW's and our data sets (1.9 GB per G at 16K, 87.5%, overwritten per load).
            env.setdefault("OC_CEPH_OSD_BYTES", str(32 << 30))
        self.say("starting the cluster (mon, mgr, OSD, radosgw): " + " ".join(cmd[1:]))
        self.run(cmd + [self.cluster_dir], "ceph-test-cluster-up", timeout=300, env=env)
        self.env, self.cluster_pids = {}, {}  # this cluster's only (--full runs one per G)
        with open(os.path.join(self.cluster_dir, "env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                if k:
                    self.env[k] = v.strip("'\"")
        with open(os.path.join(self.cluster_dir, "pids")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    comm = open(f"/proc/{parts[1]}/comm").read().strip()
                    self.cluster_pids.setdefault(comm, []).append(int(parts[1]))
        self.conf = os.path.join(self.cluster_dir, "ceph.conf")
        self.say(f"cluster up: RGW {self.env['S3_ENDPOINT']}, daemons "
                 + ", ".join(f"{k} {v}" for k, v in sorted(self.cluster_pids.items())))

    def cluster_down(self):
        script = os.path.join(ROOT, "tools", "ceph-test-cluster")
        if os.path.exists(os.path.join(self.cluster_dir, "pids")):
            self.say("stopping the cluster")
            self.run([script, "down", self.cluster_dir], "ceph-test-cluster-down", timeout=120,
                     record=False)

    def start_objectcache(self, name, storage_toml, build=None):
        port = common.free_port()
        root = os.path.join(self.tmp, f"{name}-{self.session}")
        os.makedirs(root, exist_ok=True)
        conf = os.path.join(root, "objectcache.toml")
        with open(conf, "w") as f:
            f.write('[gateway]\nmax_object_bytes = "4GiB"\naccess_log = false\n' + storage_toml)
        env = dict(os.environ, UCX_TLS="shm", OC_ACCESS_KEY=OC_ACCESS, OC_SECRET_KEY=OC_SECRET)
        log_path = os.path.join(self.log_dir, f"{name}.log")
        cmd = [os.path.join(build or self.build, "gateway", "objectcache"), "serve", "--config",
               conf,
               "--data-dir", os.path.join(root, "data"), "--listen", f"127.0.0.1:{port}"]
        self.commands.append(" ".join(cmd) + "   # " + storage_toml.replace("\n", " "))
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        if common.wait_healthy(url, proc):
            self.servers[name] = (proc, url)
            self.say(f"{name}: objectcache serve on {url} (pid {proc.pid})")
            return True
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        tail = open(log_path, errors="replace").read()[-800:].strip()
        self.notes.append(f"{name}: `objectcache serve` did not start (exit {proc.returncode}): "
                          f"{tail}")
        self.say(f"{name}: objectcache serve did not start; its rows are skipped ({log_path})")
        return False

    def stop_servers(self):
        for name, (proc, _) in list(self.servers.items()):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            del self.servers[name]
            shutil.rmtree(os.path.join(self.tmp, f"{name}-{self.session}"), ignore_errors=True)

    # --- one system's endpoint, keys and processes ------------------------------------------

    def target(self, system):
        """(url, access, secret, {name: [pid]}) of a system, or None if it is not running."""
        ceph = {k: v for k, v in self.cluster_pids.items() if k in ("ceph-osd", "ceph-mon")}
        if system == "rgw":
            return (self.env["S3_ENDPOINT"], self.env["S3_ACCESS"], self.env["S3_SECRET"],
                    dict(ceph, radosgw=self.cluster_pids.get("radosgw", [])))
        if system not in self.servers:
            return None
        proc, url = self.servers[system]
        pids = {"objectcache": [proc.pid]}
        if system.startswith("oc-rados"):
            pids.update(ceph)
        return url, OC_ACCESS, OC_SECRET, pids

    @staticmethod
    def pid_list(pids):
        return ",".join(f"{n}={p}" for n, ps in sorted(pids.items()) for p in ps)

    def objectcache_bench(self, system, label, args):
        url, access, secret, pids = self.target(system)
        out = os.path.join(self.tmp, f"{label}.json")
        cmd = [os.path.join(self.build, "bench", "objectcache_bench"), "--endpoint", url,
               "--bucket", BUCKET, "--json", out, "--label", system,
               "--cpu-pids", self.pid_list(pids), *args]
        env = dict(os.environ, UCX_TLS="shm", AWS_ACCESS_KEY_ID=access,
                   AWS_SECRET_ACCESS_KEY=secret)
        shown = [c if c != url else f"<{system}>" for c in cmd]
        shown[shown.index("--cpu-pids") + 1] = "<pids>"
        shown[shown.index("--json") + 1] = "<json>"
        self.run(cmd, label, timeout=3600, env=env, record=False)
        if " ".join(shown) not in self.commands:
            self.commands.append(" ".join(shown))
        return json.load(open(out))

    # --- the measurements ------------------------------------------------------------------

    def shape_args(self, g):
        return ["--groups", str(g), "--contexts", ",".join(str(c) for c in self.p["contexts"]),
                "--hits", ",".join(str(h) for h in self.p["hits"])]

    def systems(self):
        return [s for s in SYSTEMS if self.target(s[0]) is not None]

    def loaded_systems(self):
        return [s for s in self.systems() if s[3]]

    def s3_systems(self):
        """The loaded systems, then the baseline build's server if there is one."""
        out = [s[0] for s in self.loaded_systems()]
        return out + (["oc-rados-base"] if "oc-rados-base" in self.servers else [])

    def osd_asok(self):
        """The OSD's admin socket (the cluster's `run dir`), or None if it is not there."""
        with open(self.conf) as f:
            m = re.search(r"^run dir = (.+)$", f.read(), re.M)
        path = os.path.join(m.group(1).strip(), "osd.0.asok") if m else None
        return path if path and os.path.exists(path) else None

    def loads(self, g):
        for rep in range(self.p["reps"]):
            for system, _, _, put_mode in self.loaded_systems():
                self.say(f"G={g} load {rep + 1}/{self.p['reps']}: {system} ({put_mode} PUTs)")
                args = [*self.shape_args(g), "--methods", "", "--put-mode", put_mode,
                        "--put-concurrency", str(CONCURRENCY)]
                doc = self.objectcache_bench(system, f"load-g{g}-{system}-{rep}", args)
                for row in doc["puts"]:
                    self.doc["loads"].append({**row, "system": system, "rep": rep})
                    self.say(f"  {system} {row['method']}: {row['gbps']:.3f} GB/s")

    def reads(self, g):
        for rep in range(self.p["reps"]):
            # Odd repetitions read in reverse order: a server that always reads right after
            # the same others finds the OSD's cache warmed by them (with one build on both
            # sides and a fixed order, oc-rados came out at 0.93x of the baseline row).
            order = self.systems() if rep % 2 == 0 else self.systems()[::-1]
            for system, _, methods, _ in order:
                self.say(f"G={g} reads {rep + 1}/{self.p['reps']}: {system} "
                         f"({', '.join(methods)})")
                args = [*self.shape_args(g), "--no-put", "--methods", ",".join(methods),
                        "--range-concurrency", str(CONCURRENCY), "--object-concurrency",
                        str(CONCURRENCY), "--repeat", "1", "--warmup", str(self.p["warmup"])]
                doc = self.objectcache_bench(system, f"read-g{g}-{system}-{rep}", args)
                for row in doc["results"]:
                    self.doc["reads"].append({**row, "system": system, "rep": rep})
                    self.say(f"  {system} {row['method']} ctx={row['context']} "
                             f"hit={row['hit']}: {row['gbps']:.3f} GB/s, first layer "
                             f"{row['ttfl_s'] * 1e3:.1f} ms")

    def osd_counters(self):
        """The OSD's read counters (`perf dump` on its admin socket): client read ops, their
        bytes out, and BlueStore's reads (one per extent an op reads; None on memstore)."""
        asok = self.osd_asok()
        if asok is None:
            return None
        out = subprocess.run(["ceph", "--admin-daemon", asok, "perf", "dump"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        dump = json.loads(out)
        reads = dump.get("bluestore", {}).get("read_lat", {}).get("avgcount")
        return {"ops": dump["osd"]["op_r"], "bytes": dump["osd"]["op_r_out_bytes"],
                "extent_reads": reads}

    def osd_costs(self, g):
        """What the OSD does per GB each way of reading: one more untimed-alternation pass of
        RGW's per-object GETs and our descriptor GET over UCX (and the read-per-slice server),
        one process each, with the OSD's read counters and CPU around it. The reads' own rows
        cannot carry these: one process there runs two methods."""
        if self.osd_asok() is None:
            self.notes.append("The OSD's admin socket was not found: no OSD costs per GB.")
            return
        osd_pids = self.cluster_pids.get("ceph-osd", [])
        for system, method in COST_ROWS:
            if self.target(system) is None:
                continue
            for context in self.p["contexts"]:
                self.say(f"G={g} OSD cost: {system} {method} ctx={context}")
                args = ["--groups", str(g), "--contexts", str(context), "--hits",
                        ",".join(str(h) for h in self.p["hits"]), "--no-put", "--methods",
                        method, "--object-concurrency", str(CONCURRENCY),
                        "--range-concurrency", str(CONCURRENCY), "--repeat", "1",
                        "--warmup", "0"]
                c0, cpu0 = self.osd_counters(), sum(common.cpu_seconds(p) for p in osd_pids)
                doc = self.objectcache_bench(system, f"cost-g{g}-{system}-{context}", args)
                c1, cpu1 = self.osd_counters(), sum(common.cpu_seconds(p) for p in osd_pids)
                payload = sum(r["payload_bytes"] for r in doc["results"])
                chunks = sum(r["chunks"] for r in doc["results"])
                row = {"G": g, "context": context, "hit": self.p["hits"][0], "system": system,
                       "method": method, "payload_bytes": payload, "chunks": chunks,
                       "osd_read_ops": c1["ops"] - c0["ops"],
                       "osd_bytes_out": c1["bytes"] - c0["bytes"],
                       "osd_extent_reads": (c1["extent_reads"] - c0["extent_reads"]
                                            if c0["extent_reads"] is not None else None),
                       "osd_cpu_s": cpu1 - cpu0}
                self.doc["osd_costs"].append(row)
                self.say(f"  {system} {method}: {row['osd_read_ops'] / max(chunks, 1):.2f} OSD "
                         f"read ops and "
                         f"{(row['osd_extent_reads'] or 0) / max(chunks, 1):.2f} extent reads "
                         f"per chunk, OSD {row['osd_cpu_s'] / max(payload, 1) * 1e9:.2f} "
                         f"CPU-s/GB")

    def floor(self, g):
        """`rados bench` (8 in flight) at the chunk object size L·S and the slice size S, in
        the pool ObjectCache uses: what the OSD itself gives a client doing nothing else."""
        s = BYTES_PER_TOKEN_LAYER * g
        for what, size in (("object", LAYERS * s), ("slice", s)):
            self.say(f"G={g} floor: rados bench at the {what} size ({size_name(size)})")
            for row in rados_bench_floor.measure(
                    self.run, self.say, self.conf, OC_POOL, self.cluster_pids.get("ceph-osd", []),
                    size, count=max(2 * CONCURRENCY, self.p["floor_bytes"] // size),
                    seconds=self.p["floor_seconds"], concurrency=CONCURRENCY):
                self.doc["floor"].append({**row, "G": g, "what": what})

    def s3ops(self):
        asok = self.osd_asok()
        if asok is None:
            self.notes.append("The OSD's admin socket was not found: no OSD ops per request.")
        reps = self.p.get("s3_reps", self.p["reps"])
        for rep in range(reps):
            for system in self.s3_systems():
                url, access, secret, pids = self.target(system)
                self.say(f"S3 ops {rep + 1}/{reps}: {system} (wrk, "
                         f"{self.p['s3_seconds']} s per point)")
                out = os.path.join(self.tmp, f"s3ops-{system}-{rep}.json")
                cmd = ["/usr/bin/python3", os.path.join(HERE, "gateway_bench.py"),
                       "--endpoint", url, "--access-key", access, "--secret-key", secret,
                       "--label", system, "--bucket", BUCKET + "-s3ops",
                       "--cpu-pids", self.pid_list(pids),
                       "--sizes", ",".join(str(s) for s in self.p["s3_sizes"]),
                       "--conc", ",".join(str(c) for c in self.p["s3_conc"]),
                       "--seconds", str(self.p["s3_seconds"]), "--ops",
                       "GET,PUT,PUT-DISTINCT", "--out", out] + (
                           ["--osd-asok", asok] if asok else [])
                shown = [c if c not in (url, secret, access, asok) else f"<{system}>"
                         for c in cmd]
                shown[shown.index("--cpu-pids") + 1] = "<pids>"
                self.run(cmd, f"s3ops-{system}-{rep}", timeout=900, record=False)
                if rep == 0:
                    self.commands.append(" ".join(shown))
                for row in json.load(open(out))["results"]:
                    self.doc["s3ops"].append({**row, "system": system, "rep": rep})
                    osd = row.get("osd_ops_per_req", {}).get("op")
                    self.say(f"  {system} {row['op']} {size_name(row['size'])} "
                             f"c={row['concurrency']}: {row['ops_per_s']:.0f} ops/s" +
                             (f", {osd:.2f} OSD ops per request" if osd is not None else ""))

    def measure(self, keep_cluster=False):
        """Each session is one cluster and fresh servers: all of G in one, or (the full
        profile's cluster_per_g) one per G, so overwritten data awaiting the stores' garbage
        collection (RGW's and ours wait hours) never fills the disk. S3 ops run in the last."""
        groups = self.p["groups"]
        sessions = [[g] for g in groups] if self.p.get("cluster_per_g") else [groups]
        base_dir = self.cluster_dir
        for i, session in enumerate(sessions):
            last = i == len(sessions) - 1
            self.cluster_dir = base_dir if len(sessions) == 1 else f"{base_dir}-{i}"
            self.session = i
            self.cluster_up()
            self.run(["ceph", "-c", self.conf, "osd", "pool", "create", OC_POOL, "8", "8"],
                     "pool-create", timeout=120, record=i == 0)
            self.run(["ceph", "-c", self.conf, "osd", "pool", "application", "enable",
                      OC_POOL, "rados"], "pool-application", timeout=120, record=i == 0)
            rados = (f'[storage]\nbackend = "rados"\n[rados]\nconf_file = "{self.conf}"\n'
                     f'pool = "{OC_POOL}"\nnamespace = "rvr"\n')
            s3_only = self.p.get("s3_only")
            if self.start_objectcache("oc-rados", rados) and not s3_only:
                self.start_objectcache(
                    "oc-rados-slices", rados + 'gc = false\nread_ahead_window_bytes = "0"\n')
                self.start_objectcache("oc-rados-1h", rados + 'gc = false\ncluster_handles = 1\n')
            if self.baseline_build:
                self.start_objectcache("oc-rados-base", rados.replace('"rvr"', '"rvr-base"'),
                                       build=self.baseline_build)
                if not s3_only:
                    self.start_objectcache("oc-rados-base-read", rados + "gc = false\n",
                                           build=self.baseline_build)
            self.start_objectcache("oc-rocksdb", '[storage]\nblock_cache_bytes = "4GiB"\n')
            # One untimed chunk PUT per system first: RGW creates its data and index pools on
            # the first write, and every server its bucket.
            for system, _, _, put_mode in self.loaded_systems():
                self.say(f"priming {system} (bucket, first write)")
                self.objectcache_bench(system, f"prime-{system}-{i}", [
                    "--groups", str(session[0]), "--contexts", str(session[0]), "--hits", "1",
                    "--methods", "", "--put-mode", put_mode])
            for g in [] if s3_only else session:
                self.loads(g)
                self.reads(g)
                self.osd_costs(g)
                self.floor(g)
            if last:
                self.s3ops()
            self.stop_servers()
            if not (last and keep_cluster):
                self.cluster_down()


# --- entry points -----------------------------------------------------------------------------

def run(config, build, log_dir, progress, tmp, cluster_dir=None, keep_cluster=False,
        baseline_build=None):
    """Runs the whole comparison; returns the JSON document (commands, raw rows, summary,
    ratios, targets, notes; "error" if a step failed, with what ran before it). The cluster
    and the servers are stopped in any case."""
    b = Bench(config, build, log_dir, progress, tmp, cluster_dir, baseline_build)
    failure = None
    try:
        b.measure(keep_cluster)
    except (common.StepFailed, OSError, KeyError, ValueError) as e:
        failure = f"{type(e).__name__}: {e}"
        b.say("failed: " + failure)
    finally:
        b.stop_servers()
        if failure or not keep_cluster:
            b.cluster_down()
    doc = dict(b.doc)
    doc["machine"] = common.machine()  # before analyse: the CPU budget counts its cores
    analyse(doc)
    doc["commands"] = b.commands
    doc["notes"] = b.notes + NOTES
    doc["systems_measured"] = sorted({r["system"] for r in doc["reads"] + doc["s3ops"]})
    if failure:
        doc["error"] = failure  # the rows measured before it are kept
    return doc


NOTES = [
    "One cluster for all rows: one mon, one mgr, one OSD (BlueStore on a sparse file, except "
    "--smallest: memstore) and radosgw (beast, 128 threads) from tools/ceph-test-cluster, "
    "pool size 1; ObjectCache on RADOS uses pool `objectcache` (8 PGs) on that OSD, RGW its "
    "default pools. Auth none everywhere. RGW's default tuning (rgw_max_chunk_size 4 MiB).",
    "Alternation: for each G, the loads run as RGW, ours on RADOS, ours on RocksDB, repeated; "
    "then the reads in that order on even repetitions and in reverse on odd ones, so no "
    "system always reads after the same others. Each repetition is one objectcache_bench "
    "process (--repeat 1 after --warmup untimed passes, which also set up its connections "
    "and UCX endpoint). A row's "
    "GB/s is the payload over the median time; p50/p99 are nearest-rank over the "
    "repetitions (with 3, p99 is the slowest).",
    "CPU seconds per GB: utime + stime of each process (/proc/<pid>/stat) summed over the timed "
    "repetitions, divided by the bytes they moved; 'client' is objectcache_bench itself. The "
    "kernel's tick is 10 ms, so small rows are coarse. Minor page faults likewise (stat field "
    "10), per MB moved.",
    "Every Ceph daemon runs with tcmalloc preloaded (tools/ceph-test-cluster --tcmalloc), as "
    "upstream Ceph builds link it; Debian 12's daemons use glibc's malloc, with which the OSD "
    "faulted in every page of every large write (6-7 CPU-s/GB instead of ~1) and both gateways "
    "wrote at half speed (docs/decisions/server-allocator-tcmalloc.md). Load buffers are "
    "allocated and touched before the clock starts, for every system.",
    "Floor: `rados bench -t 8` writes (--max-objects), then seq and rand reads of those whole "
    "objects, at the chunk object size L·S and at the slice size S in pool `objectcache`: what "
    "one OSD serves a client that does nothing else. rados bench reports mean and max latency, "
    "not percentiles.",
    "Range GETs are issued in layer order (all chunks of layer 0 first), so RGW's time to "
    "first layer is when layer 0's M GETs are done; per-object GETs deliver no layer before "
    "their object, so their time to first layer is the total.",
    "64 KiB S3 ops: wrk with presigned SigV4 URLs (one hot object for GET; PUT: every "
    "connection overwrites ONE key; PUT-DISTINCT: each PUT a key never written before, a "
    "wrk script walking presigned paths), concurrency as listed; server CPU per request per "
    "process and the OSD's ops per request (its op counters around the run, every client's "
    "ops included: the other systems are idle then) beside ops/s.",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    for name in PROFILES:
        size.add_argument("--" + name, dest="profile", action="store_const", const=name)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="PREFIX of PREFIX.json, .png and .md (default "
                    "bench/results/<YYYY-MM-DD>/rados-vs-rgw)")
    ap.add_argument("--cluster-dir", help="where the cluster lives (default: a temp dir)")
    ap.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    ap.add_argument("--s3-only", action="store_true",
                    help="only the 64 KiB S3 part, at concurrency 8 and 32, 5 s per point")
    ap.add_argument("--baseline-build", help="a build dir whose objectcache is also measured "
                    "in the S3 part, as oc-rados-base")
    ap.add_argument("--report-only", metavar="PREFIX",
                    help="rewrite PREFIX.md and PREFIX.png from PREFIX.json (no measuring)")
    a = ap.parse_args()
    if a.report_only:
        doc = json.load(open(a.report_only + ".json"))
        analyse(doc)
        write_report(doc, a.report_only)
        return 0
    profile = a.profile or "reduced"
    out = os.path.abspath(a.out or os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d", time.gmtime()), "rados-vs-rgw"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="oc-rados-vs-rgw-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    progress = common.Progress([("rados vs rgw", 480 if a.s3_only else PLANNED_S[profile])])
    progress.begin(0)
    progress.say(f"profile {profile}; tool logs in {log_dir}")
    config = dict(PROFILES[profile])
    if a.s3_only:
        config.update(s3_only=True, s3_conc=[CONCURRENCY, 32], s3_seconds=5)
    doc = {"profile": profile + (" --s3-only" if a.s3_only else ""), "config": config,
           "load_start": common.load_average()}
    try:
        doc.update(run(config, os.path.abspath(a.build), log_dir, progress, tmp,
                       a.cluster_dir, a.keep_cluster,
                       os.path.abspath(a.baseline_build) if a.baseline_build else None))
    finally:
        doc["load_end"] = common.load_average()
    doc["versions"] = common.versions(os.path.abspath(a.build))
    doc = common.portable(doc, tmp)
    if a.baseline_build:  # named, not located: committed results hold no machine path
        doc = json.loads(json.dumps(doc).replace(os.path.abspath(a.baseline_build),
                                                 "<baseline-build>"))
    os.makedirs(os.path.dirname(out), exist_ok=True)  # again: a 20-minute run may outlive it
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    write_report(doc, out)
    for t in doc["targets"]:
        figs = ", ".join(f"{x['ratio']:.2f}x" for x in t["figures"]) or "not measured"
        verdict = {True: "met", False: "NOT MET", None: "not measured"}[t["met"]]
        progress.say(f"target {verdict}: {t['target']}: {figs}")
    progress.say(f"wrote {out}.json, {out}.png and {out}.md")
    return 0


def write_report(doc, out):
    """PREFIX.png and PREFIX.md of the JSON document `doc`."""
    plot(doc, out + ".png")
    text, finding = markdown(doc)
    with open(out + ".md", "w") as f:
        f.write(f"# ObjectCache on RADOS vs Ceph RGW ({doc['profile']})\n\n"
                f"**Finding.** {finding}\n\n"
                f"Load average {doc['load_start'][0]:.2f} at start, {doc['load_end'][0]:.2f} at "
                f"end; commit {doc['versions']['git_commit']}.\n\n{text}\n\n"
                f"![plot]({os.path.basename(out)}.png)\n\n" +
                "".join(f"- {n}\n" for n in doc["notes"]))


if __name__ == "__main__":
    sys.exit(main())
