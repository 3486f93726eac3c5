"""objectcache (issue 18): chunk keys (the protocol's vectors, the C++ client's `oc keys`, and
an independent xxhash implementation), the plain S3 helpers, typed exceptions, the *_async
forms, the examples, and offline pip installs of the package: from the build tree and from the
source tree given the CMake build (one version source: the CMake project's VERSION)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from pyclient_util import PYTHON_DIR, client, oc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OC = os.environ.get("OC_CLI_BIN", "")

# docs/protocol.md, "Test vectors".
VECTORS = [
    ("oc-kv-v1;model=meta-llama/Llama-3.1-8B;dtype=bfloat16;tp=0/1", list(range(10)), 4,
     ["73915cab52f8c56eb1816a3a2513692d", "a5e3d64f612716482e00d38104516b19"]),
    ("oc-kv-v1;model=meta-llama/Llama-3.1-8B;dtype=bfloat16;tp=1/2", list(range(8)), 4,
     ["65e1e993487f2759e5be96eada3bbd59", "0e2c4ccdf5fb510c6cea5925f22472da"]),
    ("oc-kv-v1;model=Qwen/Qwen2.5-7B-Instruct;dtype=float16;tp=0/1",
     [(i * 2654435761) % 2**32 for i in range(48)], 16,
     ["b1c872fa0164a5c2d91a424835dec36a", "af9df182d27025cf48e744834736f8cc",
      "0729b5c8bcc995b578d2afbbdc84a3e4"]),
    ("", [1, 2, 3], 3, ["4f04c277ca3650f088ad89b8862e06c1"]),
]


def test_chunk_keys_match_the_protocol_vectors():
    assert oc.namespace_string("meta-llama/Llama-3.1-8B") == VECTORS[0][0]
    assert oc.namespace_string("meta-llama/Llama-3.1-8B", "bfloat16", 1, 2) == VECTORS[1][0]
    for ns, tokens, g, want in VECTORS:
        assert [h.hex() for h in oc.chunk_hashes(tokens, g, ns)] == want
        assert oc.chunk_hashes(np.array(tokens, dtype=np.uint32), g, ns) == \
            [bytes.fromhex(h) for h in want]
        assert oc.chunk_keys(tokens, g, ns, "p/") == ["p/" + h for h in want]
    with pytest.raises(oc.InvalidArgument):
        oc.namespace_string("m", "Bad-Dtype")
    with pytest.raises(ValueError):
        oc.chunk_hashes([-1], 1, "")


def test_chunk_keys_match_the_cpp_client_and_xxhash():
    import xxhash
    tokens = [int(t) for t in np.random.default_rng(1).integers(0, 2**32, 16 * 37, np.uint64)]
    ns = oc.namespace_string("Qwen/Qwen2.5-7B-Instruct", "float16", 3, 4)
    mine = oc.chunk_keys(tokens, 16, ns, "q/")
    h, ref = xxhash.xxh3_128_digest(ns.encode()), []
    for i in range(len(tokens) // 16):
        h = xxhash.xxh3_128_digest(h + struct.pack("<16I", *tokens[i * 16:(i + 1) * 16]))
        ref.append("q/" + h.hex())
    assert mine == ref
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(" ".join(map(str, tokens)))
        f.flush()
        p = subprocess.run([OC, "keys", "--tokens", f.name, "--chunk-tokens", "16", "--model",
                            "Qwen/Qwen2.5-7B-Instruct", "--dtype", "float16", "--tp", "3/4",
                            "--prefix", "q/"], capture_output=True, text=True, check=True)
    assert p.stdout.split() == mine


def assert_logged_request(server, request_id, op, status, deadline_s=10):
    """`request_id` is the id of a request the gateway logged as `op` answered `status` (its
    access log line follows the answer, so it is waited for)."""
    assert isinstance(request_id, str) and len(request_id) == 16, request_id
    int(request_id, 16)
    line = re.compile(rf"req={request_id} op={op} status={status} ")
    log = os.path.join(server.root, "server.log")
    end = time.monotonic() + deadline_s
    while not line.search(open(log, encoding="utf-8", errors="replace").read()):
        assert time.monotonic() < end, f"{line.pattern!r} not in {log}"
        time.sleep(0.05)


def test_s3_helpers_and_typed_errors(server, made_bucket):
    c = client(server)
    c.ping(made_bucket)
    data = bytes(range(256)) * 40
    c.put_object(made_bucket, "dir/a", data)
    c.put_object(made_bucket, "dir/b", np.frombuffer(b"numpy bytes", np.uint8))
    assert c.get_object(made_bucket, "dir/a") == data
    assert c.get_object(made_bucket, "dir/a", offset=1000, length=24) == data[1000:1024]
    out = bytearray(len(data))
    assert c.get_object_into(made_bucket, "dir/a", out) == len(data) and out == data
    listed = c.list_objects(made_bucket, prefix="dir/")
    assert [(o.key, o.size) for o in listed] == [("dir/a", len(data)), ("dir/b", 11)]
    assert [o.key for o in c.list_objects(made_bucket, limit=1)] == ["dir/a"]
    c.delete_object(made_bucket, "dir/b")
    assert [o.key for o in c.list_objects(made_bucket)] == ["dir/a"]

    with pytest.raises(oc.NoSuchKey) as e:
        c.get_object(made_bucket, "dir/b")
    assert (e.value.s3_code, e.value.http_status, e.value.code) == ("NoSuchKey", 404, "NotFound")
    assert isinstance(e.value, oc.NotFound) and isinstance(e.value, oc.ObjectCacheError)
    assert e.value.timed_out is False
    assert "NoSuchKey" not in e.value.message  # the gateway's <Message>; the code is data
    assert_logged_request(server, e.value.request_id, "GetObject", 404)
    with pytest.raises(oc.NoSuchBucket):
        c.ping("no-such-bucket-here")
    with pytest.raises(oc.InvalidRange):
        c.get_object(made_bucket, "dir/a", offset=len(data) + 10, length=5)
    c.create_bucket(made_bucket)  # its owner re-creating it: 200, as S3 in us-east-1
    bad = oc.Client(server.endpoint, server.access_key, "wrong" * 8)
    with pytest.raises(oc.AuthenticationError) as e:
        bad.ping(made_bucket)
    assert e.value.s3_code == "SignatureDoesNotMatch" and isinstance(e.value, PermissionError)
    assert e.value.http_status == 403 and not e.value.timed_out
    assert_logged_request(server, e.value.request_id, r"\w+", 403)
    with pytest.raises(oc.InvalidArgument) as e:  # refused before sending: names the field
        c.put_chunks(made_bucket, oc.Descriptor(["k"], layers=2, layer_bytes=8), b"short")
    assert e.value.field == "data"
    with pytest.raises(oc.Unavailable) as e:
        oc.Client("http://127.0.0.1:1", "a", "b").ping("x")
    # No answer: nothing of one is made up.
    assert (e.value.s3_code, e.value.http_status, e.value.request_id) == (None, None, None)
    assert e.value.timed_out is False
    with pytest.raises(oc.InvalidArgument):
        oc.Client("ftp://nowhere")


def test_async_forms(server, made_bucket):
    c = client(server)
    d = oc.Descriptor(["async/0", "async/1"], layers=2, layer_bytes=16)
    data = np.arange(d.payload_bytes, dtype=np.uint8)
    put = c.put_chunks_async(made_bucket, d, data)
    assert put.result(timeout=30).ok and put.done()
    probe = c.probe_async(made_bucket, d)
    assert probe.result().matched == 2 and probe.exception() is None
    f = c.put_object_async(made_bucket, "async/x", b"xyz")
    assert f.result() is None
    assert c.get_object_async(made_bucket, "async/x", 1, 2).result() == b"yz"
    missing = c.get_object_async(made_bucket, "async/none")
    assert isinstance(missing.exception(), oc.NoSuchKey)
    with pytest.raises(oc.NoSuchKey):
        missing.result()
    keys = c.list_objects_async(made_bucket, "async/").result()
    assert [o.key for o in keys] == ["async/0", "async/1", "async/x"]
    assert c.delete_object_async(made_bucket, "async/x").result() is None


def example_env(server, bucket):
    env = dict(os.environ)
    env.update(OC_ENDPOINT=server.endpoint, OC_ACCESS_KEY=server.access_key,
               OC_SECRET_KEY=server.secret_key, OC_BUCKET=bucket,
               PYTHONPATH=PYTHON_DIR)
    return env


def test_examples_run(server, made_bucket):
    env = example_env(server, made_bucket)
    p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "serving_node.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert any(line.startswith("probe: matched=0 of ") for line in lines), p.stdout
    assert any(line.startswith("stored ") for line in lines), p.stdout
    arrivals = [line for line in lines if line.startswith("layer ")]
    assert len(arrivals) >= 2 and "verified" in p.stdout, p.stdout
    p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "connector.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "connector sketch: ok" in p.stdout, p.stdout


# S3's bucket-name rule (3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit
# at each end), which the gateway enforces: a name the docs show must be one a newcomer can create.
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def test_examples_and_readme_name_a_bucket_the_gateway_accepts():
    """The bucket the README snippet, the package docstring and the examples use by default
    (OC_BUCKET unset) is one valid name, the same everywhere; `kv` was refused."""
    def read(*path):
        with open(os.path.join(REPO, *path), encoding="utf-8") as f:
            return f.read()
    named = set()
    for path in (("examples", "serving_node.py"), ("examples", "connector.py")):
        text = read(*path)
        named.update(re.findall(r'os\.environ\.get\("OC_BUCKET", "([^"]*)"\)', text))
        named.update(re.findall(r"OC_BUCKET=(\S+)", text))
    for path in (("README.md",), ("python", "objectcache", "__init__.py")):
        named.update(re.findall(r'\.(?:probe|put_chunks|get_layers)\("([^"]*)"', read(*path)))
    assert len(named) == 1, named
    assert all(BUCKET_NAME.fullmatch(name) for name in named), named


def test_offline_pip_install(tmp_path):
    """`pip install ./python` from the build directory, no network, no build isolation: the
    installed copy imports and works without the build tree on sys.path."""
    target = tmp_path / "site"
    # A copy of build/release/python: pip builds in place and would leave build/ and
    # *.egg-info in the build tree.
    shutil.copytree(PYTHON_DIR, tmp_path / "python", ignore=shutil.ignore_patterns(
        "CMakeFiles", "*.cmake", "build", "*.egg-info"))
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                        "--no-build-isolation", "--no-deps", "--target", str(target),
                        "./python"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PIP_NO_CACHE_DIR="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    installed = target / "objectcache"
    assert (installed / "__init__.pyi").exists() and (installed / "py.typed").exists()
    code = ("import objectcache, sys; assert objectcache.__file__.startswith(sys.argv[1]); "
            "print(objectcache.chunk_keys(range(8), 4, objectcache.namespace_string("
            "'meta-llama/Llama-3.1-8B'))[0])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    p = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "73915cab52f8c56eb1816a3a2513692d"


def cmake_project_version(build_dir):
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        m = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(.+)$", f.read(), re.M)
    assert m, "no CMAKE_PROJECT_VERSION in CMakeCache.txt"
    return m.group(1)


def test_pip_install_from_the_source_tree(tmp_path):
    """`pip install ./python` from the repository (a copy of python/ without the module): setup.py
    builds the module through the CMake build named by OC_BUILD_DIR and packages it; the
    version comes from the CMake project, once."""
    build_dir = os.path.dirname(PYTHON_DIR)
    src = tmp_path / "python"
    # A copy of the source directory: pip builds in place and would leave build/ and
    # *.egg-info in the repository.
    shutil.copytree(os.path.join(REPO, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    assert not list(src.glob("objectcache/_native*"))
    assert not (src / "objectcache" / "_version.py").exists()
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                        "--no-build-isolation", "--no-deps", "--target", str(target),
                        "./python"], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, PIP_NO_CACHE_DIR="1",
                                             OC_BUILD_DIR=build_dir))
    assert p.returncode == 0, p.stdout + p.stderr
    version = cmake_project_version(build_dir)
    assert (target / f"objectcache-{version}.dist-info").is_dir(), sorted(os.listdir(target))
    code = ("import objectcache, sys; assert objectcache.__file__.startswith(sys.argv[1]); "
            "print(objectcache.__version__, objectcache.NoSuchKey.__mro__[1].__name__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    p = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [version, "NotFound"]
    # Without a CMake build to take the module from, it says what is missing.
    p = subprocess.run([sys.executable, "setup.py", "--version"], cwd=str(src),
                       capture_output=True, text=True,
                       env=dict(os.environ, OC_BUILD_DIR=str(tmp_path / "nothing")))
    assert p.returncode != 0 and "no CMake build of liboc_client" in p.stderr, p.stderr
