"""The S3 compatibility tests of test_s3_compat.py, test_s3_tagging.py, test_s3_copy_conditions.py,
test_s3_multipart_checksums.py and test_s3_full_object_checksums.py (issue 17) on
`objectcache serve` over RADOS (`[storage] backend = "rados"`), imported unchanged so both
backends meet the same assertions, on the throw-away cluster of the `rados_cluster` CTest
fixture in a random namespace. Data objects are 64 KiB, so parts and ranges cross data-object
boundaries. After every test the buckets the server lists must be exactly the bucket registry
in that namespace, read through librados: a server that kept its data elsewhere fails
(rados_twin.py)."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_s3_compat import (test_aws_cli_v1_big_copy_request_shapes,  # noqa: F401
                            test_aws_cli_v1_copies_a_big_object_between_buckets,
                            test_aws_cli_v1_put_if_none_match,
                            test_aws_cli_v1_put_if_none_match_request_shape,
                            test_aws_rb_force_with_unfinished_upload,
                            test_complete_retried_answers_the_same_etag, test_conditional_put,
                            test_delete_bucket_aborts_unfinished_uploads,
                            test_get_and_head_by_part_number, test_if_none_match_race_has_one_winner,
                            test_parts_uploaded_out_of_order, test_upload_part_copy, workdir)
from test_s3_copy_conditions import (  # noqa: F401
    test_complete_multipart_upload_conditions, test_copy_object_conditions,
    test_copy_object_keeps_or_recomputes_the_checksum,
    test_copy_of_a_multipart_object_keeps_its_composite_checksum)
from test_s3_full_object_checksums import (  # noqa: F401
    test_create_takes_the_checksum_type_as_s3_does,
    test_full_object_checksum_is_combined_checked_and_stored,
    test_full_object_completion_without_expected_value,
    test_upload_part_of_another_algorithm_is_refused_at_once)
from test_s3_multipart_checksums import (  # noqa: F401
    test_completion_compares_listed_checksums, test_completion_without_checksums_stores_none,
    test_list_parts_shows_each_parts_checksum, test_upload_file_stores_the_checksum_of_checksums)
from test_s3_tagging import (  # noqa: F401
    test_aws_cli_v2_copies_and_syncs_tags_between_s3_locations, test_copy_object_tagging_directive,
    test_malformed_tagging_bodies_are_malformed_xml, test_multipart_upload_with_tagging,
    test_put_get_delete_object_tagging, test_tag_limits_are_s3s)


namespace, server, buckets_live_in_rados = twin_fixtures("it-s3compat")
