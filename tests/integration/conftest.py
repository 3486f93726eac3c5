"""Fixtures for the gateway integration tests.

`server` starts the gateway on 127.0.0.1 with a free port, a temp data dir and credentials
from the environment (OC_ACCESS_KEY/OC_SECRET_KEY), waits for /healthz, and stops it by PID
(SIGTERM, expecting exit 0). It is parametrised over the embedded store (`objectcache serve`)
and the remote store (`oc-storage-server` + `oc-gateway` sharing OC_RPC_SECRET); the remote
case is skipped when the storage daemon has not been built.

Tests on RADOS (files named *rados*, which CTest runs with the `rados_cluster` fixture) get
their cluster from `rados_target()` and look into it through `RadosNamespace`.
"""
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

ACCESS_KEY = "OCTESTACCESSKEY00001"
SECRET_KEY = "ocTestSecretKey0000000000000000000000001"
RPC_SECRET = "integration-rpc-secret"

# Small timeouts so the malformed-HTTP tests (trickling clients) finish quickly.
TEST_CONFIG = """
[gateway]
read_timeout = "2s"
idle_timeout = "3s"
header_timeout = "3s"
max_header_bytes = "16KiB"
max_object_bytes = "256MiB"
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, proc, deadline_s=30, cafile=None):
    import ssl
    context = ssl.create_default_context(cafile=cafile) if cafile else None
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1, context=context) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("server did not become healthy")


def wait_port(port, proc, deadline_s=30):
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"storage server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("storage server did not listen")


def stop_processes(procs, timeout_s=30):
    """SIGTERM each process in order, wait for it (SIGKILL after timeout_s); their exit codes."""
    codes = []
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            codes.append(p.wait(timeout=timeout_s))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


class Server:
    """One running gateway (and its storage daemon in remote mode)."""

    def __init__(self, mode, root, extra_config="", cafile=None, env_extra=None, args=None):
        self.mode = mode
        self.args = list(args or [])  # extra flags of objectcache serve / oc-gateway
        self.storage_args = []  # extra flags of oc-storage-server (remote mode): its --config
        self.root = root
        self.data_dir = os.path.join(root, "data")
        self.access_key = ACCESS_KEY
        self.secret_key = SECRET_KEY
        self.config = os.path.join(root, "gateway.toml")
        with open(self.config, "w") as f:
            f.write(TEST_CONFIG + extra_config)
        self.port = free_port()
        self.cafile = cafile  # set: the gateway serves HTTPS with a cert this CA file trusts
        self.env_extra = env_extra or {}  # the server processes' own variables (UCX_TLS)
        scheme = "https" if cafile else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.port}"
        self.storage_port = None
        self.procs = []
        self.log = open(os.path.join(root, "server.log"), "ab")

    def env(self):
        env = dict(os.environ)
        env["OC_ACCESS_KEY"] = self.access_key
        env["OC_SECRET_KEY"] = self.secret_key
        env["OC_RPC_SECRET"] = RPC_SECRET
        env.update(self.env_extra)
        return env

    def start(self):
        env = self.env()
        if self.mode == "embedded":
            cmd = [os.environ["OC_OBJECTCACHE_BIN"], "serve", "--config", self.config,
                   "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}"] + self.args
            self.procs = [subprocess.Popen(cmd, env=env, stdout=self.log, stderr=self.log)]
        else:
            if self.storage_port is None:
                self.storage_port = free_port()
            storage = subprocess.Popen(
                [os.environ["OC_STORAGE_SERVER_BIN"], "--data-dir", self.data_dir,
                 "--listen", f"127.0.0.1:{self.storage_port}"] + self.storage_args,
                env=env, stdout=self.log, stderr=self.log)
            wait_port(self.storage_port, storage)
            with open(self.config, "a") as f:
                if "credentials_file" not in open(self.config).read():
                    f.write(f'credentials_file = "{self.root}/credentials.toml"\n')
            gateway = subprocess.Popen(
                [os.environ["OC_GATEWAY_BIN"], "--config", self.config,
                 "--storage", f"127.0.0.1:{self.storage_port}",
                 "--listen", f"127.0.0.1:{self.port}"] + self.args,
                env=env, stdout=self.log, stderr=self.log)
            self.procs = [gateway, storage]
        wait_healthy(self.endpoint, self.procs[0], cafile=self.cafile)

    def stop(self):
        """SIGTERM every process (gateway first); returns their exit codes."""
        codes = stop_processes(self.procs)
        self.procs = []
        return codes

    def kill9(self):
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def boto3(self, **kw):
        import boto3
        from botocore.config import Config
        cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"},
                     retries={"max_attempts": 1}, connect_timeout=5, read_timeout=60)
        return boto3.client("s3", endpoint_url=self.endpoint, verify=self.cafile or True,
                            aws_access_key_id=kw.get("access_key", self.access_key),
                            aws_secret_access_key=kw.get("secret_key", self.secret_key),
                            region_name=kw.get("region", "us-east-1"), config=cfg)


def modes():
    out = ["embedded"]
    remote_ready = os.path.exists(os.environ.get("OC_STORAGE_SERVER_BIN", "/nonexistent"))
    out.append(pytest.param("remote", marks=pytest.mark.skipif(
        not remote_ready, reason="oc-storage-server not built")))
    return out


@contextlib.contextmanager
def running_server(prefix, mode="embedded", make=Server, **kw):
    """A started Server (or what `make(mode, root, **kw)` builds) in a fresh temp dir; on exit
    it is stopped, which must succeed with exit code 0 everywhere, and its dir removed."""
    root = tempfile.mkdtemp(prefix=prefix)
    srv = make(mode, root, **kw)
    srv.start()
    yield srv
    codes = srv.stop()
    log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
    shutil.rmtree(root, ignore_errors=True)
    assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"


@pytest.fixture(scope="module", params=modes())
def server(request):
    with running_server("oc-it-", request.param) as srv:
        yield srv


_counter = [0]


@pytest.fixture
def bucket(server):
    """A fresh bucket name (created by the test or by `made_bucket`)."""
    _counter[0] += 1
    return f"it-{os.getpid()}-{_counter[0]}"


@pytest.fixture
def made_bucket(server, bucket):
    server.boto3().create_bucket(Bucket=bucket)
    return bucket


# The throw-away Ceph cluster of the `rados_cluster` CTest fixture (cmake/OcTesting.cmake,
# docs/design.md "RADOS test cluster"). Without it a RADOS test fails, naming the variables
# and the script; it never skips.
CEPH_CONF_ENV = "OC_TEST_CEPH_CONF"
RADOS_POOL_ENV = "OC_TEST_RADOS_POOL"
RADOS_CLUSTER_HINT = ("run through ctest (the rados_cluster fixture starts one), or start one "
                      "with `tools/ceph-test-cluster up DIR` and set "
                      f"{CEPH_CONF_ENV}=DIR/ceph.conf {RADOS_POOL_ENV}=oc-test")


def rados_target():
    """(ceph.conf path, pool) of the test cluster, from the environment."""
    conf = os.environ.get(CEPH_CONF_ENV, "")
    pool = os.environ.get(RADOS_POOL_ENV, "")
    if not conf or not pool:
        pytest.fail(f"{CEPH_CONF_ENV} and {RADOS_POOL_ENV} must be set: {RADOS_CLUSTER_HINT}",
                    pytrace=False)
    if not os.path.isfile(conf):
        pytest.fail(f"{CEPH_CONF_ENV}={conf} does not exist (is the cluster down?): "
                    f"{RADOS_CLUSTER_HINT}", pytrace=False)
    return conf, pool


# [rados] keys that make objects, parts and KV chunks span several data objects: 64 KiB each,
# the smallest allowed, so reads cross data-object boundaries.
SMALL_DATA_OBJECTS = 'object_extent_bytes = "64KiB"\nmax_chunk_object_bytes = "64KiB"\n'


def rados_config(namespace, pool=None, extra=SMALL_DATA_OBJECTS):
    """The [storage] and [rados] tables of a server over the test cluster's pool (or `pool`),
    in `namespace`, with `extra` [rados] keys; append after every other table."""
    conf, test_pool = rados_target()
    return (f'\n[storage]\nbackend = "rados"\n[rados]\nconf_file = "{conf}"\n'
            f'client_name = "client.admin"\npool = "{pool or test_pool}"\n'
            f'namespace = "{namespace}"\nconnect_timeout = "10s"\nop_timeout = "30s"\n' + extra)


class RadosNamespace:
    """A random namespace of the test pool, read directly through librados (Debian's
    python3-rados): what a RADOS-backed server really stored, independent of our code."""

    def __init__(self, prefix):
        import rados
        conf, pool = rados_target()
        self.name = f"{prefix}-{secrets.token_hex(8)}"
        self.cluster = rados.Rados(conffile=conf, rados_id="admin")
        for key in ("rados_mon_op_timeout", "rados_osd_op_timeout", "client_mount_timeout"):
            self.cluster.conf_set(key, "10")
        try:
            self.cluster.connect(timeout=10)
            self.ioctx = self.cluster.open_ioctx(pool)
        except rados.Error as e:
            self.cluster.shutdown()
            pytest.fail(f"cannot use pool {pool} of {CEPH_CONF_ENV}={conf}: {e}; "
                        f"{RADOS_CLUSTER_HINT}", pytrace=False)
        self.ioctx.set_namespace(self.name)

    def objects(self):
        return sorted(o.key for o in self.ioctx.list_objects())

    def registered_buckets(self):
        """Bucket names in the bucket registry (omap of `oc.buckets`, docs/design.md "RADOS
        mapping"); None if there is no registry object."""
        import rados
        try:
            with rados.ReadOpCtx() as op:
                it, _ = self.ioctx.get_omap_vals(op, "", "", 100000)
                self.ioctx.operate_read_op(op, "oc.buckets")
                return sorted(k for k, _ in it)
        except rados.ObjectNotFound:
            return None

    def close(self):
        self.ioctx.close()
        self.cluster.shutdown()
