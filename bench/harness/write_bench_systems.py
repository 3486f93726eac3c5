"""write_bench's systems under test and the host around them: the constants both halves use,
the [storage] configurations, the disk (free space, dd's ceiling), `objectcache serve` per
configuration, the throw-away Ceph cluster with RGW, and per-process CPU and bytes written from
/proc. bench/write_bench.py's Bench adds the measurements (its parts) on top of Systems."""
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
LAYERS = 32
BYTES_PER_TOKEN_LAYER = 4096
ACCESS = "OCWRITEBENCHACCESS01"
SECRET = "ocWriteBenchSecret000000000000000000001"
BUCKET = "wbench"
# The configurations a run may compare (--configs, or the profile's): system "oc-<name>" is
# `objectcache serve` with this [storage] table. "data_files" is the default layout.
CONFIGS = {
    "data_files": 'extent_layout = "data_files"\n',
    "sst": 'extent_layout = "sst"\n',
    "blob": 'extent_layout = "blob"\n',
    # The default layout without early write-back
    # (docs/decisions/storage-early-writeback-small-objects.md): the commit's fdatasync writes it
    # all.
    "data_files_nowb": 'extent_layout = "data_files"\ndata_file_writeback_bytes = 0\n',
    # The default layout with small objects in the data files too (data_file_min_bytes = 0).
    "data_files_all": 'extent_layout = "data_files"\ndata_file_min_bytes = 0\n',
}
# Room a fill needs: SST compactions rewrite files while their inputs still exist.
FILL_SPACE_FACTOR = 2.5
FILL_SPACE_MARGIN = 2 * GiB  # the disk is shared: leave the others this much


def size_label(n):
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


def mount_of(path):
    """(mount point, fs type, device) of the filesystem holding `path`, from /proc/mounts."""
    path = os.path.realpath(path)
    best = ("/", "?", "?")
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, fstype, dev)
    return best


def data_parent(requested):
    """Where the servers' data dirs and the dd file go: the request, else /tmp when it is the
    repository's filesystem and not tmpfs, else the repository's build directory."""
    if requested:
        os.makedirs(requested, exist_ok=True)
        return os.path.abspath(requested)
    tmp = tempfile.gettempdir()
    if os.stat(tmp).st_dev == os.stat(ROOT).st_dev and mount_of(tmp)[1] != "tmpfs":
        return tmp
    build = os.path.join(ROOT, "build")
    os.makedirs(build, exist_ok=True)
    return build


def proc_cpu(pid):
    """CPU seconds of pid so far (every thread, user + system), None if it is gone: its process
    CPU clock (clock_getcpuclockid's id, ((~pid) << 3) | CPUCLOCK_SCHED), exact where
    /proc/<pid>/stat's utime + stime count 10 ms ticks, which read 0 for the smallest runs."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2) / 1e9
    except OSError:
        return None


def proc_io(pid):
    """{write_bytes, cancelled_write_bytes, read_bytes} of pid, None if unreadable."""
    try:
        text = open(f"/proc/{pid}/io").read()
    except OSError:
        return None
    fields = dict(line.split(": ") for line in text.strip().splitlines())
    return {k: int(fields[k]) for k in ("write_bytes", "cancelled_write_bytes", "read_bytes")}


class Meter:
    """CPU seconds and bytes written per named process over one measurement."""

    def __init__(self, pids):
        self.pids = pids  # {name: [pid]}
        self.cpu0 = {n: [proc_cpu(p) for p in ps] for n, ps in pids.items()}
        self.io0 = {n: [proc_io(p) for p in ps] for n, ps in pids.items()}

    def done(self):
        cpu, written = {}, {}
        for n, ps in self.pids.items():
            for p, c0, i0 in zip(ps, self.cpu0[n], self.io0[n]):
                c1, i1 = proc_cpu(p), proc_io(p)
                if c0 is not None and c1 is not None:
                    cpu[n] = cpu.get(n, 0.0) + c1 - c0
                if i0 is not None and i1 is not None:
                    written[n] = written.get(n, 0) + i1["write_bytes"] - i0["write_bytes"]
        return {"cpu_s": cpu, "write_bytes": written}


def s3_client(endpoint, access, secret):
    os.environ.setdefault("BOTO_DISABLE_CRT", "true")  # the plain signer (MACHINE-FACTS)
    import boto3  # Debian's python3-boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      max_pool_connections=16, retries={"max_attempts": 1}))


class Systems:
    """One run's disk, servers and cluster; what every part measures against."""

    def __init__(self, config, build, log_dir, progress, tmp, data_dir=None, rgw=True):
        self.p = config
        self.build = build
        self.log_dir = log_dir
        self.progress = progress
        self.data = tempfile.mkdtemp(prefix="oc-write-bench-", dir=data_parent(data_dir))
        self.tmp = tmp
        self.want_rgw = rgw and config["rgw"]
        self.servers = {}  # system -> (proc, url, root)
        self.rgw = None  # (url, access, secret, {name: [pid]})
        self.cluster_dir = os.path.join(self.data, "ceph")
        self.commands, self.notes = [], []
        self.doc = {"ceiling": [], "desc": [], "clients": [], "s3put": [], "multipart": [],
                    "fill": [], "reads": [], "disk": {}}
        self.body_files = {}

    def say(self, text):
        self.progress.say("write-bench: " + text)

    def run(self, cmd, name, timeout, env=None, record=True):
        if record and " ".join(cmd) not in self.commands:
            self.commands.append(" ".join(cmd))
        return common.run(cmd, self.log_dir, name, self.progress, timeout=timeout, env=env)

    def record(self, shown):
        if shown not in self.commands:
            self.commands.append(shown)

    # --- disk --------------------------------------------------------------------------------

    def check_disk(self):
        """Free space in the data dirs' filesystem, checked before the fills (when the other
        parts' servers and cluster are gone): scales the fill down, with a note, when the fill
        and its compactions would not fit. Both configurations get the same fill."""
        mnt, fstype, dev = mount_of(self.data)
        st = os.statvfs(self.data)
        free = st.f_bavail * st.f_frsize
        fill = self.fill_bytes()
        self.doc["disk"].update({
            "data_dir_mount": mnt, "fs_type": fstype, "device": dev,
            "same_fs_as_repo": os.stat(self.data).st_dev == os.stat(ROOT).st_dev,
            "free_bytes_before_fill": free, "planned_fill_bytes": fill})
        if fstype == "tmpfs":
            self.notes.append("The data dirs are on tmpfs: the disk figures mean nothing.")
        # SST blocks are rewritten by compaction while the input files still exist; the rest
        # is room for the dd file and for the other engineers on this disk.
        need = int(FILL_SPACE_FACTOR * fill) + self.p["dd_bytes"] + FILL_SPACE_MARGIN
        chunk = self.p["fill_g"] * LAYERS * BYTES_PER_TOKEN_LAYER
        if need > free:
            fit = int((free - self.p["dd_bytes"] - FILL_SPACE_MARGIN) / FILL_SPACE_FACTOR) // chunk
            floor = self.p.get("fill_chunks_min", self.p["fill_chunks"])
            chunks = max(1, min(self.p["fill_chunks"], floor if fit >= floor else fit))
            self.notes.append(
                f"Disk: {free / GiB:.1f} GiB free in {mnt} ({fstype}) before the fills; the "
                f"planned fill of {fill / GiB:.2f} GiB needs about {need / GiB:.1f} GiB with "
                f"its compactions, so it was scaled down to {chunks} chunks "
                f"({chunks * chunk / GiB:.2f} GiB).")
            self.p = dict(self.p, fill_chunks=chunks)
        self.doc["disk"]["fill_bytes"] = self.fill_bytes()
        self.say(f"fill {self.fill_bytes() / GiB:.2f} GiB per configuration in {self.data} "
                 f"({fstype} on {dev}, {free / GiB:.1f} GiB free)")

    def room_for_rgw(self, free):
        """RGW keeps overwritten objects for hours (rgw_gc_obj_min_wait), so its OSD holds
        every repetition's loads; without room for them the peer is skipped, with a note."""
        loads = sum(g * LAYERS * BYTES_PER_TOKEN_LAYER * n for g, n in self.p["desc_shapes"])
        need = self.p["reps"] * loads + 2 * loads + self.p["dd_bytes"] + FILL_SPACE_MARGIN
        if need <= free:
            return True
        self.notes.append(f"RGW not measured: its loads need about {need / GiB:.1f} GiB of disk "
                          f"and {free / GiB:.1f} GiB were free.")
        return False

    def fill_bytes(self):
        return self.p["fill_chunks"] * self.p["fill_g"] * LAYERS * BYTES_PER_TOKEN_LAYER

    def ceiling(self, when):
        """dd's sequential 1 MiB writes with fdatasync and with O_DIRECT; dd with fdatasync into
        a file that stays until the part ends (a store's data stays in the page cache, so its
        writes take pages the kernel has not just freed, which cost this VM a fault each:
        docs/decisions/data-files-sync-behind.md); and tcp_file_floor, the same bytes over
        loopback TCP from another process into a file, synced behind every 64 MiB as the data
        files are (what a client over HTTP can reach with no HTTP and no store). Alternating,
        repetition by repetition."""
        path = os.path.join(self.data, "dd.bin")
        count = max(1, self.p["dd_bytes"] // MiB)
        kept = []
        floor = os.path.join(self.build, "bench", "tcp_file_floor")
        try:
            for rep in range(self.p["reps"]):
                kept.append(os.path.join(self.data, f"dd-kept-{when}-{rep}.bin"))
                # The tcp floor right after dd's fdatasync, into the pages that dd's unlink just
                # freed (as each fresh server's writes are); the kept file last, as it keeps them.
                self.ceiling_row(self.dd(path, count, "conv=fdatasync", keep=False),
                                 "fdatasync", when, rep)
                cmd = [floor, "--file", path, "--bytes", str(count * MiB),
                       "--sync-every", str(64 * MiB)]
                self.record(" ".join(cmd).replace(path, "<data dir>/dd.bin").replace(
                    self.build, "<build>"))
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise common.StepFailed(f"tcp_file_floor: {r.stderr.strip()[-300:]}")
                row = json.loads(r.stdout)
                row.pop("mode")
                self.ceiling_row(row, "tcp", when, rep)
                self.ceiling_row(self.dd(path, count, "oflag=direct", keep=False),
                                 "direct", when, rep)
                self.ceiling_row(self.dd(kept[-1], count, "conv=fdatasync", keep=True),
                                 "fdatasync-kept", when, rep)
        finally:
            for f in kept:
                if os.path.exists(f):
                    os.unlink(f)

    def dd(self, path, count, flag, keep):
        cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", flag]
        self.record(" ".join(cmd).replace(path, "<data dir>/" + os.path.basename(path)))
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.monotonic() - t0
        if not keep:
            os.unlink(path)
        if r.returncode != 0:
            raise common.StepFailed(f"dd {flag}: {r.stderr.strip()[-300:]}")
        # dd's own "N bytes ... copied, S s" excludes process start; prefer it.
        try:
            line = [x for x in r.stderr.splitlines() if "copied" in x][-1]
            secs = float(line.split(",")[-2].split()[0])
        except (IndexError, ValueError):
            pass
        return {"bytes": count * MiB, "seconds": secs, "gbps": count * MiB / secs / 1e9}

    def ceiling_row(self, row, mode, when, rep):
        row = {"mode": mode, "when": when, "rep": rep, **row}
        self.doc["ceiling"].append(row)
        self.say(f"ceiling ({when}) {mode}: {row['gbps']:.2f} GB/s")

    # --- processes ---------------------------------------------------------------------------

    def start_server(self, system, tag):
        port = common.free_port()
        root = os.path.join(self.data, f"{system}-{tag}")
        os.makedirs(root, exist_ok=True)
        conf = os.path.join(root, "objectcache.toml")
        toml = "[storage]\n" + CONFIGS[system.split("-", 1)[1]]
        with open(conf, "w") as f:
            f.write('[gateway]\nmax_object_bytes = "4GiB"\naccess_log = false\n' + toml)
        env = dict(os.environ, UCX_TLS="shm", OC_ACCESS_KEY=ACCESS, OC_SECRET_KEY=SECRET)
        cmd = [os.path.join(self.build, "gateway", "objectcache"), "serve", "--config", conf,
               "--data-dir", os.path.join(root, "data"), "--listen", f"127.0.0.1:{port}"]
        self.record("objectcache serve --config <conf> --data-dir <data dir> --listen "
                    "127.0.0.1:<free port>   # [gateway] max_object_bytes = \"4GiB\", "
                    "access_log = false; " + toml.replace("\n", " ").strip())
        log_path = os.path.join(self.log_dir, f"{system}-{tag}.log")
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        if common.wait_healthy(url, proc):
            self.servers[system] = (proc, url, root)
            self.say(f"{system}: objectcache serve on {url} (pid {proc.pid})")
            s3_client(url, ACCESS, SECRET).create_bucket(Bucket=BUCKET)
            return
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        tail = open(log_path, errors="replace").read()[-600:].strip()
        raise common.StepFailed(f"{system}: objectcache serve did not start: {tail}")

    def stop_server(self, system):
        proc, _, root = self.servers.pop(system)
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)

    def cluster_up(self):
        script = os.path.join(ROOT, "tools", "ceph-test-cluster")
        # Ceph with tcmalloc, as upstream builds link it (server-allocator-tcmalloc.md).
        cmd = [script, "up", "--rgw", "--tcmalloc"] + (["--bluestore"] if self.p["bluestore"]
                                                        else [])
        self.say("starting the RGW peer: " + " ".join(cmd[1:]))
        try:
            self.run(cmd + [self.cluster_dir], "ceph-test-cluster-up", timeout=300,
                     env=dict(os.environ, OC_CEPH_OSD_BYTES=str(32 * GiB)), record=False)
        except common.StepFailed as e:
            self.notes.append(f"RGW not measured: the cluster did not start ({e}).")
            return
        self.record(" ".join(cmd[:1] + ["up", "--rgw"] + cmd[3:]) + " <dir>")
        env, pids = {}, {}
        for line in open(os.path.join(self.cluster_dir, "env")):
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v.strip("'\"")
        for line in open(os.path.join(self.cluster_dir, "pids")):
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                comm = open(f"/proc/{parts[1]}/comm").read().strip()
                if comm in ("radosgw", "ceph-osd", "ceph-mon"):
                    pids.setdefault(comm, []).append(int(parts[1]))
        self.rgw = (env["S3_ENDPOINT"], env["S3_ACCESS"], env["S3_SECRET"], pids)

    def cluster_down(self):
        if os.path.exists(os.path.join(self.cluster_dir, "pids")):
            self.say("stopping the RGW peer")
            self.run([os.path.join(ROOT, "tools", "ceph-test-cluster"), "down", self.cluster_dir],
                     "ceph-test-cluster-down", timeout=120, record=False)
        self.rgw = None

    def target(self, system):
        """(url, access, secret, {name: [pid]}) of a running system."""
        if system == "rgw":
            return self.rgw
        proc, url, _ = self.servers[system]
        return url, ACCESS, SECRET, {"objectcache": [proc.pid]}

    def systems(self, with_rgw):
        out = [f"oc-{c}" for c in self.p["configs"]]
        return out + (["rgw"] if with_rgw and self.rgw else [])

    @contextlib.contextmanager
    def fresh(self, system, tag):
        """A fresh server (empty data dir) for one measurement, removed afterwards: every
        system and repetition starts from the same state, and the disk holds one
        measurement's data at a time (overwritten and deleted data would otherwise wait for
        compactions that a short run never sees). RGW is the one cluster of the run."""
        if system == "rgw":
            yield
            return
        self.start_server(system, tag)
        try:
            yield
        finally:
            self.stop_server(system)
