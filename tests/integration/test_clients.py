"""aws-cli (Debian's /usr/bin/aws v2), s3cmd and rclone against the gateway, as users run
them: each with its own config files in a temp dir."""
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import pytest

AWS = "/usr/bin/aws"


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="oc-cli-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def aws_env(server, workdir):
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    env.pop("AWS_PROFILE", None)
    env["BOTO_DISABLE_CRT"] = "true"
    env["AWS_CONFIG_FILE"] = os.path.join(workdir, "aws-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(workdir, "aws-credentials")
    with open(env["AWS_CONFIG_FILE"], "w") as f:
        f.write("[default]\nregion = us-east-1\n")
    with open(env["AWS_SHARED_CREDENTIALS_FILE"], "w") as f:
        f.write(f"[default]\naws_access_key_id = {server.access_key}\n"
                f"aws_secret_access_key = {server.secret_key}\n")
    return env


def multipart_etag(parts):
    """S3's ETag of an object uploaded in `parts` (bytes each), quoted as the header."""
    md5s = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(md5s).hexdigest()}-{len(parts)}"'


def run(cmd, env, check=True):
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} -> {r.returncode}\n{r.stdout.decode()}\n{r.stderr.decode()}")
    return r


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_cli(server, bucket, workdir):
    env = aws_env(server, workdir)
    aws = [AWS, "--endpoint-url", server.endpoint]
    run(aws + ["s3", "mb", f"s3://{bucket}"], env)
    big = os.path.join(workdir, "big.bin")
    content = b"".join(bytes([i]) * (1 << 20) for i in range(24))
    with open(big, "wb") as f:
        f.write(content)  # 24 MiB: aws-cli sends it as multipart, in 8 MiB parts
    run(aws + ["s3", "cp", big, f"s3://{bucket}/dir/big.bin"], env)
    small = os.path.join(workdir, "small.txt")
    with open(small, "w") as f:
        f.write("small file\n")
    run(aws + ["s3", "cp", small, f"s3://{bucket}/small.txt"], env)
    ls = run(aws + ["s3", "ls", f"s3://{bucket}/", "--recursive"], env).stdout.decode()
    assert "dir/big.bin" in ls and "small.txt" in ls
    assert str(24 << 20) in ls
    head = json.loads(run(aws + ["s3api", "head-object", "--bucket", bucket, "--key",
                                 "dir/big.bin"], env).stdout)
    assert head["ContentLength"] == 24 << 20
    # The multipart ETag: the MD5 of the three parts' MD5s, then "-3".
    assert head["ETag"] == multipart_etag([content[i:i + (8 << 20)]
                                           for i in range(0, len(content), 8 << 20)])
    back = os.path.join(workdir, "back.bin")
    run(aws + ["s3", "cp", f"s3://{bucket}/dir/big.bin", back], env)
    assert filecmp.cmp(big, back, shallow=False)
    url = run(aws + ["s3", "presign", f"s3://{bucket}/small.txt", "--expires-in", "120"],
              env).stdout.decode().strip()
    got = subprocess.run(["curl", "-sf", url], capture_output=True, timeout=30)
    assert got.returncode == 0 and got.stdout == b"small file\n"
    run(aws + ["s3", "rm", f"s3://{bucket}/dir/big.bin"], env)
    run(aws + ["s3", "rm", f"s3://{bucket}/small.txt"], env)
    run(aws + ["s3", "rb", f"s3://{bucket}"], env)
    ls = run(aws + ["s3", "ls"], env).stdout.decode()
    assert bucket not in ls


@pytest.mark.skipif(shutil.which("s3cmd") is None, reason="s3cmd not installed")
def test_s3cmd(server, bucket, workdir):
    cfg = os.path.join(workdir, "s3cfg")
    host = f"127.0.0.1:{server.port}"
    with open(cfg, "w") as f:
        f.write("[default]\n"
                f"access_key = {server.access_key}\n"
                f"secret_key = {server.secret_key}\n"
                f"host_base = {host}\n"
                f"host_bucket = {host}\n"
                "use_https = False\n"
                "signature_v2 = False\n"
                "bucket_location = us-east-1\n")
    env = dict(os.environ)
    s3cmd = ["s3cmd", "-c", cfg]
    run(s3cmd + ["mb", f"s3://{bucket}"], env)
    src = os.path.join(workdir, "f.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(3 << 20))
    run(s3cmd + ["put", src, f"s3://{bucket}/f.bin"], env)
    ls = run(s3cmd + ["ls", f"s3://{bucket}/"], env).stdout.decode()
    assert "f.bin" in ls
    dst = os.path.join(workdir, "g.bin")
    run(s3cmd + ["get", f"s3://{bucket}/f.bin", dst], env)
    assert filecmp.cmp(src, dst, shallow=False)
    run(s3cmd + ["info", f"s3://{bucket}/f.bin"], env)
    # s3cmd uploads files over its chunk size (15 MiB) with multipart.
    big = os.path.join(workdir, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(17 << 20))
    run(s3cmd + ["put", big, f"s3://{bucket}/big.bin"], env)
    big2 = os.path.join(workdir, "big2.bin")
    run(s3cmd + ["get", f"s3://{bucket}/big.bin", big2], env)
    assert filecmp.cmp(big, big2, shallow=False)
    run(s3cmd + ["del", f"s3://{bucket}/f.bin"], env)
    run(s3cmd + ["del", f"s3://{bucket}/big.bin"], env)
    run(s3cmd + ["rb", f"s3://{bucket}"], env)


@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone not installed")
def test_rclone(server, bucket, workdir):
    cfg = os.path.join(workdir, "rclone.conf")
    with open(cfg, "w") as f:
        f.write("[oc]\ntype = s3\nprovider = Other\n"
                f"access_key_id = {server.access_key}\n"
                f"secret_access_key = {server.secret_key}\n"
                f"endpoint = {server.endpoint}\n"
                "region = us-east-1\n")
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    rclone = ["rclone", "--config", cfg]
    run(rclone + ["mkdir", f"oc:{bucket}"], env)
    src = os.path.join(workdir, "tree")
    os.makedirs(os.path.join(src, "sub"))
    for name, size in [("a.txt", 10), ("sub/b.bin", 1 << 20), ("sub/c.bin", 0)]:
        with open(os.path.join(src, name), "wb") as f:
            f.write(os.urandom(size))
    run(rclone + ["copy", src, f"oc:{bucket}/tree"], env)
    run(rclone + ["check", src, f"oc:{bucket}/tree"], env)
    dst = os.path.join(workdir, "back")
    run(rclone + ["copy", f"oc:{bucket}/tree", dst], env)
    assert filecmp.cmp(os.path.join(src, "sub/b.bin"), os.path.join(dst, "sub/b.bin"),
                       shallow=False)
    run(rclone + ["purge", f"oc:{bucket}"], env)
