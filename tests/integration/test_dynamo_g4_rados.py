"""test_dynamo_g4.py's request sequence (Dynamo KVBM G4 over plain S3) on `objectcache serve`
over RADOS (rados_twin.py): the same codes, locks and side objects on the second backend."""
from rados_twin import twin_fixtures
# Imported tests run here against the RADOS-backed server (this module's `server`).
from test_dynamo_g4 import (  # noqa: F401
    test_expired_and_malformed_locks_are_taken_over_with_if_match,
    test_head_of_a_missing_block_is_404_without_a_body_and_get_is_nosuchkey,
    test_offload_sequence_then_load, test_racing_instances_one_lock_winner,
    test_the_lock_loser_gets_412_precondition_failed)

namespace, server, buckets_live_in_rados = twin_fixtures("it-g4")
