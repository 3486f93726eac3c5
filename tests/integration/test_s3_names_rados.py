"""test_s3_names.py's cases (listing pages and encodings, bucket re-creation, special key names,
metadata encoding, dates, error precedence) on `objectcache serve` over RADOS (rados_twin.py),
with the same two users (TwoUserServer)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_s3_names import (  # noqa: F401
    TwoUserServer, test_content_encoding_stored_as_sent,
    test_date_and_amz_date_and_presigned_expires, test_list_buckets_pages,
    test_list_objects_v2_empty_token_and_newline_prefix,
    test_missing_bucket_is_no_such_bucket_before_access_denied,
    test_multipart_listings_url_encoding, test_non_ascii_metadata_as_s3_returns_it,
    test_owner_recreating_a_bucket_gets_200_and_keeps_it, test_special_key_names_round_trip)

namespace, server, buckets_live_in_rados = twin_fixtures("it-names", make=TwoUserServer)
