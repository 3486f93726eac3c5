"""test_kv_clients.py's cases (LMCache's and NIXL's request shapes, boto3 virtual-host style) on
`objectcache serve` over RADOS (rados_twin.py), virtual-host addressing on as there."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_kv_clients import (  # noqa: F401
    DOMAIN, test_boto3_virtual_host_addressing, test_lmcache_request_shapes,
    test_nixl_obj_request_shapes)

namespace, server, buckets_live_in_rados = twin_fixtures(
    "it-kv", extra_config=f'virtual_host_domain = "{DOMAIN}"\n')
