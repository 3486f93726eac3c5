"""objectcache.integrations.sglang (issue 32 part 3) driven by stand-ins of SGLang's host pool
and cache controller (sglang_controller.py, built from docs/integrations.md §3) against a real
gateway: zero-copy batch_set_v1 / batch_get_v1 for every host-pool layout, byte for byte,
pages landing in other host slots than they left; batch_exists as the leading hit count from
one probe; partial loads; failures answered as False (never raised, never None); the generic
flat-page path; v2 calls raising."""
import os
import socket
import threading

import numpy as np
import pytest

from integ_util import StalledGateway
from sglang_controller import LAYOUTS, SENTINEL, Controller, HostPool, extra_config
from sglang.srt.mem_cache.hicache_storage import HiCacheStorage


def page_keys(n):
    return [os.urandom(16).hex() for _ in range(n)]


def pages_equal(a, pa, b, pb):
    for x, y in zip(a.page_slices(pa * a.page_size), b.page_slices(pb * b.page_size)):
        if not np.array_equal(x, y):
            return False
    return True


def untouched(pool, except_pages):
    for p in range(pool.pages):
        if p in except_pages:
            continue
        for half in pool.page_slices(p * pool.page_size):
            if not (half == SENTINEL).all():
                return False
    return True


class ProbeCounter:
    """Wraps the adapter's client to count probe requests."""

    def __init__(self, client):
        self.client, self.probes = client, 0

    def probe(self, *args, **kw):
        self.probes += 1
        return self.client.probe(*args, **kw)

    def __getattr__(self, name):
        return getattr(self.client, name)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_zero_copy_round_trip_every_layout(server, made_bucket, layout):
    src = HostPool(layout)
    src.fill(np.random.default_rng(7))
    writer = Controller(src, extra_config(server, made_bucket))
    assert isinstance(writer.storage, HiCacheStorage) and writer.storage.zero_copy
    keys = page_keys(10)
    # Pages 3..8 are back to back in the pool (a run per buffer), 20 and 12 are not.
    out_pages = [3, 4, 5, 6, 7, 8, 20, 12, 13, 0]
    assert writer.backup(keys, out_pages)

    dst = HostPool(layout)
    reader = Controller(dst, extra_config(server, made_bucket))
    in_pages = [30, 29, 10, 11, 12, 1, 2, 3, 4, 31]
    assert reader.prefetch(keys, in_pages) == 10
    for a, b in zip(out_pages, in_pages):
        assert pages_equal(src, a, dst, b), f"page {a} -> {b}"
    assert untouched(dst, in_pages)
    n, good, nbytes, seconds = reader.storage.load_log[-1]
    assert (n, good) == (10, 10) and nbytes > 0 and seconds > 0


def test_unequal_buffer_sizes_asymmetric_kv(server, made_bucket):
    src = HostPool("page_first_direct", head_dim=8, v_head_dim=4)
    src.fill(np.random.default_rng(8))
    keys = page_keys(4)
    assert Controller(src, extra_config(server, made_bucket)).backup(keys, [0, 1, 2, 3])
    dst = HostPool("page_first_direct", head_dim=8, v_head_dim=4)
    assert Controller(dst, extra_config(server, made_bucket)).prefetch(keys, [5, 6, 9, 8]) == 4
    for a, b in zip([0, 1, 2, 3], [5, 6, 9, 8]):
        assert pages_equal(src, a, dst, b)


def test_batch_exists_is_the_leading_hit_count_from_one_probe(server, made_bucket):
    pool = HostPool("page_first")
    pool.fill(np.random.default_rng(9))
    c = Controller(pool, extra_config(server, made_bucket))
    keys = page_keys(8)
    assert c.backup(keys[:5] + keys[6:], [0, 1, 2, 3, 4, 6, 7])  # key 5 never stored
    c.storage._client = counter = ProbeCounter(c.storage._client)
    assert c.storage.batch_exists(keys) == 5
    assert counter.probes == 1
    assert c.storage.batch_exists(keys[6:]) == 2
    assert c.storage.batch_exists([]) == 0
    assert c.storage.exists(keys[0]) and not c.storage.exists(keys[5])


def test_a_page_missing_a_buffer_loads_as_false(server, made_bucket):
    src = HostPool("page_first_direct")
    src.fill(np.random.default_rng(10))
    c = Controller(src, extra_config(server, made_bucket))
    keys = page_keys(6)
    assert c.backup(keys, list(range(6)))
    # The K buffer (buffer 0) of page 3 is gone; its marker (buffer 1) is still there.
    name = c.storage._name(keys[3], 0)
    server.boto3().delete_object(Bucket=made_bucket, Key=name)
    dst = HostPool("page_first_direct")
    r = Controller(dst, extra_config(server, made_bucket))
    assert r.storage.batch_exists(keys) == 6
    # One descriptor GET moves buffer 0 of the six pages; it delivers the leading present
    # chunks, so pages 3..5 report False (the controller would stop at page 3 anyway).
    results = r.storage.batch_get_v1(keys, dst.host_indices(range(10, 16)))
    assert results == [True, True, True, False, False, False]
    for j in (0, 1, 2):
        assert pages_equal(src, j, dst, 10 + j)
    # The controller counts the leading successes and stops at the first failure.
    dst2 = HostPool("page_first_direct")
    assert Controller(dst2, extra_config(server, made_bucket)).prefetch(keys, range(6)) == 3


def test_tp_ranks_and_mla(server, made_bucket):
    keys = page_keys(2)
    pools = []
    for rank in range(2):  # the same keys on two TP ranks hold different bytes
        pool = HostPool("page_first")
        pool.fill(np.random.default_rng(20 + rank))
        c = Controller(pool, extra_config(server, made_bucket), tp_rank=rank, tp_size=2)
        assert c.backup(keys, [0, 1])
        pools.append(pool)
    for rank in range(2):
        dst = HostPool("page_first")
        c = Controller(dst, extra_config(server, made_bucket), tp_rank=rank, tp_size=2)
        assert c.prefetch(keys, [4, 5]) == 2
        assert pages_equal(pools[rank], 0, dst, 4) and pages_equal(pools[rank], 1, dst, 5)
    # MLA: every rank holds the same KV, so one copy serves all ranks.
    mla = Controller(pools[0], extra_config(server, made_bucket), tp_rank=0, tp_size=2,
                     is_mla=True)
    assert mla.backup(keys, [0, 1])
    dst = HostPool("page_first")
    c = Controller(dst, extra_config(server, made_bucket), tp_rank=1, tp_size=2, is_mla=True)
    assert c.prefetch(keys, [2, 3]) == 2 and pages_equal(pools[0], 0, dst, 2)


def test_generic_flat_page_path(server, made_bucket):
    src = HostPool("layer_first")
    src.fill(np.random.default_rng(11))
    c = Controller(src, extra_config(server, made_bucket, zero_copy=False))
    assert not c.storage.zero_copy
    keys = page_keys(5)
    assert c.backup(keys[:4], [0, 1, 2, 3])
    dst = HostPool("layer_first")
    r = Controller(dst, extra_config(server, made_bucket, zero_copy=False))
    assert r.prefetch(keys, [7, 8, 9, 10, 11]) == 4
    for a, b in zip([0, 1, 2, 3], [7, 8, 9, 10]):
        assert pages_equal(src, a, dst, b)
    s = r.storage
    assert s.exists(keys[0]) and not s.exists(keys[4])
    page = s.get(keys[1])  # no target: a new uint8 page
    assert bytes(page) == src.get_data_page(1 * src.page_size).tobytes()
    assert s.get(keys[4]) is None
    assert s.set(keys[4], src.get_data_page(2 * src.page_size))
    target = src.get_dummy_flat_data_page()
    assert s.get(keys[4], target) is target and np.array_equal(
        target, src.get_data_page(2 * src.page_size))
    got = s.batch_get([keys[0], keys[4], "absent", keys[1]],
                      [src.get_dummy_flat_data_page() for _ in range(4)])
    assert got[0] is not None and got[1] is not None and got[2] is None and got[3] is None


def test_failures_answer_false_and_v2_raises(server, made_bucket):
    pool = HostPool("page_first")
    pool.fill(np.random.default_rng(12))
    keys = page_keys(3)
    # Nothing listens at the endpoint: every call answers at once, False or 0.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    c = Controller(pool, extra_config(server, made_bucket, endpoint=dead))
    assert c.storage.batch_exists(keys) == 0
    assert c.storage.batch_set_v1(keys, pool.host_indices([0, 1, 2])) == [False] * 3
    dst = HostPool("page_first")
    assert Controller(dst, extra_config(server, made_bucket, endpoint=dead)).storage \
        .batch_get_v1(keys, dst.host_indices([0, 1, 2])) == [False] * 3
    # A gateway that stalls: the load waits for its requests to end (a write into the pool
    # may still land until then), and answers False when the gateway drops them.
    stalled = StalledGateway()
    dst2 = HostPool("page_first")
    c2 = Controller(dst2, extra_config(server, made_bucket, endpoint=stalled.endpoint,
                                       timeout_s=0.2))
    timer = threading.Timer(0.5, stalled.close)
    timer.start()
    assert c2.storage.batch_get_v1(keys, dst2.host_indices([0, 1, 2])) == [False] * 3
    timer.join()
    assert untouched(dst, []) and untouched(dst2, [])
    for call, args in (("batch_exists_v2", (keys,)), ("batch_get_v2", ([],)),
                       ("batch_set_v2", ([],))):
        with pytest.raises(NotImplementedError):
            getattr(c.storage, call)(*args)


def test_clear_deletes_this_backends_pages(server, made_bucket):
    pool = HostPool("page_first")
    pool.fill(np.random.default_rng(13))
    c = Controller(pool, extra_config(server, made_bucket, prefix="sglang-clear/"))
    keys = page_keys(3)
    assert c.backup(keys, [0, 1, 2]) and c.storage.batch_exists(keys) == 3
    c.storage.clear()
    assert c.storage.batch_exists(keys) == 0
    c.storage.close()
