#pragma once
// The objectcache Python package's native module (_native), over liboc_client: what its two
// sources share. The data path stays in C++: requests run with the GIL released, bytes land in
// caller memory without passing through Python objects, and every Python object a transfer
// needs (its buffer, its callback) is held by a Python-visible object that outlives it.
//
// Lifetimes. Core owns the C++ client, the executor behind the *_async calls and the thread
// that runs per-layer callbacks. Every Python object that can start or hold a request (Client,
// RegisteredBuffer, Transfer, Future) holds a shared_ptr<Core>, and is the only holder of its
// own pinned buffers; tasks on C++ threads hold raw pointers only, and the Python object waits
// for its task in its destructor. So the last reference to Core is always dropped by a Python
// object with the GIL held, and no C++ thread ever releases a Python reference.
// Thread safety: Core's members are safe to use from any thread; the Python objects follow
// Python's rules (the GIL).

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "oc/client/client.h"
#include "oc/common/executor.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"

namespace oc::python {

namespace py = pybind11;

// Raises the objectcache exception `status` maps to (errors.cc, one table: objectcache.Timeout
// when its ErrorInfo says timed_out, else by the S3 code, else by the Status code).
[[noreturn]] void Raise(const Status& status);
// The exception object itself (for Future.exception() and per-key results).
py::object MakeError(const Status& status);

// A Python buffer held for as long as this object lives: the exporter keeps its memory (numpy's
// resize sees the reference and refuses; bytearray refuses to resize an exported buffer). Release()
// needs the GIL; the destructor calls it, so only destroy a PinnedBuffer with the GIL held.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // Kind: PyBUF_WRITABLE or not, always C-contiguous. Raises TypeError, naming the argument
  // `what`, for an object that is not such a buffer (read-only where writable is asked, not
  // C-contiguous, no buffer at all); args.cc.
  PinnedBuffer(const py::handle& object, bool writable, std::string_view what);
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { Release(); }

  void Release();
  bool held() const { return held_; }
  std::byte* data() const { return static_cast<std::byte*>(view_.buf); }
  uint64_t size() const { return static_cast<uint64_t>(view_.len); }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// Runs per-layer callbacks on one thread of its own, in the order layers were reported, so the
// UCX progress thread never waits for the GIL (target_buffer.h: callbacks there must not block).
class CallbackPump {
 public:
  struct Counter {  // one per transfer with a callback
    std::mutex mu;
    std::condition_variable cv;
    uint32_t queued = 0;           // guarded by mu
    uint32_t ran = 0;              // guarded by mu
    PyObject* callback = nullptr;  // a reference owned by the Transfer (touched with the GIL)
  };
  CallbackPump() = default;
  ~CallbackPump();  // REQUIRES: the GIL released (joins the thread, which takes the GIL)
  // Queues callback(layer) of `counter`; never blocks on the GIL.
  void Post(std::shared_ptr<Counter> counter, uint32_t layer);
  // The callback thread (a default id until the first Post).
  std::thread::id thread_id();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<Counter>, uint32_t>> queue_;  // guarded by mu_
  bool stopping_ = false;                                            // guarded by mu_
  std::thread thread_;  // started by the first Post; guarded by mu_
};

class RegisteredBuffer;

struct Core {
  std::unique_ptr<client::Client> client;
  std::unique_ptr<BoundedExecutor> tasks;  // the *_async calls
  CallbackPump pump;
  std::mutex mu;
  // Buffers mapped with register_buffer/allocate_buffer, by start address; guarded by mu.
  std::map<uint64_t, RegisteredBuffer*> registered;
  ~Core();  // REQUIRES: the GIL released
  // The registered buffer holding [address, address + length), or null. REQUIRES: mu held.
  RegisteredBuffer* FindRegistered(uint64_t address, uint64_t length);
};

// Memory mapped for the data plane: the caller's (register_buffer) or UCX-allocated
// (allocate_buffer, shared memory the server writes in place).
class RegisteredBuffer {
 public:
  RegisteredBuffer(std::shared_ptr<Core> core, std::unique_ptr<client::TargetBuffer> target,
                   PinnedBuffer pinned, py::object owner);
  ~RegisteredBuffer();
  // Unmaps; the caller's memory is its own again. Raises if transfers are using it.
  void Close();
  client::TargetBuffer& target();
  bool closed() const { return target_ == nullptr; }
  uint64_t address() const;
  uint64_t size() const;
  bool owned() const { return !pinned_.held(); }
  // Transfers started into or from this buffer and not yet ended (Close refuses while > 0).
  std::atomic<int> in_flight{0};

 private:
  std::shared_ptr<Core> core_;
  std::unique_ptr<client::TargetBuffer> target_;
  PinnedBuffer pinned_;
  py::object owner_;  // the object register_buffer was given; None when allocated
};

// The Python objectcache.Client.
struct PyClient {
  explicit PyClient(std::shared_ptr<Core> c) : core(std::move(c)) {}
  PyClient(PyClient&&) = default;
  PyClient& operator=(PyClient&&) = default;
  ~PyClient();
  std::shared_ptr<Core> core;
};

// Drops a reference to Core with the GIL released (the last one joins threads that may need
// the GIL). REQUIRES: the GIL held.
void DropCore(std::shared_ptr<Core>& core);

// A call running on Core::tasks: done() and result(timeout) from Python. The work runs
// without the GIL and returns a converter that builds the Python result (or raises) once the
// GIL is held again; neither holds a Python object. The Future holds the call's buffers and
// waits for the work in its destructor, so they outlive it.
class Future {
 public:
  using Convert = std::function<py::object()>;
  using Work = std::function<Convert()>;
  // Submits `work`; raises ResourceExhausted if the executor refuses it.
  Future(std::shared_ptr<Core> core, Work work, std::vector<PinnedBuffer> pins,
         py::object keep_alive);
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
  ~Future();
  bool done() const;
  // The result; raises the call's exception, or objectcache.Timeout when `timeout` (seconds;
  // None waits as long as it takes) passes first.
  py::object result(std::optional<double> timeout);
  // The call's exception, None if it succeeded (waits as result does).
  py::object exception(std::optional<double> timeout);

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    bool ready = false;  // guarded by mu
    Convert convert;     // guarded by mu
  };
  // Both with the GIL held; `bound` nullopt waits for the end.
  bool WaitReady(std::optional<std::chrono::milliseconds> bound);
  py::object Result(std::optional<std::chrono::milliseconds> bound);
  std::shared_ptr<Core> core_;
  std::shared_ptr<State> state_;
  std::vector<PinnedBuffer> pins_;
  py::object keep_alive_;
};

// Argument converters (args.cc). Each runs with the GIL held and raises as Python; what they
// return is plain C++, safe to use inside gil_scoped_release.

// A timeout in seconds as pybind11 converted it (an int, a float, None): nullopt for None.
// Raises objectcache.InvalidArgument (a ValueError, field "timeout") when negative or NaN; a
// timeout over kMaxTimeoutSeconds (inf included) waits kMaxTimeoutSeconds.
std::optional<std::chrono::milliseconds> TimeoutArg(std::optional<double> seconds);
// Longest wait: steady_clock::now() plus this many seconds stays far from overflow.
constexpr double kMaxTimeoutSeconds = 1e9;  // about 31 years
// Raises objectcache.InvalidArgument (a ValueError) naming `field` unless `needed` bytes at
// `offset` fit in `size`.
void CheckFits(uint64_t size, uint64_t offset, uint64_t needed, std::string_view field);
// Token ids (uint32) from a C-contiguous uint32 buffer or any iterable of integers. TypeError
// for an element that is not an integer, ValueError for one outside [0, 2**32).
std::vector<uint32_t> Tokens(const py::handle& tokens);
// The exception classes (errors.cc), created once at import.
void CreateErrorClasses(py::module_& m);

// Per-key outcome of put_chunks.
struct PutReport {
  uint64_t chunks = 0;  // stored by this call
  uint64_t bytes = 0;
  std::vector<std::string> request_ids;
  std::vector<std::string> status;                  // per key: "stored", "exists" or "failed"
  std::vector<std::pair<uint64_t, Status>> errors;  // failed keys and why
};

// put_chunks.cc: stores the chunks of `d` from `body` (HTTP) or from `source` at `offset` (UCX
// pull), in runs of at most `batch` keys. Pure C++: runs without the GIL.
PutReport PutChunks(client::Client& cl, const std::string& bucket, const descriptor::Descriptor& d,
                    ByteSpan body, client::TargetBuffer* source, uint64_t offset, bool if_absent,
                    uint64_t batch);

// transfer.cc: binds RegisteredBuffer, Transfer (get_layers' handle), Future and the Client
// methods that start them.
void BindTransfers(py::module_& m, py::class_<PyClient>& client);

// lmcache_binding.cc: ObjectCacheL2Connector, LMCache's native_plugin L2 connector.
void BindLMCache(py::module_& m);

}  // namespace oc::python
