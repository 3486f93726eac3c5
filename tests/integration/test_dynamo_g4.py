"""Dynamo KVBM's G4 tier over plain S3 (issue 32 part 4): its request sequence replayed with
boto3 against the gateway, as docs/integrations.md §4 records it from ai-dynamo/dynamo
(`lib/kvbm-engine/src/object/s3/client.rs` @ 93b44c34, `lock.rs` @ 8097b0ee). Dynamo reads
only error codes, so the codes are what is checked: HeadObject of a missing object answers 404
with no body (the AWS SDK's `NotFound`), GetObject `NoSuchKey`, a lock taken with PutObject
`If-None-Match: *` answers 412 `PreconditionFailed` to the loser, an expired lock is taken over
with `If-Match: <etag>` (412 to the slower of two), the `.lock` / `.meta` side objects, and
DeleteObject. test_dynamo_g4_rados.py runs the same on the RADOS backend."""
import datetime
import json
import os
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

MAX_CONCURRENT_REQUESTS = 16  # S3ObjectConfig's default
BLOCK_BYTES = 256 << 10


def code(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def put(s3, bucket, key, body, **conditions):
    """PutObject with If-None-Match / If-Match signed in, as the Rust SDK sends them
    (Debian's boto3 1.26 has no parameters for them)."""
    def add(request, **_):
        for name, value in conditions.items():
            request.headers[name.replace("_", "-")] = value
    s3.meta.events.register("before-sign.s3.PutObject", add)
    try:
        return s3.put_object(Bucket=bucket, Key=key, Body=body)
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add)


class Instance:
    """One Dynamo worker's G4 calls (S3LockManager + S3ObjectBlockClient), each returning
    what Dynamo derives from the answer."""

    def __init__(self, server, bucket, instance_id, lock_timeout_s=300):
        self.s3, self.bucket, self.id = server.boto3(), bucket, instance_id
        self.lock_timeout = datetime.timedelta(seconds=lock_timeout_s)

    def ensure_bucket_exists(self):
        try:
            self.s3.head_bucket(Bucket=self.bucket)
        except ClientError:
            self.s3.create_bucket(Bucket=self.bucket)

    def has_object(self, key):
        try:
            self.s3.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as e:
            # The Rust SDK names a body-less 404 on HEAD `NotFound`; boto3 reports its status.
            if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
                return False
            raise

    def lock_body(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        return json.dumps({"instance_id": self.id, "acquired_at": now.isoformat(),
                           "deadline": (now + self.lock_timeout).isoformat()}).encode()

    def put_if_match(self, key, body, etag):
        try:
            put(self.s3, self.bucket, key, body, If_Match=etag)
            return True
        except ClientError as e:
            if e.response["Error"]["Code"] == "PreconditionFailed":
                return False
            raise

    def try_acquire_lock(self, h):
        key, body = f"{h}.lock", self.lock_body()
        try:
            put(self.s3, self.bucket, key, body, If_None_Match="*")
            return True
        except ClientError as e:
            if e.response["Error"]["Code"] != "PreconditionFailed":
                raise
        try:
            got = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if e.response["Error"]["Code"] != "NoSuchKey":
                raise
            return self.try_acquire_lock(h)  # released meanwhile: the conditional PUT again
        etag = got.get("ETag")
        try:
            held = json.loads(got["Body"].read())
            if held["instance_id"] == self.id:
                return True
            deadline = datetime.datetime.fromisoformat(held["deadline"])
            expired = datetime.datetime.now(datetime.timezone.utc) > deadline
        except (ValueError, KeyError):
            expired = True  # a malformed lock is taken over like an expired one
        if not expired:
            return False
        if etag is None:
            put(self.s3, self.bucket, key, body)
            return True
        return self.put_if_match(key, body, etag)

    def create_meta(self, h):
        self.s3.put_object(Bucket=self.bucket, Key=f"{h}.meta", Body=b"")

    def release_lock(self, h):
        try:
            self.s3.delete_object(Bucket=self.bucket, Key=f"{h}.lock")
            return True
        except ClientError as e:
            if e.response["Error"]["Code"] == "NoSuchKey":
                return False
            raise

    def put_blocks(self, blocks):
        def one(item):
            self.s3.put_object(Bucket=self.bucket, Key=item[0], Body=item[1])
            return item[0]
        with ThreadPoolExecutor(MAX_CONCURRENT_REQUESTS) as pool:
            return list(pool.map(one, blocks.items()))

    def get_object(self, key):
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as e:
            if e.response["Error"]["Code"] == "NoSuchKey":
                return None
            raise


def sequence_hash():
    return f"{int.from_bytes(os.urandom(8), 'big'):016x}"


def test_head_of_a_missing_block_is_404_without_a_body_and_get_is_nosuchkey(server, made_bucket):
    s3 = server.boto3()
    h = sequence_hash()
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=made_bucket, Key=f"{h}.meta")
    assert code(e)[1] == 404
    url = s3.generate_presigned_url("head_object", Params={"Bucket": made_bucket,
                                                           "Key": f"{h}.meta"})
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10)
    assert raw.value.code == 404 and raw.value.read() == b""
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=made_bucket, Key=h)
    assert code(e) == ("NoSuchKey", 404)
    assert Instance(server, made_bucket, "a").get_object(h) is None


def test_offload_sequence_then_load(server, bucket):
    a = Instance(server, bucket, "instance-a")
    a.ensure_bucket_exists()  # HeadBucket fails: CreateBucket
    a.ensure_bucket_exists()  # HeadBucket succeeds
    hashes = [sequence_hash() for _ in range(32)]
    blocks = {h: os.urandom(BLOCK_BYTES) for h in hashes}
    for h in hashes:
        assert not a.has_object(f"{h}.meta")
        assert a.try_acquire_lock(h)
        assert a.try_acquire_lock(h)  # our own lock: still ours
    assert sorted(a.put_blocks(blocks)) == sorted(hashes)
    for h in hashes:
        a.create_meta(h)
        assert a.release_lock(h)
    b = Instance(server, bucket, "instance-b")
    for h in hashes:
        assert b.has_object(f"{h}.meta")
        head = b.s3.head_object(Bucket=bucket, Key=f"{h}.meta")
        assert head["ContentLength"] == 0
        assert b.get_object(h) == blocks[h]
        assert not b.has_object(f"{h}.lock")
    # DeleteObject of a lock that is not there: S3 answers 204, Dynamo reads it as released.
    assert b.s3.delete_object(Bucket=bucket, Key=f"{hashes[0]}.lock")[
        "ResponseMetadata"]["HTTPStatusCode"] == 204


def test_the_lock_loser_gets_412_precondition_failed(server, made_bucket):
    a = Instance(server, made_bucket, "instance-a")
    b = Instance(server, made_bucket, "instance-b")
    h = sequence_hash()
    assert a.try_acquire_lock(h)
    with pytest.raises(ClientError) as e:
        put(b.s3, made_bucket, f"{h}.lock", b.lock_body(), If_None_Match="*")
    assert code(e) == ("PreconditionFailed", 412)
    assert not b.try_acquire_lock(h)  # held and not expired
    held = json.loads(b.s3.get_object(Bucket=made_bucket, Key=f"{h}.lock")["Body"].read())
    assert held["instance_id"] == "instance-a"
    assert a.release_lock(h)
    assert b.try_acquire_lock(h)  # released: the conditional PUT wins now


def test_racing_instances_one_lock_winner(server, made_bucket):
    for _ in range(10):
        h = sequence_hash()
        instances = [Instance(server, made_bucket, f"i{n}") for n in range(4)]
        barrier = threading.Barrier(len(instances))

        def race(inst):
            barrier.wait()
            return inst.try_acquire_lock(h)

        with ThreadPoolExecutor(len(instances)) as pool:
            won = list(pool.map(race, instances))
        assert sum(won) == 1, won


def test_expired_and_malformed_locks_are_taken_over_with_if_match(server, made_bucket):
    stale = Instance(server, made_bucket, "stale", lock_timeout_s=-1)  # expired at once
    h = sequence_hash()
    assert stale.try_acquire_lock(h)
    etag = stale.s3.head_object(Bucket=made_bucket, Key=f"{h}.lock")["ETag"]
    b = Instance(server, made_bucket, "instance-b")
    c = Instance(server, made_bucket, "instance-c")
    assert b.put_if_match(f"{h}.lock", b.lock_body(), etag)  # the takeover
    assert not c.put_if_match(f"{h}.lock", c.lock_body(), etag)  # 412: b got there first
    held = json.loads(c.s3.get_object(Bucket=made_bucket, Key=f"{h}.lock")["Body"].read())
    assert held["instance_id"] == "instance-b"
    assert not c.try_acquire_lock(h)
    # A malformed lock file is taken over the same way.
    h2 = sequence_hash()
    put(b.s3, made_bucket, f"{h2}.lock", b"not json", If_None_Match="*")
    assert c.try_acquire_lock(h2)
    held = json.loads(c.s3.get_object(Bucket=made_bucket, Key=f"{h2}.lock")["Body"].read())
    assert held["instance_id"] == "instance-c"
