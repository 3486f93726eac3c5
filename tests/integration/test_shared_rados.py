"""Servers over one RADOS pool are stateless peers (issue 15, "Two servers over one pool";
docs/design.md "RADOS mapping", docs/decisions/remote-store-shared-placement.md), on the
throw-away cluster of the `rados_cluster` CTest fixture, one random namespace per setup:

- Two `oc-storage-server`s over one pool and namespace behind one `oc-gateway --storage A,B`
  (shared placement). Objects, a multipart upload and descriptor PUTs (HTTP body and UCX
  pull) are written through the gateway; then each server is stopped in turn (and started
  again) and the other alone lists, reads (whole and ranges) and answers descriptor GETs over
  UCX and the HTTP body, byte-exact. A gateway that places buckets by mod N fails the round
  that stops the bucket's server, and so do RocksDB servers (each holding its own data).
- Two `objectcache serve` over one pool and namespace: what one writes, the other lists,
  reads and delivers byte-exact; an overwrite and a delete through the second are seen by the
  first. With RocksDB each would hold its own buckets and the reads fail.
"""
import hashlib
import os
import subprocess
import time

import pytest
from botocore.exceptions import ClientError

from conftest import (RadosNamespace, Server, free_port, rados_config, running_server,
                      stop_processes, wait_healthy, wait_port)
from test_objectcache import (OC, expected_payload, get_layers, key_args, put_chunks,  # noqa: F401
                              tmp)

pytestmark = [
    pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)"),
    pytest.mark.skipif(not os.path.exists(os.environ.get("OC_STORAGE_SERVER_BIN", "/nonexistent")),
                       reason="oc-storage-server not built"),
]

# Every descriptor GET layerwise (Θ = 1 byte): the per-layer reads from RADOS.
KV_CONFIG = '[kv]\nlayerwise_threshold = "1"\n'


class SharedGateway(Server):
    """oc-gateway over two oc-storage-servers that share one RADOS namespace; either storage
    server can be stopped and started again on its port."""

    def __init__(self, mode, root, namespace):
        super().__init__(mode, root, extra_config=f'credentials_file = "{root}/credentials.toml"\n')
        self.storage_config = os.path.join(root, "storage.toml")
        with open(self.storage_config, "w") as f:
            f.write(KV_CONFIG + rados_config(namespace))
        self.storage_ports = [free_port(), free_port()]
        self.storage = [None, None]

    def start_storage(self, i):
        self.storage[i] = subprocess.Popen(
            [os.environ["OC_STORAGE_SERVER_BIN"], "--config", self.storage_config, "--listen",
             f"127.0.0.1:{self.storage_ports[i]}"],
            env=self.env(), stdout=self.log, stderr=self.log)
        wait_port(self.storage_ports[i], self.storage[i])

    def stop_storage(self, i):
        """SIGTERM storage server i; its exit code."""
        return stop_processes([self.storage[i]])[0]

    def start(self):
        for i in range(2):
            self.start_storage(i)
        gateway = subprocess.Popen(
            [os.environ["OC_GATEWAY_BIN"], "--config", self.config, "--storage",
             ",".join(f"127.0.0.1:{p}" for p in self.storage_ports),
             "--listen", f"127.0.0.1:{self.port}"],
            env=self.env(), stdout=self.log, stderr=self.log)
        self.procs = [gateway]
        wait_healthy(self.endpoint, gateway)

    def stop(self):
        self.procs += [p for p in self.storage if p.poll() is None]
        return super().stop()


@pytest.fixture(scope="module")
def namespace():
    ns = RadosNamespace("it-shared")
    yield ns
    ns.close()


@pytest.fixture(scope="module")
def shared(namespace):
    with running_server("oc-it-shared-", "remote", make=SharedGateway,
                        namespace=namespace.name) as srv:
        yield srv


@pytest.fixture(scope="module")
def peers():
    """Two `objectcache serve` over one namespace (their own data dirs: credentials only)."""
    ns = RadosNamespace("it-peers")
    config = KV_CONFIG + rados_config(ns.name)
    with running_server("oc-it-peer-a-", extra_config=config) as a, \
            running_server("oc-it-peer-b-", extra_config=config) as b:
        yield a, b
    ns.close()


# Plain objects: a few bytes, empty, one and several 64 KiB data objects.
OBJECTS = {"small": b"small object", "empty": b"",
           "dir/a": bytes(i % 251 for i in range(100_000)),
           "dir/b": hashlib.sha256(b"b").digest() * 10_000}  # 320,000 bytes
MULTIPART = [b"p" * (5 << 20), b"q" * 1000]
# Descriptor PUTs: (N, L, S, G, seed, via). The second's chunks (160 KB) span 3 data objects.
KV = [(3, 4, 1000, 4, 1, "http"), (2, 8, 20_000, 16, 2, "ucx")]


def write_everything(srv, tmp):
    """Buckets `shared` (objects, a multipart object) and `kv-shared` (descriptor PUTs) through
    `srv`; the KV chunks' key flags."""
    s3 = srv.boto3()
    s3.create_bucket(Bucket="shared")
    s3.create_bucket(Bucket="kv-shared")
    for key, body in OBJECTS.items():
        s3.put_object(Bucket="shared", Key=key, Body=body)
    uid = s3.create_multipart_upload(Bucket="shared", Key="mp")["UploadId"]
    parts = [{"PartNumber": i + 1, "ETag": s3.upload_part(
        Bucket="shared", Key="mp", UploadId=uid, PartNumber=i + 1, Body=body)["ETag"]}
        for i, body in enumerate(MULTIPART)]
    s3.complete_multipart_upload(Bucket="shared", Key="mp", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    keys = []
    for n, n_layers, s, g, seed, via in KV:
        keys.append(key_args("compact", tmp, n, g, f"kv-{seed}/"))
        put_chunks(srv, "kv-shared", tmp, keys[-1], n, n_layers, s, "kv_l2td", seed, via=via)
    return keys


def check_reads(srv, tmp, kv_keys, objects=None):
    """Through `srv`: the listing, every object whole, ranges across data objects, and the
    KV chunks by descriptor GET over UCX and the HTTP body, byte-exact."""
    objects = dict(objects or OBJECTS, mp=b"".join(MULTIPART))
    s3 = srv.boto3()
    listing = s3.list_objects_v2(Bucket="shared", Delimiter="/")
    assert [p["Prefix"] for p in listing["CommonPrefixes"]] == ["dir/"]
    assert [o["Key"] for o in listing["Contents"]] == sorted(k for k in objects if "/" not in k)
    listing = s3.list_objects_v2(Bucket="shared", Prefix="dir/")
    assert [o["Key"] for o in listing["Contents"]] == sorted(k for k in objects if "/" in k)
    for key, body in objects.items():
        assert s3.get_object(Bucket="shared", Key=key)["Body"].read() == body, key
    for key, first, last in (("dir/b", 65_000, 140_000), ("mp", (5 << 20) - 10, (5 << 20) + 9)):
        got = s3.get_object(Bucket="shared", Key=key, Range=f"bytes={first}-{last}")
        assert got["Body"].read() == objects[key][first:last + 1], key
    for (n, n_layers, s, g, seed, _), keys in zip(KV, kv_keys):
        for via in ("ucx", "http"):
            p, layers, summary, data = get_layers(srv, "kv-shared", tmp, keys, n_layers, s,
                                                  "kv_l2td", "layer-major", via)
            assert summary["matched"] == str(n), p.stdout.decode()
            assert summary["mode"] == "layerwise"
            assert sorted(layers) == list(range(n_layers))
            assert data == expected_payload(n, n, n_layers, s, "layer-major", seed), (seed, via)


def test_either_storage_server_alone_serves_everything(shared, namespace, tmp):
    kv_keys = write_everything(shared, tmp)
    assert namespace.registered_buckets() == ["kv-shared", "shared"]
    for victim in (0, 1):
        assert shared.stop_storage(victim) == 0
        check_reads(shared, tmp, kv_keys)
        shared.start_storage(victim)


def test_what_one_serve_writes_the_other_serves(peers, tmp):
    a, b = peers
    kv_keys = write_everything(a, tmp)
    check_reads(b, tmp, kv_keys)
    # Changes through b are seen by a at once: no state kept in a server.
    b.boto3().put_object(Bucket="shared", Key="small", Body=b"rewritten through b")
    b.boto3().delete_object(Bucket="shared", Key="dir/a")
    objects = {k: v for k, v in OBJECTS.items() if k != "dir/a"}
    objects["small"] = b"rewritten through b"
    check_reads(a, tmp, kv_keys, objects)
    with pytest.raises(ClientError) as e:
        a.boto3().get_object(Bucket="shared", Key="dir/a")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_mutations_go_to_the_live_server_when_one_is_stopped(shared):
    """A stopped peer refuses connections, so a mutation that meets it was never sent: the
    gateway runs it on the other server (remote_call.h kNotSentField) instead of answering 503.
    The stopped server is tried again after each 1 s skip, so a few seconds of mutations meet
    it several times; every one must succeed at once (the client does not retry)."""
    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=shared.endpoint, aws_access_key_id=shared.access_key,
                      aws_secret_access_key=shared.secret_key, region_name="us-east-1",
                      config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                    retries={"total_max_attempts": 1}))
    s3.create_bucket(Bucket="mutations")
    s3.put_object(Bucket="mutations", Key="src", Body=b"source")
    assert shared.stop_storage(1) == 0
    try:
        start, rounds = time.monotonic(), 0
        while time.monotonic() - start < 3.5 or rounds < 5:
            rounds += 1
            s3.put_object_tagging(Bucket="mutations", Key="src",
                                  Tagging={"TagSet": [{"Key": "round", "Value": str(rounds)}]})
            s3.copy_object(Bucket="mutations", Key=f"copy{rounds}",
                           CopySource={"Bucket": "mutations", "Key": "src"})
            s3.delete_object(Bucket="mutations", Key=f"copy{rounds}")
            uid = s3.create_multipart_upload(Bucket="mutations", Key="mp")["UploadId"]
            s3.abort_multipart_upload(Bucket="mutations", Key="mp", UploadId=uid)
            s3.create_bucket(Bucket=f"mutations-{rounds}")
            s3.delete_bucket(Bucket=f"mutations-{rounds}")
        tags = s3.get_object_tagging(Bucket="mutations", Key="src")["TagSet"]
        assert tags == [{"Key": "round", "Value": str(rounds)}]
        assert [o["Key"] for o in s3.list_objects_v2(Bucket="mutations")["Contents"]] == ["src"]
    finally:
        shared.start_storage(1)
