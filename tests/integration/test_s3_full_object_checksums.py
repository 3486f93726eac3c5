"""FULL_OBJECT multipart checksums (issue 17): CreateMultipartUpload with
x-amz-checksum-type: FULL_OBJECT (CRC32, CRC32C, CRC64NVME; CRC64NVME's default) keeps the
type with the upload; the completion combines the parts' CRCs with their sizes into the CRC of
the whole object, compares it with the x-amz-checksum-<algorithm> it is sent (400 BadDigest,
nothing stored) and stores it without "-N", returned as FULL_OBJECT by HeadObject/GetObject with
checksum mode, the completion and ListParts. UploadPart with a checksum of another algorithm
than the upload's is refused at once (400 InvalidRequest). Debian's boto3 (1.26) cannot send
x-amz-checksum-type or CRC64NVME, so these are raw SigV4-signed requests, with every CRC
computed here independently of the server (zlib, bitwise tables); the image's newer boto3
drives a whole upload_file. Over the embedded and the remote store; test_s3_compat_rados.py
runs them over RADOS."""
import os
import socket
import subprocess
import textwrap
import xml.etree.ElementTree as ET

import pytest

import sigv4
from client_replay import boto3_get_object, boto3_head_object, boto3_upload_file
from rawhttp import assert_not_stored, aws_chunked, error_code, signed
from test_s3_checksums import MODERN_PYTHON, body, checksum, head, stored_checksums
from test_s3_multipart_checksums import complete_xml

MiB = 1 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# Three parts: two of the 5 MiB minimum (one a byte over) and a small last one, so the
# combination uses lengths with high bits set.
PARTS = [body(51, 5 * MiB), body(52, 5 * MiB + 1), body(53, 777)]
_CRCS = {}


def crcs(algorithm):
    """The parts' CRCs and the whole object's, computed directly over the bytes (cached: the
    bitwise CRC32C and CRC64NVME take a second per 10 MiB)."""
    if algorithm not in _CRCS:
        _CRCS[algorithm] = ([checksum(algorithm, p) for p in PARTS],
                            checksum(algorithm, b"".join(PARTS)))
    return _CRCS[algorithm]


def create(server, bucket, key, headers):
    return signed(server, "POST", f"/{bucket}/{key}", query="uploads", headers=headers)


def upload_id(reply):
    return ET.fromstring(reply).findtext(f"{NS}UploadId")


def put_part(server, bucket, key, uid, number, data, headers=None, trailer=None):
    query = f"partNumber={number}&uploadId={uid}"
    if trailer is None:
        return signed(server, "PUT", f"/{bucket}/{key}", query=query, headers=headers or {},
                      body=data)
    name, value = trailer
    return signed(server, "PUT", f"/{bucket}/{key}", query=query,
                  headers={"content-encoding": "aws-chunked", "x-amz-trailer": name,
                           "x-amz-decoded-content-length": str(len(data))},
                  body=aws_chunked(data, 65536, trailer=[(name, value)]),
                  payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")


def open_uploads(server, bucket):
    return server.boto3().list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def test_create_takes_the_checksum_type_as_s3_does(server, made_bucket):
    """Refused with 400 InvalidRequest naming x-amz-checksum-type (and creating nothing):
    FULL_OBJECT with SHA1/SHA256, COMPOSITE with CRC64NVME, an unknown type, a type without an
    algorithm. Accepted: FULL_OBJECT with a CRC, and no type (CRC64NVME's default is
    FULL_OBJECT, the others' COMPOSITE); the reply names algorithm and type."""
    refused = [
        {"x-amz-checksum-algorithm": "SHA256", "x-amz-checksum-type": "FULL_OBJECT"},
        {"x-amz-checksum-algorithm": "SHA1", "x-amz-checksum-type": "FULL_OBJECT"},
        {"x-amz-checksum-algorithm": "CRC64NVME", "x-amz-checksum-type": "COMPOSITE"},
        {"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-type": "WHOLE"},
        {"x-amz-checksum-type": "FULL_OBJECT"},
    ]
    for headers in refused:
        status, _, reply = create(server, made_bucket, "t", headers)
        assert status == 400, (headers, reply)
        assert error_code(reply) == ("InvalidRequest", "x-amz-checksum-type"), (headers, reply)
    assert b"cannot be used with the sha256 checksum algorithm" in \
        create(server, made_bucket, "t", refused[0])[2]
    assert open_uploads(server, made_bucket) == []
    accepted = [
        ({"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-type": "FULL_OBJECT"},
         "CRC32", "FULL_OBJECT"),
        ({"x-amz-checksum-algorithm": "crc32c", "x-amz-checksum-type": "full_object"},
         "CRC32C", "FULL_OBJECT"),
        ({"x-amz-checksum-algorithm": "CRC64NVME"}, "CRC64NVME", "FULL_OBJECT"),
        ({"x-amz-checksum-algorithm": "SHA256"}, "SHA256", "COMPOSITE"),
        ({"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-type": "COMPOSITE"},
         "CRC32", "COMPOSITE"),
    ]
    for headers, algorithm, kind in accepted:
        status, got, reply = create(server, made_bucket, "t", headers)
        assert status == 200, (headers, reply)
        assert (got["x-amz-checksum-algorithm"], got["x-amz-checksum-type"]) == (algorithm, kind)
        status, _, listing = signed(server, "GET", f"/{made_bucket}/t",
                                    query=f"uploadId={upload_id(reply)}")
        assert status == 200, listing
        root = ET.fromstring(listing)
        assert (root.findtext(f"{NS}ChecksumAlgorithm"), root.findtext(f"{NS}ChecksumType")) == \
            (algorithm, kind)
    assert len(open_uploads(server, made_bucket)) == len(accepted)


@pytest.mark.parametrize("algorithm", ["crc32", "crc32c", "crc64nvme"])
def test_full_object_checksum_is_combined_checked_and_stored(server, made_bucket, algorithm):
    """Parts with CRCs (part 2 as an aws-chunked trailer); completions that are refused store
    nothing and leave the upload open: an expected whole-object CRC that is not the bytes'
    (400 BadDigest naming the header), the COMPOSITE mode (400 InvalidRequest), a listed
    checksum that is not the part's (400 InvalidPart), a part never uploaded (400
    InvalidPart). The right one answers and stores the whole object's CRC, typed FULL_OBJECT;
    a retry answers the same."""
    header = f"x-amz-checksum-{algorithm}"
    element = f"Checksum{algorithm.upper()}"
    part_crcs, whole = crcs(algorithm)
    status, _, reply = create(server, made_bucket, "full", {
        "x-amz-checksum-algorithm": algorithm.upper(), "x-amz-checksum-type": "FULL_OBJECT"})
    assert status == 200, reply
    uid = upload_id(reply)
    etags = []
    for n, (data, crc) in enumerate(zip(PARTS, part_crcs), start=1):
        if n == 2:
            status, got, reply = put_part(server, made_bucket, "full", uid, n, data,
                                          trailer=(header, crc))
        else:
            status, got, reply = put_part(server, made_bucket, "full", uid, n, data,
                                          headers={header: crc})
        assert status == 200, reply
        etags.append(got["etag"])
    status, _, listing = signed(server, "GET", f"/{made_bucket}/full", query=f"uploadId={uid}")
    root = ET.fromstring(listing)
    assert root.findtext(f"{NS}ChecksumType") == "FULL_OBJECT"
    assert [p.findtext(f"{NS}{element}") for p in root.iter(f"{NS}Part")] == part_crcs

    path, query = f"/{made_bucket}/full", f"uploadId={uid}"
    good = [(n, etag, {element: crc}) for n, (etag, crc) in enumerate(zip(etags, part_crcs), 1)]

    def complete(parts, headers):
        return signed(server, "POST", path, query=query, headers=headers,
                      body=complete_xml(parts))

    wrong_whole = checksum(algorithm, b"".join(PARTS) + b"x")
    status, _, reply = complete(good, {header: wrong_whole, "x-amz-checksum-type": "FULL_OBJECT"})
    assert status == 400 and error_code(reply) == ("BadDigest", header), reply
    status, _, reply = complete(good, {header: whole, "x-amz-checksum-type": "COMPOSITE"})
    assert status == 400 and error_code(reply) == ("InvalidRequest", "x-amz-checksum-type"), reply
    assert b"created using the FULL_OBJECT checksum mode" in reply
    swapped = [good[0], (2, etags[1], {element: part_crcs[2]}), good[2]]
    status, _, reply = complete(swapped, {})
    assert status == 400 and error_code(reply)[0] == "InvalidPart", reply
    status, _, reply = complete(good[:2] + [(4, etags[2], {element: part_crcs[2]})], {})
    assert status == 400 and error_code(reply)[0] == "InvalidPart", reply
    assert_not_stored(server, made_bucket, "full")

    status, _, reply = complete(good, {header: whole, "x-amz-checksum-type": "FULL_OBJECT"})
    assert status == 200, reply
    root = ET.fromstring(reply)
    assert (root.findtext(f"{NS}{element}"), root.findtext(f"{NS}ChecksumType")) == \
        (whole, "FULL_OBJECT")
    assert stored_checksums(head(server, made_bucket, "full")) == {
        header: whole, "x-amz-checksum-type": "FULL_OBJECT"}
    status, got, data = signed(server, "GET", path, headers={"x-amz-checksum-mode": "ENABLED"})
    assert status == 200 and got[header] == whole and got["x-amz-checksum-type"] == "FULL_OBJECT"
    assert data == b"".join(PARTS)
    # A retry of the completion answers as the first did.
    status, _, reply = complete(good, {})
    assert status == 200, reply
    assert ET.fromstring(reply).findtext(f"{NS}{element}") == whole


def test_full_object_completion_without_expected_value(server, made_bucket):
    """An expected value is optional: the combined CRC is stored all the same (CRC64NVME's
    default type, no x-amz-checksum-type on either request), and a part listed without its
    checksum is 400 InvalidRequest as for COMPOSITE uploads."""
    part_crcs, whole = crcs("crc64nvme")
    header = "x-amz-checksum-crc64nvme"
    status, _, reply = create(server, made_bucket, "nv", {"x-amz-checksum-algorithm": "CRC64NVME"})
    assert status == 200, reply
    uid = upload_id(reply)
    etags = []
    for n, (data, crc) in enumerate(zip(PARTS, part_crcs), start=1):
        status, got, reply = put_part(server, made_bucket, "nv", uid, n, data,
                                      headers={header: crc})
        assert status == 200, reply
        etags.append(got["etag"])
    listed = [(n, e, {"ChecksumCRC64NVME": c}) for n, (e, c) in enumerate(zip(etags, part_crcs), 1)]
    path, query = f"/{made_bucket}/nv", f"uploadId={uid}"
    missing = listed[:2] + [(3, etags[2], {})]
    status, _, reply = signed(server, "POST", path, query=query, body=complete_xml(missing))
    assert status == 400 and error_code(reply) == ("InvalidRequest", header), reply
    status, _, reply = signed(server, "POST", path, query=query, body=complete_xml(listed))
    assert status == 200, reply
    assert ET.fromstring(reply).findtext(f"{NS}ChecksumCRC64NVME") == whole
    assert stored_checksums(head(server, made_bucket, "nv")) == {
        header: whole, "x-amz-checksum-type": "FULL_OBJECT"}


MODERN_FULL_OBJECT_SCRIPT = textwrap.dedent("""
    import sys, zlib, base64
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
    from boto3.s3.transfer import TransferConfig
    endpoint, ak, sk, bucket, path = sys.argv[1:6]
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                      aws_secret_access_key=sk, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    big = bytes(i % 247 for i in range(12 << 20))
    with open(path, "wb") as f:
        f.write(big)
    crc = base64.b64encode(zlib.crc32(big).to_bytes(4, "big")).decode()
    config = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
    # A full-object checksum given to upload_file: s3transfer creates the upload with
    # ChecksumType FULL_OBJECT and sends the value with the completion.
    s3.upload_file(path, bucket, "full", ExtraArgs={"ChecksumCRC32": crc}, Config=config)
    head = s3.head_object(Bucket=bucket, Key="full", ChecksumMode="ENABLED")
    assert (head["ChecksumCRC32"], head["ChecksumType"]) == (crc, "FULL_OBJECT"), head
    got = s3.get_object(Bucket=bucket, Key="full", ChecksumMode="ENABLED")
    assert got["Body"].read() == big  # botocore validates a FULL_OBJECT CRC32 as it reads
    wrong = base64.b64encode(zlib.crc32(big + b"x").to_bytes(4, "big")).decode()
    try:
        s3.upload_file(path, bucket, "wrong", ExtraArgs={"ChecksumCRC32": wrong}, Config=config)
        raise SystemExit("a wrong full-object CRC32 was accepted")
    except Exception as e:
        assert "BadDigest" in str(e), e
    try:
        s3.head_object(Bucket=bucket, Key="wrong")
        raise SystemExit("the refused upload stored an object")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "404", e.response
    print("ok")
""")


@pytest.mark.skipif(MODERN_PYTHON is None, reason="no botocore >= 1.36 on this machine")
def test_modern_boto3_upload_file_with_a_full_object_checksum(server, made_bucket, tmp_path):
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    env["BOTO_DISABLE_CRT"] = "true"
    r = subprocess.run([MODERN_PYTHON, "-c", MODERN_FULL_OBJECT_SCRIPT, server.endpoint,
                        server.access_key, server.secret_key, made_bucket,
                        str(tmp_path / "big.bin")], capture_output=True, timeout=300, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()


def test_modern_boto3_full_object_upload_request_shapes(server, made_bucket):
    """What test_modern_boto3_upload_file_with_a_full_object_checksum has boto3 (botocore >=
    1.36) send, replayed as boto3 1.43.11 sends it over HTTP (client_replay), so it runs
    without that boto3: upload_file with ExtraArgs={"ChecksumCRC32": whole} and 5 MiB parts
    creates the upload with x-amz-checksum-type FULL_OBJECT and x-amz-checksum-algorithm
    CRC32, sends each part with its CRC32, and completes with the parts' CRC32s listed and
    the whole object's CRC32 and the type as headers. A wrong whole-object value is 400
    BadDigest and stores nothing."""
    big = bytes(i % 247 for i in range(12 << 20))
    crc = checksum("crc32", big)
    status, _, reply = boto3_upload_file(server, made_bucket, "full", big, chunksize=5 * MiB,
                                         full_object_crc32=crc)
    assert status == 200, reply
    assert ET.fromstring(reply).findtext(f"{NS}ChecksumCRC32") == crc, reply
    status, headers, _ = boto3_head_object(server, made_bucket, "full")
    assert status == 200
    assert (headers["x-amz-checksum-crc32"], headers["x-amz-checksum-type"]) == \
        (crc, "FULL_OBJECT")
    status, headers, got = boto3_get_object(server, made_bucket, "full")
    assert status == 200 and got == big
    assert headers["x-amz-checksum-crc32"] == crc  # boto3 checks the body against it
    wrong = checksum("crc32", big + b"x")
    status, _, reply = boto3_upload_file(server, made_bucket, "wrong", big, chunksize=5 * MiB,
                                         full_object_crc32=wrong)
    assert (status, error_code(reply)) == (400, ("BadDigest", "x-amz-checksum-crc32")), reply
    assert_not_stored(server, made_bucket, "wrong")


def part_with_continue(server, bucket, key, uid, number, data, headers):
    """An UploadPart sent with Expect: 100-continue: returns (first status line's code, the
    final status, reply). The body is sent only after 100 Continue, so a refusal answered
    first was decided before any of it was read."""
    host = f"127.0.0.1:{server.port}"
    query = f"partNumber={number}&uploadId={uid}"
    h = dict(headers)
    h["expect"] = "100-continue"
    payload_hash = h.pop("x-amz-content-sha256", None)
    signed_headers = sigv4.sign("PUT", host, f"/{bucket}/{key}", query, h, data,
                                server.access_key, server.secret_key, payload_hash=payload_hash)
    lines = [f"PUT /{bucket}/{key}?{query} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in signed_headers.items() if k.lower() != "host"]
    lines += [f"Content-Length: {len(data)}", "Connection: close"]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        first = s.recv(65536)
        code = int(first.split(b" ", 2)[1])
        if code == 100:
            s.sendall(data)
        raw = first if code != 100 else b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            raw += b
    if code == 100:
        raw = raw[raw.index(b"HTTP/1.1", 1) if raw.startswith(b"HTTP/1.1 100") else 0:]
    status = int(raw.split(b" ", 2)[1])
    return code, status, raw.partition(b"\r\n\r\n")[2]


def test_upload_part_of_another_algorithm_is_refused_at_once(server, made_bucket):
    """On an upload created with CRC32, a part with a CRC32C header or announcing a SHA256
    trailer is 400 InvalidRequest naming its header, answered before the body is sent (no 100
    Continue), and stores nothing; a CRC32 part is taken."""
    s3 = server.boto3()
    uid = s3.create_multipart_upload(Bucket=made_bucket, Key="alg",
                                     ChecksumAlgorithm="CRC32")["UploadId"]
    data = body(61, 3000)
    cases = [({"x-amz-checksum-crc32c": checksum("crc32c", data)}, "x-amz-checksum-crc32c",
              b"expected checksum Type: crc32, actual checksum Type: crc32c"),
             ({"x-amz-trailer": "x-amz-checksum-sha256", "content-encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(data)),
               "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
              "x-amz-checksum-sha256", b"actual checksum Type: sha256")]
    for headers, name, text in cases:
        first, status, reply = part_with_continue(server, made_bucket, "alg", uid, 1, data,
                                                  headers)
        assert (first, status) == (400, 400), reply
        assert error_code(reply) == ("InvalidRequest", name), reply
        assert text in reply, reply
    assert s3.list_parts(Bucket=made_bucket, Key="alg", UploadId=uid).get("Parts", []) == []
    first, status, reply = part_with_continue(server, made_bucket, "alg", uid, 1, data,
                                              {"x-amz-checksum-crc32": checksum("crc32", data)})
    assert (first, status) == (100, 200), reply
    parts = s3.list_parts(Bucket=made_bucket, Key="alg", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ChecksumCRC32"]) for p in parts] == [(1, checksum("crc32", data))]
