# Type stubs of the objectcache package (its native module, objectcache._native, and the pure
# Python part). The docstrings of __init__.py and the repository's docs/protocol.md describe the
# behaviour; every network call raises an ObjectCacheError subclass.
from typing import Any, Callable, Iterable, Optional, Sequence, Union

# Any C-contiguous object with the buffer protocol (numpy array, bytearray, memoryview, mmap);
# writable where the call writes into it. Another kind is a TypeError, a size that does not fit
# an InvalidArgument (a ValueError); nothing outside the buffer is ever written.
Buffer = Any
# Seconds as an int or a float (numpy scalars too); None: the client's timeout
# (Client(timeout=...)). Negative or NaN is an InvalidArgument (a ValueError).
Seconds = Optional[float]

__version__: str  # the CMake project's VERSION

class ObjectCacheError(Exception):
    code: str  # the client's status code name ("NotFound", "Unavailable", ...)
    s3_code: Optional[str]  # the gateway's S3 error code, None for errors without an answer
    http_status: Optional[int]  # the answer's HTTP status, None without an answer
    request_id: Optional[str]  # the answer's x-amz-request-id, None without one
    timed_out: bool  # a wait passed its timeout; the request may still complete
    field: Optional[str]  # the header or argument at fault
    message: str  # the gateway's <Message>, or the client's own text

class InvalidArgument(ObjectCacheError, ValueError): ...
class OutOfRange(ObjectCacheError, IndexError): ...
class InvalidRange(OutOfRange): ...
class AccessDenied(ObjectCacheError, PermissionError): ...
class AuthenticationError(ObjectCacheError, PermissionError): ...
class NotFound(ObjectCacheError): ...
class NoSuchBucket(NotFound): ...
class NoSuchKey(NotFound): ...
class AlreadyExists(ObjectCacheError): ...
class PreconditionFailed(ObjectCacheError): ...
class Unavailable(ObjectCacheError, ConnectionError): ...
class SlowDown(Unavailable): ...
class Timeout(Unavailable, TimeoutError): ...
class TransportError(ObjectCacheError, OSError): ...
class ResourceExhausted(ObjectCacheError): ...
class Corruption(ObjectCacheError): ...
class Unimplemented(ObjectCacheError, NotImplementedError): ...
class InternalError(ObjectCacheError): ...

def namespace_string(model: str, dtype: str = "bfloat16", tp_rank: int = 0,
                     tp_size: int = 1) -> str:
    """'oc-kv-v1;model=<model>;dtype=<dtype>;tp=<rank>/<size>' (docs/protocol.md, chunk keys)."""
def chunk_hashes(tokens: Union[Buffer, Iterable[int]], chunk_tokens: int,
                 namespace: str) -> list[bytes]:
    """The 16-byte rolling XXH3-128 hash of every full chunk of `tokens` (uint32 ids)."""
def chunk_keys(tokens: Union[Buffer, Iterable[int]], chunk_tokens: int, namespace: str,
               prefix: str = "") -> list[str]:
    """The object names: prefix + 32 lowercase hex digits of each chunk hash."""

class Descriptor:
    """N chunk keys and their shape: bytes keys are compact hashes under `prefix`, str keys
    explicit object names. d[a:b] is the descriptor of chunks a..b-1."""
    def __init__(self, keys: Sequence[Union[bytes, str]], *, layers: int, layer_bytes: int,
                 chunk_tokens: int = 16, layout: str = "kv_l2td",
                 delivery: str = "layer-major", prefix: str = "", request_id: str = "",
                 compute_window_us: Optional[int] = None) -> None: ...
    def __len__(self) -> int: ...
    def __getitem__(self, chunks: slice) -> Descriptor: ...
    num_chunks: int
    layers: int
    layer_bytes: int
    chunk_tokens: int
    layout: str
    delivery: str
    compact: bool
    chunk_bytes: int  # L * S
    payload_bytes: int  # N * L * S
    def object_names(self) -> list[str]: ...

class ProbeResult:
    matched: int  # chunks 0..matched-1 are present
    sizes: list[Optional[int]]  # per key, None when absent
    present: list[bool]

class ObjectInfo:
    key: str
    size: int
    etag: str

class LayersInfo:
    matched: int  # chunks delivered (the leading present ones)
    mode: str  # "chunkwise" or "layerwise"
    request_id: str
    payload_bytes: int  # matched * L * S
    gateway_us: Optional[int]
    storage_us: Optional[int]
    transfer_us: Optional[int]
    via: str  # "ucx" or "http"

class Transfer:
    """One get_layers request in flight. Dropping it waits for the request to end; the buffer
    stays referenced (and pinned) until then."""
    num_layers: int
    via: str
    matched: Optional[int]  # None until done()
    def wait_layer(self, layer: int, timeout: Seconds = None) -> None:
        """Returns once layer `layer` is in the buffer. OutOfRange if the request ended without
        it (a partial hit matching no chunk), Timeout, or the request's error."""
    def wait(self, timeout: Seconds = None) -> LayersInfo:
        """Waits for the end of the request (every per-layer callback has run by then)."""
    def result(self, timeout: Seconds = None) -> LayersInfo: ...
    def done(self) -> bool: ...
    def layers_ready(self) -> int: ...

class Future:
    def done(self) -> bool: ...
    def result(self, timeout: Optional[float] = None) -> Any:
        """The call's result or its exception; Timeout when `timeout` seconds pass first
        (None waits for the end)."""
    def exception(self, timeout: Optional[float] = None) -> Optional[ObjectCacheError]: ...

class RegisteredBuffer:
    """Memory mapped for the data plane (buffer protocol: numpy.frombuffer works)."""
    address: int
    nbytes: int
    owned: bool  # allocated by allocate_buffer (shared memory the server writes in place)
    closed: bool
    in_flight: int
    def close(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> RegisteredBuffer: ...
    def __exit__(self, *args: Any) -> None: ...

class PutResult:
    chunks: int
    bytes: int
    request_ids: list[str]
    status: list[str]  # "stored", "exists" or "failed" per key
    errors: dict[int, ObjectCacheError]
    @property
    def ok(self) -> bool: ...
    def raise_for_status(self) -> PutResult: ...

class Client:
    def __init__(self, endpoint: str, access_key: str = "", secret_key: str = "", *,
                 region: str = "us-east-1", timeout: float = 60.0, ucx_transports: str = "",
                 requests_in_flight: int = 16, sign_payload: bool = False) -> None: ...
    endpoint: str
    timeout: float
    slowdown_retries: int
    def close(self) -> None: ...
    def ping(self, bucket: str) -> None:
        """Connectivity and credentials check: one signed request on `bucket`."""
    # Buffers
    def register_buffer(self, buffer: Buffer) -> RegisteredBuffer: ...
    def allocate_buffer(self, nbytes: int) -> RegisteredBuffer: ...
    # KV chunks (docs/protocol.md)
    def probe(self, bucket: str, descriptor: Descriptor) -> ProbeResult: ...
    def probe_async(self, bucket: str, descriptor: Descriptor) -> Future: ...
    def get_layers(self, bucket: str, descriptor: Descriptor,
                   buffer: Union[Buffer, RegisteredBuffer], *, offset: int = 0,
                   via: str = "auto", on_layer: Optional[Callable[[int], Any]] = None,
                   signal_every: int = 1) -> Transfer:
        """on_layer(l) runs for every `signal_every`-th layer (l = N-1, 2N-1, ...) and the
        last, in order, once layers 0..l are in place; wait_layer is unaffected."""
    def put_chunks(self, bucket: str, descriptor: Descriptor,
                   data: Union[Buffer, RegisteredBuffer], *, offset: int = 0,
                   via: str = "http", if_absent: bool = False, batch: int = 256) -> PutResult: ...
    def put_chunks_async(self, bucket: str, descriptor: Descriptor,
                         data: Union[Buffer, RegisteredBuffer], *, offset: int = 0,
                         via: str = "http", if_absent: bool = False,
                         batch: int = 256) -> Future: ...
    # Plain S3
    def create_bucket(self, bucket: str) -> None: ...
    def put_object(self, bucket: str, key: str, data: Buffer) -> None: ...
    def put_object_async(self, bucket: str, key: str, data: Buffer) -> Future: ...
    def get_object(self, bucket: str, key: str, offset: int = 0, length: int = 0) -> bytes: ...
    def get_object_async(self, bucket: str, key: str, offset: int = 0,
                         length: int = 0) -> Future: ...
    def get_object_into(self, bucket: str, key: str, out: Buffer, offset: int = 0,
                        length: int = 0) -> int:
        """GetObject into `out`: InvalidArgument if it is smaller than `length`, OutOfRange if
        the whole object (length 0) does not fit."""
    def delete_object(self, bucket: str, key: str) -> None: ...
    def delete_object_async(self, bucket: str, key: str) -> Future: ...
    def list_objects(self, bucket: str, prefix: str = "",
                     limit: int = ...) -> list[ObjectInfo]: ...
    def list_objects_async(self, bucket: str, prefix: str = "", limit: int = ...) -> Future: ...

def as_array(buffer: Buffer, dtype: Any = "uint8", shape: Any = None) -> Any: ...
