"""objectcache (issue 18) under stress: timeouts, a server stopped and killed mid-transfer,
concurrent transfers from several Python threads, the GIL released while a call waits, the
caller's buffer held (and pinned) while a transfer runs, and reference counts and anonymous
memory steady over 1,000 requests."""
import gc
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import weakref

import numpy as np
import pytest

from conftest import Server
from pyclient_util import chunks, client, descriptor, expected, oc, rss_anon


class SilentServer:
    """A TCP listener that accepts connections and reads, but never answers: a gateway that
    hangs. close() resets every connection it accepted."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns = []  # guarded by lock
        self.closed = False  # guarded by lock
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                if not self.closed:
                    self.conns.append(conn)
                    continue
            self._reset(conn)  # accepted as close() ran

    @staticmethod
    def _reset(conn):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.close()

    def close(self):  # idempotent
        with self.lock:
            self.closed = True
            conns, self.conns = self.conns, []
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in progress
        except OSError:
            pass
        self.sock.close()  # connections still in the backlog are reset
        for c in conns:
            self._reset(c)


def stalled_transfer(silent, **kw):
    c = oc.Client(silent.endpoint, "AK", "SK", timeout=30.0, **kw)
    d = descriptor("compact", 2, 4, 64, 4, "stall/")
    out = np.zeros(d.payload_bytes, np.uint8)
    return c, out, c.get_layers("b", d, out, via="http")


def test_timeouts_then_a_reset_fails_the_transfer_cleanly():
    silent = SilentServer()
    c, out, t = stalled_transfer(silent)
    with pytest.raises(oc.Timeout) as e:
        t.wait_layer(0, timeout=0.2)
    assert isinstance(e.value, TimeoutError) and e.value.http_status is None
    assert e.value.timed_out is True and e.value.request_id is None
    with pytest.raises(oc.Timeout) as e:
        t.wait(timeout=0.2)
    assert e.value.timed_out is True
    assert not t.done() and t.layers_ready() == 0
    f = c.probe_async("b", descriptor("compact", 1, 1, 8, 4, "p/"))
    with pytest.raises(oc.Timeout):
        f.result(timeout=0.2)
    assert not f.done()
    silent.close()  # the "gateway" goes away: both calls fail now, not at the 30 s timeout
    with pytest.raises(oc.ObjectCacheError) as e:
        t.wait()
    assert not isinstance(e.value, oc.Timeout) and t.done() and e.value.timed_out is False
    assert isinstance(f.exception(timeout=20), oc.ObjectCacheError) and f.done()


def test_the_client_timeout_ends_calls_to_a_silent_gateway():
    """A gateway that accepts and never answers: the client's `timeout` (of silence on the
    connection) ends a descriptor GET and a probe, without the caller's help. The error ends
    the request, so it is not a wait's own timeout (timed_out False: waiting again would never
    end, as an adapter that repeats timed-out waits found). Before the fix both were still
    running after 20 s with timeout=1 (Asio's blocking read waited out SO_RCVTIMEO in poll()
    with no limit)."""
    silent = SilentServer()
    try:
        c = oc.Client(silent.endpoint, "AK", "SK", timeout=1.0)
        d = descriptor("compact", 2, 4, 64, 4, "stall/")
        out = np.zeros(d.payload_bytes, np.uint8)
        t = c.get_layers("b", d, out, via="http")
        f = c.probe_async("b", descriptor("compact", 1, 1, 8, 4, "p/"))
        with pytest.raises(oc.ObjectCacheError) as e:
            t.wait(timeout=20)  # the transfer itself fails: this wait's own bound is not reached
        assert e.value.timed_out is False and t.done()
        assert "silent past the client timeout" in str(e.value)
        probe_error = f.exception(timeout=20)
        assert isinstance(probe_error, oc.ObjectCacheError) and f.done()
        assert "silent past the client timeout" in str(probe_error)
        c.close()
    finally:
        silent.close()


class InsideCall:
    """Marks, by state, that this thread has entered one C function: a profile hook
    (sys.setprofile, this thread only) sets `inside` on the "c_call" event of `name` and clears
    it on its "c_return"/"c_exception". Setting it is the hook's last statement, and CPython
    calls the C function right after the hook returns, running no bytecode in between; so
    another thread that sees `inside` set runs after the C function began. (It may also see it
    just after the function returned, before the clearing hook ran: the test tells the two
    apart by how the call ended.)"""

    def __init__(self, name):
        self.name = name
        self.inside = False

    def _hook(self, frame, event, arg):
        if getattr(arg, "__name__", None) != self.name:
            return
        if event == "c_call":
            self.inside = True  # the last statement before the C call begins
        elif event in ("c_return", "c_exception"):
            self.inside = False

    def __enter__(self):
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)


@pytest.mark.parametrize("call", ["wait", "wait_layer", "result", "probe"])
def test_the_gil_is_released_while_a_call_waits(call):
    """The main thread blocks in a call to a gateway that never answers (Transfer.wait,
    Transfer.wait_layer, Future.result, a blocking probe). Another Python thread waits until it
    sees, by state, that the main thread has entered that call, and only then closes the
    gateway, which ends the call with a reset. With the GIL held through the call that thread
    could not run until the call ended by itself, at its own 60 s timeout: the call would raise
    Timeout instead of the reset's error."""
    silent = SilentServer()
    c, out, t = stalled_transfer(silent)
    d = descriptor("compact", 1, 1, 8, 4, "p/")
    f = c.probe_async("b", d)
    run = {"wait": lambda: t.wait(timeout=60.0),
           "wait_layer": lambda: t.wait_layer(0, timeout=60.0),
           "result": lambda: f.result(timeout=60.0),
           "probe": lambda: c.probe("b", d)}[call]
    marker = InsideCall(call)
    seen, finished = threading.Event(), threading.Event()

    def closer():
        deadline = time.monotonic() + 120
        while not marker.inside and not finished.is_set() and time.monotonic() < deadline:
            time.sleep(0.001)
        if marker.inside:
            seen.set()
        silent.close()

    th = threading.Thread(target=closer)
    th.start()
    try:
        with marker:
            outcome = catch(run)
    finally:
        finished.set()
        th.join()
        silent.close()
    assert seen.is_set(), f"the other thread never saw {call}() begin: {outcome!r}"
    assert not isinstance(outcome, oc.Timeout), \
        f"{call}() ended at its own timeout: no other thread ran while it waited (GIL held)"
    assert isinstance(outcome, oc.ObjectCacheError), outcome  # the reset ended it


@pytest.mark.parametrize("via", ["ucx", "http"])
def test_server_killed_mid_transfer(via):
    """SIGSTOP the server once a 64 MiB transfer has provably started (its first bytes landed)
    and provably not ended (a wait with the server stopped times out, the handle not done);
    SIGKILL it: the wait fails at once with an ObjectCacheError, the handle is done, and no
    thread hangs."""
    root = tempfile.mkdtemp(prefix="oc-py-kill-")
    srv = Server("embedded", root)
    srv.start()
    try:
        srv.boto3().create_bucket(Bucket="kv-kill")
        c = client(srv, timeout=120.0)
        n, n_layers, s = 4, 16, 1 << 20
        d = descriptor("compact", n, n_layers, s, 16, f"kill-{via}/")
        c.put_chunks("kv-kill", d, chunks(n, n_layers, s, 5)).raise_for_status()
        out = np.zeros(d.payload_bytes, np.uint8)
        for _ in range(5):
            out[:] = 0
            t = c.get_layers("kv-kill", d, out, via=via)
            # Started: the first bytes of layer 0 are in the buffer (the chunks are random,
            # so they are not all zero). Stopped at once, well before the other 63 MiB land.
            deadline = time.monotonic() + 60
            while not out[:4096].any():
                assert time.monotonic() < deadline and not t.done(), "no byte landed"
            for p in srv.procs:
                os.kill(p.pid, signal.SIGSTOP)
            try:
                t.wait(timeout=0.3)  # what was on its way lands; the rest cannot
            except oc.Timeout:
                break  # stopped mid-transfer
            for p in srv.procs:  # it ended before the stop: again
                os.kill(p.pid, signal.SIGCONT)
        assert not t.done() and t.layers_ready() < n_layers, "never stopped mid-transfer"
        outcome = []
        waiter = threading.Thread(target=lambda: outcome.append(catch(t.wait)))
        waiter.start()
        for p in srv.procs:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        srv.procs = []
        waiter.join(timeout=60)
        assert not waiter.is_alive(), "a Python thread hung on a dead server"
        assert isinstance(outcome[0], oc.ObjectCacheError), outcome
        assert t.done()
        del t
        with pytest.raises(oc.ObjectCacheError):  # the client stays usable: it fails cleanly
            c.probe("kv-kill", d)
    finally:
        srv.kill9()
        shutil.rmtree(root, ignore_errors=True)


def catch(call):
    try:
        return call()
    except Exception as e:  # noqa: BLE001 (the test inspects it)
        return e


def test_concurrent_transfers_from_python_threads(server, made_bucket):
    c = client(server)
    n, n_layers, s = 3, 8, 16384
    ds = [descriptor("compact", n, n_layers, s, 4, f"conc-{i}/") for i in range(6)]
    arrs = [chunks(n, n_layers, s, 100 + i) for i in range(6)]
    for d, a in zip(ds, arrs):
        c.put_chunks(made_bucket, d, a).raise_for_status()
    errors = []

    def worker(i):
        try:
            for rep in range(10):
                via = "ucx" if (i + rep) % 2 else "http"
                out = np.zeros(ds[i].payload_bytes, np.uint8)
                t = c.get_layers(made_bucket, ds[i], out, via=via)
                for layer in range(n_layers):
                    t.wait_layer(layer)
                assert t.wait().matched == n
                np.testing.assert_array_equal(out, expected(arrs[i], n, n, "layer-major"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []


def test_the_buffer_is_held_while_a_transfer_runs():
    silent = SilentServer()
    c = oc.Client(silent.endpoint, "AK", "SK", timeout=30.0)
    d = descriptor("compact", 2, 4, 64, 4, "ref/")
    out = np.zeros(d.payload_bytes, np.uint8)
    base = sys.getrefcount(out)
    gone = weakref.ref(out)
    t = c.get_layers("b", d, out, via="http")
    assert sys.getrefcount(out) > base
    with pytest.raises(ValueError):  # referenced: numpy refuses to resize it under the transfer
        out.resize(2 * d.payload_bytes)
    del out
    gc.collect()
    assert gone() is not None  # the transfer keeps it alive
    silent.close()
    with pytest.raises(oc.ObjectCacheError):
        t.wait()
    del t
    gc.collect()
    assert gone() is None


def test_refcounts_and_memory_steady_over_1000_requests(server, made_bucket):
    c = client(server)
    n, n_layers, s = 2, 4, 4096
    d = descriptor("compact", n, n_layers, s, 4, "steady/")
    arr = chunks(n, n_layers, s, 3)
    c.put_chunks(made_bucket, d, arr).raise_for_status()
    out = np.zeros(d.payload_bytes, np.uint8)
    buf = c.allocate_buffer(d.payload_bytes)
    calls = [lambda: c.get_layers(made_bucket, d, out, via="http").wait(),
             lambda: c.get_layers(made_bucket, d, out, via="ucx").wait(),
             lambda: c.get_layers(made_bucket, d, buf, on_layer=lambda l: None).wait(),
             lambda: c.probe(made_bucket, d),
             lambda: c.probe_async(made_bucket, d).result()]

    def run(count):
        for i in range(count):
            calls[i % len(calls)]()

    run(200)  # warm: connections, the data plane, allocator pools
    gc.collect()
    refs = (sys.getrefcount(out), sys.getrefcount(d), sys.getrefcount(buf), sys.getrefcount(c))
    objects, rss = len(gc.get_objects()), rss_anon()
    run(1000)
    gc.collect()
    assert (sys.getrefcount(out), sys.getrefcount(d), sys.getrefcount(buf),
            sys.getrefcount(c)) == refs
    assert len(gc.get_objects()) - objects < 50
    assert rss_anon() - rss < 16 << 20, (rss, rss_anon())
    np.testing.assert_array_equal(out, expected(arr, n, n, "layer-major"))
