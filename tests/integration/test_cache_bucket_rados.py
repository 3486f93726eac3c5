"""A cache bucket shared by two `objectcache serve` over one RADOS namespace (issue 31: "On
RADOS the eviction runs on the GC leader over the shared pool; a server that restarts or a
second server does not double-evict or lose track"; docs/decisions/cache-buckets.md, "RADOS").

Descriptor PUTs go through both servers, probes through the other one. Exactly one server leads
(/stats `cache.leader`); after every PUT the bucket's listing stays under the capacity plus one
eviction batch, and once both servers synced (`sync_interval = 300ms`: their used bytes equal
the listing) the next PUT goes on. Only the leader evicts, and it counts every object that
went exactly once. Then the leader stops: the other takes the GC lock (within its 10 s GC tick)
and evicts, and the stopped server, started again, is a follower that never evicts."""
import json
import time
import urllib.request

import pytest

from conftest import RadosNamespace, rados_config, running_server
from test_cache_bucket import BATCH, CAPACITY, CHUNKS, descriptor_put, listed, probe

CONFIG = f"""
[cache]
buckets = {{ kvcache = {CAPACITY} }}
eviction_batch_bytes = {BATCH}
put_wait = "3s"
sync_interval = "300ms"
"""
DEADLINE_S = 30


def store_figures(srv):
    with urllib.request.urlopen(srv.endpoint + "/stats", timeout=10) as r:
        return json.load(r)["store"]


def bucket_figures(srv):
    prefix = "cache.kvcache."
    return {k[len(prefix):]: v for k, v in store_figures(srv).items() if k.startswith(prefix)}


def wait_synced(servers, s3):
    """Until every server's index counts what the pool holds and no eviction is in flight."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        used = sum(listed(s3, "kvcache").values())
        figs = [bucket_figures(s) for s in servers]
        if all(f["used_bytes"] == used and f["evicting_bytes"] == 0 for f in figs) and \
                used == sum(listed(s3, "kvcache").values()):
            return used
        assert time.monotonic() < deadline, (used, figs)
        time.sleep(0.05)


def wait_leader(srv):
    deadline = time.monotonic() + DEADLINE_S
    while store_figures(srv)["cache.leader"] != 1:
        assert time.monotonic() < deadline, "never took the lead"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def peers():
    ns = RadosNamespace("it-cache-peers")
    config = CONFIG + rados_config(ns.name)
    with running_server("oc-it-cpeer-a-", extra_config=config) as a, \
            running_server("oc-it-cpeer-b-", extra_config=config) as b:
        yield a, b
    ns.close()


def churn(servers, s3, chains, first, count):
    """`count` descriptor PUTs of CHUNKS chunks alternately through `servers`, each followed by
    a probe of an older chain through the other; the listing stays within the capacity."""
    for i in range(first, first + count):
        via, other = servers[i % 2], servers[(i + 1) % 2]
        keys = [f"doc{i}-c{j}" for j in range(CHUNKS)]
        chains.append(keys)
        status, _, body = descriptor_put(via, keys, i)
        assert status == 200, body[:500]
        probe(other, chains[i // 2])
        used = sum(listed(s3, "kvcache").values())
        assert used <= CAPACITY + BATCH, (i, used)
        wait_synced(servers, s3)


def test_only_the_leader_evicts_and_the_other_takes_over(peers):
    a, b = peers
    s3 = a.boto3()
    s3.create_bucket(Bucket="kvcache")
    deadline = time.monotonic() + DEADLINE_S
    while sorted(store_figures(s)["cache.leader"] for s in (a, b)) != [0, 1]:
        assert time.monotonic() < deadline, "not exactly one leader"
        time.sleep(0.1)
    leader, follower = (a, b) if store_figures(a)["cache.leader"] == 1 else (b, a)

    chains = []
    churn((a, b), s3, chains, 0, 40)  # 40 x 128 KiB = 2.5x the capacity
    objects = listed(s3, "kvcache")
    lf, ff = bucket_figures(leader), bucket_figures(follower)
    assert ff["evicted_objects_total"] == 0
    assert lf["evicted_objects_total"] == 40 * CHUNKS - len(objects)  # each once, by the leader
    assert lf["victims_gone_total"] == 0 and ff["victims_gone_total"] == 0
    assert lf["dead_bytes"] == 0
    assert ff["hit_logs_written_total"] > 0 and lf["hit_logs_folded_total"] > 0
    assert sum(objects.values()) <= CAPACITY * 0.9 + BATCH
    for keys in chains:
        present = [k in objects for k in keys]
        assert present == sorted(present, reverse=True), (keys, present)

    # The leader stops (SIGTERM releases the GC lock); the other takes over and evicts.
    assert leader.stop() == [0]
    wait_leader(follower)
    before = bucket_figures(follower)["evicted_objects_total"]
    leader.start()  # started again: a follower now
    assert store_figures(leader)["cache.leader"] == 0
    churn((leader, follower), s3, chains, 40, 20)
    objects = listed(s3, "kvcache")
    nf, rf = bucket_figures(follower), bucket_figures(leader)
    assert nf["evicted_objects_total"] > before
    assert rf["evicted_objects_total"] == 0 and store_figures(leader)["cache.leader"] == 0
    assert nf["victims_gone_total"] == 0 and nf["dead_bytes"] == 0
    assert lf["evicted_objects_total"] + nf["evicted_objects_total"] == \
        60 * CHUNKS - len(objects)  # nothing evicted twice across the takeover
    for keys in chains:
        present = [k in objects for k in keys]
        assert present == sorted(present, reverse=True), (keys, present)
