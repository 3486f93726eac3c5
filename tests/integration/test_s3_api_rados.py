"""The S3 API tests of test_s3_api.py (issue 29: descriptor PUT without a length,
GetObjectAttributes, ListObjectVersions, ACL writes and headers, anonymous refusals) on
`objectcache serve` over RADOS (`[storage] backend = "rados"`), imported unchanged so both
backends meet the same assertions, on the throw-away cluster of the `rados_cluster` CTest
fixture in a random namespace. Data objects are 64 KiB, so the multipart parts whose sizes
GetObjectAttributes reports span many of them. After every test the buckets the server lists
must be exactly the bucket registry in that namespace, read through librados."""
import pytest

from conftest import RadosNamespace, rados_config, running_server
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_s3_api import (EXTRA_CONFIG, test_acl_headers_on_writes,  # noqa: F401
                         test_descriptor_put_without_length_is_411_at_once,
                         test_get_object_attributes,
                         test_list_object_versions_of_an_unversioned_bucket,
                         test_new_operations_refuse_anonymous_requests,
                         test_put_acl_private_is_a_no_op_and_others_are_not_implemented)


@pytest.fixture(scope="module")
def namespace():
    ns = RadosNamespace("it-s3api")
    yield ns
    ns.close()


@pytest.fixture(scope="module")
def server(namespace):
    # EXTRA_CONFIG belongs to [gateway], so it goes before rados_config's [storage] table.
    with running_server("oc-it-s3api-rados-",
                        extra_config=EXTRA_CONFIG + rados_config(namespace.name)) as srv:
        yield srv


@pytest.fixture(autouse=True)
def buckets_live_in_rados(server, namespace):
    yield
    listed = sorted(b["Name"] for b in server.boto3().list_buckets()["Buckets"])
    registered = namespace.registered_buckets()
    assert registered is not None, f"no bucket registry in RADOS namespace {namespace.name}"
    assert registered == listed
