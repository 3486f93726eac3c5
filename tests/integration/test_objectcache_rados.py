"""`objectcache serve` with `[storage] backend = "rados"` end to end (issue 15; docs/design.md,
"RADOS mapping"), on the throw-away cluster of the `rados_cluster` CTest fixture
(OC_TEST_CEPH_CONF, pool oc-test), each server in its own random namespace.

The boto3 tests of test_boto3.py run here unchanged, imported, so both backends meet the same
assertions: buckets, put/get/head with metadata, ranges, listings with delimiter and pages,
copy, delete, multipart. aws-cli copies a multipart-sized file up and down and lists it (a
shorter walk than test_clients.py's: each `aws` start costs seconds here). So do the
descriptor tests of test_objectcache.py (UCX shared memory and the HTTP body, both layouts,
partial hits, probes; UCX over TCP on a second server) and of test_objectcache_create.py
(create-if-absent descriptor PUTs, raced), plus a descriptor PUT that the server pulls over
UCX. Data objects are 64 KiB here, the smallest allowed, so objects, parts and KV
chunks span several RADOS objects and reads cross their boundaries.

After every test the buckets the server lists must be exactly the bucket registry in its
namespace, read through librados directly: a server that kept its data anywhere else (the
RocksDB backend) fails every test. A missing pool is a startup error: exit 2, one line naming
it."""
import filecmp
import os
import subprocess
import tempfile

import pytest

from conftest import RadosNamespace, TEST_CONFIG, free_port, rados_config, running_server
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_boto3 import (test_bucket_lifecycle, test_copy_object, test_delete_objects,  # noqa: F401
                        test_listing_v1_v2, test_multipart, test_multipart_small_part_and_abort,
                        test_put_get_head_delete_with_metadata, test_ranges)
from test_clients import AWS, aws_env, run, workdir  # noqa: F401
from test_objectcache import (OC, put_then_get, test_layers_byte_exact,  # noqa: F401
                              test_layers_byte_exact_ucx_tcp, test_partial_hit_and_probe, tmp)
from test_objectcache_create import (  # noqa: F401
    test_put_chunks_if_none_match_keeps_present_chunks,
    test_racing_put_chunks_if_none_match_have_one_writer_per_chunk,
    test_raw_requests_get_the_existing_chunks_in_header_and_body)

pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

@pytest.fixture(scope="module")
def namespaces():
    """The namespace of each server this module started, by fixture name."""
    out = {}
    yield out
    for ns in out.values():
        ns.close()


def rados_server(namespaces, name, kv_config, env_extra=None):
    ns = RadosNamespace(f"it-{name}")
    namespaces[name] = ns
    config = kv_config + rados_config(ns.name)
    return running_server(f"oc-it-{name}-", extra_config=config, env_extra=env_extra)


@pytest.fixture(scope="module")
def server(namespaces):
    """Every descriptor GET layerwise (Θ = 1 byte): one RADOS read per data object per layer."""
    with rados_server(namespaces, "server", '[kv]\nlayerwise_threshold = "1"\n') as srv:
        yield srv


@pytest.fixture(scope="module")
def tcp_server(namespaces):
    """UCX over TCP only (the server's UCX_TLS; the client's is set by the tests), and the
    default Θ, so small GETs are delivered chunkwise."""
    with rados_server(namespaces, "tcp_server", "", env_extra={"UCX_TLS": "tcp"}) as srv:
        srv.boto3().create_bucket(Bucket="kv-tcp")
        yield srv


@pytest.fixture(autouse=True)
def buckets_live_in_rados(request, namespaces):
    """After the test: each server it used lists exactly the buckets registered in its RADOS
    namespace, and has stored something there."""
    yield
    for name in ("server", "tcp_server"):
        if name not in request.fixturenames:
            continue
        srv = request.getfixturevalue(name)
        listed = sorted(b["Name"] for b in srv.boto3().list_buckets()["Buckets"])
        registered = namespaces[name].registered_buckets()
        assert registered is not None, f"{name}: no bucket registry in RADOS namespace " \
            f"{namespaces[name].name}; the server keeps its buckets elsewhere"
        assert registered == listed, name


# A descriptor PUT from the HTTP body and one the server pulls over UCX, read back over UCX
# and HTTP. (N, L, S, G): a chunk (L·S) below, at and above the 64 KiB data object, odd S.
SHAPES = [(1, 4, 64, 4), (3, 1, 33, 4), (5, 3, 40_000, 2), (2, 4, 65_536, 16)]


def test_descriptor_put_then_get_shm(server, tmp):
    server.boto3().create_bucket(Bucket="kv-put-shm")
    put_then_get(server, "kv-put-shm", tmp, SHAPES, 100, mode="layerwise")


def test_descriptor_put_then_get_tcp(tcp_server, tmp):
    put_then_get(tcp_server, "kv-tcp", tmp, SHAPES, 200, {"UCX_TLS": "tcp"})


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_cli_copies_a_multipart_file_up_and_down(server, made_bucket, workdir):
    env = aws_env(server, workdir)
    aws = [AWS, "--endpoint-url", server.endpoint]
    big = os.path.join(workdir, "big.bin")
    with open(big, "wb") as f:
        for i in range(20):
            f.write(bytes([i]) * (1 << 20))  # 20 MiB: aws-cli sends 3 parts of up to 8 MiB
    run(aws + ["s3", "cp", big, f"s3://{made_bucket}/dir/big.bin"], env)
    ls = run(aws + ["s3", "ls", f"s3://{made_bucket}/dir/"], env).stdout.decode()
    assert "big.bin" in ls and str(20 << 20) in ls, ls
    assert server.boto3().head_object(Bucket=made_bucket, Key="dir/big.bin")["ETag"].endswith('-3"')
    back = os.path.join(workdir, "back.bin")
    run(aws + ["s3", "cp", f"s3://{made_bucket}/dir/big.bin", back], env)
    assert filecmp.cmp(big, back, shallow=False)


def test_missing_pool_exits_two_naming_it():
    """A pool that does not exist: `objectcache serve` exits 2 before serving, with one
    error line naming the key and the pool (docs/design.md, "RADOS mapping": Startup)."""
    pool = f"no-such-pool-{free_port()}"
    with tempfile.TemporaryDirectory(prefix="oc-it-nopool-") as root:
        config = os.path.join(root, "objectcache.toml")
        with open(config, "w") as f:
            f.write(TEST_CONFIG + rados_config("unused", pool=pool))
        p = subprocess.run([os.environ["OC_OBJECTCACHE_BIN"], "serve", "--config", config,
                            "--data-dir", os.path.join(root, "data"), "--listen",
                            f"127.0.0.1:{free_port()}"], capture_output=True, timeout=60)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, err
    lines = [x for x in err.splitlines() if x.startswith("objectcache: ")]
    assert len(lines) == 1, err
    assert "rados.pool" in lines[0] and pool in lines[0], err
