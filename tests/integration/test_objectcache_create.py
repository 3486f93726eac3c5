"""Descriptor PUT create-if-absent (`x-oc-if-none-match: *`, docs/protocol.md "Descriptor PUT:
create if absent"), end to end over the embedded and the remote store (conftest's `server`);
test_objectcache_rados.py runs the same tests over RADOS.

- `oc put-chunks --if-none-match`, from the body and pulled over UCX: chunks already stored
  keep their bytes and are reported as existing, the others are written.
- Raw requests (curl --aws-sigv4): the `x-oc-existing-chunks` header and the per-chunk body
  lines; the field refused on a GET and with any value but `*`; a PUT without it still
  replaces.
- A race: `oc` processes putting overlapping chunk sets with the option at once all succeed,
  each chunk is reported written by exactly one of them and holds that writer's bytes.
"""
import os
import subprocess

import pytest

from test_objectcache import OC, TOY, client_env, curl, curl_sig, run, tmp  # noqa: F401

pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")

LAYERS = 2
S = 64 << 10  # one layer of one chunk


def chunk(seed, name):
    """One chunk object's bytes (L·S), distinct per seed and name."""
    tag = sum(name.encode()) % 251
    block = bytes((seed * 13 + tag + i) % 251 for i in range(251))
    return (block * (LAYERS * S // 251 + 1))[:LAYERS * S]


def put_args(bucket, tmp, names, seed, if_none_match, via="http"):
    """`oc put-chunks` arguments for `names` with chunk(seed, name) bytes."""
    tag = f"{seed}-{abs(hash(tuple(names)))}"
    names_path = os.path.join(tmp, f"names-{tag}.txt")
    with open(names_path, "w") as f:
        f.write("\n".join(names) + "\n")
    data_path = os.path.join(tmp, f"data-{tag}.bin")
    with open(data_path, "wb") as f:
        f.write(b"".join(chunk(seed, n) for n in names))
    args = ["put-chunks", "--bucket", bucket, "--names", names_path, "--chunk-tokens", "16",
            "--layers", str(LAYERS), "--layer-bytes", str(S), "--layout", "kv_l2td",
            "--data", data_path, "--via", via]
    return args + (["--if-none-match"] if if_none_match else [])


def outcome(stdout):
    """(existing count, per-chunk lines) of `oc put-chunks --if-none-match`'s output."""
    lines = stdout.decode().splitlines()
    summary = dict(kv.split("=", 1) for kv in lines[0].split())
    assert list(summary)[-2:] == ["existing", "put_us"], lines[0]
    return int(summary["existing"]), lines[1:]


def stored(server, bucket, name):
    return server.boto3().get_object(Bucket=bucket, Key=name)["Body"].read()


@pytest.mark.parametrize("via", ["http", "ucx"])
def test_put_chunks_if_none_match_keeps_present_chunks(server, made_bucket, tmp, via):
    names = [f"cli-{via}/{i}" for i in range(4)]
    run(put_args(made_bucket, tmp, [names[1], names[3]], 1, False), env=client_env(server))
    p = run(put_args(made_bucket, tmp, names, 2, True, via), env=client_env(server))
    assert p.stdout.decode().startswith(f"chunks=4 bytes={4 * LAYERS * S} ")
    assert outcome(p.stdout) == (2, ["written", "existing", "written", "existing"])
    for name, seed in zip(names, (2, 1, 2, 1)):
        assert stored(server, made_bucket, name) == chunk(seed, name), name
    # All present now: nothing written, nothing changed.
    p = run(put_args(made_bucket, tmp, names, 3, True, via), env=client_env(server))
    assert outcome(p.stdout) == (4, ["existing"] * 4)
    for name, seed in zip(names, (2, 1, 2, 1)):
        assert stored(server, made_bucket, name) == chunk(seed, name), name
    # Without the flag the chunks are replaced, and the output is the plain summary line.
    p = run(put_args(made_bucket, tmp, names, 4, False, via), env=client_env(server))
    assert len(p.stdout.decode().splitlines()) == 1
    assert "existing" not in p.stdout.decode()
    for name in names:
        assert stored(server, made_bucket, name) == chunk(4, name), name


def test_raw_requests_get_the_existing_chunks_in_header_and_body(server, made_bucket):
    url = f"{server.endpoint}/{made_bucket}?objectcache="
    put = [*curl_sig(server), "-X", "PUT", "--data-binary", "@-", url, *TOY, "-H",
           "x-oc-layout: kv_l2td"]
    status, h, body = curl(server, put + ["-H", "x-oc-if-none-match: *"],
                           data=b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V")
    assert status == 200, body
    assert h["x-oc-existing-chunks"] == "0"
    assert h["content-type"] == "text/plain"
    assert body == b"written\nwritten\n"
    status, h, body = curl(server, put + ["-H", "x-oc-if-none-match: *"],
                           data=b"XXXXXXXXXXXXXXXXXXXXXXXX")
    assert status == 200, body
    assert h["x-oc-existing-chunks"] == "2"
    assert body == b"existing\nexisting\n"
    status, _, body = curl(server, [*curl_sig(server), url, *TOY, "-H",
                                    "x-oc-delivery: chunk-major"])
    assert status == 200 and body == b"a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V"
    # A read has nothing to create; a write condition takes only *.
    status, _, body = curl(server, [*curl_sig(server), url, *TOY, "-H",
                                    "x-oc-if-none-match: *"])
    assert status == 400, body
    assert b"<ArgumentName>x-oc-if-none-match</ArgumentName>" in body
    assert b"applies only to a descriptor PUT" in body
    status, _, body = curl(server, put + ["-H", 'x-oc-if-none-match: "abc"'],
                           data=b"YYYYYYYYYYYYYYYYYYYYYYYY")
    assert status == 400, body
    assert b"<ArgumentName>x-oc-if-none-match</ArgumentName>" in body
    # Without it the PUT replaces and answers as before: no header, no body.
    status, h, body = curl(server, put, data=b"ZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert status == 200 and body == b"" and "x-oc-existing-chunks" not in h
    status, _, body = curl(server, [*curl_sig(server), url, *TOY])
    assert status == 200 and body == b"Z" * 24


def test_racing_put_chunks_if_none_match_have_one_writer_per_chunk(server, made_bucket, tmp):
    writers, chunks = 5, 8
    names = [f"race/{j}" for j in range(chunks)]
    sets = [[names[(w + i) % chunks] for i in range(4)] for w in range(writers)]
    args = [put_args(made_bucket, tmp, sets[w], 100 + w, True) for w in range(writers)]
    env = client_env(server)
    procs = [subprocess.Popen([OC] + a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for a in args]
    outs = [p.communicate(timeout=120) for p in procs]
    writer_of = {}
    for w, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err.decode()
        _, lines = outcome(out)
        assert len(lines) == 4
        for name, line in zip(sets[w], lines):
            if line == "written":
                assert name not in writer_of, f"{name} written by {writer_of[name]} and {w}"
                writer_of[name] = w
    assert sorted(writer_of) == sorted(names)
    for name, w in writer_of.items():
        assert stored(server, made_bucket, name) == chunk(100 + w, name), name
