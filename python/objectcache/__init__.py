"""objectcache: ObjectCache's KV-cache tier for Python serving stacks, over liboc_client.

    import numpy as np, objectcache as oc
    client = oc.Client("http://127.0.0.1:9000", access_key, secret_key)
    ns = oc.namespace_string("meta-llama/Llama-3.1-8B", "bfloat16")
    d = oc.Descriptor(oc.chunk_hashes(tokens, 16, ns), layers=32, layer_bytes=65536,
                      prefix="llama/")
    hit = client.probe("kvcache", d)                 # leading hit count, one round trip
    client.put_chunks("kvcache", d[hit.matched:], kv[hit.matched:])  # the missing chunks
    buf = client.allocate_buffer(d.payload_bytes)    # registered once, reused
    t = client.get_layers("kvcache", d, buf)         # layer by layer over UCX
    for layer in range(d.layers):
        t.wait_layer(layer)                          # ... compute on layer while l+1 arrives
    info = t.wait()                                  # info.matched chunks delivered

Every call that talks to the gateway runs in C++ with the GIL released; get_layers returns at
once with a Transfer, and the other network calls have a *_async form returning a Future
(done(), result(timeout)). Errors are ObjectCacheError subclasses named after the S3 error
families (NoSuchBucket, AccessDenied, SlowDown, Timeout, ...). The wire protocol is the
repository's docs/protocol.md.
"""
from ._version import __version__  # noqa: F401  (written by the CMake configure)
from ._native import (  # noqa: F401  (the public API)
    AccessDenied,
    AlreadyExists,
    AuthenticationError,
    Client,
    Corruption,
    Descriptor,
    Future,
    InternalError,
    InvalidArgument,
    InvalidRange,
    LayersInfo,
    NoSuchBucket,
    NoSuchKey,
    NotFound,
    ObjectCacheError,
    ObjectInfo,
    OutOfRange,
    PreconditionFailed,
    ProbeResult,
    RegisteredBuffer,
    ResourceExhausted,
    SlowDown,
    Timeout,
    Transfer,
    TransportError,
    Unavailable,
    Unimplemented,
    chunk_hashes,
    chunk_keys,
    namespace_string,
)

__all__ = [
    "AccessDenied", "AlreadyExists", "AuthenticationError", "Client", "Corruption",
    "Descriptor", "Future", "InternalError", "InvalidArgument", "InvalidRange", "LayersInfo",
    "NoSuchBucket", "NoSuchKey", "NotFound", "ObjectCacheError", "ObjectInfo", "OutOfRange",
    "PreconditionFailed", "ProbeResult", "PutResult", "RegisteredBuffer", "ResourceExhausted",
    "SlowDown", "Timeout", "Transfer", "TransportError", "Unavailable", "Unimplemented",
    "as_array", "chunk_hashes", "chunk_keys", "namespace_string",
]


class PutResult:
    """What put_chunks did, key by key.

    chunks, bytes: what this call stored. request_ids: one per descriptor PUT sent.
    status[j]: "stored", "exists" (if_absent found it present: the first writer wins) or
    "failed"; errors[j] is the ObjectCacheError of each failed key. A descriptor PUT is all or
    nothing on the server, so keys fail together per PUT (at most `batch` keys each).
    """

    __slots__ = ("chunks", "bytes", "request_ids", "status", "errors")

    def __init__(self, chunks, nbytes, request_ids, status, errors):
        self.chunks = chunks
        self.bytes = nbytes
        self.request_ids = list(request_ids)
        self.status = list(status)
        self.errors = dict(errors)

    @property
    def ok(self):
        """True when no key failed."""
        return not self.errors

    def raise_for_status(self):
        """Raises the first failed key's error, if any; returns self otherwise."""
        if self.errors:
            raise self.errors[min(self.errors)]
        return self

    def __repr__(self):
        counts = {s: self.status.count(s) for s in ("stored", "exists", "failed")}
        return (f"<objectcache.PutResult stored={counts['stored']} exists={counts['exists']} "
                f"failed={counts['failed']}>")


def as_array(buffer, dtype="uint8", shape=None):
    """A numpy view of a buffer (a RegisteredBuffer from allocate_buffer, say): no copy, and
    the view keeps the buffer alive."""
    import numpy
    array = numpy.frombuffer(buffer, dtype=dtype)
    return array if shape is None else array.reshape(shape)
