"""The fixtures of a RADOS twin: a test file named *rados* that imports another file's tests
unchanged and runs them against `objectcache serve` over the throw-away cluster
(`[storage] backend = "rados"`, a random namespace of the test pool, 64 KiB data objects), so
both backends meet the same assertions. Use as

    namespace, server, buckets_live_in_rados = twin_fixtures("it-names")

After every test the buckets the server lists must be exactly the bucket registry in that
namespace, read through librados: a server that kept its data elsewhere fails."""
import os
import shutil
import tempfile

import pytest

from conftest import RadosNamespace, Server, rados_config


def twin_fixtures(prefix, extra_config="", make=Server):
    """Module fixtures `namespace` and `server`, and the autouse registry check. `make(mode,
    root, extra_config=...)` builds the server (conftest.Server or a subclass taking
    extra_config); `extra_config` goes before the RADOS tables."""

    @pytest.fixture(scope="module")
    def namespace():
        ns = RadosNamespace(prefix)
        yield ns
        ns.close()

    @pytest.fixture(scope="module")
    def server(namespace):
        root = tempfile.mkdtemp(prefix=f"oc-{prefix}-")
        srv = make("embedded", root, extra_config=extra_config + rados_config(namespace.name))
        srv.start()
        yield srv
        codes = srv.stop()
        log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
        shutil.rmtree(root, ignore_errors=True)
        assert codes and all(c == 0 for c in codes), f"exit codes {codes}\n{log[-4000:]}"

    @pytest.fixture(autouse=True)
    def buckets_live_in_rados(server, namespace):
        yield
        listed = sorted(b["Name"] for b in server.boto3().list_buckets()["Buckets"])
        registered = namespace.registered_buckets()
        assert registered is not None, f"no bucket registry in RADOS namespace {namespace.name}"
        assert registered == listed

    return namespace, server, buckets_live_in_rados
