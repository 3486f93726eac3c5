"""A full disk (issue 31; docs/decisions/full-disk.md), on a real small file system: a 48 MiB
ext4 image, loop-mounted, holding the server's data directory. The server is filled until it
refuses a PUT; then every refused write must answer 507 InsufficientStorage with S3 error XML
(PutObject, a descriptor PUT, CopyObject, UploadPart, CreateBucket, and aws-cli), reads keep
working and every acknowledged object reads back byte-exact; after half the objects are
deleted, writes resume without a restart within 30 s (measured); after a restart everything
acknowledged is still there. Runs over `objectcache serve` with both RocksDB extent layouts
("data_files", the default, and "sst") and over oc-gateway + oc-storage-server (the error
crosses the storage RPC). Needs root and loop devices (this machine has both): without them
it fails, it never skips."""
import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

import pytest

import rawhttp
from conftest import Server

FS_MIB = 48
OBJECT_BYTES = 256 << 10  # above data_file_min_bytes (32 KiB): these go to the data files
MAX_OBJECTS = 4 * FS_MIB * (1 << 20) // OBJECT_BYTES  # far more than can fit
MAX_SMALL_PUTS = 5000
RESUME_DEADLINE_S = 30
LAYERS = 2
LAYER_BYTES = 64 << 10


@contextlib.contextmanager
def small_fs(mib):
    """A fresh ext4 of `mib` MiB (no root-reserved blocks), loop-mounted; yields (root, mount
    point), root holding the image and room for logs outside the small file system."""
    root = tempfile.mkdtemp(prefix="oc-fulldisk-")
    img = os.path.join(root, "fs.img")
    mnt = os.path.join(root, "mnt")
    os.mkdir(mnt)
    try:
        subprocess.run(["truncate", "-s", f"{mib}M", img], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", img], check=True,
                       capture_output=True)
        r = subprocess.run(["mount", "-o", "loop", img, mnt], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"cannot loop-mount a small ext4 (root and loop devices needed): "
                        f"{r.stderr.strip()}", pytrace=False)
        try:
            yield root, mnt
        finally:
            if subprocess.run(["umount", mnt]).returncode != 0:
                subprocess.run(["umount", "-l", mnt])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def body_of(i):
    return hashlib.sha256(str(i).encode()).digest() * (OBJECT_BYTES // 32)


def assert_507(status, body, what):
    assert status == 507, (what, status, body[:500])
    root = ET.fromstring(body)
    assert root.tag == "Error", body
    assert root.findtext("Code") == "InsufficientStorage", (what, body)
    assert root.findtext("Message"), (what, body)
    assert root.findtext("RequestId"), (what, body)
    assert root.findtext("Resource"), (what, body)


def client_error_507(e, what):
    err = e.response.get("Error", {})
    meta = e.response.get("ResponseMetadata", {})
    assert meta.get("HTTPStatusCode") == 507, (what, e.response)
    assert err.get("Code") == "InsufficientStorage", (what, e.response)


def put_raw(srv, bucket, key, body):
    return rawhttp.signed(srv, "PUT", f"/{bucket}/{key}", body=body)


def descriptor_put(srv, bucket, keys):
    headers = {"x-oc-version": "1", "x-oc-chunk-names": ",".join(keys),
               "x-oc-num-layers": str(LAYERS), "x-oc-chunk-tokens": "16",
               "x-oc-layer-bytes": str(LAYER_BYTES), "x-oc-layout": "kv_l2td"}
    body = b"".join(bytes([j]) * (LAYERS * LAYER_BYTES) for j in range(len(keys)))
    return rawhttp.signed(srv, "PUT", f"/{bucket}", query="objectcache=", headers=headers,
                          body=body)


def aws_cli(srv, *args):
    env = dict(os.environ)
    env.update({"AWS_ACCESS_KEY_ID": srv.access_key, "AWS_SECRET_ACCESS_KEY": srv.secret_key,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_RETRY_MODE": "standard",
                "BOTO_DISABLE_CRT": "true", "AWS_EC2_METADATA_DISABLED": "true"})
    env.pop("AWS_CA_BUNDLE", None)
    return subprocess.run(["/usr/bin/aws", "--endpoint-url", srv.endpoint, *args], env=env,
                          capture_output=True, text=True, timeout=120)


def listed_keys(s3, bucket):
    keys = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def check_all(s3, bucket, acked, gone=()):
    for key, want in acked.items():
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert hashlib.sha256(got).digest() == want, f"{key} changed"
    for key in gone:
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket=bucket, Key=key)


CASES = [("embedded", "data_files"), ("embedded", "sst"), ("remote", "data_files")]


@pytest.mark.parametrize("mode,layout", CASES, ids=[f"{m}-{l}" for m, l in CASES])
def test_full_disk_refuses_cleanly_and_recovers(mode, layout):
    from botocore.exceptions import ClientError
    with small_fs(FS_MIB) as (root, mnt):
        extra = f'\n[storage]\nextent_layout = "{layout}"\n' if mode == "embedded" else ""
        srv = Server(mode, root, extra_config=extra)
        srv.data_dir = os.path.join(mnt, "data")
        srv.start()
        try:
            s3 = srv.boto3()
            bucket = "full"
            s3.create_bucket(Bucket=bucket)
            # Started before the disk fills, so UploadPart can be tried when it is full.
            upload = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]

            # Fill until refused; every refusal on the way is a 507, never a 500.
            acked = {}
            order = []
            refused = 0
            for i in range(MAX_OBJECTS):
                key = f"obj-{i:04d}"
                status, _, body = put_raw(srv, bucket, key, body_of(i))
                if status == 200:
                    acked[key] = hashlib.sha256(body_of(i)).digest()
                    order.append(key)
                    continue
                assert_507(status, body, f"PutObject {key}")
                refused += 1
                if refused >= 3:
                    break
            assert refused >= 3, f"{len(acked)} objects of {OBJECT_BYTES} B never filled it"
            assert len(acked) >= 20, f"only {len(acked)} objects fit in {FS_MIB} MiB"
            first = order[0]
            # Then ever smaller objects, down to empty ones, until even those are refused:
            # the free space is then at most the reserve, and no write of any size fits.
            for size in (64 << 10, 16 << 10, 4 << 10, 1 << 10, 0):
                for j in range(MAX_SMALL_PUTS):
                    key = f"fill-{size}-{j:05d}"
                    data = body_of(j)[:size]
                    status, _, body = put_raw(srv, bucket, key, data)
                    if status != 200:
                        assert_507(status, body, f"PutObject {key}")
                        break
                    acked[key] = hashlib.sha256(data).digest()
                else:
                    pytest.fail(f"{MAX_SMALL_PUTS} PUTs of {size} B were never refused")

            # Every kind of write is refused the same way.
            status, _, body = put_raw(srv, bucket, "more", body_of(-1))
            assert_507(status, body, "PutObject")
            status, _, body = descriptor_put(srv, bucket, [f"kv/c{j}" for j in range(4)])
            assert_507(status, body, "descriptor PUT")
            status, _, body = rawhttp.signed(srv, "PUT", f"/{bucket}/copy",
                                             headers={"x-amz-copy-source": f"/{bucket}/{first}"})
            assert_507(status, body, "CopyObject")
            status, _, body = rawhttp.signed(srv, "PUT", f"/{bucket}/mp",
                                             query=f"partNumber=1&uploadId={upload}",
                                             body=body_of(-2))
            assert_507(status, body, "UploadPart")
            status, _, body = rawhttp.signed(srv, "PUT", "/another-bucket")
            assert_507(status, body, "CreateBucket")
            with pytest.raises(ClientError) as e:
                s3.put_object(Bucket=bucket, Key="boto3", Body=body_of(-3))
            client_error_507(e.value, "boto3 PutObject")
            src = os.path.join(root, "cli-object")
            with open(src, "wb") as f:
                f.write(body_of(-4))
            cli = aws_cli(srv, "s3api", "put-object", "--bucket", bucket, "--key", "cli",
                          "--body", src)
            assert cli.returncode != 0, cli.stdout
            assert "InsufficientStorage" in cli.stderr, cli.stderr
            # Not retried: the standard retry mode retries 500/502/503/504 up to 3 attempts and
            # then says "(reached max retries: 2)".
            assert "reached max retries" not in cli.stderr, cli.stderr
            for key in ("more", "copy", "boto3", "cli", "kv/c0"):
                rawhttp.assert_not_stored(srv, bucket, key)

            # Reads keep working, byte-exact.
            check_all(s3, bucket, acked)
            assert listed_keys(s3, bucket) == set(acked)

            # Delete half (every other object for the data files; the oldest half for sst,
            # whose space comes back only through a compaction: full-disk.md says why).
            victims = order[::2] if layout == "data_files" else order[:len(order) // 2]
            first_delete = time.monotonic()
            for key in victims:
                deadline = time.monotonic() + RESUME_DEADLINE_S
                while True:
                    try:
                        s3.delete_object(Bucket=bucket, Key=key)
                        break
                    except ClientError as err:
                        client_error_507(err, f"DeleteObject {key}")
                        assert time.monotonic() < deadline, f"DeleteObject {key} kept failing"
                        time.sleep(0.1)
                acked.pop(key)
            deleted_at = time.monotonic()

            # Writes resume without a restart.
            while True:
                status, _, body = put_raw(srv, bucket, "after", body_of(-5))
                if status == 200:
                    break
                assert_507(status, body, "PutObject after deletes")
                assert time.monotonic() - deleted_at < RESUME_DEADLINE_S, (
                    f"writes still refused {RESUME_DEADLINE_S} s after deleting "
                    f"{len(victims)} of {len(order)} objects")
                time.sleep(0.1)
            resumed_s = time.monotonic() - deleted_at
            free_kib = int(subprocess.run(["df", "-k", "--output=avail", mnt], text=True,
                                          capture_output=True).stdout.split()[-1])
            print(f"\nfull-disk {mode}/{layout}: {len(order)} objects of {OBJECT_BYTES} B "
                  f"acknowledged in {FS_MIB} MiB, {len(victims)} deleted in "
                  f"{deleted_at - first_delete:.2f} s, writes resumed {resumed_s:.2f} s after "
                  f"the last delete, {free_kib} KiB free then")
            acked["after"] = hashlib.sha256(body_of(-5)).digest()
            # More than one write: the space really came back. Near full, RocksDB's own
            # compactions may still meet the full disk and stop it until the next recovery
            # (each refusal wakes one): a write may be refused, cleanly, never past the deadline.
            def until_stored(put, what):
                while True:
                    try:
                        put()
                        return
                    except ClientError as err:
                        client_error_507(err, what)
                    assert time.monotonic() - deleted_at < RESUME_DEADLINE_S, (
                        f"{what} still refused {RESUME_DEADLINE_S} s after the deletes")
                    time.sleep(0.1)

            for j in range(4):
                key = f"again-{j}"
                until_stored(lambda: s3.put_object(Bucket=bucket, Key=key, Body=body_of(1000 + j)),
                             f"PutObject {key}")
                acked[key] = hashlib.sha256(body_of(1000 + j)).digest()
            until_stored(lambda: s3.upload_part(Bucket=bucket, Key="mp", UploadId=upload,
                                                PartNumber=1, Body=body_of(-2)), "UploadPart")
            if layout == "data_files":
                # A refusal wakes the recovery too: the garbage the deletes left in partly
                # live files comes back without another delete, so more can be written than
                # was free when writes resumed.
                written = 0
                refused_in_a_row = 0
                deadline = time.monotonic() + RESUME_DEADLINE_S
                while refused_in_a_row < 10 and time.monotonic() < deadline:
                    key = f"more-{written // OBJECT_BYTES:04d}"
                    data = body_of(2000 + written // OBJECT_BYTES)
                    status, _, body = put_raw(srv, bucket, key, data)
                    if status == 200:
                        acked[key] = hashlib.sha256(data).digest()
                        written += OBJECT_BYTES
                        refused_in_a_row = 0
                        continue
                    assert_507(status, body, f"PutObject {key}")
                    refused_in_a_row += 1
                    time.sleep(0.2)
                print(f"full-disk {mode}/{layout}: {written >> 10} KiB more written after "
                      f"{free_kib} KiB were free")
                assert written > free_kib << 10, (written, free_kib)
            check_all(s3, bucket, acked, gone=victims)
            assert listed_keys(s3, bucket) == set(acked)

            # A restart keeps every acknowledged object.
            codes = srv.stop()
            assert codes and all(c == 0 for c in codes), codes
            srv.start()
            s3 = srv.boto3()
            check_all(s3, bucket, acked, gone=victims)
            assert listed_keys(s3, bucket) == set(acked)
        except BaseException:
            log = open(os.path.join(root, "server.log"), "rb").read().decode(errors="replace")
            lines = [x for x in log.splitlines() if " I access " not in x]
            # The refusals are asserted above; the tail shows the recoveries and other warnings.
            lines = [x for x in lines if "InsufficientStorage" not in x]
            print("\n".join(["server log (no access lines, no refusals):"] + lines[-60:]))
            print(subprocess.run(["df", "-k", mnt], capture_output=True, text=True).stdout)
            raise
        finally:
            srv.stop()
