"""test_s3_checksums.py's cases on `objectcache serve` over RADOS (rados_twin.py): checksum
headers and aws-chunked trailers verified, stored and returned, mismatches storing nothing,
boto3's ChecksumAlgorithm and multipart with checksums. Not imported: the case that needs a
botocore >= 1.36 on PATH (it runs in test_s3_checksums.py where one is)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_s3_checksums import (  # noqa: F401
    test_boto3_checksum_algorithm_round_trips, test_checksum_header_is_verified_stored_and_returned,
    test_checksum_mismatch_is_bad_digest_and_stores_nothing,
    test_malformed_checksum_headers_are_invalid_request, test_multipart_with_checksum_algorithm,
    test_trailer_checksum_is_verified_and_stored)

namespace, server, buckets_live_in_rados = twin_fixtures("it-checksums")
