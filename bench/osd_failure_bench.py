#!/usr/bin/python3
"""osd_failure_bench: what throughput clients of one `objectcache serve` see when an OSD of its
RADOS pool is killed under load (issue 33, gap F1b: "service is back to full throughput after
the failure is detected"; docs/design.md, "When an OSD or the monitor fails"). Tests never check
timing (tests/integration/pyclient/test_cluster_faults.py checks that nothing fails and nothing
is lost); this measures it.

Per repetition, on a fresh cluster (tools/ceph-test-cluster up --osds 3: memstore, pool size 3,
min_size 2, heartbeat grace 4 s; a down OSD is not marked out for 10 minutes, so no data moves):
one `objectcache serve` over the pool on 127.0.0.1, `preload` descriptor chunk sets, then a
closed loop of `get_threads` descriptor GETs of preloaded sets (byte-checked) and `put_threads`
descriptor PUTs of new keys through the objectcache Python package (a Client per thread, HTTP
body unless --via), each request's start, end, bytes and outcome kept. After `steady_s` the
victim (osd.1) gets SIGKILL; `osd dump` is polled through librados every 0.1 s until it is
marked down, and the load runs `after_s` more.

Phases, by request completion time (t = 0 at the kill):
  before     [load start + warmup_s, 0)
  detection  [0, mark-down): the dead OSD's PGs stall until the new map
  after      [mark-down + settle_s, end): settle_s excludes the burst of stalled requests
             completing and the PGs' peering
Reported per phase and repetition: requests/s, GB/s, latency percentiles and failures; after
÷ before; the longest request; a per-second timeline with PG states (`pg stat`, lagging by the
manager's report interval); CPU seconds per second of the server, each OSD, mon, mgr and this
process, which on 2 shared cores say where a change in throughput went.

  bench/osd_failure_bench.py [--build build/release] [--out PREFIX] [--profile reduced]
                             [--reps N] [--control] [--victim osd.1] [--via http|auto]

--control follows each repetition with one on a fresh cluster, nothing killed, so what the load
does over time anyway is not read as the failure's (`kill_ratio_over_control_ratio`).
--report-only FILE.json recomputes a results file's summary, plot and table. Writes PREFIX.json
and .png (default bench/results/<date>/osd-failure); exit 1 if a request failed or a repetition
did not complete. Progress on stderr; server and cluster stopped by PID whatever happens.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "harness"))
from common import (BENCH, CLUSTER, ROOT, Say, cluster_pids, cpu_seconds,  # noqa: E402
                    load_average, median, portable, run, serve, stop)

ACCESS_KEY = "OCBENCHACCESSKEY0001"
SECRET_KEY = "ocBenchSecretKey000000000000000000000001"
BUCKET = "osd-failure"
NAMESPACE = "osd-failure"
GET, PUT = 0, 1
KINDS = ("get", "put")
POLL_S = 0.1  # the OSD map is polled this often between the kill and the mark-down
PG_SAMPLE_S = 1.0  # PG states are sampled this often (the manager's view lags its reports)
DOWN_DEADLINE_S = 60  # no mark-down by then: the repetition fails
OSD_BYTES = 4 << 30  # memstore capacity per OSD (RAM, used only as filled): PUTs of new keys

PROFILES = {
    # shape: [chunks, layers, layer bytes] of every descriptor GET and PUT
    "smallest": {"shape": [4, 4, 16 << 10], "preload": 8, "get_threads": 2, "put_threads": 1,
                 "warmup_s": 1, "steady_s": 5, "after_s": 6, "settle_s": 1, "reps": 1},
    "reduced": {"shape": [8, 8, 32 << 10], "preload": 32, "get_threads": 3, "put_threads": 1,
                "warmup_s": 3, "steady_s": 20, "after_s": 20, "settle_s": 2, "reps": 2},
    "full": {"shape": [8, 8, 32 << 10], "preload": 32, "get_threads": 4, "put_threads": 2,
             "warmup_s": 3, "steady_s": 30, "after_s": 45, "settle_s": 2, "reps": 3},
}


def import_client(build):
    """The objectcache package CMake built, and the tests' helpers for KV chunks."""
    for path in (os.path.join(build, "python"),
                 os.path.join(ROOT, "tests", "integration", "pyclient")):
        if path not in sys.path:
            sys.path.insert(0, path)
    import objectcache
    import pyclient_util
    return objectcache, pyclient_util


class Load:
    """Closed-loop threads of descriptor GETs and PUTs; every request is kept as (end, latency,
    kind, bytes, ok), ends and latencies in seconds of time.monotonic()."""

    def __init__(self, oc, pu, url, cfg, sets):
        self.oc, self.pu, self.url, self.cfg, self.sets = oc, pu, url, cfg, sets
        self.halt = threading.Event()
        self.lock = threading.Lock()
        self.records = []  # guarded by lock
        self.failures = []  # (end, kind, error), guarded by lock
        n = cfg["get_threads"] + cfg["put_threads"]
        self.threads = [threading.Thread(target=self.loop, args=(i,), daemon=True,
                                         name=f"load-{i}") for i in range(n)]

    def client(self):
        return self.oc.Client(self.url, ACCESS_KEY, SECRET_KEY)

    def loop(self, i):
        kind = GET if i < self.cfg["get_threads"] else PUT
        n, n_layers, s = self.cfg["shape"]
        client = self.client()
        rng = random.Random(i)
        data = self.pu.chunks(n, n_layers, s, seed=1000 + i)  # PUT bodies: keys are what differ
        out = bytearray(n * n_layers * s)
        seq = 0
        mine = []
        try:
            while not self.halt.is_set():
                if kind == GET:
                    d, want = rng.choice(self.sets)
                else:
                    seq += 1
                    # New keys each time: thread i's tokens start at (i + 1) * 10^8.
                    d = descriptor(self.oc, self.pu, self.cfg["shape"],
                                   (i + 1) * 10**8 + seq * n * 16)
                t0 = time.monotonic()
                error = None
                try:
                    if kind == GET:
                        info = client.get_layers(BUCKET, d, out, via=self.cfg["via"]).wait()
                        if info.matched != n or out != want:  # bytearray == bytes: memcmp
                            error = f"matched {info.matched} of {n}, bytes " + (
                                "equal" if out == want else "differ")
                    else:
                        client.put_chunks(BUCKET, d, data).raise_for_status()
                except self.oc.ObjectCacheError as ex:
                    error = f"{type(ex).__name__}: {ex}"
                t1 = time.monotonic()
                mine.append((t1, t1 - t0, kind, d.payload_bytes, error is None))
                if error:
                    with self.lock:
                        self.failures.append((t1, KINDS[kind], error))
        finally:
            client.close()
            with self.lock:
                self.records.extend(mine)

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self, timeout):
        """Stops the threads; the names of those still running after `timeout` seconds."""
        self.halt.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        return [t.name for t in self.threads if t.is_alive()]


def descriptor(oc, pu, shape, start):
    """N chunks of 16 tokens from token `start` on (compact keys), `shape` = [N, L, S]."""
    n, n_layers, s = shape
    hashes, prefix = pu.keys("compact", n, 16, "", start=start)
    return oc.Descriptor(hashes, layers=n_layers, layer_bytes=s, chunk_tokens=16, prefix=prefix)


def preload(oc, pu, url, cfg):
    """Stores cfg["preload"] chunk sets; [(descriptor, the bytes a layer-major GET returns)]."""
    n, n_layers, s = cfg["shape"]
    client = oc.Client(url, ACCESS_KEY, SECRET_KEY)
    try:
        client.create_bucket(BUCKET)
        sets = []
        for k in range(cfg["preload"]):
            d = descriptor(oc, pu, cfg["shape"], k * n * 16)
            data = pu.chunks(n, n_layers, s, seed=k)
            client.put_chunks(BUCKET, d, data).raise_for_status()
            sets.append((d, pu.expected(data, n, n, "layer-major").tobytes()))
        return sets
    finally:
        client.close()


class Monitor:
    """The cluster as librados sees it: OSD map and PG states (no `ceph` CLI process, whose
    start costs a large share of a core)."""

    def __init__(self, conf):
        import rados
        self.cluster = rados.Rados(conffile=conf, rados_id="admin")
        self.cluster.connect(timeout=20)

    def command(self, cmd, mgr=False):
        call = self.cluster.mgr_command if mgr else self.cluster.mon_command
        result = call(json.dumps(dict(cmd, format="json")), b"", timeout=10)
        ret, out = result[0], next((x for x in result[1:] if isinstance(x, bytes)), b"")
        if ret != 0:
            raise RuntimeError(f"{cmd['prefix']}: error {ret}: {result}")
        return json.loads(out)

    def osd_up(self, osd_id):
        """(whether OSD `osd_id` is up, the map's epoch) in the monitor's OSD map now. (Its
        osd_xinfo down_stamp stays 0 in this Ceph, so the poll dates the mark-down.)"""
        dump = self.command({"prefix": "osd dump"})
        return next(o["up"] for o in dump["osds"] if o["osd"] == osd_id) == 1, dump["epoch"]

    def pg_stat(self):
        """{"states": {state: PGs}, "num_pgs": n, "bytes": stored bytes} (the manager's view)."""
        s = self.command({"prefix": "pg stat"}, mgr=True)
        s = s.get("pg_summary", s)
        return {"states": {x["name"]: x["num"] for x in s.get("num_pg_by_state", [])},
                "num_pgs": s.get("num_pgs"), "bytes": s.get("num_bytes")}

    def close(self):
        self.cluster.shutdown()


class PgSampler(threading.Thread):
    """PG states every PG_SAMPLE_S seconds until halted: [(monotonic time, states)]."""

    def __init__(self, mon):
        super().__init__(daemon=True)
        self.mon = mon
        self.halt = threading.Event()
        self.samples = []

    def run(self):
        while not self.halt.wait(PG_SAMPLE_S):
            try:
                self.samples.append((time.monotonic(), self.mon.pg_stat()["states"]))
            except Exception as ex:  # a missed sample is noted, not fatal
                self.samples.append((time.monotonic(), {"error": repr(ex)}))


def cpu_snapshot(procs):
    """(now, CPU seconds so far of each process in `procs` ({name: pid}) and of this one)."""
    snap = {k: cpu_seconds(p) for k, p in procs.items()}
    t = os.times()
    snap["bench"] = t.user + t.system
    return time.monotonic(), snap


def cpu_rates(a, b):
    """Cores busy per process between two snapshots (OSDs also summed); a process gone by the
    second (the killed OSD) counts 0."""
    seconds = b[0] - a[0]
    a, b = a[1], b[1]
    rates = {k: round(max(0.0, b[k] - a[k]) / seconds, 3) for k in a if seconds > 0}
    rates["osds"] = round(sum(v for k, v in rates.items() if k.startswith("osd.")), 3)
    rates["all"] = round(sum(v for k, v in rates.items() if k != "osds"), 3)
    return rates


def phase_figures(records, lo, hi):
    """Throughput and latency of the requests that completed in [lo, hi)."""
    seconds = hi - lo
    inside = [r for r in records if lo <= r[0] < hi]
    fig = {"seconds": round(seconds, 2)}
    for kind in (GET, PUT, None):
        rs = [r for r in inside if kind is None or r[2] == kind]
        ok = [r for r in rs if r[4]]
        lat = sorted(r[1] for r in rs)
        name = KINDS[kind] if kind is not None else "total"
        fig[name] = {
            "requests": len(rs), "failed": len(rs) - len(ok),
            "requests_per_s": round(len(ok) / seconds, 2) if seconds > 0 else None,
            "gbps": round(sum(r[3] for r in ok) / seconds / 1e9, 4) if seconds > 0 else None,
            "p50_ms": round(lat[len(lat) // 2] * 1e3, 2) if lat else None,
            "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3, 2)
            if lat else None,
            "longest_ms": round(lat[-1] * 1e3, 1) if lat else None}
    return fig


def timeline(records, t_start, t_end, t_kill, pg_samples):
    """One row per whole second of the load, t = seconds from the kill to the bin's start."""
    rows = []
    first = int((t_start - t_kill) // 1)
    last = int((t_end - t_kill) // 1)
    for sec in range(first, last + 1):
        lo, hi = t_kill + sec, t_kill + sec + 1
        if lo < t_start or hi > t_end:
            continue  # partial seconds would read as a dip
        inside = [r for r in records if lo <= r[0] < hi]
        row = {"t": sec}
        for kind in (GET, PUT):
            ok = [r for r in inside if r[2] == kind and r[4]]
            row[f"{KINDS[kind]}_requests"] = len(ok)
            row[f"{KINDS[kind]}_bytes"] = sum(r[3] for r in ok)
        row["failed"] = sum(1 for r in inside if not r[4])
        row["longest_ms"] = round(max((r[1] for r in inside), default=0) * 1e3, 1)
        pgs = [s for t, s in pg_samples if lo <= t < hi]
        row["pg_states"] = pgs[-1] if pgs else None
        rows.append(row)
    return rows


def one_rep(cfg, build, oc, pu, rep, victim, kill, log_dir, say, tmp):
    """One repetition on a fresh cluster, `victim` killed or (kill false) not: its result."""
    d = os.path.join(tmp, f"ceph-{rep}")
    up = [CLUSTER, "up", "--osds", "3", d]
    env = dict(os.environ, OC_CEPH_OSD_BYTES=str(OSD_BYTES))
    res = {"rep": rep, "kind": "kill" if kill else "control", "victim": victim if kill else None,
           "load_average_start": load_average(),
           "commands": [" ".join(up)]}
    proc = mon = sampler = load = None
    t_up = time.monotonic()
    try:
        run(up, log_dir, f"cluster-up-{rep}", say, timeout=600, env=env)
        res["cluster_up_s"] = round(time.monotonic() - t_up, 1)
        conf = os.path.join(d, "ceph.conf")
        toml = (f'[storage]\nbackend = "rados"\n[rados]\nconf_file = "{conf}"\n'
                f'client_name = "client.admin"\npool = "oc-test"\n'
                f'namespace = "{NAMESPACE}"\n')
        proc, url = serve(build, tmp, f"serve-{rep}", toml,
                          env=dict(os.environ, OC_ACCESS_KEY=ACCESS_KEY,
                                   OC_SECRET_KEY=SECRET_KEY))
        say.say(f"rep {rep}: cluster up in {res['cluster_up_s']} s, server at {url}")
        procs = dict(cluster_pids(d), server=proc.pid)
        mon = Monitor(conf)
        osd_id = int(victim.split(".")[1])
        sets = preload(oc, pu, url, cfg)
        say.say(f"rep {rep}: preloaded {len(sets)} sets of {cfg['shape']}; load for "
                f"{cfg['warmup_s'] + cfg['steady_s']} s, then "
                + (f"SIGKILL {victim}" if kill else "nothing (control)"))
        res["pg_load_start"] = mon.pg_stat()
        load = Load(oc, pu, url, cfg, sets)
        sampler = PgSampler(mon)
        t_start = time.monotonic()
        load.start()
        sampler.start()
        time.sleep(cfg["warmup_s"])
        cpu = {"start": cpu_snapshot(procs)}
        time.sleep(cfg["steady_s"])
        res["pg_kill"] = mon.pg_stat()
        cpu["kill"] = cpu_snapshot(procs)
        res["load_average_kill"] = load_average()
        t_kill = time.monotonic()
        if kill:
            os.kill(procs[victim], signal.SIGKILL)
            polls = 0
            while True:
                polls += 1
                is_up, epoch = mon.osd_up(osd_id)
                if not is_up:
                    t_down = time.monotonic()
                    break
                if time.monotonic() - t_kill > DOWN_DEADLINE_S:
                    raise RuntimeError(f"{victim} not marked down {DOWN_DEADLINE_S} s after "
                                       "SIGKILL")
                time.sleep(POLL_S)
            res.update(down_after_s=round(t_down - t_kill, 3), polls=polls, osdmap_epoch=epoch)
            say.say(f"rep {rep}: {victim} marked down {res['down_after_s']} s after SIGKILL; "
                    f"load for {cfg['after_s']} s more")
        else:  # the control: the same phases, nothing killed
            t_down = t_kill
            res["down_after_s"] = 0.0
            say.say(f"rep {rep} (control): nothing killed; load for {cfg['after_s']} s more")
        cpu["down"] = cpu_snapshot(procs)
        time.sleep(max(0.0, t_down + cfg["settle_s"] - time.monotonic()))
        cpu["settled"] = cpu_snapshot(procs)
        time.sleep(max(0.0, t_down + cfg["after_s"] - time.monotonic()))
        cpu["end"] = cpu_snapshot(procs)
        t_end = time.monotonic()
        res["load_average_end"] = load_average()
        hung = load.stop(timeout=60)
        sampler.halt.set()
        res["pg_end"] = mon.pg_stat()
        if hung:
            raise RuntimeError(f"load threads still running 60 s after the stop: {hung}")
        records = sorted(load.records)
        bounds = {"before": (t_start + cfg["warmup_s"], t_kill), "detection": (t_kill, t_down),
                  "after": (t_down + cfg["settle_s"], t_end)}
        if not kill:
            del bounds["detection"]
        res["phases"] = {k: phase_figures(records, lo, hi) for k, (lo, hi) in bounds.items()}
        res["phases"]["settle"] = phase_figures(records, t_down, t_down + cfg["settle_s"])
        cpu_bounds = {"before": ("start", "kill"), "detection": ("kill", "down"),
                      "after": ("settled", "end")}
        res["cpu_cores_busy"] = {k: cpu_rates(cpu[a], cpu[b])
                                 for k, (a, b) in cpu_bounds.items() if k in bounds}
        # CPU seconds per GB moved: whether a phase moved less because it got less CPU or
        # because each byte cost more.
        res["cpu_s_per_gb"] = {
            k: {p: round(c[p] / res["phases"][k]["total"]["gbps"], 2)
                for p in ("server", "osds", "all")}
            for k, c in res["cpu_cores_busy"].items() if res["phases"][k]["total"]["gbps"]}
        before, after = res["phases"]["before"], res["phases"]["after"]
        res["after_over_before"] = {
            f"{kind}_{m}": round(after[kind][m] / before[kind][m], 3) if before[kind][m] else None
            for kind in ("total", "get", "put") for m in ("requests_per_s", "gbps")}
        longest = max(records, key=lambda r: r[1])
        res["longest_request"] = {"kind": KINDS[longest[2]], "ms": round(longest[1] * 1e3, 1),
                                  "started_s": round(longest[0] - longest[1] - t_kill, 2),
                                  "ended_s": round(longest[0] - t_kill, 2)}
        res["requests"] = len(records)
        res["bytes"] = {KINDS[k]: sum(r[3] for r in records if r[2] == k and r[4])
                        for k in (GET, PUT)}
        res["failures"] = len(load.failures)
        res["failure_samples"] = [(round(t - t_kill, 2), k, e) for t, k, e in load.failures[:10]]
        res["timeline"] = timeline(records, t_start, t_end, t_kill, sampler.samples)
        a = res["after_over_before"]
        say.say(f"rep {rep}: before {before['total']['gbps']} GB/s "
                f"{before['total']['requests_per_s']} req/s, after {after['total']['gbps']} GB/s "
                f"(x{a['total_gbps']}), longest {res['longest_request']['ms']} ms, "
                f"failures {res['failures']}")
    except Exception as ex:  # keep what was measured and the error
        res["error"] = f"{type(ex).__name__}: {ex}"
        say.say(f"rep {rep}: error: {res['error']}")
    finally:
        if load is not None and load.stop(timeout=60):
            res.setdefault("error", "load threads did not stop")
        if sampler is not None:
            sampler.halt.set()
        if mon is not None:
            mon.close()
        if proc is not None:
            stop(proc)
        subprocess.run([CLUSTER, "down", d], capture_output=True, timeout=300)
    return res


def summarize(reps):
    """Medians over the completed repetitions of each kind (kill, control)."""
    out = {"failures": sum(r.get("failures", 0) for r in reps)}
    for kind in ("kill", "control"):
        ok = [r for r in reps if "phases" in r and r["kind"] == kind]
        if not ok:
            continue

        def med(f):
            return median([f(r) for r in ok])
        fig = {"reps_completed": len(ok)}
        for ph in ("before", "detection", "after"):
            if ph in ok[0]["phases"]:
                fig[f"{ph}_gbps"] = med(lambda r: r["phases"][ph]["total"]["gbps"])
                fig[f"{ph}_requests_per_s"] = med(
                    lambda r: r["phases"][ph]["total"]["requests_per_s"])
        fig["after_over_before_gbps"] = med(lambda r: r["after_over_before"]["total_gbps"])
        fig["after_over_before_requests_per_s"] = med(
            lambda r: r["after_over_before"]["total_requests_per_s"])
        # CPU per GB after ÷ before: what a byte costs once degraded, which the machine's other
        # work moves far less than it moves throughput.
        for who in ("server", "osds", "all"):
            fig[f"{who}_cpu_per_gb_after_over_before"] = med(
                lambda r: round(r["cpu_s_per_gb"]["after"][who] /
                                r["cpu_s_per_gb"]["before"][who], 3))
        fig["down_after_s"] = med(lambda r: r["down_after_s"])
        fig["longest_request_ms"] = max(r["longest_request"]["ms"] for r in ok)
        out[kind] = fig
    if "kill" in out and "control" in out and out["control"]["after_over_before_gbps"]:
        # The kill's ratio against the drift the same timing shows with nothing killed.
        out["kill_ratio_over_control_ratio"] = round(
            out["kill"]["after_over_before_gbps"] / out["control"]["after_over_before_gbps"], 3)
    return out


def plot(e, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for r in e["reps"]:
        if not r.get("timeline"):
            continue
        ts = [x["t"] + 0.5 for x in r["timeline"]]
        control = r["kind"] == "control"
        style = {"ls": "--", "lw": 1, "alpha": 0.7} if control else {}
        label = f"rep {r['rep']} ({r['kind']})"
        line, = axes[0].plot(ts, [(x["get_bytes"] + x["put_bytes"]) / 1e9
                                  for x in r["timeline"]], label=label, **style)
        axes[1].plot(ts, [x["longest_ms"] or float("nan") for x in r["timeline"]],
                     color=line.get_color(), label=label, **style)  # nan: none ended
        if control:
            continue
        for ax in axes:
            ax.axvspan(r["down_after_s"], r["down_after_s"] + e["profile_config"]["settle_s"],
                       color=line.get_color(), alpha=0.12)
            ax.axvline(r["down_after_s"], color=line.get_color(), ls=":", lw=1)
    for ax in axes:
        ax.axvline(0, color="black", lw=1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("GB/s ending in the second")
    axes[0].set_title(f"Descriptor GETs and PUTs through one objectcache serve over 3 memstore "
                      f"OSDs ({e['cores']} cores)\n{e['victim']} SIGKILLed at t = 0 (kill reps; "
                      "controls: nothing killed); dotted: marked down; shaded: settling",
                      fontsize=9)
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].set_ylabel("longest request ending in the second (ms)")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("seconds from the SIGKILL")
    axes[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def markdown(e):
    lines = ["| rep | phase | s | req/s | GB/s | GET GB/s | PUT GB/s | p99 ms | longest ms | "
             "failed | cores busy: server / OSDs / all ours | load average |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in e["reps"]:
        name = f"{r['rep']} {r['kind']}"
        if "phases" not in r:
            lines.append(f"| {name} | error: {r.get('error')} |")
            continue
        for ph in ("before", "detection", "settle", "after"):
            p = r["phases"].get(ph)
            if not p:
                continue
            c = r["cpu_cores_busy"].get(ph)
            busy = f"{c['server']} / {c['osds']} / {c['all']}" if c else "-"
            load = {"before": r.get("load_average_kill"),
                    "after": r.get("load_average_end")}.get(ph)
            lines.append(f"| {name} | {ph} | {p['seconds']} | {p['total']['requests_per_s']} | "
                         f"{p['total']['gbps']} | {p['get']['gbps']} | {p['put']['gbps']} | "
                         f"{p['total']['p99_ms']} | {p['total']['longest_ms']} | "
                         f"{p['total']['failed']} | {busy} | {load[0] if load else '-'} |")
    s = e["summary"]
    finds = []
    k = s.get("kill")
    if k:
        finds.append(f"kill, median of {k['reps_completed']}: {k['before_gbps']} GB/s before, "
                     f"{k['detection_gbps']} during detection ({k['down_after_s']} s), "
                     f"{k['after_gbps']} after the mark-down (x{k['after_over_before_gbps']}); "
                     f"longest request {k['longest_request_ms']} ms")
    c = s.get("control")
    if c:
        finds.append(f"control (nothing killed): x{c['after_over_before_gbps']} over the same "
                     "phases; kill's ratio over control's "
                     f"{s.get('kill_ratio_over_control_ratio')}")
    finds.append(f"failures {s['failures']}")
    return "\n".join(lines), "; ".join(finds) + "."


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out", help="prefix of the JSON and PNG")
    ap.add_argument("--profile", default="reduced", choices=sorted(PROFILES))
    ap.add_argument("--reps", type=int, help="repetitions, each on a fresh cluster")
    ap.add_argument("--control", action="store_true",
                    help="after each repetition, one with the same phases and nothing killed")
    ap.add_argument("--victim", default="osd.1", choices=["osd.0", "osd.1", "osd.2"])
    ap.add_argument("--report-only", metavar="JSON",
                    help="recompute the summary, PNG and table of a results file; run nothing")
    ap.add_argument("--via", default="http", choices=["http", "auto"],
                    help="descriptor GETs' delivery (auto: UCX when the server offers it)")
    a = ap.parse_args()
    cfg = dict(PROFILES[a.profile], via=a.via)
    if a.reps:
        cfg["reps"] = a.reps
    if a.report_only:
        with open(a.report_only) as f:
            e = json.load(f)
        e["summary"] = summarize(e["reps"])
        return write(e, a.report_only[:-len(".json")], None)
    out = a.out or os.path.join(BENCH, "results", datetime.date.today().isoformat(),
                                "osd-failure")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    build = os.path.abspath(a.build)
    oc, pu = import_client(build)
    tmp = tempfile.mkdtemp(prefix="oc-osd-failure-")
    log_dir = os.path.join(tmp, "logs")
    os.makedirs(log_dir)
    say = Say("osd_failure")
    # SIGTERM ends the run like ^C: the finally blocks stop the server and the cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    e = {"benchmark": "osd_failure_bench", "profile": a.profile, "profile_config": cfg,
         "victim": a.victim, "cores": os.cpu_count(), "osds": 3, "objectstore": "memstore",
         "pool": {"size": 3, "min_size": 2, "pg_num": 8},
         "phases_defined": "by completion time; before = [load start + warmup_s, kill), "
                           "detection = [kill, mark-down), after = [mark-down + settle_s, end)",
         "commands": ["bench/osd_failure_bench.py " + " ".join(sys.argv[1:])], "reps": []}
    plan = [True, False] * cfg["reps"] if a.control else [True] * cfg["reps"]
    try:
        for rep, kill in enumerate(plan):
            e["reps"].append(one_rep(cfg, build, oc, pu, rep, a.victim, kill, log_dir, say,
                                     tmp))
    finally:
        for rep in range(len(plan)):
            shutil.rmtree(os.path.join(tmp, f"ceph-{rep}"), ignore_errors=True)
    e["summary"] = summarize(e["reps"])
    return write(portable(e, tmp), out, log_dir)  # committed results name no machine path


def write(e, out, log_dir):
    """Writes out.json and out.png, prints the table; the exit status."""
    with open(out + ".json", "w") as f:
        json.dump(e, f, indent=1)
    plot(e, out + ".png")
    text, finding = markdown(e)
    print(text + "\n\n" + finding)
    print(f"wrote {out}.json, {out}.png" + (f" (logs in {log_dir})" if log_dir else ""),
          file=sys.stderr)
    bad = e["summary"]["failures"] or any("error" in r for r in e["reps"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
