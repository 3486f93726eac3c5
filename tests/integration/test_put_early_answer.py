"""`oc put-chunks` when the gateway answers before it has read the body (issue 33): a PUT into a
missing bucket, or from a caller who may not write, is refused from its headers; the gateway
then drains at most max_drain_bytes and closes. With a body far larger than that (64 MiB) the
CLI used to stop at its failed write and print "send request: Broken pipe"; it must read the
answer and print its S3 code and HTTP status, exit 1, over the HTTP body and over UCX (where
the refusal comes at data-plane discovery). Over the embedded and the remote store."""
import os
import shutil
import subprocess
import tempfile

import pytest

OC = os.environ.get("OC_CLI_BIN", "")
pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

CHUNKS, LAYERS, LAYER_BYTES = 32, 32, 64 * 1024  # 64 MiB: 64x max_drain_bytes


@pytest.fixture(scope="module")
def payload():
    d = tempfile.mkdtemp(prefix="oc-early-")
    names = os.path.join(d, "names.txt")
    with open(names, "w") as f:
        f.write("".join(f"early/chunk-{j}\n" for j in range(CHUNKS)))
    data = os.path.join(d, "chunks.bin")
    with open(data, "wb") as f:
        f.write(bytes(range(256)) * (CHUNKS * LAYERS * LAYER_BYTES // 256))
    yield names, data
    shutil.rmtree(d, ignore_errors=True)


def put_chunks(server, bucket, payload, via, anonymous=False):
    names, data = payload
    env = dict(os.environ, OC_ENDPOINT=server.endpoint)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "OC_ACCESS_KEY", "OC_SECRET_KEY"):
        env.pop(k, None)
    if not anonymous:
        env.update(AWS_ACCESS_KEY_ID=server.access_key, AWS_SECRET_ACCESS_KEY=server.secret_key)
    return subprocess.run(
        [OC, "put-chunks", "--bucket", bucket, "--names", names, "--layers", str(LAYERS),
         "--layer-bytes", str(LAYER_BYTES), "--data", data, "--via", via],
        capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("via", ["http", "ucx"])
def test_the_early_answer_is_reported_with_its_s3_code(server, made_bucket, payload, via):
    missing = put_chunks(server, "no-such-bucket-early", payload, via)
    assert missing.returncode == 1, missing.stderr
    assert "NoSuchBucket, HTTP 404" in missing.stderr, missing.stderr
    assert "Broken pipe" not in missing.stderr and "reset" not in missing.stderr
    denied = put_chunks(server, made_bucket, payload, via, anonymous=True)
    assert denied.returncode == 1, denied.stderr
    assert "AccessDenied, HTTP 403" in denied.stderr, denied.stderr
    # The same file into the bucket, signed: stored (the mapped file is sent whole).
    stored = put_chunks(server, made_bucket, payload, via)
    assert stored.returncode == 0, stored.stderr
    assert f"chunks={CHUNKS} bytes={CHUNKS * LAYERS * LAYER_BYTES}" in stored.stdout
    body = server.boto3().get_object(Bucket=made_bucket, Key="early/chunk-7")["Body"].read()
    assert body == open(payload[1], "rb").read()[7 * LAYERS * LAYER_BYTES:8 * LAYERS * LAYER_BYTES]
