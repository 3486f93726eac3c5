"""test_signed_trailer.py's cases (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER uploads and their
refusals) on `objectcache serve` over RADOS (rados_twin.py)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_signed_trailer import (  # noqa: F401
    test_signed_streaming_without_trailer_still_works,
    test_signed_trailer_on_upload_part_keeps_the_part_checksum,
    test_signed_trailer_refusals_store_nothing, test_signed_trailer_upload_is_verified_and_stored)

namespace, server, buckets_live_in_rados = twin_fixtures("it-trailer")
