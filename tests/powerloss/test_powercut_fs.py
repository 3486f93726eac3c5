"""powercut_fs itself: what survives its power cut is exactly what fsync, fdatasync and an
fsync of the directory made durable (docs/design.md, "Power-loss test"), no less and no more."""
import os
import shutil
import tempfile

import pytest

from powercut import PowercutMount, parse_cut


@pytest.fixture
def fs():
    root = tempfile.mkdtemp(prefix="oc-powercut-fs-")
    m = PowercutMount(os.path.join(root, "backing"), os.path.join(root, "mnt"),
                      os.path.join(root, "powercut.log"))
    m.mount()
    yield m
    m.close()
    shutil.rmtree(root, ignore_errors=True)


def write(path, data, sync=None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


def sync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def cut_and_remount(fs):
    stats = parse_cut(fs.cut())
    fs.mount()
    return stats


def test_synced_file_and_directory_survive(fs):
    p = os.path.join(fs.mountpoint, "a")
    write(p, b"durable", sync="fsync")
    sync_dir(fs.mountpoint)
    os.mkdir(os.path.join(fs.mountpoint, "d"))
    sync_dir(fs.mountpoint)
    write(os.path.join(fs.mountpoint, "d", "b"), b"x" * 100000, sync="fdatasync")
    sync_dir(os.path.join(fs.mountpoint, "d"))
    stats = cut_and_remount(fs)
    assert read(p) == b"durable"
    assert read(os.path.join(fs.mountpoint, "d", "b")) == b"x" * 100000
    assert os.listdir(os.path.join(fs.mountpoint, "d")) == ["b"]
    assert stats["bytes_dropped"] == 0 and stats["entries_removed"] == 0


def test_unsynced_writes_are_dropped(fs):
    p = os.path.join(fs.mountpoint, "a")
    write(p, b"0123456789", sync="fsync")
    sync_dir(fs.mountpoint)
    fd = os.open(p, os.O_WRONLY)
    os.pwrite(fd, b"ab", 2)       # overwrite in place
    os.pwrite(fd, b"tail", 10)    # append
    os.close(fd)
    assert read(p) == b"01ab456789tail"
    stats = cut_and_remount(fs)
    assert read(p) == b"0123456789"
    assert stats["files_rolled_back"] == 1 and stats["bytes_dropped"] == 6


def test_truncate_is_undone(fs):
    p = os.path.join(fs.mountpoint, "a")
    write(p, b"0123456789", sync="fsync")
    sync_dir(fs.mountpoint)
    os.truncate(p, 3)
    with open(p, "r+b") as f:  # and written past the cut
        f.seek(5)
        f.write(b"zz")
    cut_and_remount(fs)
    assert read(p) == b"0123456789"


def test_synced_file_in_unsynced_directory_is_lost(fs):
    """POSIX: fsync of a new file does not make its name durable; its directory's fsync does."""
    write(os.path.join(fs.mountpoint, "new"), b"data", sync="fsync")
    stats = cut_and_remount(fs)
    assert not os.path.exists(os.path.join(fs.mountpoint, "new"))
    assert stats["entries_removed"] == 1


def test_named_file_keeps_only_its_synced_bytes(fs):
    p = os.path.join(fs.mountpoint, "log")
    write(p, b"")
    sync_dir(fs.mountpoint)
    write(p, b"synced", sync="fdatasync")
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"-lost")
    os.close(fd)
    cut_and_remount(fs)
    assert read(p) == b"synced"


def test_unsynced_rename_and_unlink_are_undone(fs):
    """RocksDB's CURRENT update: write a temp file, sync it, rename it over the old one; until
    the directory is synced the old CURRENT is what a cut leaves."""
    cur = os.path.join(fs.mountpoint, "CURRENT")
    gone = os.path.join(fs.mountpoint, "gone")
    write(cur, b"MANIFEST-1", sync="fsync")
    write(gone, b"keep me", sync="fsync")
    sync_dir(fs.mountpoint)
    tmp = os.path.join(fs.mountpoint, "CURRENT.tmp")
    write(tmp, b"MANIFEST-2", sync="fsync")
    os.rename(tmp, cur)
    os.unlink(gone)
    stats = cut_and_remount(fs)
    assert read(cur) == b"MANIFEST-1"
    assert read(gone) == b"keep me"
    assert not os.path.exists(tmp)
    assert stats["entries_restored"] == 2  # the old CURRENT and "gone"
    # Now with the directory synced: the rename is durable.
    write(tmp, b"MANIFEST-2", sync="fsync")
    os.rename(tmp, cur)
    sync_dir(fs.mountpoint)
    cut_and_remount(fs)
    assert read(cur) == b"MANIFEST-2"


def test_unsynced_directory_goes_with_its_files(fs):
    d = os.path.join(fs.mountpoint, "sub")
    os.mkdir(d)
    write(os.path.join(d, "f"), b"data", sync="fsync")
    sync_dir(d)  # the file's name is durable in sub, but sub's own name is not
    cut_and_remount(fs)
    assert not os.path.exists(d)


def test_unlinked_open_file_reads_and_writes(fs):
    """hard_remove: a file unlinked while open is still reached through its descriptor."""
    p = os.path.join(fs.mountpoint, "f")
    fd = os.open(p, os.O_RDWR | os.O_CREAT)
    os.write(fd, b"abc")
    os.unlink(p)
    os.pwrite(fd, b"d", 3)
    assert os.pread(fd, 10, 0) == b"abcd"
    os.close(fd)


def test_mmap_sees_written_bytes(fs):
    """The data files are read through a shared mapping while they are appended to."""
    import mmap
    p = os.path.join(fs.mountpoint, "m")
    fd = os.open(p, os.O_RDWR | os.O_CREAT)
    os.write(fd, b"x" * 8192)
    m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ)
    os.pwrite(fd, b"yz", 4096)
    assert m[4096:4098] == b"yz"
    m.close()
    os.close(fd)
