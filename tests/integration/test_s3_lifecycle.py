"""S3 bucket lifecycle (issue 31; docs/decisions/lifecycle.md) with real clients, over the
embedded and the remote store; test_s3_lifecycle_rados.py runs the same tests over RADOS.

The servers run with `[lifecycle] day_seconds = 2`, so a Days=1 rule is due 2 to 4 seconds
after an object's mtime, and the worker passes every 250 ms (day_seconds / 8).

- boto3: Put/Get/DeleteBucketLifecycleConfiguration round trip (generated rule IDs, the
  filter forms), 404 NoSuchLifecycleConfiguration, S3's refusals (versioning elements,
  Days 0, a malformed body), a Put without Content-MD5 or x-amz-checksum-* refused.
- aws-cli v2: s3api put/get/delete-bucket-lifecycle-configuration.
- The worker: an object under a Days=1 prefix rule, and one under a tag rule, are gone within
  a deadline while objects outside the rules stay; x-amz-expiration on PUT, HEAD and GET names
  the rule and the due day; AbortIncompleteMultipartUpload removes an upload under its prefix
  and leaves another; /stats and /metrics count what the worker removed.
"""
import base64
import datetime
import email.utils
import hashlib
import json
import os
import re
import time
import urllib.request

import pytest
from botocore.exceptions import ClientError

import sigv4
from conftest import Server, modes, running_server
from test_clients import AWS, aws_env, run, workdir  # noqa: F401
from test_s3_compat import code_of, status_of

DAY_SECONDS = 2
# A due object is gone within a few lifecycle days: due at most 2 days after its PUT, then at
# most one worker interval (a quarter of a day) plus the delete.
DEADLINE_S = 30

LIFECYCLE_CONFIG = f"[lifecycle]\nday_seconds = {DAY_SECONDS}\n"


def lifecycle_server(mode, root, extra_config=""):
    """A Server with the short lifecycle day. Its config ends in the [gateway] table's
    credentials_file, so the remote mode's append of that key is not needed."""
    return Server(mode, root, extra_config=(
        f'credentials_file = "{root}/credentials.toml"\n' + LIFECYCLE_CONFIG + extra_config))


@pytest.fixture(scope="module", params=modes())
def server(request):
    with running_server("oc-it-lc-", request.param, make=lifecycle_server) as srv:
        yield srv


_counter = [0]


@pytest.fixture
def made_bucket(server):
    _counter[0] += 1
    name = f"lc-{os.getpid()}-{_counter[0]}"
    server.boto3().create_bucket(Bucket=name)
    return name


def wait_until(what, predicate, deadline_s=DEADLINE_S):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {deadline_s}s: {what}")


def exists(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return False
        raise


def stats(server):
    with urllib.request.urlopen(f"{server.endpoint}/stats", timeout=10) as r:
        return json.loads(r.read())


def raw_put_lifecycle(server, bucket, body, extra_headers=None):
    host = server.endpoint.split("//", 1)[1]
    path = f"/{bucket}"
    headers = sigv4.sign("PUT", host, path, "lifecycle=", extra_headers or {}, body,
                         server.access_key, server.secret_key)
    req = urllib.request.Request(f"{server.endpoint}{path}?lifecycle=", data=body, method="PUT",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_put_get_delete_lifecycle_configuration(server, made_bucket):
    s3 = server.boto3()
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)
    assert code_of(e) == "NoSuchLifecycleConfiguration" and status_of(e) == 404
    rules = [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "Expiration": {"Days": 3}},
        {"Status": "Disabled", "Filter": {"And": {"Prefix": "tmp/", "Tags": [
            {"Key": "class", "Value": "scratch"}], "ObjectSizeGreaterThan": 10}},
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "uploads", "Status": "Enabled", "Filter": {"Prefix": ""},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
        {"ID": "small", "Status": "Enabled", "Filter": {"ObjectSizeLessThan": 1024},
         "Expiration": {"Days": 30}},
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket,
                                          LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)["Rules"]
    assert len(got) == 4
    assert [r["ID"] for r in got][0] == "logs" and got[2]["ID"] == "uploads"
    assert got[1]["ID"], "a rule put without an ID gets one (S3)"
    assert got[0]["Filter"] == {"Prefix": "logs/"} and got[0]["Expiration"] == {"Days": 3}
    assert got[1]["Status"] == "Disabled"
    assert got[1]["Filter"]["And"]["Tags"] == [{"Key": "class", "Value": "scratch"}]
    assert got[1]["Filter"]["And"]["ObjectSizeGreaterThan"] == 10
    assert got[1]["Expiration"]["Date"] == datetime.datetime(2030, 1, 1,
                                                             tzinfo=datetime.timezone.utc)
    assert got[2]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    assert got[3]["Filter"] == {"ObjectSizeLessThan": 1024}
    # A second Put replaces the whole configuration.
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket, LifecycleConfiguration={
        "Rules": [rules[0]]})
    assert [r["ID"] for r in s3.get_bucket_lifecycle_configuration(
        Bucket=made_bucket)["Rules"]] == ["logs"]
    s3.delete_bucket_lifecycle(Bucket=made_bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)
    assert code_of(e) == "NoSuchLifecycleConfiguration"
    s3.delete_bucket_lifecycle(Bucket=made_bucket)  # none: still 204, as S3
    # A missing bucket.
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket + "-absent")
    assert code_of(e) == "NoSuchBucket"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_lifecycle_configuration(Bucket=made_bucket + "-absent",
                                              LifecycleConfiguration={"Rules": [rules[0]]})
    assert code_of(e) == "NoSuchBucket"
    # A bucket with a configuration (and no objects) is deleted with it; a new bucket of the
    # same name has none.
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket,
                                          LifecycleConfiguration={"Rules": [rules[0]]})
    s3.delete_bucket(Bucket=made_bucket)
    s3.create_bucket(Bucket=made_bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)
    assert code_of(e) == "NoSuchLifecycleConfiguration"


def test_refusals_store_nothing(server, made_bucket):
    s3 = server.boto3()
    refused = [
        ("InvalidArgument", {"ID": "v", "Status": "Enabled", "Filter": {"Prefix": ""},
                             "NoncurrentVersionExpiration": {"NoncurrentDays": 2}}),
        ("InvalidArgument", {"ID": "d", "Status": "Enabled", "Filter": {"Prefix": ""},
                             "Expiration": {"Days": 0}}),
        ("InvalidArgument", {"ID": "m", "Status": "Enabled", "Filter": {"Prefix": ""},
                             "Expiration": {"ExpiredObjectDeleteMarker": True}}),
        ("InvalidRequest", {"ID": "t", "Status": "Enabled", "Filter": {"Tag": {
            "Key": "a", "Value": "b"}}, "AbortIncompleteMultipartUpload": {
            "DaysAfterInitiation": 1}}),
    ]
    for code, rule in refused:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_lifecycle_configuration(Bucket=made_bucket,
                                                  LifecycleConfiguration={"Rules": [rule]})
        assert code_of(e) == code and status_of(e) == 400, rule
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)
    assert code_of(e) == "NoSuchLifecycleConfiguration"

    good = (b"<LifecycleConfiguration><Rule><ID>r</ID><Status>Enabled</Status>"
            b"<Filter><Prefix>a/</Prefix></Filter><Expiration><Days>1</Days></Expiration>"
            b"</Rule></LifecycleConfiguration>")
    # S3 requires an integrity header on this call: none is 400, a wrong one BadDigest.
    status, body = raw_put_lifecycle(server, made_bucket, good)
    assert status == 400 and b"<Code>InvalidRequest</Code>" in body and b"Content-MD5" in body
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    status, body = raw_put_lifecycle(server, made_bucket, good, {"content-md5": wrong})
    assert status == 400 and b"<Code>BadDigest</Code>" in body
    status, body = raw_put_lifecycle(server, made_bucket, b"<LifecycleConfiguration><Rule>",
                                     {"content-md5": base64.b64encode(hashlib.md5(
                                         b"<LifecycleConfiguration><Rule>").digest()).decode()})
    assert status == 400 and b"<Code>MalformedXML</Code>" in body
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)
    assert code_of(e) == "NoSuchLifecycleConfiguration"
    # The right MD5 is accepted.
    right = base64.b64encode(hashlib.md5(good).digest()).decode()
    status, _ = raw_put_lifecycle(server, made_bucket, good, {"content-md5": right})
    assert status == 200
    assert s3.get_bucket_lifecycle_configuration(Bucket=made_bucket)["Rules"][0]["ID"] == "r"


@pytest.mark.skipif(not os.path.exists(AWS), reason="Debian awscli not installed")
def test_aws_cli_lifecycle_configuration(server, made_bucket, workdir):
    env = aws_env(server, workdir)
    aws = [AWS, "--endpoint-url", server.endpoint, "s3api"]
    config = os.path.join(workdir, "lifecycle.json")
    with open(config, "w") as f:
        json.dump({"Rules": [{"ID": "expire-logs", "Status": "Enabled",
                              "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 5}}]}, f)
    run(aws + ["put-bucket-lifecycle-configuration", "--bucket", made_bucket,
               "--lifecycle-configuration", f"file://{config}"], env)
    got = json.loads(run(aws + ["get-bucket-lifecycle-configuration", "--bucket", made_bucket],
                         env).stdout)
    assert got["Rules"] == [{"ID": "expire-logs", "Status": "Enabled",
                             "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 5}}]
    run(aws + ["delete-bucket-lifecycle", "--bucket", made_bucket], env)
    r = run(aws + ["get-bucket-lifecycle-configuration", "--bucket", made_bucket], env,
            check=False)
    assert r.returncode != 0 and b"NoSuchLifecycleConfiguration" in r.stderr


def expiration_of(headers):
    """(due datetime, rule id) of an x-amz-expiration header."""
    m = re.fullmatch(r'expiry-date="([^"]+)", rule-id="([^"]*)"', headers["x-amz-expiration"])
    assert m, headers["x-amz-expiration"]
    return email.utils.parsedate_to_datetime(m.group(1)), m.group(2)


def test_worker_expires_due_objects_and_leaves_the_others(server, made_bucket):
    s3 = server.boto3()
    before = stats(server)["lifecycle"]["expired_objects"]
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire", "Status": "Enabled", "Filter": {"Prefix": "expire/"},
         "Expiration": {"Days": 1}},
        {"ID": "scratch", "Status": "Enabled", "Filter": {"Tag": {"Key": "class",
                                                                  "Value": "scratch"}},
         "Expiration": {"Days": 1}},
        {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"},
         "Expiration": {"Days": 1}},
    ]})
    put = s3.put_object(Bucket=made_bucket, Key="expire/a", Body=b"due")
    put_headers = put["ResponseMetadata"]["HTTPHeaders"]
    due, rule = expiration_of(put_headers)
    assert rule == "expire"
    # Due one lifecycle day after the mtime, rounded up to a whole day since the epoch.
    mtime = s3.head_object(Bucket=made_bucket, Key="expire/a")["LastModified"]
    assert due.timestamp() % DAY_SECONDS == 0
    assert mtime.timestamp() + DAY_SECONDS <= due.timestamp() < (
        mtime.timestamp() + 3 * DAY_SECONDS)
    head = s3.head_object(Bucket=made_bucket, Key="expire/a")["ResponseMetadata"]["HTTPHeaders"]
    assert expiration_of(head) == (due, "expire")
    get = s3.get_object(Bucket=made_bucket, Key="expire/a")
    assert expiration_of(get["ResponseMetadata"]["HTTPHeaders"]) == (due, "expire")
    s3.put_object(Bucket=made_bucket, Key="other/tagged", Body=b"t", Tagging="class=scratch")
    s3.put_object(Bucket=made_bucket, Key="other/plain", Body=b"p", Tagging="class=keep")
    s3.put_object(Bucket=made_bucket, Key="keep/b", Body=b"kept")
    for key in ("other/plain", "keep/b"):
        assert "x-amz-expiration" not in s3.head_object(
            Bucket=made_bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"], key
    assert expiration_of(s3.head_object(Bucket=made_bucket, Key="other/tagged")[
        "ResponseMetadata"]["HTTPHeaders"])[1] == "scratch"

    wait_until("expire/a and other/tagged expired",
               lambda: not exists(s3, made_bucket, "expire/a") and
               not exists(s3, made_bucket, "other/tagged"))
    # Gone within a few lifecycle days of the due time, not merely eventually.
    assert time.time() < due.timestamp() + 3 * DAY_SECONDS + 5
    for key in ("other/plain", "keep/b"):
        assert exists(s3, made_bucket, key), key
    # Counted as each delete returns: within a moment of the objects' disappearance.
    wait_until("expirations counted",
               lambda: stats(server)["lifecycle"]["expired_objects"] >= before + 2, 5)
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert re.search(r"^oc_lifecycle_expired_objects_total [1-9]", metrics, re.M), metrics[-2000:]


def test_object_written_again_is_judged_by_its_new_mtime(server, made_bucket):
    s3 = server.boto3()
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire", "Status": "Enabled", "Filter": {"Prefix": ""},
         "Expiration": {"Days": 3}}]})
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"v1")
    first_due, _ = expiration_of(s3.head_object(Bucket=made_bucket, Key="k")[
        "ResponseMetadata"]["HTTPHeaders"])
    # Overwrite shortly before the first version is due: the object stays until its own due
    # time, three days after the overwrite.
    wait_until("close to the first due time", lambda: time.time() > first_due.timestamp() - 1.5,
               deadline_s=4 * DAY_SECONDS + 5)
    s3.put_object(Bucket=made_bucket, Key="k", Body=b"v2")
    second_due, _ = expiration_of(s3.head_object(Bucket=made_bucket, Key="k")[
        "ResponseMetadata"]["HTTPHeaders"])
    assert second_due > first_due
    wait_until("past the first due time", lambda: time.time() > first_due.timestamp() + 1,
               deadline_s=10)
    assert s3.get_object(Bucket=made_bucket, Key="k")["Body"].read() == b"v2"
    wait_until("the second version expired", lambda: not exists(s3, made_bucket, "k"))


def test_abort_incomplete_multipart_upload(server, made_bucket):
    s3 = server.boto3()
    before = stats(server)["lifecycle"]["aborted_uploads"]
    s3.put_bucket_lifecycle_configuration(Bucket=made_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "abort", "Status": "Enabled", "Filter": {"Prefix": "mp/"},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]})
    due_upload = s3.create_multipart_upload(Bucket=made_bucket, Key="mp/x")["UploadId"]
    s3.upload_part(Bucket=made_bucket, Key="mp/x", UploadId=due_upload, PartNumber=1,
                   Body=b"p" * 1000)
    kept_upload = s3.create_multipart_upload(Bucket=made_bucket, Key="other/y")["UploadId"]

    def uploads():
        return {(u["Key"], u["UploadId"]) for u in s3.list_multipart_uploads(
            Bucket=made_bucket).get("Uploads", [])}

    assert uploads() == {("mp/x", due_upload), ("other/y", kept_upload)}
    wait_until("mp/x aborted", lambda: ("mp/x", due_upload) not in uploads())
    assert uploads() == {("other/y", kept_upload)}
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=made_bucket, Key="mp/x", UploadId=due_upload)
    assert code_of(e) == "NoSuchUpload"
    wait_until("abort counted",
               lambda: stats(server)["lifecycle"]["aborted_uploads"] >= before + 1, 5)
    s3.abort_multipart_upload(Bucket=made_bucket, Key="other/y", UploadId=kept_upload)


def test_expiration_header_with_s3s_day():
    """With the default day (86400 s) the header says what S3 and s3-tests'
    check_lifecycle_expiration_header expect: a Days=1 object expires at the midnight UTC after
    one full day, so whole days from now to the expiry are 1; the rule ID as put."""
    with running_server("oc-it-lc-day-") as srv:
        s3 = srv.boto3()
        s3.create_bucket(Bucket="days")
        s3.put_bucket_lifecycle_configuration(Bucket="days", LifecycleConfiguration={"Rules": [
            {"ID": "rule1", "Status": "Enabled", "Filter": {"Prefix": "days1/"},
             "Expiration": {"Days": 1}}]})
        now = datetime.datetime.now(datetime.timezone.utc)
        put = s3.put_object(Bucket="days", Key="days1/foo", Body=b"bar")
        due, rule = expiration_of(put["ResponseMetadata"]["HTTPHeaders"])
        assert rule == "rule1"
        assert (due - now).days == 1
        assert (due.hour, due.minute, due.second) == (0, 0, 0)
        head = s3.head_object(Bucket="days", Key="days1/foo")["ResponseMetadata"]["HTTPHeaders"]
        assert expiration_of(head) == (due, "rule1")
        s3.delete_object(Bucket="days", Key="days1/foo")
        s3.delete_bucket(Bucket="days")
