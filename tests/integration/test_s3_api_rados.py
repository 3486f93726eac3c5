"""The S3 API tests of test_s3_api.py (issue 29: descriptor PUT without a length,
GetObjectAttributes, ListObjectVersions, ACL writes and headers, anonymous refusals) on
`objectcache serve` over RADOS (rados_twin.py: the throw-away cluster, a random namespace, 64 KiB
data objects, so the multipart parts whose sizes GetObjectAttributes reports span many of
them; after every test the server's buckets must be exactly the registry in RADOS)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_s3_api import (EXTRA_CONFIG, test_acl_headers_on_writes,  # noqa: F401
                         test_descriptor_put_without_length_is_411_at_once,
                         test_get_object_attributes,
                         test_list_object_versions_of_an_unversioned_bucket,
                         test_new_operations_refuse_anonymous_requests,
                         test_put_acl_private_is_a_no_op_and_others_are_not_implemented)

# EXTRA_CONFIG belongs to [gateway], so it goes before rados_config's [storage] table.
namespace, server, buckets_live_in_rados = twin_fixtures("it-s3api", extra_config=EXTRA_CONFIG)
