"""README, "The binaries" and "KV clients that speak plain S3": `--virtual-host-domain D` on the
command line of `objectcache serve` (embedded) and of `oc-gateway` (remote) turns virtual-host
addressing on with no config key: `Host: <bucket>.D:<port>` names the bucket, path style keeps
working on the same port, and /stats shows the domain in effect. Without the flag the same
request is a service-level one (ListBuckets)."""
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from conftest import modes, running_server
from rawhttp import signed

DOMAIN = "kv.flag.test"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@pytest.fixture(scope="module", params=modes())
def flag_server(request):
    with running_server("oc-it-vhflag-", request.param,
                        args=["--virtual-host-domain", DOMAIN]) as srv:
        yield srv


def vhost(server, bucket, method, key="", query="", body=b""):
    return signed(server, method, "/" + key, query, body=body,
                  host=f"{bucket}.{DOMAIN}:{server.port}")


def test_flag_turns_virtual_host_addressing_on(flag_server, bucket):
    with open(flag_server.config) as f:
        assert "virtual_host_domain" not in f.read()
    with urllib.request.urlopen(flag_server.endpoint + "/stats", timeout=10) as r:
        assert f'"virtual_host_domain":"{DOMAIN}"' in r.read().decode()

    assert vhost(flag_server, bucket, "PUT")[0] == 200  # CreateBucket
    status, headers, reply = vhost(flag_server, bucket, "PUT", "dir/a%20b", body=b"virtual")
    assert status == 200, reply
    status, _, got = vhost(flag_server, bucket, "GET", "dir/a%20b")
    assert (status, got) == (200, b"virtual")
    status, _, listing = vhost(flag_server, bucket, "GET")
    assert status == 200, listing
    root = ET.fromstring(listing)
    assert root.tag == NS + "ListBucketResult"
    assert root.findtext(NS + "Name") == bucket
    assert [k.text for k in root.iter(NS + "Key")] == ["dir/a b"]
    # Path style on the same port sees the same object.
    s3 = flag_server.boto3()
    assert s3.get_object(Bucket=bucket, Key="dir/a b")["Body"].read() == b"virtual"
    assert vhost(flag_server, bucket, "DELETE", "dir/a%20b")[0] == 204
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def test_without_the_flag_the_host_names_no_bucket(server, made_bucket):
    status, _, reply = vhost(server, made_bucket, "GET")
    assert status == 200, reply
    assert ET.fromstring(reply).tag == NS + "ListAllMyBucketsResult"
    with urllib.request.urlopen(server.endpoint + "/stats", timeout=10) as r:
        assert '"virtual_host_domain":""' in r.read().decode()
