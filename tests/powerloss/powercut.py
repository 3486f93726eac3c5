"""Mounting powercut_fs (tests/powerloss/powercut_fs) and cutting its power.

A PowercutMount serves BACKING/tree at a mount point through the powercut_fs process it
starts. `cut()` is the power cut: the daemon unmounts, rolls back everything not made durable
and exits; the line it reports (what it dropped) is returned. `mount()` then shows what
survived. `close()` always leaves nothing behind: the mount is unmounted (lazily if it has
to be) and the daemon stopped by its PID.
"""
import os
import signal
import subprocess
import time

FUSERMOUNT = "fusermount3"


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def wait_for(what, cond, deadline_s=30):
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class PowercutMount:
    def __init__(self, backing, mountpoint, log_path):
        self.bin = os.environ["OC_POWERCUT_FS_BIN"]
        self.backing = backing
        self.mountpoint = mountpoint
        self.log = open(log_path, "ab")
        self.proc = None
        os.makedirs(backing, exist_ok=True)
        os.makedirs(mountpoint, exist_ok=True)

    def mount(self):
        assert self.proc is None and not mounted(self.mountpoint)
        # auto_unmount: if the daemon dies the kernel mount goes with it, so a failed test
        # never leaves a dead mount behind.
        self.proc = subprocess.Popen(
            [self.bin, self.backing, self.mountpoint, "-f", "-o", "auto_unmount"],
            stdout=self.log, stderr=self.log)
        wait_for("the mount", lambda: mounted(self.mountpoint) or self.proc.poll() is not None)
        assert self.proc.poll() is None, f"powercut_fs exited with {self.proc.returncode}"

    def cut(self):
        """Power cut: unmount; the daemon drops what was not durable and exits 0."""
        subprocess.run([FUSERMOUNT, "-u", self.mountpoint], check=True)
        rc = self.proc.wait(timeout=60)
        self.proc = None
        assert rc == 0, f"powercut_fs exited with {rc}"
        with open(os.path.join(self.backing, "last-cut")) as f:
            return f.read().strip()

    def close(self):
        if mounted(self.mountpoint):
            subprocess.run([FUSERMOUNT, "-u", "-z", self.mountpoint],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc = None
        if mounted(self.mountpoint):
            subprocess.run(["umount", "-l", self.mountpoint], check=False)
        self.log.close()


def parse_cut(line):
    """{"files_rolled_back": n, ...} from the daemon's report line."""
    return {k: int(v) for k, v in (x.split("=") for x in line.split() if "=" in x)}
