"""The ETag of a descriptor PUT's chunk (docs/protocol.md, "Responses"): hex XXH3-128 of the
XXH3-64s of its layer ranges, then "-1", computed here with python3-xxhash and compared with
what HEAD, GET and ListObjects answer; a plain PUT of the same bytes keeps the MD5 ETag. Then
the four S3 clients we test read the chunk as users would, and each must get its bytes with
exit status 0 (docs/decisions/descriptor-put-chunk-etag.md, records what each
does with a dashed ETag): aws-cli v2 (s3 cp and s3api get-object), boto3 (get_object and
download_file), s3cmd get, rclone copy and cat. Runs over the embedded and the remote store."""
import filecmp
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile

import pytest
import xxhash  # Debian's python3-xxhash

from test_clients import AWS, aws_env, run
from test_objectcache import TOY, curl, curl_sig

# The walk-through's descriptor (test_objectcache.TOY): L = 2 layers, S = 6 bytes, kv_l2td.
CHUNKS = [b"a0Ka0Va1Ka1V", b"b0Kb0Vb1Kb1V"]
NAMES = ["llama-3.1-8b/73915cab52f8c56eb1816a3a2513692d",
         "llama-3.1-8b/a5e3d64f612716482e00d38104516b19"]
LAYER_BYTES = 6


def chunk_etag(data, piece):
    hashes = b"".join(struct.pack("<Q", xxhash.xxh3_64_intdigest(data[i:i + piece]))
                      for i in range(0, len(data), piece))
    return xxhash.xxh3_128(hashes).hexdigest() + "-1"


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="oc-etag-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_chunk_etag_and_what_clients_do_with_it(server, made_bucket, workdir):
    url = f"{server.endpoint}/{made_bucket}?objectcache="
    status, _, body = curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url,
                                    *TOY, "-H", "x-oc-layout: kv_l2td"], data=b"".join(CHUNKS))
    assert status == 200, body
    s3 = server.boto3()
    want = [chunk_etag(c, LAYER_BYTES) for c in CHUNKS]
    for name, etag, data in zip(NAMES, want, CHUNKS):
        assert etag != hashlib.md5(data).hexdigest()
        assert s3.head_object(Bucket=made_bucket, Key=name)["ETag"] == f'"{etag}"'
        got = s3.get_object(Bucket=made_bucket, Key=name)
        assert got["ETag"] == f'"{etag}"' and got["Body"].read() == data
    listed = s3.list_objects_v2(Bucket=made_bucket, Prefix="llama-3.1-8b/")["Contents"]
    assert [(o["Key"], o["ETag"]) for o in listed] == [(n, f'"{e}"') for n, e in zip(NAMES, want)]
    # A plain PUT of the same bytes: the MD5 ETag S3 clients compare.
    put = s3.put_object(Bucket=made_bucket, Key="plain", Body=CHUNKS[0])
    assert put["ETag"] == f'"{hashlib.md5(CHUNKS[0]).hexdigest()}"'

    # boto3's managed download (s3transfer).
    dst = os.path.join(workdir, "boto3.bin")
    s3.download_file(made_bucket, NAMES[0], dst)
    assert open(dst, "rb").read() == CHUNKS[0]

    src = os.path.join(workdir, "chunk0.bin")
    with open(src, "wb") as f:
        f.write(CHUNKS[0])
    if os.path.exists(AWS):
        env = aws_env(server, workdir)
        aws = [AWS, "--endpoint-url", server.endpoint]
        dst = os.path.join(workdir, "aws.bin")
        run(aws + ["s3", "cp", f"s3://{made_bucket}/{NAMES[0]}", dst], env)
        assert filecmp.cmp(src, dst, shallow=False)
        dst = os.path.join(workdir, "aws-api.bin")
        run(aws + ["s3api", "get-object", "--bucket", made_bucket, "--key", NAMES[0], dst], env)
        assert filecmp.cmp(src, dst, shallow=False)

    if shutil.which("s3cmd"):
        cfg = os.path.join(workdir, "s3cfg")
        host = f"127.0.0.1:{server.port}"
        with open(cfg, "w") as f:
            f.write(f"[default]\naccess_key = {server.access_key}\n"
                    f"secret_key = {server.secret_key}\nhost_base = {host}\n"
                    f"host_bucket = {host}\nuse_https = False\nsignature_v2 = False\n"
                    "bucket_location = us-east-1\n")
        dst = os.path.join(workdir, "s3cmd.bin")
        r = run(["s3cmd", "-c", cfg, "get", f"s3://{made_bucket}/{NAMES[0]}", dst],
                dict(os.environ))
        assert filecmp.cmp(src, dst, shallow=False)
        # s3cmd skips its MD5 check for a dashed (multipart-style) ETag: no mismatch warning.
        assert b"MD5" not in r.stderr, r.stderr.decode()

    if shutil.which("rclone"):
        cfg = os.path.join(workdir, "rclone.conf")
        with open(cfg, "w") as f:
            f.write(f"[oc]\ntype = s3\nprovider = Other\naccess_key_id = {server.access_key}\n"
                    f"secret_access_key = {server.secret_key}\nendpoint = {server.endpoint}\n"
                    "region = us-east-1\n")
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)
        rclone = ["rclone", "--config", cfg]
        out = os.path.join(workdir, "rclone")
        r = run(rclone + ["copy", f"oc:{made_bucket}/llama-3.1-8b", out], env)
        for name, data in zip(NAMES, CHUNKS):
            assert open(os.path.join(out, name.split("/")[1]), "rb").read() == data
        assert b"corrupted" not in r.stderr, r.stderr.decode()
        cat = run(rclone + ["cat", f"oc:{made_bucket}/{NAMES[1]}"], env)
        assert cat.stdout == CHUNKS[1]
        # rclone has no MD5 for a dashed ETag (as for a multipart object): empty, not wrong.
        md5 = run(rclone + ["md5sum", f"oc:{made_bucket}/{NAMES[0]}"], env).stdout.decode()
        assert hashlib.md5(CHUNKS[0]).hexdigest() not in md5 and "-1" not in md5, md5
        subprocess.run(rclone + ["lsjson", f"oc:{made_bucket}/llama-3.1-8b"], env=env,
                       capture_output=True, timeout=60, check=True)
