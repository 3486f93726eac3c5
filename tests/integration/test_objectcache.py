"""The ObjectCache path end to end (issue 5, docs/protocol.md): chunks stored with a
descriptor PUT (the `oc` CLI and curl), read back with descriptor GETs into a UCX-registered
buffer (shared memory, and TCP with UCX_TLS=tcp for both processes) and from the HTTP body
(the `oc` CLI's fallback and curl --aws-sigv4), every byte compared with the layer-major (or
chunk-major) arrangement computed here from the source chunks. Per-layer notifications are
checked from `oc get-layers`' "layer <l> <us>" lines. Runs over the embedded and the remote
store (conftest's `server` fixture)."""
import hashlib
import os
import random
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

OC = os.environ.get("OC_CLI_BIN", "")
pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

# docs/protocol.md, chunk-key test vectors.
LLAMA_NS = dict(model="meta-llama/Llama-3.1-8B", dtype="bfloat16")


def run(args, env=None, check=True, timeout=120):
    p = subprocess.run([OC] + args, capture_output=True, env=env, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"oc {' '.join(args)} -> {p.returncode}\n{p.stderr.decode()}")
    return p


def client_env(server, extra=None):
    env = dict(os.environ)
    env["OC_ENDPOINT"] = server.endpoint
    env["AWS_ACCESS_KEY_ID"] = server.access_key
    env["AWS_SECRET_ACCESS_KEY"] = server.secret_key
    env.update(extra or {})
    return env


def slice_bytes(j, l, s, seed):
    """Layer l of chunk j, S bytes: K half then V half, distinct per (seed, j, l, half)."""
    half = s // 2
    k = bytes(((seed * 131 + j * 31 + l * 7 + i) % 251) for i in range(half))
    v = bytes(((seed * 137 + j * 17 + l * 11 + i + 100) % 253) for i in range(s - half))
    return k + v


def chunk_object(j, n_layers, s, layout, seed):
    slices = [slice_bytes(j, l, s, seed) for l in range(n_layers)]
    if layout == "kv_l2td":
        return b"".join(slices)
    return b"".join(x[: s // 2] for x in slices) + b"".join(x[s // 2:] for x in slices)


def expected_payload(m, n, n_layers, s, delivery, seed):
    """What a buffer of N·L·S holds after M chunks were delivered (zeros elsewhere)."""
    out = bytearray(n * n_layers * s)
    for j in range(m):
        for l in range(n_layers):
            off = (l * n + j) * s if delivery == "layer-major" else (j * n_layers + l) * s
            out[off:off + s] = slice_bytes(j, l, s, seed)
    return bytes(out)


def tokens_file(tmp, n_tokens, start=0):
    path = os.path.join(tmp, f"tokens-{start}-{n_tokens}.txt")
    with open(path, "w") as f:
        f.write(" ".join(str(start + i) for i in range(n_tokens)))
    return path


@pytest.fixture(scope="module")
def tcp_server():
    """An embedded server whose UCX runs over TCP only (UCX_TLS=tcp in its environment, as in
    the client's): the data-plane path without shared memory."""
    from conftest import running_server
    with running_server("oc-it-tcp-", env_extra={"UCX_TLS": "tcp"}) as srv:
        srv.boto3().create_bucket(Bucket="kv-tcp")
        yield srv


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="oc-kv-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_keys_match_protocol_vectors(tmp):
    text = tokens_file(tmp, 10)
    p = run(["keys", "--tokens", text, "--chunk-tokens", "4", "--model", LLAMA_NS["model"],
             "--dtype", "bfloat16", "--tp", "0/1", "--prefix", "llama-3.1-8b/"])
    assert p.stdout.decode().split() == [
        "llama-3.1-8b/73915cab52f8c56eb1816a3a2513692d",
        "llama-3.1-8b/a5e3d64f612716482e00d38104516b19"]
    binary = os.path.join(tmp, "tokens.bin")
    with open(binary, "wb") as f:
        f.write(b"".join(i.to_bytes(4, "little") for i in range(8)))
    p = run(["keys", "--tokens", binary, "--binary", "--chunk-tokens", "4", "--model",
             LLAMA_NS["model"], "--tp", "1/2"])
    assert p.stdout.decode().split() == ["65e1e993487f2759e5be96eada3bbd59",
                                         "0e2c4ccdf5fb510c6cea5925f22472da"]
    golden = os.path.join(tmp, "golden.txt")
    with open(golden, "w") as f:
        f.write("\n".join(str((i * 2654435761) % 2**32) for i in range(48)))
    p = run(["keys", "--tokens", golden, "--chunk-tokens", "16", "--model",
             "Qwen/Qwen2.5-7B-Instruct", "--dtype", "float16"])
    assert p.stdout.decode().split() == ["b1c872fa0164a5c2d91a424835dec36a",
                                         "af9df182d27025cf48e744834736f8cc",
                                         "0729b5c8bcc995b578d2afbbdc84a3e4"]


def key_args(form, tmp, n, g, prefix):
    """Descriptor key flags for N chunks of G tokens, compact or explicit form."""
    toks = tokens_file(tmp, n * g)
    if form == "compact":
        return ["--tokens", toks, "--chunk-tokens", str(g), "--prefix", prefix]
    names = run(["keys", "--tokens", toks, "--chunk-tokens", str(g), "--prefix",
                 prefix]).stdout.decode().split()
    path = os.path.join(tmp, f"names-{n}-{g}.txt")
    with open(path, "w") as f:
        f.write("\n".join(names) + "\n")
    return ["--names", path, "--chunk-tokens", str(g)]


def put_chunks(server, bucket, tmp, keys, n, n_layers, s, layout, seed, via="http",
               env_extra=None):
    data = b"".join(chunk_object(j, n_layers, s, layout, seed) for j in range(n))
    path = os.path.join(tmp, f"chunks-{seed}.bin")
    with open(path, "wb") as f:
        f.write(data)
    p = run(["put-chunks", "--bucket", bucket, *keys, "--layers", str(n_layers),
             "--layer-bytes", str(s), "--layout", layout, "--data", path, "--via", via],
            env=client_env(server, env_extra))
    assert f"chunks={n} bytes={len(data)}" in p.stdout.decode()
    # The summary line's fields, the PUT call's own time last (bench/harness/
    # write_bench_clients.py reads it).
    fields = dict(kv.split("=", 1) for kv in p.stdout.decode().split())
    assert list(fields) == ["chunks", "bytes", "request_id", "put_us"], fields
    assert int(fields["put_us"]) > 0


def get_layers(server, bucket, tmp, keys, n_layers, s, layout, delivery, via, env_extra=None,
               check=True):
    out = os.path.join(tmp, "out.bin")
    p = run(["get-layers", "--bucket", bucket, *keys, "--layers", str(n_layers),
             "--layer-bytes", str(s), "--layout", layout, "--delivery", delivery,
             "--via", via, "--out", out], env=client_env(server, env_extra), check=check)
    lines = p.stdout.decode().splitlines()
    layers = [int(x.split()[1]) for x in lines if x.startswith("layer ")]
    summary = dict(kv.split("=", 1) for x in lines if x.startswith("matched=") for kv in x.split())
    data = open(out, "rb").read() if os.path.exists(out) and p.returncode == 0 else None
    return p, layers, summary, data


def put_then_get(server, bucket, tmp, shapes, seed, env_extra=None, mode=None):
    """For each (N, L, S, G) of `shapes`: a descriptor PUT from the HTTP body and one whose
    chunks the server pulls over UCX, each read back with descriptor GETs over UCX
    (layer-major and chunk-major) and from the HTTP body, every byte compared. `env_extra`:
    the client's variables (UCX_TLS); `mode`: the delivery mode every GET must report. Returns
    the bytes the UCX GETs delivered."""
    target_bytes = 0
    for n, n_layers, s, g in shapes:
        for via_put in ("http", "ucx"):
            seed += 1
            keys = key_args("compact", tmp, n, g, f"exact-{seed}/")
            put_chunks(server, bucket, tmp, keys, n, n_layers, s, "kv_l2td", seed, via=via_put,
                       env_extra=env_extra)
            for via, delivery in (("ucx", "layer-major"), ("ucx", "chunk-major"),
                                  ("http", "layer-major")):
                p, layers, summary, data = get_layers(server, bucket, tmp, keys, n_layers, s,
                                                      "kv_l2td", delivery, via, env_extra)
                assert summary["matched"] == str(n), p.stdout.decode()
                assert mode is None or summary["mode"] == mode, summary
                assert sorted(layers) == list(range(n_layers)), p.stdout.decode()
                assert data == expected_payload(n, n, n_layers, s, delivery, seed), \
                    (n, n_layers, s, via_put, via, delivery)
                if via == "ucx":
                    target_bytes += n * n_layers * s
    return target_bytes


# (N, L, S, G): N = 1, L = 1, odd S (kv_l2td only: kv_2ltd needs an even S), a larger one.
SHAPES = [(1, 4, 64, 4), (3, 1, 32, 4), (5, 3, 33, 2), (4, 8, 4096, 16)]


def check_shapes(server, bucket, tmp, via, tls, form, layout):
    seed = 0
    for n, n_layers, s, g in SHAPES:
        if layout == "kv_2ltd" and s % 2:
            continue
        seed += 1
        prefix = f"{layout}-{form}-{seed}/"
        keys = key_args(form, tmp, n, g, prefix)
        put_chunks(server, bucket, tmp, keys, n, n_layers, s, layout, seed)
        for delivery in ("layer-major", "chunk-major"):
            env = {"UCX_TLS": tls} if tls else None
            p, layers, summary, data = get_layers(server, bucket, tmp, keys, n_layers, s,
                                                  layout, delivery, via, env)
            assert summary["matched"] == str(n)
            assert summary["mode"] in ("chunkwise", "layerwise")
            assert sorted(layers) == list(range(n_layers)), p.stdout.decode()
            assert data == expected_payload(n, n, n_layers, s, delivery, seed), \
                (n, n_layers, s, delivery)


@pytest.mark.parametrize("via", ["http", "ucx"])
@pytest.mark.parametrize("form", ["compact", "explicit"])
@pytest.mark.parametrize("layout", ["kv_l2td", "kv_2ltd"])
def test_layers_byte_exact(server, made_bucket, tmp, via, form, layout):
    """Shared memory (UCX's default on one host) and the HTTP body."""
    check_shapes(server, made_bucket, tmp, via, None, form, layout)


@pytest.mark.parametrize("layout", ["kv_l2td", "kv_2ltd"])
def test_layers_byte_exact_ucx_tcp(tcp_server, tmp, layout):
    check_shapes(tcp_server, "kv-tcp", tmp, "ucx", "tcp", "compact", layout)


def test_partial_hit_and_probe(server, made_bucket, tmp):
    n, n_layers, s, g = 6, 4, 128, 4
    keys = key_args("compact", tmp, n, g, "partial/")
    stored = key_args("compact", tmp, 3, g, "partial/")  # the first 3 chunks of the same prefix
    put_chunks(server, made_bucket, tmp, stored, 3, n_layers, s, "kv_l2td", 7)
    p = run(["probe", "--bucket", made_bucket, *keys, "--layers", str(n_layers),
             "--layer-bytes", str(s)], env=client_env(server))
    lines = p.stdout.decode().split()
    assert lines[0] == "matched=3"
    assert lines[1:] == [str(n_layers * s)] * 3 + ["-"] * 3
    for via in ("http", "ucx"):
        p, layers, summary, data = get_layers(server, made_bucket, tmp, keys, n_layers, s,
                                              "kv_l2td", "layer-major", via)
        assert summary["matched"] == "3"
        assert sorted(layers) == list(range(n_layers))
        assert data == expected_payload(3, n, n_layers, s, "layer-major", 7)


# curl 7.88's --aws-sigv4 canonicalises a valueless query parameter as "objectcache" where
# SigV4 (and the gateway, like AWS) uses "objectcache=": curl requests spell it "?objectcache=".
# It also signs a body's hash without sending x-amz-content-sha256, so PUTs name the payload
# mode themselves (UNSIGNED-PAYLOAD), which curl then signs.
def curl_sig(server, payload_hash="UNSIGNED-PAYLOAD"):
    return ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
            f"{server.access_key}:{server.secret_key}", "-H",
            f"x-amz-content-sha256: {payload_hash}"]


def curl(server, args, data=None):
    p = subprocess.run(["curl", "-sS", "-D", "-", *args], input=data, capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 100"):
        head, _, body = body.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
    return status, headers, body


TOY_FIELDS = {
    "x-oc-version": "1", "x-oc-key-prefix": "llama-3.1-8b/",
    "x-oc-chunk-hashes": "73915cab52f8c56eb1816a3a2513692d,a5e3d64f612716482e00d38104516b19",
    "x-oc-num-layers": "2", "x-oc-chunk-tokens": "4", "x-oc-layer-bytes": "6"}


def toy(**changes):
    """curl -H flags of the walk-through's descriptor, fields replaced by `changes`
    (x_oc_num_layers="4096"), None removing one."""
    fields = dict(TOY_FIELDS)
    for k, v in changes.items():
        k = k.replace("_", "-")
        if v is None:
            fields.pop(k, None)
        else:
            fields[k] = v
    out = []
    for k, v in fields.items():
        out += ["-H", f"{k}: {v}"]
    return out


TOY = toy()


def test_curl_walkthrough(server, made_bucket, tmp):
    """docs/protocol.md's curl walk-through, byte for byte."""
    url = f"{server.endpoint}/{made_bucket}?objectcache="
    status, h, body = curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url,
                                    *TOY, "-H", "x-oc-layout: kv_l2td"],
                           data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
    assert status == 200, body
    status, h, body = curl(server, [*curl_sig(server), url, *TOY, "-H", "x-oc-layout: kv_l2td",
                                    "-H", "x-oc-delivery: layer-major", "-H",
                                    "x-oc-request-id: demo-1"])
    assert status == 200, body
    assert body == b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"
    assert h["x-oc-matched-chunks"] == "2"
    assert h["x-oc-request-id"] == "demo-1"
    assert h["content-length"] == "24"
    status, h, body = curl(server, [*curl_sig(server), url, *TOY, "-H",
                                    "x-oc-delivery: chunk-major"])
    assert body == b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V"
    # The same as a POST body.
    desc = os.path.join(tmp, "descriptor.txt")
    with open(desc, "w") as f:
        f.write("x-oc-version: 1\nx-oc-key-prefix: llama-3.1-8b/\n"
                "x-oc-chunk-hashes: 73915cab52f8c56eb1816a3a2513692d\n"
                "x-oc-chunk-hashes: a5e3d64f612716482e00d38104516b19\n"
                "x-oc-num-layers: 2\nx-oc-chunk-tokens: 4\nx-oc-layer-bytes: 6\n")
    # A descriptor body must be signed (docs/protocol.md, "Signing"): its SHA-256, not
    # UNSIGNED-PAYLOAD.
    digest = hashlib.sha256(open(desc, "rb").read()).hexdigest()
    status, h, body = curl(server, [*curl_sig(server, digest), "-X", "POST", "-H",
                                    "Content-Type: text/plain", "--data-binary", "@" + desc, url])
    assert status == 200 and body == b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"
    # kv_2ltd objects answer the same payload.
    status, _, _ = curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-",
                                 f"{server.endpoint}/{made_bucket}?objectcache=", *[
                                     x.replace("llama-3.1-8b/", "lmcache/") for x in TOY],
                                 "-H", "x-oc-layout: kv_2ltd"],
                        data=b"a0Ka1Ka0Va1Vb0Kb1Kb0Vb1V")
    assert status == 200
    status, h, body = curl(server, [*curl_sig(server), url, *[
        x.replace("llama-3.1-8b/", "lmcache/") for x in TOY], "-H", "x-oc-layout: kv_2ltd"])
    assert body == b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"


def test_bad_descriptors_are_clean_errors(server, made_bucket, tmp):
    url = f"{server.endpoint}/{made_bucket}?objectcache="
    # x-oc-layout is required on a PUT (docs/protocol.md).
    status, _, body = curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url,
                                    *TOY], data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
    assert status == 400 and b"<ArgumentName>x-oc-layout</ArgumentName>" in body, body
    status, _, body = curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url,
                                    *TOY, "-H", "x-oc-layout: kv_l2td"],
                           data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
    assert status == 200, body
    # A probe ignores the target fields: the GET's header set, even one whose target the GET
    # refuses, gets the probe's answer.
    status, h, body = curl(server, [*curl_sig(server), url.replace("objectcache=",
                                                                   "objectcache=&probe="),
                                    *toy(x_oc_target_connection="00", x_oc_target_length="23")])
    assert status == 200 and h["x-oc-matched-chunks"] == "2", body
    target = dict(x_oc_target_connection="00" * 16, x_oc_target_rkey="00",
                  x_oc_target_address="4096")
    bad = [
        (toy(x_oc_num_layers="4096"), "x-oc-num-layers"),
        (toy(x_oc_layer_bytes="4"), "x-oc-layer-bytes"),  # S not matching the stored chunks
        (toy(**target, x_oc_target_length="23"), "x-oc-target-length"),  # target too small
        (toy(x_oc_version="2"), "x-oc-version"),
    ]
    for headers, field in bad:
        status, h, body = curl(server, [*curl_sig(server), url, *headers])
        assert status == 400, (field, body)
        assert f"<ArgumentName>{field}</ArgumentName>".encode() in body, body
    # Unknown bucket.
    status, _, body = curl(server, [*curl_sig(server), f"{server.endpoint}/no-such-kv?objectcache=",
                                    *TOY])
    assert status == 404 and b"NoSuchBucket" in body
    # A caller that may not read the bucket (anonymous on a private bucket).
    status, _, body = curl(server, [url, *TOY])
    assert status == 403 and b"AccessDenied" in body
    # A connection id the data plane never issued: refused naming it, before any I/O, and the
    # server keeps serving.
    status, _, body = curl(server, [*curl_sig(server), url, *toy(
        x_oc_target_connection="0123456789abcdef0123456789abcdef", x_oc_target_rkey="deadbeef",
        x_oc_target_address="4096", x_oc_target_length="24")])
    assert status == 400, body
    assert b"<ArgumentName>x-oc-target-connection</ArgumentName>" in body, body
    assert b"connect again" in body, body
    assert server.alive()
    status, _, body = curl(server, [*curl_sig(server), url, *TOY])
    assert status == 200 and body == b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"


# The cross-process client of the unit tests (tests/unit/client/data_plane_peer.cc): it
# connects to a data plane, allocates a System V target and publishes connection id, rkey,
# address and length; "die" mode then waits to be killed.
PEER = os.environ.get("OC_DATA_PLANE_PEER_BIN", "")


def discover(server, bucket, sig):
    """The discovery answer: where the bucket's data plane listens."""
    status, h, body = curl(server, [*sig, f"{server.endpoint}/{bucket}?data-plane=&objectcache="])
    assert status == 200, body
    return h["x-oc-data-plane-address"], h["x-oc-data-plane-shm"]


def sysv_entry(rkey):
    """Offset of the 12-byte System V entry of a packed rkey (UCX 1.13: u64 map, memory type,
    then per map bit a length byte and that many bytes), or None."""
    at, md_map = 9, int.from_bytes(rkey[:8], "little")
    while md_map:
        md_map &= md_map - 1
        size = rkey[at]
        if size == 12:
            return at + 1
        at += 1 + size
    return None


class Peer:
    """A data_plane_peer process connected to `address`; its target's fields."""

    def __init__(self, tmp, address, shm, tls="-"):
        self.dir = tempfile.mkdtemp(dir=tmp)
        self.proc = subprocess.Popen([PEER, self.dir, tls, "2", "4096", "die", address, shm],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        path = os.path.join(self.dir, "target")
        deadline = time.time() + 20
        while not os.path.exists(path):
            failed = os.path.join(self.dir, "failed")
            assert not os.path.exists(failed), open(failed).read()
            assert time.time() < deadline, "data_plane_peer did not publish its target"
            time.sleep(0.02)
        self.connection, self.rkey, self.address, self.length = open(path).read().split()

    def headers(self, **changes):
        fields = dict(x_oc_target_connection=self.connection, x_oc_target_rkey=self.rkey,
                      x_oc_target_address=self.address, x_oc_target_length="24")
        fields.update(changes)
        return toy(**fields)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.mark.skipif(not os.path.exists(PEER), reason="data_plane_peer not built")
def test_hostile_targets_never_reach_ucx(server, made_bucket, tmp):
    """Client bytes that UCX would parse (issue 13, trust boundary): a connection the server
    issued, with rkeys of the right length that are not what it packed, are refused naming
    x-oc-target-rkey before UCX sees them; the server stays up and serves the next request,
    and the real target is still written byte-exact."""
    url = f"{server.endpoint}/{made_bucket}?objectcache="
    curl(server, [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url, *TOY, "-H",
                  "x-oc-layout: kv_l2td"], data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
    address, shm = discover(server, made_bucket, curl_sig(server))
    peer = Peer(tmp, address, shm)
    try:
        rkey = bytes.fromhex(peer.rkey)
        garbage = bytes(random.Random(7).getrandbits(8) for _ in range(len(rkey)))
        # The key's System V entry (12 bytes: segment id, address) naming a segment that
        # does not exist: the map and entry sizes are the client's own.
        no_segment = bytearray(rkey)
        sysv_at = sysv_entry(rkey)
        assert sysv_at is not None, peer.rkey
        no_segment[sysv_at:sysv_at + 4] = (0x7ffffff0).to_bytes(4, "little")
        for bad in (garbage, bytes(no_segment), rkey[:-1], b"\x00" * len(rkey)):
            status, _, body = curl(server, [*curl_sig(server), url,
                                            *peer.headers(x_oc_target_rkey=bad.hex())])
            assert status == 400, (bad.hex(), body)
            assert b"<ArgumentName>x-oc-target-rkey</ArgumentName>" in body, body
            assert server.alive()
        status, _, body = curl(server, [*curl_sig(server), url, *TOY])
        assert status == 200 and body == b"a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V"
        # The real target of that connection is written.
        status, h, body = curl(server, [*curl_sig(server), url, *peer.headers()])
        assert status == 200 and h["x-oc-matched-chunks"] == "2", body
    finally:
        peer.stop()
    assert server.alive()


def killed_mid_transfer(server, bucket, keys, n_layers, s, via):
    """Runs `oc get-layers` (64 MiB or more: it prints "oc: <l>/<L> layers" on stderr as layers
    land) and SIGKILLs it at its first progress line, once the transfer has provably started.
    True when the kill came before the client saw the last layer (its last line missing)."""
    proc = subprocess.Popen([OC, "get-layers", "--bucket", bucket, *keys, "--layers",
                             str(n_layers), "--layer-bytes", str(s), "--via", via],
                            env=client_env(server), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    progress = re.compile(rb"^oc: \d+/\d+ layers$", re.M)  # other lines (UCX's) may come first
    seen = b""
    deadline = time.monotonic() + 60
    while not progress.search(seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], max(0, deadline - time.monotonic()))
        chunk = os.read(proc.stderr.fileno(), 4096) if ready else b""
        if not chunk:
            break
        seen += chunk
    started = progress.search(seen) is not None
    proc.send_signal(signal.SIGKILL)
    seen += proc.stderr.read()
    proc.wait()
    assert started, seen  # a layer landed before the kill
    return f"oc: {n_layers}/{n_layers} layers".encode() not in seen


def test_client_killed_mid_transfer_and_concurrent_clients(server, made_bucket, tmp):
    n, n_layers, s, g = 16, 32, 131072, 16  # 64 MiB
    keys = key_args("compact", tmp, n, g, "big/")
    put_chunks(server, made_bucket, tmp, keys, n, n_layers, s, "kv_l2td", 3)
    # Killed once the transfer started. Over HTTP, again until the kill came before the last
    # layer landed; over UCX the client may learn of every layer at once at the end (the
    # layer-ready messages can trail the data), so there only the start is observable.
    killed_mid_transfer(server, made_bucket, keys, n_layers, s, "ucx")
    assert any(killed_mid_transfer(server, made_bucket, keys, n_layers, s, "http")
               for _ in range(5)), "the HTTP client was never killed before the last layer"
    assert server.alive()
    results = [None] * 4

    def one(i):
        d = os.path.join(tmp, f"c{i}")
        os.makedirs(d)
        results[i] = get_layers(server, made_bucket, d, keys, n_layers, s, "kv_l2td",
                                "layer-major", "ucx" if i % 2 else "http")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = expected_payload(n, n, n_layers, s, "layer-major", 3)
    for p, layers, summary, data in results:
        assert summary["matched"] == str(n)
        assert sorted(layers) == list(range(n_layers))
        assert data == want
