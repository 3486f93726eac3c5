"""The descriptor path in remote mode with real processes (oc-storage-server + oc-gateway + the
`oc` CLI): the storage server runs the KV engine and its own UCX data plane, writing the
client's buffer itself (layer-ready after each layer) and pulling chunks for a descriptor PUT;
the gateway only forwards the descriptor and the plan. Run over UCX shared memory and over TCP
(the server's [kv] data_plane_transports = "tcp", the client's UCX_TLS=tcp), with
[kv] layerwise_threshold = "1" so every request is layerwise. Every delivered byte is compared
with the arrangement computed from the source chunks (test_objectcache's helpers). The
storage server's own figures in /stats prove who wrote the targets, and the gateway process
never loads a UCX transport module."""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

import pytest

from conftest import (RPC_SECRET, TEST_CONFIG, free_port, stop_processes, wait_healthy,
                      wait_port)
from test_objectcache import (OC, PEER, TOY, Peer, chunk_object, expected_payload, get_layers,
                              key_args, put_chunks, put_then_get, run, slice_bytes)

pytestmark = [
    pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)"),
    pytest.mark.skipif(not os.path.exists(os.environ.get("OC_STORAGE_SERVER_BIN", "/nonexistent")),
                       reason="oc-storage-server not built"),
]

ALICE = ("alice", "OCALICEACCESSKEY0001", "ocAliceSecretKey00000000000000000000001")
BOB = ("bob", "OCBOBACCESSKEY000001", "ocBobSecretKey0000000000000000000000001")


class RemoteServer:
    """oc-storage-server (its [kv] table from a config file) and oc-gateway in front of it."""

    def __init__(self, root, transports):
        self.root = root
        self.transports = transports  # "" (UCX's default: shared memory here) or "tcp"
        self.port = free_port()
        self.storage_port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.user(ALICE)
        self.log = open(os.path.join(root, "server.log"), "ab")
        with open(os.path.join(root, "credentials.toml"), "w") as f:
            for name, ak, sk in (ALICE, BOB):
                f.write(f'[[user]]\nname = "{name}"\naccess_key = "{ak}"\n'
                        f'secret_key = "{sk}"\nadmin = false\n')
        with open(os.path.join(root, "storage.toml"), "w") as f:
            f.write(f'[kv]\nlayerwise_threshold = "1"\ndata_plane_transports = "{transports}"\n'
                    'data_plane_staging_buffer_bytes = "256KiB"\n')
        with open(os.path.join(root, "gateway.toml"), "w") as f:
            f.write(TEST_CONFIG + f'credentials_file = "{root}/credentials.toml"\n')

    def user(self, who):
        self.access_key, self.secret_key = who[1], who[2]

    def start(self):
        env = dict(os.environ)
        env["OC_RPC_SECRET"] = RPC_SECRET
        storage = subprocess.Popen(
            [os.environ["OC_STORAGE_SERVER_BIN"], "--config", f"{self.root}/storage.toml",
             "--data-dir", f"{self.root}/data", "--listen", f"127.0.0.1:{self.storage_port}"],
            env=env, stdout=self.log, stderr=self.log)
        wait_port(self.storage_port, storage)
        gateway = subprocess.Popen(
            [os.environ["OC_GATEWAY_BIN"], "--config", f"{self.root}/gateway.toml",
             "--storage", f"127.0.0.1:{self.storage_port}", "--listen", f"127.0.0.1:{self.port}"],
            env=env, stdout=self.log, stderr=self.log)
        self.procs = [gateway, storage]
        wait_healthy(self.endpoint, gateway)

    def stop(self):
        return stop_processes(self.procs)

    def figures(self):
        """The storage server's figures, as the gateway's /stats shows them."""
        with urllib.request.urlopen(self.endpoint + "/stats", timeout=10) as r:
            return json.loads(r.read())["store"]

    def ucx_modules(self, which):
        """UCX transport modules (dlopened by ucp_init) mapped in the gateway or server."""
        pid = self.procs[0 if which == "gateway" else 1].pid
        with open(f"/proc/{pid}/maps") as f:
            return {line.split()[-1] for line in f if "/ucx/libuct_" in line}

    def client_env(self):
        env = dict(os.environ)
        env["OC_ENDPOINT"] = self.endpoint
        env["AWS_ACCESS_KEY_ID"] = self.access_key
        env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        if self.transports:
            env["UCX_TLS"] = self.transports
        return env


@pytest.fixture(scope="module", params=["", "tcp"], ids=["shm", "tcp"])
def remote(request):
    root = tempfile.mkdtemp(prefix="oc-it-remote-kv-")
    srv = RemoteServer(root, request.param)
    srv.start()
    yield srv
    codes = srv.stop()
    log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
    shutil.rmtree(root, ignore_errors=True)
    assert codes == [0, 0], f"exit codes {codes}\n{log[-4000:]}"


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="oc-kv-remote-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def make_bucket(srv, name, who=ALICE):
    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=who[1],
                      aws_secret_access_key=who[2], region_name="us-east-1",
                      config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    s3.create_bucket(Bucket=name)


def oc_env(srv, extra=None):
    env = srv.client_env()
    env.update(extra or {})
    return env


# (N, L, S, G): N = 1, L = 1, odd S, several staging buffers per layer (S > 256 KiB).
SHAPES = [(1, 4, 64, 4), (3, 1, 33, 4), (5, 3, 40_000, 2), (2, 4, 300_000, 16)]


def test_layers_byte_exact_written_by_the_storage_server(remote, tmp):
    bucket = f"kv-exact-{remote.transports or 'shm'}"
    make_bucket(remote, bucket)
    before = remote.figures()
    extra = {"UCX_TLS": remote.transports} if remote.transports else None
    target_bytes = put_then_get(remote, bucket, tmp, SHAPES, 40, extra, mode="layerwise")
    after = remote.figures()
    # The storage server's data plane wrote every target byte, and pulled the UCX PUTs.
    assert after["rpc_kv_get_target_bytes"] - before["rpc_kv_get_target_bytes"] == target_bytes
    assert after["rpc_kv_get_target_writes"] > before["rpc_kv_get_target_writes"]
    assert after["rpc_kv_put_pulled_bytes"] > before["rpc_kv_put_pulled_bytes"]
    assert after["rpc_kv_get_stream_bytes"] > before["rpc_kv_get_stream_bytes"]
    # Only the storage server opened a UCX data plane: the gateway never loaded a transport.
    assert remote.ucx_modules("storage"), "the check needs UCX modules in the server"
    assert remote.ucx_modules("gateway") == set()


def test_partial_hit(remote, tmp):
    bucket = f"kv-partial-{remote.transports or 'shm'}"
    make_bucket(remote, bucket)
    n, n_layers, s, g = 6, 4, 1000, 4
    keys = key_args("compact", tmp, n, g, "partial/")
    stored = key_args("compact", tmp, 3, g, "partial/")
    put_chunks(remote, bucket, tmp, stored, 3, n_layers, s, "kv_l2td", 7)
    p = run(["probe", "--bucket", bucket, *keys, "--layers", str(n_layers), "--layer-bytes",
             str(s)], env=remote.client_env())
    assert p.stdout.decode().split()[0] == "matched=3"
    extra = {"UCX_TLS": remote.transports} if remote.transports else None
    for via in ("ucx", "http"):
        p, layers, summary, data = get_layers(remote, bucket, tmp, keys, n_layers, s, "kv_l2td",
                                              "layer-major", via, extra)
        assert summary["matched"] == "3"
        assert sorted(layers) == list(range(n_layers))
        assert data == expected_payload(3, n, n_layers, s, "layer-major", 7)


def test_other_users_bucket_is_access_denied_and_nothing_is_written(remote, tmp):
    bucket = f"kv-bob-{remote.transports or 'shm'}"
    make_bucket(remote, bucket, who=BOB)
    n, n_layers, s, g = 2, 2, 512, 4
    keys = key_args("compact", tmp, n, g, "bob/")
    remote.user(BOB)
    put_chunks(remote, bucket, tmp, keys, n, n_layers, s, "kv_l2td", 9)
    remote.user(ALICE)
    before = remote.figures()
    extra = {"UCX_TLS": remote.transports} if remote.transports else None
    for via in ("ucx", "http"):
        p, layers, summary, data = get_layers(remote, bucket, tmp, keys, n_layers, s, "kv_l2td",
                                              "layer-major", via, extra, check=False)
        assert p.returncode != 0
        assert b"AccessDenied" in p.stderr, p.stderr
        assert layers == [] and data is None
    data_path = os.path.join(tmp, "alice.bin")
    with open(data_path, "wb") as f:
        f.write(b"\x01" * (n * n_layers * s))
    for via in ("ucx", "http"):
        p = run(["put-chunks", "--bucket", bucket, *keys, "--layers", str(n_layers),
                 "--layer-bytes", str(s), "--data", data_path, "--via", via],
                env=oc_env(remote, extra), check=False)
        assert p.returncode != 0
        assert b"AccessDenied" in p.stderr, p.stderr
    after = remote.figures()
    # Refused in the gateway: no descriptor call reached the storage server, so its data plane
    # wrote nothing anywhere.
    for k in ("rpc_kv_gets", "rpc_kv_puts", "rpc_kv_get_target_bytes", "rpc_kv_put_pulled_bytes"):
        assert after[k] == before[k], k
    # Bob still reads his chunks.
    remote.user(BOB)
    p, layers, summary, data = get_layers(remote, bucket, tmp, keys, n_layers, s, "kv_l2td",
                                          "layer-major", "ucx", extra)
    remote.user(ALICE)
    want = b"".join(slice_bytes(j, l, s, 9) for l in range(n_layers) for j in range(n))
    assert data == want


def test_client_exits_zero_right_after_a_ucx_transfer(remote, tmp):
    """A client process that exits right after its transfer exits 0: its data plane closes
    in order (docs/decisions/data-plane-orderly-teardown.md). A put-chunks whose
    bytes the server reads in place never uses the endpoint the server made to the client,
    so the client's UCX may still owe the server a wireup reply at exit; UCX 1.13 aborted in
    ucp_worker_destroy in 1 to 3 of 100 such runs before the worker was flushed first."""
    RUNS = 250
    bucket = f"kv-exit-{remote.transports or 'shm'}"
    make_bucket(remote, bucket)
    env = oc_env(remote)
    failures = []
    for i in range(RUNS):
        n, n_layers, s, g = ((1, 4, 64, 4), (3, 1, 33, 4))[i % 2]
        data = b"".join(chunk_object(j, n_layers, s, "kv_l2td", i) for j in range(n))
        path = os.path.join(tmp, "exit.bin")
        with open(path, "wb") as f:
            f.write(data)
        keys = key_args("compact", tmp, n, g, f"exit-{i}/")
        p = run(["put-chunks", "--bucket", bucket, *keys, "--layers", str(n_layers),
                 "--layer-bytes", str(s), "--layout", "kv_l2td", "--data", path,
                 "--via", "ucx"], env=env, check=False)
        if p.returncode != 0:
            failures.append((i, p.returncode, p.stderr.decode()[-400:]))
    assert failures == [], f"{len(failures)} of {RUNS} exited non-zero: {failures[:2]}"


def sig(who):
    return ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{who[1]}:{who[2]}", "-H",
            "x-amz-content-sha256: UNSIGNED-PAYLOAD"]


def curl(args, data=None):
    p = subprocess.run(["curl", "-sS", "-D", "-", *args], input=data, capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
    return int(lines[0].split()[1]), headers, body


@pytest.mark.skipif(not os.path.exists(PEER), reason="data_plane_peer not built")
def test_a_connection_serves_only_the_credential_that_first_used_it(remote, tmp):
    """The connection id travels in its owner's signed headers; a holder of another
    credential that copies it (with the rkey) is refused with 403 naming
    x-oc-target-connection, by the storage server's data plane (the gateway forwards the
    principal over the RPC), and its owner is still served."""
    tag = remote.transports or "shm"
    mine, theirs = f"kv-conn-a-{tag}", f"kv-conn-b-{tag}"
    make_bucket(remote, mine, who=ALICE)
    make_bucket(remote, theirs, who=BOB)
    for bucket, who in ((mine, ALICE), (theirs, BOB)):
        status, _, body = curl([*sig(who), "-X", "PUT", "--data-binary", "@-",
                                f"{remote.endpoint}/{bucket}?objectcache=", *TOY, "-H",
                                "x-oc-layout: kv_l2td"],
                               data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
        assert status == 200, body
    status, h, body = curl([*sig(ALICE), f"{remote.endpoint}/{mine}?data-plane=&objectcache="])
    assert status == 200, body
    peer = Peer(tmp, h["x-oc-data-plane-address"], h["x-oc-data-plane-shm"],
                remote.transports or "-")
    try:
        # Alice's first request binds the connection to her.
        status, _, body = curl([*sig(ALICE), f"{remote.endpoint}/{mine}?objectcache=",
                                *peer.headers()])
        assert status == 200, body
        # Bob names it for his own bucket (same storage server, same data plane).
        status, _, body = curl([*sig(BOB), f"{remote.endpoint}/{theirs}?objectcache=",
                                *peer.headers()])
        assert status == 403, body
        assert b"<ArgumentName>x-oc-target-connection</ArgumentName>" in body, body
        status, _, body = curl([*sig(BOB), "-X", "PUT", "--data-binary", "",
                                f"{remote.endpoint}/{theirs}?objectcache=", *peer.headers(),
                                "-H", "x-oc-layout: kv_l2td"])
        assert status == 403, body
        # Alice still is.
        status, _, body = curl([*sig(ALICE), f"{remote.endpoint}/{mine}?objectcache=",
                                *peer.headers()])
        assert status == 200, body
    finally:
        peer.stop()
