"""S3 behaviours that clients and the Ceph s3-tests suite rely on (issue 17), with real clients
(boto3, aws-cli), over the embedded and the remote store; test_s3_compat_rados.py runs the same
tests over RADOS.

- DeleteBucket counts only objects: unfinished multipart uploads are aborted with the bucket
  (boto3, and `aws s3 rb --force`, which deletes every object and then the bucket).
"""
import os

import pytest
from botocore.exceptions import ClientError

from test_clients import AWS, aws_env, run, workdir  # noqa: F401


def code_of(excinfo):
    return excinfo.value.response["Error"]["Code"]


def status_of(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_delete_bucket_aborts_unfinished_uploads(server, bucket):
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="big")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="big", UploadId=uid, PartNumber=1, Body=b"p" * (5 << 20))
    s3.create_multipart_upload(Bucket=bucket, Key="dir/other")
    s3.put_object(Bucket=bucket, Key="obj", Body=b"x")
    # An object still refuses the delete, and the uploads stay.
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code_of(e) == "BucketNotEmpty"
    assert len(s3.list_multipart_uploads(Bucket=bucket)["Uploads"]) == 2
    s3.delete_object(Bucket=bucket, Key="obj")
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status_of(e) == 404
    # A bucket of the same name starts without them.
    s3.create_bucket(Bucket=bucket)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="big", UploadId=uid)
    assert code_of(e) == "NoSuchUpload"
    s3.delete_bucket(Bucket=bucket)


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_rb_force_with_unfinished_upload(server, bucket, workdir):  # noqa: F811
    s3 = server.boto3()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="a.txt", Body=b"a")
    s3.create_multipart_upload(Bucket=bucket, Key="interrupted.bin")
    env = aws_env(server, workdir)
    run([AWS, "--endpoint-url", server.endpoint, "s3", "rb", f"s3://{bucket}", "--force"], env)
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket not in names

