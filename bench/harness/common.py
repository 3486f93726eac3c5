"""Shared pieces of bench/run-all: running commands with progress, machine facts, versions,
Google Benchmark JSON, medians. No experiment logic here (experiments.py), no report
formatting (report.py)."""
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
CLUSTER = os.path.join(ROOT, "tools", "ceph-test-cluster")  # throw-away Ceph clusters


class StepFailed(Exception):
    """A command of an experiment failed; the experiment records it and the run goes on."""


class Progress:
    """Prints which experiment runs (n of m), the elapsed time and an estimate of what is left.

    The estimate is the planned seconds of the experiments still to run, scaled by how long
    the finished ones took against their plan."""

    def __init__(self, plans):
        self.plans = plans  # [(name, planned seconds)]
        self.start = time.monotonic()
        self.done_planned = 0.0
        self.done_actual = 0.0
        self.index = -1
        self.exp_start = self.start

    @staticmethod
    def fmt(seconds):
        seconds = max(0, int(seconds))
        return f"{seconds // 60:02d}:{seconds % 60:02d}"

    def remaining(self):
        left = sum(p for _, p in self.plans[max(self.index, 0):])
        if self.done_planned > 0:
            left *= max(0.5, self.done_actual / self.done_planned)
        in_exp = time.monotonic() - self.exp_start if self.index >= 0 else 0
        return max(0.0, left - in_exp)

    def begin(self, index):
        self.index = index
        self.exp_start = time.monotonic()
        name = self.plans[index][0]
        self.say(f"experiment {index + 1} of {len(self.plans)}: {name}")

    def end(self):
        took = time.monotonic() - self.exp_start
        self.done_planned += self.plans[self.index][1]
        self.done_actual += took
        self.say(f"experiment {self.index + 1} done in {self.fmt(took)}")

    def say(self, text):
        elapsed = time.monotonic() - self.start
        print(f"[run-all {self.fmt(elapsed)} elapsed, ~{self.fmt(self.remaining())} left] {text}",
              file=sys.stderr, flush=True)


class Say:
    """The progress of a bench run alone (not under run-all): one line per step on stderr,
    after the seconds since the Say was made (and `name`, if given)."""

    def __init__(self, name=""):
        self.name, self.start = name, time.monotonic()

    def say(self, text):
        head = f"{self.name} " if self.name else ""
        print(f"[{head}{time.monotonic() - self.start:5.0f} s] {text}", file=sys.stderr,
              flush=True)


def run(cmd, log_dir, name, progress, timeout, env=None, cwd=None, quiet=False):
    """Runs cmd, stdout to <log_dir>/<name>.out and stderr to .err; returns stdout as text.

    Prints a heartbeat every 20 s while it runs. StepFailed on a non-zero exit or timeout."""
    out_path = os.path.join(log_dir, name + ".out")
    err_path = os.path.join(log_dir, name + ".err")
    if not quiet:
        progress.say("  $ " + " ".join(cmd))
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd or ROOT)
        start = time.monotonic()
        last = start
        while True:
            try:
                proc.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if now - start > timeout:
                    proc.kill()
                    proc.wait()
                    raise StepFailed(f"{name}: timed out after {timeout:.0f} s (log {err_path})")
                if now - last >= 20:
                    last = now
                    progress.say(f"  ... {name} running for {Progress.fmt(now - start)}")
    text = open(out_path, errors="replace").read()
    if proc.returncode != 0:
        tail = open(err_path, errors="replace").read()[-600:]
        raise StepFailed(f"{name}: exit {proc.returncode}: {tail.strip()}")
    return text


def gbench_json(text):
    """Google Benchmark JSON from a stdout that UCX also writes its log lines to
    ("[<time>] [<host>:<pid>:<thread>] file.c:NN UCX ERROR ..."), at a line start or in the
    middle of one."""
    ucx = re.compile(r"\[\d+\.\d+\] \[[^\]]*\]\s+\S+\s+UCX\s.*$")
    lines = [ucx.sub("", l) for l in text.splitlines()]
    return json.loads("\n".join(l for l in lines if l.strip()))


def gbench_rows(doc, prefix):
    """Rows of one benchmark family: args (ints from the name) plus every numeric field."""
    rows = []
    for b in doc.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if not name.startswith(prefix + "/") or b.get("run_type") == "aggregate":
            continue
        args = []
        for part in name.split("/")[1:]:
            if re.fullmatch(r"\d+", part):
                args.append(int(part))
        row = {"name": name, "args": args}
        if b.get("error_occurred"):
            row["error"] = b.get("error_message", "error")
        for k, v in b.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[k] = v
        rows.append(row)
    return rows


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, proc, seconds=60):
    """Polls `url`/healthz until it answers (True), or `proc` exits or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1)
            return True
        except OSError:
            if proc.poll() is not None:
                return False
            time.sleep(0.05)
    return False


def serve(build, root, name, toml, env=None):
    """`objectcache serve` with configuration `toml` (text), data dir <root>/<name>-data, log
    <root>/<name>.log, on a free port. Returns (proc, url); RuntimeError if it does not start."""
    port = free_port()
    cfg = os.path.join(root, f"{name}.toml")
    with open(cfg, "w") as f:
        f.write(toml)
    log = open(os.path.join(root, f"{name}.log"), "ab")
    proc = subprocess.Popen([os.path.join(build, "gateway", "objectcache"), "serve", "--config",
                             cfg, "--data-dir", os.path.join(root, f"{name}-data"), "--listen",
                             f"127.0.0.1:{port}"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    if not wait_healthy(url, proc):
        stop(proc)
        raise RuntimeError(f"objectcache serve ({name}) did not start; see {log.name}")
    return proc, url


def stop(proc):
    """Stops a server this harness started (by its PID): SIGTERM, SIGKILL after 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_pids(d):
    """{name: pid} of the daemons of a tools/ceph-test-cluster directory (DIR/pids)."""
    out = {}
    with open(os.path.join(d, "pids")) as f:
        for line in f:
            name, pid = line.split()
            out[name] = int(pid)
    return out


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def _first_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
        return out.strip().splitlines()[0] if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def _dpkg(package):
    return _first_line(["dpkg-query", "-W", "-f=${Version}", package])


def machine():
    cpu = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kib = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(mem_kib / 2**20, 1),
            "kernel": platform.release(), "hostname": platform.node(),
            "os": _first_line(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])}


def versions(build_dir):
    commit = _first_line(["git", "-C", ROOT, "rev-parse", "HEAD"])
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip() != ""
    build_type = None
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.exists(cache):
        m = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", open(cache).read(), re.M)
        build_type = m.group(1) if m else None
    # With --no-build the binaries may predate HEAD: say when they were linked.
    built = {}
    for rel in ("bench/storage_bench", "bench/data_plane_bench", "bench/kv_bench",
                "bench/objectcache_bench", "bench/ttft_emulator", "gateway/objectcache",
                "client/oc"):
        path = os.path.join(build_dir, rel)
        if os.path.exists(path):
            built[os.path.basename(rel)] = time.strftime(
                "%Y-%m-%d %H:%M", time.gmtime(os.path.getmtime(path)))
    return {"git_commit": commit, "git_tree_modified": dirty, "binaries_linked_utc": built,
            "compiler": _first_line(["g++", "--version"]), "build_type": build_type,
            "rocksdb": _dpkg("librocksdb-dev"), "ucx": _dpkg("libucx-dev"),
            "boost": _dpkg("libboost-dev"), "wrk": _dpkg("wrk"),
            "python": platform.python_version(), "cmake": _first_line(["cmake", "--version"])}


def which(name):
    return shutil.which(name)


def portable(value, tmp):
    """`value` (JSON data) with this checkout's path and the run's temp dir replaced by
    relative and placeholder forms, so committed results name no machine path."""
    if isinstance(value, str):
        return value.replace(ROOT + os.sep, "").replace(ROOT, ".").replace(tmp, "<tmp>")
    if isinstance(value, list):
        return [portable(v, tmp) for v in value]
    if isinstance(value, dict):
        return {k: portable(v, tmp) for k, v in value.items()}
    return value
