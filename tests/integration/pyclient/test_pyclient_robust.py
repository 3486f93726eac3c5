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
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()


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
    with pytest.raises(oc.Timeout):
        t.wait(timeout=0.2)
    assert not t.done() and t.layers_ready() == 0
    f = c.probe_async("b", descriptor("compact", 1, 1, 8, 4, "p/"))
    with pytest.raises(oc.Timeout):
        f.result(timeout=0.2)
    assert not f.done()
    silent.close()  # the "gateway" goes away: both calls fail now, not at the 30 s timeout
    with pytest.raises(oc.ObjectCacheError) as e:
        t.wait()
    assert not isinstance(e.value, oc.Timeout) and t.done()
    assert isinstance(f.exception(timeout=20), oc.ObjectCacheError) and f.done()


def test_the_gil_is_released_while_a_call_waits():
    """A Python thread counting runs while the main thread waits in wait() about as far as
    while it sleeps; with the GIL held through the wait it would hardly count at all."""
    silent = SilentServer()
    c, out, t = stalled_transfer(silent)
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=counter)
    th.start()
    try:
        before = count[0]
        time.sleep(0.5)  # sleep releases the GIL: how far the counter gets in 0.5 s
        free = count[0] - before
        before = count[0]
        with pytest.raises(oc.Timeout):
            t.wait(timeout=0.5)
        during = count[0] - before
    finally:
        stop.set()
        th.join()
        silent.close()
    # Held through the wait, the counter would get only a switch interval or two (5 ms each)
    # of the 500 ms: about 2% of `free`.
    assert during > free // 4, (during, free)
    with pytest.raises(oc.ObjectCacheError):
        t.wait()


@pytest.mark.parametrize("via", ["ucx", "http"])
def test_server_killed_mid_transfer(via):
    """SIGSTOP the server while a 64 MiB transfer runs: waits time out and the handle is not
    done; SIGKILL it: the wait fails at once with an ObjectCacheError, the handle is done, and
    no thread hangs."""
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
            t = c.get_layers("kv-kill", d, out, via=via)
            for p in srv.procs:
                os.kill(p.pid, signal.SIGSTOP)
            if not t.done():
                break  # stopped mid-transfer
            for p in srv.procs:
                os.kill(p.pid, signal.SIGCONT)
            t.wait()
        assert not t.done()
        with pytest.raises(oc.Timeout):
            t.wait(timeout=0.3)
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
