"""objectcache (the Python package, issue 18): layer bytes into numpy buffers, byte for byte.

Chunks are stored with put_chunks from numpy [chunks, layers, S] arrays and read back with
get_layers over UCX (shared memory, and TCP with UCX_TLS=tcp on both ends) and over the HTTP
body, into caller arrays, registered arrays and allocate_buffer's shared memory; for both
stored layouts (kv_l2td, kv_2ltd), both key forms (compact hashes, explicit names), both
delivery orders, full and partial hits, on the embedded and the remote store (conftest's
`server`) and on a server keeping extents in SST blocks instead of data files."""
import threading

import numpy as np
import pytest

from conftest import running_server
from pyclient_util import SENTINEL, chunks, client, descriptor, expected, oc, stored_objects

# (N, L, S, G): one chunk, one layer, and a larger shape; S even for kv_2ltd.
SHAPES = [(1, 4, 64, 4), (3, 1, 32, 4), (4, 8, 4096, 16)]


@pytest.fixture(scope="module")
def sst_server():
    with running_server("oc-py-sst-", extra_config='\n[storage]\nextent_layout = "sst"\n') as s:
        s.boto3().create_bucket(Bucket="kv-sst")
        yield s


@pytest.fixture(scope="module")
def tcp_server():
    with running_server("oc-py-tcp-", env_extra={"UCX_TLS": "tcp"}) as s:
        s.boto3().create_bucket(Bucket="kv-tcp")
        yield s


@pytest.fixture(scope="module")
def layerwise_server():
    with running_server("oc-py-lw-", extra_config='\n[kv]\nlayerwise_threshold = "1"\n') as s:
        s.boto3().create_bucket(Bucket="kv-lw")
        yield s


def round_trip(c, bucket, form, layout, via, buffer_kind, seed, delivery="layer-major"):
    for n, n_layers, s, g in SHAPES:
        seed += 1
        d = descriptor(form, n, n_layers, s, g, f"py-{form}-{layout}-{seed}/", layout, delivery)
        arr = chunks(n, n_layers, s, seed)
        put = c.put_chunks(bucket, d, stored_objects(arr, layout))
        assert put.ok and put.chunks == n and put.status == ["stored"] * n, put
        if buffer_kind == "allocated":
            buf = c.allocate_buffer(d.payload_bytes)
            out = oc.as_array(buf)
            out[:] = SENTINEL
        else:
            out = np.full(d.payload_bytes, SENTINEL, dtype=np.uint8)
            buf = c.register_buffer(out) if buffer_kind == "registered" else out
        t = c.get_layers(bucket, d, buf, via=via)
        for layer in range(n_layers):
            t.wait_layer(layer)
        info = t.wait()
        assert info.matched == n and info.via == via and t.done()
        assert info.payload_bytes == d.payload_bytes
        assert t.layers_ready() == n_layers
        np.testing.assert_array_equal(out, expected(arr, n, n, delivery))
        del t
        if buffer_kind == "registered":
            buf.close()


@pytest.mark.parametrize("via", ["ucx", "http"])
@pytest.mark.parametrize("form", ["compact", "explicit"])
@pytest.mark.parametrize("layout", ["kv_l2td", "kv_2ltd"])
def test_layers_byte_exact(server, made_bucket, via, form, layout):
    c = client(server)
    round_trip(c, made_bucket, form, layout, via, "array", 10)
    if via == "ucx":
        round_trip(c, made_bucket, form, layout, via, "registered", 20)
        round_trip(c, made_bucket, form, layout, via, "allocated", 30, "chunk-major")


@pytest.mark.parametrize("via", ["ucx", "http"])
@pytest.mark.parametrize("layout", ["kv_l2td", "kv_2ltd"])
def test_layers_byte_exact_sst_layout(sst_server, via, layout):
    c = client(sst_server)
    round_trip(c, "kv-sst", "compact", layout, via, "array", 40)
    round_trip(c, "kv-sst", "explicit", layout, via, "allocated", 50)


@pytest.mark.parametrize("layout", ["kv_l2td", "kv_2ltd"])
def test_layers_byte_exact_ucx_tcp(tcp_server, layout):
    c = client(tcp_server, ucx_transports="tcp")
    round_trip(c, "kv-tcp", "compact", layout, "ucx", "array", 60)
    round_trip(c, "kv-tcp", "explicit", layout, "ucx", "allocated", 70, "chunk-major")


@pytest.mark.parametrize("via", ["ucx", "http"])
def test_partial_hit(server, made_bucket, via):
    """The first 3 of 6 chunks stored: matched 3, every layer delivered, the slices of chunks
    3..5 untouched; a hit of 0 delivers no layer (wait_layer raises OutOfRange)."""
    c = client(server)
    n, n_layers, s, g = 6, 4, 256, 4
    d = descriptor("compact", n, n_layers, s, g, f"partial-{via}/")
    arr = chunks(n, n_layers, s, 7)
    c.put_chunks(made_bucket, d[:3], arr[:3]).raise_for_status()
    probe = c.probe(made_bucket, d)
    assert probe.matched == 3 and probe.present == [True] * 3 + [False] * 3
    assert probe.sizes == [n_layers * s] * 3 + [None] * 3
    out = np.full(d.payload_bytes, SENTINEL, dtype=np.uint8)
    t = c.get_layers(made_bucket, d, out, via=via)
    for layer in range(n_layers):
        t.wait_layer(layer)
    assert t.wait().matched == 3 and t.matched == 3
    np.testing.assert_array_equal(out, expected(arr, 3, n, "layer-major"))
    miss = c.get_layers(made_bucket, d[3:], np.zeros(d[3:].payload_bytes, np.uint8), via=via)
    with pytest.raises(oc.OutOfRange):
        miss.wait_layer(0)
    assert miss.wait().matched == 0


@pytest.mark.parametrize("via", ["ucx", "http"])
def test_layer_callbacks_in_order(layerwise_server, via):
    """on_layer runs once per layer, in layer order, off the caller's thread, and all have run
    when wait() returns; a layer's bytes are in the buffer when its callback runs."""
    c = client(layerwise_server)
    n, n_layers, s = 4, 16, 8192
    d = descriptor("compact", n, n_layers, s, 16, f"cb-{via}/")
    arr = chunks(n, n_layers, s, 8)
    c.put_chunks("kv-lw", d, arr).raise_for_status()
    want = expected(arr, n, n, "layer-major").reshape(n_layers, -1)
    for _ in range(3):
        out = np.full(d.payload_bytes, SENTINEL, dtype=np.uint8)
        seen, threads, landed = [], set(), []
        view = out.reshape(n_layers, -1)

        def on_layer(layer):
            seen.append(layer)
            threads.add(threading.get_ident())
            landed.append(bool(np.array_equal(view[layer], want[layer])))

        t = c.get_layers("kv-lw", d, out, via=via, on_layer=on_layer)
        info = t.wait()
        assert info.mode == "layerwise"
        assert seen == list(range(n_layers))
        assert all(landed)
        assert threading.get_ident() not in threads


def test_put_from_registered_buffer_over_ucx(server, made_bucket):
    """put_chunks(via="ucx"): the server pulls the chunks from registered memory."""
    c = client(server)
    n, n_layers, s = 3, 4, 1024
    d = descriptor("explicit", n, n_layers, s, 4, "pull/")
    buf = c.allocate_buffer(d.payload_bytes)
    arr = chunks(n, n_layers, s, 9)
    oc.as_array(buf)[:] = arr.reshape(-1)
    assert c.put_chunks(made_bucket, d, buf, via="ucx").ok
    out = np.zeros(d.payload_bytes, np.uint8)
    c.get_layers(made_bucket, d, out, via="http").wait()
    np.testing.assert_array_equal(out, expected(arr, n, n, "layer-major"))


def test_put_if_absent_and_per_key_results(server, made_bucket):
    """if_absent: present chunks are "exists" and keep their bytes (first writer wins), the
    others are stored; keys the gateway refuses are "failed", each with its error."""
    c = client(server)
    n, n_layers, s = 5, 2, 128
    d = descriptor("explicit", n, n_layers, s, 4, "absent/")
    first, second = chunks(n, n_layers, s, 11), chunks(n, n_layers, s, 12)
    c.put_chunks(made_bucket, d[1:3], first[1:3]).raise_for_status()
    r = c.put_chunks(made_bucket, d, second, if_absent=True)
    assert r.status == ["stored", "exists", "exists", "stored", "stored"] and r.ok
    assert r.chunks == 3
    out = np.zeros(d.payload_bytes, np.uint8)
    c.get_layers(made_bucket, d, out, via="http").wait()
    both = second.copy()
    both[1:3] = first[1:3]
    np.testing.assert_array_equal(out, expected(both, n, n, "layer-major"))

    names = d.object_names()
    names[2] = "x" * 2000  # longer than an S3 key may be: refused before anything is sent
    with pytest.raises(oc.InvalidArgument):
        oc.Descriptor(names, layers=n_layers, layer_bytes=s, chunk_tokens=4)
    # Every batch refused (no such bucket): every key failed, each with the gateway's error.
    r = c.put_chunks("no-such-bucket-py", d, second, batch=2)
    assert not r.ok and r.status == ["failed"] * n and set(r.errors) == set(range(n))
    assert all(isinstance(e, oc.NoSuchBucket) for e in r.errors.values())
    with pytest.raises(oc.NoSuchBucket):
        r.raise_for_status()
