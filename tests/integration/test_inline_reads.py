"""GET and HEAD on the gateway's I/O thread (gateway.inline_cached_reads): what the store holds
in memory is answered there, what needs the disk is rerun on the store pool, and either way
the client gets the same bytes and headers. /stats counts both ("inline_reads"); with the
option off, or in front of a remote store (whose reads always wait), neither count moves.
"""
import json
import os
import urllib.request

import pytest

from conftest import running_server


def inline_counts(srv):
    with urllib.request.urlopen(srv.endpoint + "/stats", timeout=10) as r:
        counts = json.loads(r.read())["inline_reads"]
    return counts["served"], counts["missed"]


def exercise(s3, data):
    """GETs and HEADs of every shape the handler serves; each checked. Returns how many."""
    n = 0
    for _ in range(3):
        assert s3.get_object(Bucket="inl", Key="big")["Body"].read() == data
        n += 1
    got = s3.get_object(Bucket="inl", Key="big", Range="bytes=70000-200000")
    assert got["ContentRange"] == f"bytes 70000-200000/{len(data)}"
    assert got["Body"].read() == data[70000:200001]
    n += 1
    head = s3.head_object(Bucket="inl", Key="big")
    assert head["ContentLength"] == len(data)
    n += 1
    etag = head["ETag"]
    with pytest.raises(s3.exceptions.ClientError) as e:
        s3.get_object(Bucket="inl", Key="big", IfNoneMatch=etag)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    n += 1
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket="inl", Key="absent")
    n += 1
    assert s3.get_object(Bucket="inl", Key="small")["Body"].read() == b"tiny"
    n += 1
    return n


@pytest.mark.parametrize("inline", [True, False])
def test_gets_and_heads_answer_the_same_inline_or_not(inline):
    data = os.urandom(600 << 10)  # three stream pieces: the later ones come from the pool
    with running_server("oc-inl-", extra_config=f"inline_cached_reads = {str(inline).lower()}\n"
                        ) as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="inl")
        s3.put_object(Bucket="inl", Key="big", Body=data)
        s3.put_object(Bucket="inl", Key="small", Body=b"tiny")
        n = exercise(s3, data)
        served, missed = inline_counts(srv)
        if inline:
            assert served + missed == n
            assert served > 0  # just written: in the memtable
        else:
            assert (served, missed) == (0, 0)

        # After a restart the block cache is empty: the first reads miss and go to the pool.
        srv.stop()
        srv.start()
        s3 = srv.boto3()
        n = exercise(s3, data)
        served, missed = inline_counts(srv)
        if inline:
            assert served + missed == n
            assert missed > 0 and served > 0
        else:
            assert (served, missed) == (0, 0)


def test_remote_store_reads_never_run_inline():
    if not os.path.exists(os.environ.get("OC_STORAGE_SERVER_BIN", "/nonexistent")):
        pytest.fail("oc-storage-server is not built")
    data = os.urandom(300 << 10)
    with running_server("oc-inl-", "remote") as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="inl")
        s3.put_object(Bucket="inl", Key="big", Body=data)
        s3.put_object(Bucket="inl", Key="small", Body=b"tiny")
        exercise(s3, data)
        assert inline_counts(srv) == (0, 0)
