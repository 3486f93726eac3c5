"""The lifecycle tests of test_s3_lifecycle.py (issue 31) on `objectcache serve` over RADOS
(`[storage] backend = "rados"`), imported unchanged so both backends meet the same assertions:
the configuration lives in an omap key of the bucket's index shard 0 and the worker's
conditional deletes run in the guarded commit op. After every test the buckets the server lists
must be exactly the bucket registry in the namespace, read through librados (rados_twin.py)."""
from rados_twin import twin_fixtures
from test_s3_lifecycle import (LIFECYCLE_CONFIG, made_bucket,  # noqa: F401
                               test_abort_incomplete_multipart_upload,
                               test_aws_cli_lifecycle_configuration,
                               test_object_written_again_is_judged_by_its_new_mtime,
                               test_put_get_delete_lifecycle_configuration,
                               test_refusals_store_nothing,
                               test_worker_expires_due_objects_and_leaves_the_others, workdir)

namespace, server, buckets_live_in_rados = twin_fixtures("it-lifecycle",
                                                         extra_config=LIFECYCLE_CONFIG)
