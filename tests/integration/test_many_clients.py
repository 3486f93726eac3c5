"""Many serving nodes at once (issue 16; docs/decisions/many-clients-admission-queue.md): 16 clients, each a separate `oc get-layers` process with its own
liboc_client and UCX target, load the same prefix at the same time from `objectcache serve`
with the default configuration, and every one gets every byte. Run twice: the default Θ (the
small prefix is delivered chunkwise) and Θ = 1 (every request layerwise, so all 16 share the
scheduler's cap through its pacer: the path that stalled a request for 30 s and answered it
503 before the crumb-rate fix). Over UCX shared memory (the clients' default) and TCP."""
import concurrent.futures
import os
import shutil
import tempfile

import pytest

from conftest import running_server
from test_objectcache import (OC, client_env, expected_payload, get_layers, key_args,
                              put_chunks)

pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

CLIENTS = 16
N, LAYERS, S, G = 8, 32, 64 << 10, 16  # 16 MiB: a small prefix


@pytest.fixture(scope="module", params=["default", "layerwise"])
def srv(request):
    extra = '\n[kv]\nlayerwise_threshold = "1"\n' if request.param == "layerwise" else ""
    with running_server(f"oc-it-many-{request.param}-", extra_config=extra) as s:
        s.boto3().create_bucket(Bucket="many")
        s.mode_name = request.param
        yield s


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="oc-many-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_sixteen_clients_load_one_prefix_at_once(srv, tmp, transport):
    keys = key_args("compact", tmp, N, G, f"many-{transport}/")
    put_chunks(srv, "many", tmp, keys, N, LAYERS, S, "kv_l2td", seed=5)
    env_extra = {"UCX_TLS": "tcp"} if transport == "tcp" else None
    want = expected_payload(N, N, LAYERS, S, "layer-major", 5)

    def one(i):
        d = os.path.join(tmp, f"client-{i}")
        os.makedirs(d)
        return get_layers(srv, "many", d, keys, LAYERS, S, "kv_l2td", "layer-major", "ucx",
                          env_extra, check=False)

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(one, range(CLIENTS)))
    failures = [p.stderr.decode() for p, _, _, _ in results if p.returncode != 0]
    assert not failures, f"{len(failures)} of {CLIENTS} failed: {failures[:3]}"
    mode = "layerwise" if srv.mode_name == "layerwise" else "chunkwise"
    for p, layers, summary, data in results:
        assert summary["matched"] == str(N)
        assert summary["mode"] == mode
        assert sorted(layers) == list(range(LAYERS))
        assert data == want
    assert srv.alive()
