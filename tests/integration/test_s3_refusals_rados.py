"""test_s3_refusals.py's cases on `objectcache serve` over RADOS (rados_twin.py): the 501
sub-resources store nothing, and the owner's re-creation of a bucket is 200 in us-east-1 and 409
BucketAlreadyOwnedByYou on a server configured for eu-west-1 (its own namespace)."""
import pytest

from conftest import RadosNamespace, rados_config, running_server
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed servers (this module's fixtures).
from test_s3_refusals import (  # noqa: F401
    test_owner_recreating_a_bucket_in_us_east_1_is_200,
    test_owner_recreating_a_bucket_outside_us_east_1_is_409,
    test_unsupported_subresources_are_501_and_store_nothing)

namespace, server, buckets_live_in_rados = twin_fixtures("it-refusals")


@pytest.fixture(scope="module")
def region_server():
    ns = RadosNamespace("it-region")
    try:
        with running_server("oc-it-region-", extra_config='region = "eu-west-1"\n' +
                            rados_config(ns.name)) as srv:
            yield srv
            listed = sorted(b["Name"] for b in srv.boto3(region="eu-west-1")
                            .list_buckets()["Buckets"])
            assert ns.registered_buckets() == listed
    finally:
        ns.close()
