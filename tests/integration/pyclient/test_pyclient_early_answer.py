"""The objectcache package's put_chunks when the gateway answers before it has read the body
(issue 33): a descriptor PUT of 64 MiB (64x the gateway's max_drain_bytes) into a missing
bucket, or from an anonymous caller, is refused from its headers and the gateway closes after
a bounded drain. The package used to report the failed write ("send request: Broken pipe",
Unavailable); it must raise the answer's typed error (NoSuchBucket, AccessDenied) with its S3
code, HTTP status and request id, from the HTTP body and over UCX, and the client stays usable."""
import numpy as np
import pytest

from pyclient_util import client, oc

CHUNKS, LAYERS, LAYER_BYTES = 32, 32, 64 * 1024


def descriptor():
    return oc.Descriptor([f"early/chunk-{j}" for j in range(CHUNKS)], layers=LAYERS,
                         layer_bytes=LAYER_BYTES)


def test_put_chunks_raises_the_early_answer(server, made_bucket):
    c = client(server)
    data = np.tile(np.arange(256, dtype=np.uint8), CHUNKS * LAYERS * LAYER_BYTES // 256)
    r = c.put_chunks("no-such-bucket-early", descriptor(), data)
    assert r.status == ["failed"] * CHUNKS
    with pytest.raises(oc.NoSuchBucket) as e:
        r.raise_for_status()
    assert (e.value.s3_code, e.value.http_status) == ("NoSuchBucket", 404)
    assert e.value.request_id and "pipe" not in str(e.value).lower()

    anonymous = oc.Client(server.endpoint)
    with pytest.raises(oc.AccessDenied) as e:
        anonymous.put_chunks(made_bucket, descriptor(), data).raise_for_status()
    assert (e.value.s3_code, e.value.http_status) == ("AccessDenied", 403)

    buf = c.allocate_buffer(data.nbytes)
    oc.as_array(buf)[:] = data
    with pytest.raises(oc.NoSuchBucket):
        c.put_chunks("no-such-bucket-early", descriptor(), buf, via="ucx").raise_for_status()

    # Still usable, and the refused PUTs stored nothing: the same bytes go in now.
    assert c.put_chunks(made_bucket, descriptor(), data).raise_for_status().chunks == CHUNKS
    chunk = LAYERS * LAYER_BYTES
    assert c.get_object(made_bucket, "early/chunk-5") == data[5 * chunk:6 * chunk].tobytes()
