"""objectcache.integrations.lmcache (issue 32): the LMCache MP-mode native_plugin L2 connector,
loaded as LMCache loads it (module_path, class_name, adapter_params as keyword arguments) and
driven by lmcache_standin.py the way LMCache's wrapper drives it, against a real gateway
(`objectcache serve`, RocksDB): byte-exact round trips of 256 chunks of unequal sizes, lookups
with partial hits, loads of missing keys and of wrongly sized buffers, a gateway killed or
cutting a body short (failures, never hits), concurrent submits, hostile arguments, close."""
import importlib
import os
import select
import shutil
import socket
import tempfile
import threading
import time

import numpy as np
import pytest

from conftest import Server, running_server
from lmcache_standin import NativeConnectorStandIn, check_connector
from pyclient_util import oc  # noqa: F401  (puts the built package on sys.path)

MODULE_PATH = "objectcache.integrations.lmcache"  # docs/integrations.md's configuration line
CLASS_NAME = "ObjectCacheL2Connector"
SENTINEL = 0xEE


@pytest.fixture(scope="module")
def gateway():
    # access_log (on by default; it lands in conftest's [gateway] table): the tests count the
    # requests each batch cost.
    with running_server("oc-it-lmcache-", extra_config="access_log = true\n") as srv:
        yield srv


@pytest.fixture(scope="module")
def kv_bucket(gateway):
    gateway.boto3().create_bucket(Bucket="lmcache-kv")
    return "lmcache-kv"


class OpCounter:
    """Counts the gateway's access-log lines per S3 operation name since it was made."""

    def __init__(self, server):
        self.path = os.path.join(server.root, "server.log")
        self.start = os.path.getsize(self.path)

    def counts(self):
        with open(self.path, "rb") as f:
            f.seek(self.start)
            text = f.read().decode(errors="replace")
        out = {}
        for line in text.splitlines():
            if " access " not in line:  # the access logger's lines only
                continue
            for field in line.split():
                if field.startswith("op="):
                    out[field[3:]] = out.get(field[3:], 0) + 1
        return out

    def wait_for(self, expected, deadline_s=10):
        """The counts once they reach `expected` (the log line may trail the answer)."""
        deadline = time.time() + deadline_s
        while True:
            c = self.counts()
            if all(c.get(k, 0) >= v for k, v in expected.items()) or time.time() > deadline:
                return c
            time.sleep(0.02)


def adapter_params(server, bucket, **extra):
    params = {"endpoint": server.endpoint, "access_key": server.access_key,
              "secret_key": server.secret_key, "bucket": bucket}
    params.update(extra)
    return params


def load_connector(params):
    """What LMCache's native_plugin loader does with the adapter config."""
    cls = getattr(importlib.import_module(MODULE_PATH), CLASS_NAME)
    return cls(**params)


@pytest.fixture
def standin(gateway, kv_bucket):
    s = NativeConnectorStandIn(load_connector(adapter_params(gateway, kv_bucket)))
    yield s
    assert s.close(), "demux thread did not stop"
    assert not s.unknown_ids and not s.drain_errors


_n = [0]


def lm_keys(n, tag):
    """LMCache-shaped keys: model@kv_rank(8 hex)@group@chunk_hash[@salt], unique per call."""
    _n[0] += 1
    return [f"meta-llama/Llama-3.1-8B@{3:08x}@0@{os.getpid():x}{_n[0]:04x}{tag}{j:060x}"
            for j in range(n)]


def payloads(sizes, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, s, dtype=np.uint8) for s in sizes]


def targets(sizes):
    return [np.full(s, SENTINEL, dtype=np.uint8) for s in sizes]


def views(arrays):
    return [memoryview(a) for a in arrays]


# Sizes that differ in one batch (hybrid models): 4 groups, odd sizes included.
UNEQUAL = [64 * 1024, 4096, 100_003, 1]


def test_loads_as_lmcache_does_and_has_every_method(gateway, kv_bucket):
    c = load_connector(adapter_params(gateway, kv_bucket))
    assert check_connector(c) is True  # submit_batch_delete present too
    assert isinstance(c.event_fd(), int) and c.event_fd() >= 0
    c.close()


def test_256_chunks_of_unequal_sizes_round_trip_byte_exact(standin, gateway):
    sizes = [UNEQUAL[j % len(UNEQUAL)] for j in range(256)]
    keys = lm_keys(256, "rt")
    data = payloads(sizes, 1)
    ops = OpCounter(gateway)
    assert standin.store(keys, views(data)) is True
    # One descriptor PUT per distinct size, nothing else.
    assert ops.wait_for({"PutObjectCache": 4}) == {"PutObjectCache": 4}
    ops = OpCounter(gateway)
    assert standin.lookup(keys) == [True] * 256
    assert ops.wait_for({"GetObjectCache": 1}) == {"GetObjectCache": 1}  # one probe
    out = targets(sizes)
    ops = OpCounter(gateway)
    assert standin.load(keys, views(out)) == [True] * 256
    assert ops.wait_for({"GetObjectCache": 4}) == {"GetObjectCache": 4}  # a GET per size
    for j in range(256):
        assert np.array_equal(out[j], data[j]), f"key {j} ({sizes[j]} bytes)"
    stats = standin.connector.stats()
    assert stats["get"]["hits"] >= 256 and stats["get"]["bytes"] >= sum(sizes)
    assert standin.connector.last_load_seconds > 0
    assert stats["get"]["last_seconds"] == standin.connector.last_load_seconds


def test_ctypes_byte_arrays_as_the_wrapper_passes_them(standin):
    """LMCache hands over MemoryObj.byte_array: a memoryview of a ctypes c_ubyte array."""
    import ctypes
    sizes = [4096, 777, 4096]
    keys = lm_keys(3, "ct")
    data = payloads(sizes, 6)
    src = [(ctypes.c_ubyte * n).from_buffer_copy(d.tobytes()) for n, d in zip(sizes, data)]
    assert standin.store(keys, [memoryview(a) for a in src]) is True
    dst = [(ctypes.c_ubyte * n)() for n in sizes]
    assert standin.load(keys, [memoryview(a) for a in dst]) == [True] * 3
    assert [bytes(a) for a in dst] == [d.tobytes() for d in data]


def test_exists_reports_partial_hits_per_key(standin):
    keys = lm_keys(40, "ex")
    stored = [j for j in range(40) if j % 3 != 1]  # the first key present, gaps after
    standin.store([keys[j] for j in stored], views(payloads([4096] * len(stored), 2)))
    assert standin.lookup(keys) == [j in stored for j in range(40)]
    missing_first = [keys[1]] + keys[2:6]
    assert standin.lookup(missing_first) == [False] + [j in stored for j in range(2, 6)]
    assert standin.lookup(lm_keys(5, "none")) == [False] * 5


def test_get_of_missing_keys_is_a_per_key_miss_and_leaves_them_untouched(standin):
    keys = lm_keys(12, "miss")
    present = [0, 1, 4, 5, 6, 11]
    data = payloads([8192] * 12, 3)
    standin.store([keys[j] for j in present], views([data[j] for j in present]))
    out = targets([8192] * 12)
    got = standin.load(keys, views(out))
    assert got == [j in present for j in range(12)]
    for j in range(12):
        if j in present:
            assert np.array_equal(out[j], data[j])
        else:
            assert (out[j] == SENTINEL).all(), f"missing key {j} was written"
    assert standin.load(lm_keys(3, "gone"), views(targets([10, 10, 10]))) == [False] * 3


def test_a_buffer_of_the_wrong_size_is_a_per_key_miss(standin):
    keys = lm_keys(4, "size")
    data = payloads([4096] * 4, 4)
    standin.store(keys, views(data))
    sizes = [4096, 8192, 4096, 2048]  # key 1 asks for more than stored, key 3 for less
    out = targets(sizes)
    assert standin.load(keys, views(out)) == [True, False, True, False]
    assert np.array_equal(out[0], data[0]) and np.array_equal(out[2], data[2])


def test_delete_removes_keys(standin):
    keys = lm_keys(6, "del")
    standin.store(keys, views(payloads([512] * 6, 5)))
    assert standin.delete(keys[:3]) == [True] * 3
    assert standin.lookup(keys) == [False] * 3 + [True] * 3


def test_concurrent_submits_from_many_threads(standin):
    errors = []

    def worker(t):
        try:
            for r in range(5):
                keys = lm_keys(16, f"c{t}")
                sizes = [1024 + 17 * t + j % 2 for j in range(16)]
                data = payloads(sizes, 100 * t + r)
                pending = standin.submit_store(keys, views(data))
                assert pending.wait(60) is True
                assert standin.lookup(keys) == [True] * 16
                out = targets(sizes)
                assert standin.load(keys, views(out)) == [True] * 16
                assert all(np.array_equal(a, b) for a, b in zip(out, data))
        except Exception as e:  # reported by the main thread
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not standin.unknown_ids


def test_exists_batches_waiting_together_go_out_as_one_probe(gateway, kv_bucket):
    """Exists batches queued behind a running load (one worker) are probed as one request and
    each still gets its own answer; merge_exists_keys=0 probes each batch on its own."""
    big_bytes = 4 << 20
    for merge in (1024, 0):
        s = NativeConnectorStandIn(load_connector(
            adapter_params(gateway, kv_bucket, workers=1, merge_exists_keys=merge)))
        try:
            big_keys = lm_keys(8, "mbig")
            assert s.store(big_keys, views(payloads([big_bytes] * 8, 7))) is True
            keys = lm_keys(12 * 40, "mex")
            present = [j % 5 in (0, 3) for j in range(len(keys))]
            stored = [k for k, p in zip(keys, present) if p]
            assert s.store(stored, views(payloads([512] * len(stored), 8))) is True
            counter = OpCounter(gateway)
            load = s.submit_load(big_keys, views(targets([big_bytes] * 8)))  # holds the worker
            # The last batch repeats the first: a merged probe may name a key twice.
            batches = [range(40 * b, 40 * (b + 1)) for b in range(11)] + [range(0, 40)]
            pending = [s.submit_lookup([keys[j] for j in b]) for b in batches]
            assert load.wait(60) == [True] * 8
            for b, p in zip(batches, pending):
                assert p.wait(60) == [present[j] for j in b], b
            requests = counter.wait_for({"GetObjectCache": 13 if merge == 0 else 2})
            probes = requests["GetObjectCache"] - 1  # the load's GET is one too
            if merge:
                assert 1 <= probes <= 2, probes  # 12 batches, 480 keys: one probe (two at worst)
            else:
                assert probes == 12, probes
            assert s.connector.stats()["exists"]["batches"] == 12
        finally:
            assert s.close()


def test_empty_batches_complete_at_once(standin):
    assert standin.lookup([]) == []
    assert standin.load([], []) == []
    assert standin.store([], []) is True


def test_hostile_arguments_are_refused_on_submit(gateway, kv_bucket):
    c = load_connector(adapter_params(gateway, kv_bucket))
    buf = np.zeros(16, dtype=np.uint8)
    bad = [
        (TypeError, lambda: c.submit_batch_get("abc", [memoryview(buf)])),
        (TypeError, lambda: c.submit_batch_get([b"bytes-key"], [memoryview(buf)])),
        (TypeError, lambda: c.submit_batch_exists([1, 2])),
        (TypeError, lambda: c.submit_batch_exists(None)),
        (TypeError, lambda: c.submit_batch_get(["k@1"], [b"read-only bytes"])),
        (TypeError, lambda: c.submit_batch_get(["k@1"], [memoryview(bytes(16))])),
        (TypeError, lambda: c.submit_batch_get(["k@1"], [np.zeros(32, np.uint8)[::2]])),
        (TypeError, lambda: c.submit_batch_set(["k@1"], [object()])),
        (TypeError, lambda: c.submit_batch_set(["k@1"], "not a list")),
        (ValueError, lambda: c.submit_batch_get(["k@1", "k@2"], [memoryview(buf)])),
        (ValueError, lambda: c.submit_batch_set(["k@1"], [bytearray()])),
        (ValueError, lambda: c.submit_batch_exists([""])),
        (ValueError, lambda: c.submit_batch_exists(["a\0b"])),
        (ValueError, lambda: c.submit_batch_exists(["x" * 1025])),
        (UnicodeEncodeError, lambda: c.submit_batch_exists(["\ud800"])),
    ]
    for i, (exc, call) in enumerate(bad):
        try:
            call()
        except exc:
            continue
        pytest.fail(f"hostile case {i} did not raise {exc.__name__}")
    # A refused call queued nothing, and read-only buffers are fine to store.
    assert c.drain_completions() == []
    fid = c.submit_batch_set(["hostile@ok"], [b"read-only is fine for a set"])
    poller = select.poll()
    poller.register(c.event_fd(), select.POLLIN)
    assert poller.poll(30_000), "no completion within 30 s"
    assert c.drain_completions() == [(fid, True, "", [True])]
    c.close()


def test_constructor_refuses_bad_params(gateway, kv_bucket):
    good = adapter_params(gateway, kv_bucket)
    with pytest.raises(TypeError):
        load_connector({k: v for k, v in good.items() if k != "bucket"})
    with pytest.raises(TypeError):
        load_connector(dict(good, no_such_param=1))
    with pytest.raises(ValueError):
        load_connector(dict(good, bucket=""))
    with pytest.raises(ValueError):
        load_connector(dict(good, endpoint="ftp://nowhere"))
    with pytest.raises(ValueError):
        load_connector(dict(good, workers=0))
    with pytest.raises(ValueError):
        load_connector(dict(good, prefix="p" * 600))


class HalfBodyServer:
    """Answers every request as a gateway answering a descriptor GET with all chunks matched,
    then sends half the body and closes: a gateway dying mid-transfer, deterministically."""

    def __init__(self, chunk_bytes, chunks):
        self.body = bytes(range(256)) * (chunk_bytes * chunks // 256 + 1)
        self.length = chunk_bytes * chunks
        self.chunks = chunks
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    data += piece
                head = (f"HTTP/1.1 200 OK\r\nx-oc-version: 1\r\nx-oc-matched-chunks: "
                        f"{self.chunks}\r\nx-oc-mode: chunkwise\r\nx-oc-request-id: half\r\n"
                        f"Content-Length: {self.length}\r\n\r\n")
                conn.sendall(head.encode() + self.body[:self.length // 2])

    def close(self):
        self.sock.close()


def test_a_body_cut_short_is_a_failure_for_every_key():
    srv = HalfBodyServer(4096, 8)
    s = NativeConnectorStandIn(load_connector(
        {"endpoint": srv.endpoint, "access_key": "a", "secret_key": "b", "bucket": "kv",
         "timeout": 5}))
    try:
        pending = s.submit_load(lm_keys(8, "half"), views(targets([4096] * 8)))
        assert pending.wait(30) == [False] * 8
        fid, ok, error, per_key = pending.raw
        assert ok is False and error and per_key == [False] * 8
    finally:
        s.close()
        srv.close()


def test_gateway_killed_mid_batch_gives_failures_not_hits():
    root = tempfile.mkdtemp(prefix="oc-it-lmcache-kill-")
    srv = Server("embedded", root)
    srv.start()
    s = None
    try:
        srv.boto3().create_bucket(Bucket="lmkv")
        s = NativeConnectorStandIn(load_connector(
            dict(adapter_params(srv, "lmkv"), timeout=10, workers=2)))
        sizes = [1 << 20] * 256
        keys = lm_keys(256, "kill")
        data = payloads(sizes, 9)
        assert s.store(keys, views(data)) is True
        out = targets(sizes)
        pending = s.submit_load(keys, views(out))
        srv.kill9()  # while the 256 MiB load is (most likely) still streaming
        got = pending.wait(60)
        for j, hit in enumerate(got):  # whatever was reported loaded must be right
            if hit:
                assert np.array_equal(out[j], data[j]), f"key {j} reported but wrong"
        # With the gateway gone every batch fails, key by key.
        after = s.submit_load(keys[:4], views(targets([1 << 20] * 4)))
        assert after.wait(60) == [False] * 4
        assert after.raw[1] is False and after.raw[2]
        assert s.lookup(keys[:4]) == [False] * 4
        assert s.store(keys[:2], views(data[:2])) is False
    finally:
        if s is not None:
            s.close()
        srv.kill9()
        shutil.rmtree(root, ignore_errors=True)


def test_close_fails_queued_batches_and_drain_after_close_is_defined():
    silent = socket.socket()  # accepts, never answers: every request waits out its timeout
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    c = load_connector({"endpoint": f"http://127.0.0.1:{silent.getsockname()[1]}",
                        "access_key": "a", "secret_key": "b", "bucket": "kv", "timeout": 1,
                        "workers": 1})
    try:
        ids = [c.submit_batch_exists([f"k@{j}"]) for j in range(10)]
        c.close()
        c.close()  # idempotent
        assert c.event_fd() == -1
        done = c.drain_completions()
        assert sorted(d[0] for d in done) == sorted(ids)
        assert all(d[1] is False and d[2] and d[3] == [False] for d in done)
        assert c.drain_completions() == []
        with pytest.raises(ValueError):
            c.submit_batch_exists(["k@late"])
        assert c.stats()["exists"]["failed_batches"] == 10
    finally:
        silent.close()


def test_unused_completions_and_buffers_are_released_on_destruction(gateway, kv_bucket):
    import gc
    import weakref
    c = load_connector(adapter_params(gateway, kv_bucket))
    target = bytearray(4096)
    c.submit_batch_get(lm_keys(1, "gc"), [target])
    with pytest.raises(BufferError):
        target.extend(b"x")  # pinned while the batch is in the connector's hands
    ref = weakref.ref(c)
    del c  # never drained: the pin must still be released
    gc.collect()
    assert ref() is None
    target.extend(b"x")  # bytearray refuses to resize while a buffer export is held
