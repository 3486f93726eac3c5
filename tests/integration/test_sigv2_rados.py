"""test_sigv2.py's cases (SigV2 presigned URLs and header signatures, their refusals) on
`objectcache serve` over RADOS (rados_twin.py). Not imported: the case that needs aws-cli v1 on
PATH (it runs in test_sigv2.py where one is)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_sigv2 import (  # noqa: F401
    test_expired_and_far_future_urls_are_access_denied, test_presigned_urls_get_head_put_delete,
    test_sigv2_cannot_carry_unsigned_oc_headers, test_sigv2_header_signed_requests)

namespace, server, buckets_live_in_rados = twin_fixtures("it-sigv2")
