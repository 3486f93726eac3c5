"""objectcache's arguments (issue 29): every timeout a caller may pass (int, float, None, numpy
scalars, inf; negative, NaN, not a number) on every call that takes one, each call in a child
process so that a crash is reported with its signal; and every kind of bad buffer on every
call that takes a destination or source buffer, each refused with TypeError (a buffer of the
wrong kind: read-only where it is written, not C-contiguous, not a buffer, a negative size) or
ValueError (a size or offset that does not fit), with nothing written outside the buffer.

Why those two classes: CPython's own calls do the same (socket.recv_into(b"") and
memoryview-taking calls raise TypeError for a read-only or non-contiguous buffer; a size that
does not fit is a ValueError); the package's ValueErrors are objectcache.InvalidArgument,
naming the argument in `field`. Negative sizes, offsets and counts are TypeErrors because the
parameters are unsigned: pybind11 refuses the conversion before the call runs."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import timeout_child
from pyclient_util import PYTHON_DIR, SENTINEL, chunks, client, descriptor, oc

HERE = os.path.dirname(os.path.abspath(__file__))

# -------------------------------------------------------------------------------------------
# Timeouts

TIMEOUT_CALLS = ["Transfer.wait_layer", "Transfer.wait", "Transfer.result", "Future.result",
                 "Future.exception", "Client"]
REFUSED = {"negative int": "ValueError", "negative float": "ValueError", "nan": "ValueError",
           "str": "TypeError", "list": "TypeError"}


def expected_outcome(call, label):
    if call == "Client" and label == "None":
        return "TypeError"  # Client(timeout=) is a number of seconds, with no None
    return REFUSED.get(label, "ok")


@pytest.mark.parametrize("call", TIMEOUT_CALLS)
def test_every_timeout_on_every_call(server, made_bucket, call):
    """A timeout is converted (and checked) before the GIL is released: an int used to be
    converted without the GIL and crash the interpreter (SIGSEGV), a negative one to throw
    without it. Each value runs in a child; the transfer or future stays usable after a
    refused timeout."""
    sh = timeout_child.SHAPE
    prefix = f"timeouts-{call}/"
    d = descriptor("compact", sh["n"], sh["n_layers"], sh["s"], sh["g"], prefix)
    client(server).put_chunks(made_bucket, d, chunks(sh["n"], sh["n_layers"], sh["s"], 29))\
        .raise_for_status()
    env = dict(os.environ, OC_PYTHON_DIR=PYTHON_DIR, OC_TEST_ENDPOINT=server.endpoint,
               OC_TEST_ACCESS_KEY=server.access_key, OC_TEST_SECRET_KEY=server.secret_key,
               OC_TEST_BUCKET=made_bucket, OC_TEST_PREFIX=prefix)
    p = subprocess.run([sys.executable, os.path.join(HERE, "timeout_child.py"), call], env=env,
                       capture_output=True, timeout=300)
    lines = [json.loads(x) for x in p.stdout.decode().splitlines()]
    started = [x["start"] for x in lines if "start" in x]
    if p.returncode < 0:
        value = started[-1] if started else "?"
        pytest.fail(f"{call}(timeout={value}) killed the interpreter with "
                    f"{signal.Signals(-p.returncode).name}\n{p.stderr.decode()[-3000:]}")
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    got = {x["case"]: x["outcome"] for x in lines if "case" in x}
    want = {label: expected_outcome(call, label) for label, _ in timeout_child.VALUES}
    assert got == want


def test_a_refused_timeout_names_its_field(server):
    with pytest.raises(oc.InvalidArgument) as e:
        oc.Client(server.endpoint, timeout=-1.0)
    assert e.value.field == "timeout" and isinstance(e.value, ValueError)
    with pytest.raises(oc.InvalidArgument) as e:
        oc.Client(server.endpoint, timeout=float("nan"))
    assert e.value.field == "timeout"


# -------------------------------------------------------------------------------------------
# Buffers

N, L, S = 2, 4, 64  # 2 chunks of 4 layers of 64 bytes: 512 payload bytes
PAYLOAD = N * L * S


def bad_buffers(size):
    """(kind, make(size) -> (buffer, the object to check for stray writes), error class) for a
    buffer of `size` bytes that no call may write into or accept."""
    def readonly_numpy(n):
        a = np.full(n, SENTINEL, np.uint8)
        a.setflags(write=False)
        return a, a

    def view_of(n, cut):  # a contiguous view of `cut` bytes of a larger sentinel array
        big = np.full(n + 64, SENTINEL, np.uint8)
        return big[:cut], big

    return [
        ("bytes", lambda n: (bytes(n), None), TypeError),
        ("read-only memoryview", lambda n: (memoryview(bytearray(n)).toreadonly(), None),
         TypeError),
        ("numpy writeable=False", readonly_numpy, TypeError),
        ("numpy with a step", _strided, TypeError),
        ("memoryview with a step", lambda n: (memoryview(bytearray(2 * n))[::2], None),
         TypeError),
        ("Fortran-order numpy", lambda n: _fortran(n), TypeError),
        ("a list", lambda n: ([0] * n, None), TypeError),
        ("a str", lambda n: ("x" * n, None), TypeError),
        ("one byte short", lambda n: view_of(n, n - 1), ValueError),
        ("empty", lambda n: view_of(n, 0), ValueError),
    ]


def _strided(n):
    big = np.full(2 * n, SENTINEL, np.uint8)
    return big[::2], big


def _fortran(n):
    a = np.full((2, n // 2), SENTINEL, np.uint8, order="F")
    return a, a


WRITE_KINDS = [k for k, _, _ in bad_buffers(PAYLOAD)]
READ_KINDS = [k for k in WRITE_KINDS if k not in
              ("bytes", "read-only memoryview", "numpy writeable=False")]  # fine to read from


@pytest.fixture(scope="module")
def stored(server):
    """A bucket holding the N chunks of `d` and one plain object of PAYLOAD bytes."""
    c = client(server)
    b = "pybuffers"
    c.create_bucket(b)
    d = descriptor("compact", N, L, S, 4, "buffers/")
    arr = chunks(N, L, S, 31)
    c.put_chunks(b, d, arr).raise_for_status()
    c.put_object(b, "object", arr.tobytes())
    return c, b, d, arr


def calls(c, b, d):
    """Every call that takes a buffer: name -> (call(buffer, **sizes), writes into it)."""
    return {
        "get_layers via=http": (lambda buf, offset=0: c.get_layers(b, d, buf, offset=offset,
                                                                   via="http").wait(), True),
        "get_layers via=ucx": (lambda buf, offset=0: c.get_layers(b, d, buf, offset=offset,
                                                                  via="ucx").wait(), True),
        "get_object_into": (lambda buf, offset=0: c.get_object_into(b, "object", buf, offset,
                                                                    PAYLOAD), True),
        "register_buffer": (lambda buf, offset=0: c.register_buffer(buf).close(), True),
        "put_chunks via=http": (lambda buf, offset=0: c.put_chunks(b, d, buf, offset=offset),
                                False),
        # The server pulls from memory mapped for the data plane, which must be writable.
        "put_chunks via=ucx": (lambda buf, offset=0: c.put_chunks(b, d, buf, offset=offset,
                                                                  via="ucx"), True),
        "put_chunks_async": (lambda buf, offset=0: c.put_chunks_async(b, d, buf, offset=offset)
                             .result(), False),
        "put_object": (lambda buf, offset=0: c.put_object(b, "other", buf), False),
        "put_object_async": (lambda buf, offset=0: c.put_object_async(b, "other", buf)
                             .result(), False),
    }


CALLS = ["get_layers via=http", "get_layers via=ucx", "get_object_into", "register_buffer",
         "put_chunks via=http", "put_chunks via=ucx", "put_chunks_async", "put_object",
         "put_object_async"]
SIZED = {"get_layers via=http", "get_layers via=ucx", "get_object_into", "put_chunks via=http",
         "put_chunks via=ucx", "put_chunks_async"}  # calls that need PAYLOAD bytes


def cases():
    for call in CALLS:
        writes = call in ("get_layers via=http", "get_layers via=ucx", "get_object_into",
                          "register_buffer", "put_chunks via=ucx")
        for kind in (WRITE_KINDS if writes else READ_KINDS):
            if kind in ("one byte short", "empty") and call not in SIZED:
                continue  # any size is a valid object or mapping
            yield pytest.param(call, kind, id=f"{call}-{kind}")


@pytest.mark.parametrize("call,kind", list(cases()))
def test_a_bad_buffer_is_refused(stored, call, kind):
    c, b, d, arr = stored
    run, _ = calls(c, b, d)[call]
    make, error = {k: (m, e) for k, m, e in bad_buffers(PAYLOAD)}[kind]
    buf, watched = make(PAYLOAD)
    before = None if watched is None else watched.copy()
    with pytest.raises(error) as e:
        run(buf)
    if error is TypeError:  # a wrong kind of buffer is not a wrong value
        assert not isinstance(e.value, ValueError), e.value
    else:
        assert isinstance(e.value, oc.InvalidArgument), e.value
    if before is not None:
        np.testing.assert_array_equal(watched, before)  # not a byte written anywhere
    assert c.probe(b, d).matched == N  # the client still works


@pytest.mark.parametrize("call", sorted(SIZED - {"get_object_into"}))
def test_an_offset_past_the_end_is_refused(stored, call):
    c, b, d, arr = stored
    run, _ = calls(c, b, d)[call]
    big = np.full(PAYLOAD + 64, SENTINEL, np.uint8)
    for offset in (65, PAYLOAD + 64, PAYLOAD + 65, 2**64 - 1):
        with pytest.raises(oc.InvalidArgument) as e:
            run(big, offset=offset)
        assert e.value.field in ("buffer", "data"), e.value
        assert (big == SENTINEL).all()
    with pytest.raises(TypeError):  # unsigned: refused before the call
        run(big, offset=-1)


@pytest.mark.parametrize("via", ["ucx", "http"])
def test_a_registered_buffer_too_small_or_closed(stored, via):
    c, b, d, arr = stored
    buf = c.allocate_buffer(PAYLOAD)
    with pytest.raises(oc.InvalidArgument):
        c.get_layers(b, d, buf, offset=1, via=via).wait()
    with pytest.raises(oc.InvalidArgument):
        c.put_chunks(b, d, buf, offset=1, via=via)
    assert buf.in_flight == 0
    c.get_layers(b, d, buf, via=via).wait()  # it still takes a request that fits
    buf.close()
    with pytest.raises(ValueError):  # closed: no bytes to write into, nothing mapped
        c.get_layers(b, d, buf, via=via).wait()
    with pytest.raises(ValueError):
        c.put_chunks(b, d, buf, via=via)
    assert bytes(buf) == b""  # a closed buffer exports nothing


def test_negative_sizes_and_counts_are_refused(stored):
    c, b, d, arr = stored
    out = np.full(PAYLOAD, SENTINEL, np.uint8)
    for call in (lambda: c.get_object_into(b, "object", out, -1, 0),
                 lambda: c.get_object_into(b, "object", out, 0, -1),
                 lambda: c.get_object(b, "object", -1, 0),
                 lambda: c.allocate_buffer(-1),
                 lambda: c.put_chunks(b, d, arr, batch=-1),
                 lambda: oc.Descriptor(["k"], layers=-1, layer_bytes=8),
                 lambda: oc.Descriptor(["k"], layers=1, layer_bytes=-8),
                 lambda: c.list_objects(b, limit=-1)):
        with pytest.raises(TypeError):
            call()
    assert (out == SENTINEL).all()


def test_get_object_into_writes_only_the_buffer(stored):
    c, b, d, arr = stored
    big = np.full(PAYLOAD + 64, SENTINEL, np.uint8)
    # A Range GET longer than the buffer: refused before it is sent.
    with pytest.raises(oc.InvalidArgument) as e:
        c.get_object_into(b, "object", big[:PAYLOAD - 1], 0, PAYLOAD)
    assert e.value.field == "out"
    # The whole object into a buffer one byte short: known from the answer, OutOfRange.
    with pytest.raises(oc.OutOfRange):
        c.get_object_into(b, "object", big[:PAYLOAD - 1])
    assert (big[PAYLOAD - 1:] == SENTINEL).all()
    assert c.get_object_into(b, "object", big[:PAYLOAD]) == PAYLOAD
    assert big[:PAYLOAD].tobytes() == arr.tobytes() and (big[PAYLOAD:] == SENTINEL).all()


def test_token_ids_of_the_wrong_type_or_range(stored):
    ns = oc.namespace_string("m")
    want = oc.chunk_hashes(np.arange(8, dtype=np.uint32), 4, ns)
    # Other integer dtypes, strided arrays and lists are read element by element.
    for tokens in (np.arange(8, dtype=np.int64), np.arange(8, dtype=np.uint16),
                   np.repeat(np.arange(8, dtype=np.uint32), 2)[::2], list(range(8)),
                   np.arange(8, dtype=np.uint32).byteswap().view(">u4")):
        assert oc.chunk_hashes(tokens, 4, ns) == want, tokens
    for tokens in (np.arange(8, dtype=np.float32), [0.5] * 8, "abcdefgh", [b"x"] * 8):
        with pytest.raises(TypeError):
            oc.chunk_hashes(tokens, 4, ns)
        with pytest.raises(TypeError):
            oc.chunk_keys(tokens, 4, ns)
    for tokens in (np.array([-1] * 4, np.int64), [2**32] * 4, [2**70] * 4):
        with pytest.raises(ValueError):
            oc.chunk_hashes(tokens, 4, ns)
