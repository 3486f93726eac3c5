#pragma once
// The UCX seam shared by both ends of the data plane (docs/design.md, "Data plane"): the one
// translation of ucs_status_t into oc::Status, the data-plane notification wire format
// (docs/protocol.md, "Data plane"), and UcxWorker, a ucp context with one worker driven by a
// dedicated progress thread. The storage server (ucx_layer_sink.cc) and the client library
// (client/src/ucx_receiver.cc) both include this header; it is header-only so that a binary
// linking both (the tests) holds one copy of each symbol. Nothing here is public API.
//
// Threading model: one thread owns the worker. UcxWorker runs a progress thread that is the
// only caller of the worker (UCS_THREAD_MODE_SINGLE): it calls ucp_worker_progress, runs tasks
// other threads hand it with Submit()/Call() (posting puts, creating and closing endpoints,
// mapping memory), and when idle sleeps on the worker's event fd (ucp_worker_arm + poll,
// bounded by kIdlePollMs so a lost wakeup costs at most that). Every completion callback and
// active-message handler therefore runs on that thread too; none may block. Rejected: a
// UCS_THREAD_MODE_MULTI worker posted to from any thread: UCX 1.13 crashed inside its TCP
// progress in about one test run in seven that way (docs/decisions.md).
// Thread safety: every UcxWorker method may be called from any thread.

#include <openssl/sha.h>
#include <poll.h>
#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "oc/common/bytes.h"
#include "oc/common/log.h"
#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::data_plane {

// ---------------------------------------------------------------------------------------
// Status translation: the only place a ucs_status_t becomes an oc::Status.

inline Status FromUcs(ucs_status_t status, std::string_view what) {
  if (status == UCS_OK || status == UCS_INPROGRESS) {
    return Status::Ok();
  }
  std::string message = fmt::format("{}: {}", what, ucs_status_string(status));
  switch (status) {
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
    case UCS_ERR_UNREACHABLE:
      return Status::InvalidArgument("", std::move(message));
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_OUT_OF_RANGE:
      return Status::ResourceExhausted("", std::move(message));
    case UCS_ERR_CANCELED:
      return Status::Cancelled(std::move(message));
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_BUSY:
      return Status::Unavailable(std::move(message));
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED:
      return Status::Unimplemented(std::move(message));
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_MESSAGE_TRUNCATED:
      return Status::IOError(std::move(message));
    default:
      return Status::IOError(std::move(message));
  }
}

// ---------------------------------------------------------------------------------------
// Notification wire format (docs/protocol.md, "Data plane"). One active message per event,
// id kAmId, carrying a fixed 24-byte header as the AM header and, for an error, the message
// text as the AM data. All integers little-endian.
//
//   offset size field
//   0      4    magic "OCDP" (0x4F,0x43,0x44,0x50 on the wire)
//   4      1    version (kWireVersion)
//   5      1    kind: 1 layer-ready, 2 done, 3 error
//   6      1    status code (oc::Code) for error; 0 otherwise
//   7      1    reserved, 0
//   8      8    request key: the target address the descriptor named (x-oc-target-address)
//   16     4    layer index (layer-ready); layers notified (done); 0 (error)
//   20     4    bytes of the error message in the AM data (error); 0 otherwise

// Active message id of every data-plane notification.
inline constexpr unsigned kAmId = 0x0C;
inline constexpr uint32_t kWireVersion = 1;
inline constexpr size_t kHeaderBytes = 24;
// Error text longer than this is cut by the sender and refused by the receiver, so a
// notification always fits an eager active message.
inline constexpr uint32_t kMaxErrorMessageBytes = 1024;
inline constexpr std::array<std::byte, 4> kMagic = {std::byte{'O'}, std::byte{'C'}, std::byte{'D'},
                                                    std::byte{'P'}};

enum class MessageKind : uint8_t { kLayerReady = 1, kDone = 2, kError = 3 };

struct Notification {
  MessageKind kind = MessageKind::kLayerReady;
  Code code = Code::kOk;     // kError only; never kOk for an error
  uint64_t request_key = 0;  // the target address
  uint32_t layer = 0;        // layer index, or layers notified for kDone
  uint32_t message_bytes = 0;
};

inline std::array<std::byte, kHeaderBytes> EncodeNotification(const Notification& n) {
  std::array<std::byte, kHeaderBytes> out{};
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  out[4] = static_cast<std::byte>(kWireVersion);
  out[5] = static_cast<std::byte>(n.kind);
  out[6] = static_cast<std::byte>(n.code);
  out[7] = std::byte{0};
  PutLittleEndian64(n.request_key, out.data() + 8);
  PutLittleEndian32(n.layer, out.data() + 16);
  PutLittleEndian32(n.message_bytes, out.data() + 20);
  return out;
}

// Decodes a header received from the wire; kCorruption on any field out of its range.
inline Result<Notification> DecodeNotification(ByteSpan header) {
  if (header.size() != kHeaderBytes) {
    return Status::Corruption(fmt::format("data-plane header of {} bytes", header.size()));
  }
  if (std::memcmp(header.data(), kMagic.data(), kMagic.size()) != 0) {
    return Status::Corruption("data-plane header: bad magic");
  }
  if (static_cast<uint8_t>(header[4]) != kWireVersion) {
    return Status::Corruption("data-plane header: unknown version");
  }
  Notification n;
  const auto kind = static_cast<uint8_t>(header[5]);
  if (kind < static_cast<uint8_t>(MessageKind::kLayerReady) ||
      kind > static_cast<uint8_t>(MessageKind::kError)) {
    return Status::Corruption("data-plane header: unknown kind");
  }
  n.kind = static_cast<MessageKind>(kind);
  const auto code = static_cast<uint8_t>(header[6]);
  if (code > static_cast<uint8_t>(Code::kInternal) ||
      (n.kind == MessageKind::kError) != (code != 0)) {
    return Status::Corruption("data-plane header: bad status code");
  }
  n.code = static_cast<Code>(code);
  n.request_key = GetLittleEndian64(header.data() + 8);
  n.layer = GetLittleEndian32(header.data() + 16);
  n.message_bytes = GetLittleEndian32(header.data() + 20);
  if (n.message_bytes > kMaxErrorMessageBytes ||
      (n.kind != MessageKind::kError && n.message_bytes != 0)) {
    return Status::Corruption("data-plane header: bad message length");
  }
  return n;
}

// Layer bytes sent as a rendezvous active message (WriteMode::kRendezvous): AM id kDataAmId,
// a 24-byte AM header, the bytes as the AM data (fetched by the receiver into its target).
//   offset size field
//   0      4    magic "OCDD"
//   4      1    version (kWireVersion)
//   5      3    reserved, 0
//   8      8    request key: the target address
//   16     8    offset of the bytes within the target
inline constexpr unsigned kDataAmId = 0x0D;
inline constexpr std::array<std::byte, 4> kDataMagic = {std::byte{'O'}, std::byte{'C'},
                                                        std::byte{'D'}, std::byte{'D'}};

struct DataHeader {
  uint64_t request_key = 0;
  uint64_t offset = 0;
};

inline std::array<std::byte, kHeaderBytes> EncodeDataHeader(const DataHeader& h) {
  std::array<std::byte, kHeaderBytes> out{};
  std::memcpy(out.data(), kDataMagic.data(), kDataMagic.size());
  out[4] = static_cast<std::byte>(kWireVersion);
  PutLittleEndian64(h.request_key, out.data() + 8);
  PutLittleEndian64(h.offset, out.data() + 16);
  return out;
}

inline Result<DataHeader> DecodeDataHeader(ByteSpan header) {
  if (header.size() != kHeaderBytes ||
      std::memcmp(header.data(), kDataMagic.data(), kDataMagic.size()) != 0 ||
      static_cast<uint8_t>(header[4]) != kWireVersion) {
    return Status::Corruption("data-plane data header: bad size, magic or version");
  }
  return DataHeader{GetLittleEndian64(header.data() + 8), GetLittleEndian64(header.data() + 16)};
}

// ---------------------------------------------------------------------------------------
// Completion of one non-blocking operation that a thread waits for with a timeout. The
// callback and the waiter each hold a reference, so a waiter that gives up (timeout) never
// leaves the callback writing into freed memory.

class OpWaiter {
 public:
  static OpWaiter* New() { return new OpWaiter(); }

  // Completion callback for ucp_request_param_t (user_data = the OpWaiter).
  static void OnComplete(void* request, ucs_status_t status, void* user_data) {
    auto* self = static_cast<OpWaiter*>(user_data);
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->status_ = status;
      self->done_ = true;
    }
    self->cv_.notify_all();
    ucp_request_free(request);
    self->Unref();
  }

  // Takes the outcome of ucp_*_nbx: an immediate completion drops the callback's reference.
  void Posted(ucs_status_ptr_t sp) {
    if (!UCS_PTR_IS_PTR(sp)) {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = UCS_PTR_STATUS(sp);
      done_ = true;
      Unref();
    }
  }

  // Waits for completion up to `timeout`; UCS_ERR_TIMED_OUT if it did not come. Drops the
  // waiter's reference: the object must not be used afterwards.
  ucs_status_t WaitAndRelease(std::chrono::milliseconds timeout) {
    ucs_status_t result = UCS_ERR_TIMED_OUT;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, timeout, [&] { return done_; })) {
        result = status_;
      }
    }
    Unref();
    return result;
  }

 private:
  OpWaiter() = default;
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

  std::atomic<int> refs_{2};  // the waiter and the callback
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;             // guarded by mu_
  ucs_status_t status_ = UCS_OK;  // guarded by mu_
};

// ---------------------------------------------------------------------------------------
// UcxWorker: ucp context (RMA + AM + wakeup) with one worker owned by its progress thread.

struct WorkerOptions {
  // UCX transports, as UCX_TLS spells them ("tcp", "shm,cma"...); empty leaves UCX's own
  // configuration (the UCX_TLS environment variable, else every transport the machine has).
  // Default: ""
  std::string transports;
  // Interval of UCX's keepalive on endpoints with peer error handling: how soon a silently
  // vanished peer is noticed; empty keeps UCX's default.
  // Default: ""
  std::string keepalive_interval;
  // Longest wait, at teardown, for the worker's endpoints to flush (DestroyWorker). Past it
  // the worker is leaked rather than destroyed: UCX 1.13 aborts the process when a worker
  // is destroyed with a message still pending on a lane.
  // Default: 5 s
  std::chrono::milliseconds teardown_timeout{5'000};
  // The worker's client_id, sent in the connection requests of endpoints it creates to a
  // listener (handshake.h: kClientIdSharedMemory).
  // Default: 0
  uint64_t client_id = 0;
};

class UcxWorker {
 public:
  // Creates the context and worker and starts the progress thread. kUnimplemented if UCX
  // cannot give a multi-threaded worker; any other UCX failure translated by FromUcs.
  static Result<std::unique_ptr<UcxWorker>> Create(const WorkerOptions& options) {
    std::unique_ptr<UcxWorker> w(new UcxWorker());
    ucp_config_t* config = nullptr;
    OC_RETURN_IF_ERROR(FromUcs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read"));
    Status s;
    if (!options.transports.empty()) {
      s = FromUcs(ucp_config_modify(config, "TLS", options.transports.c_str()),
                  "ucp_config_modify TLS");
    }
    if (s.ok() && !options.keepalive_interval.empty()) {
      s = FromUcs(
          ucp_config_modify(config, "KEEPALIVE_INTERVAL", options.keepalive_interval.c_str()),
          "ucp_config_modify KEEPALIVE_INTERVAL");
    }
    if (s.ok()) {
      ucp_params_t params{};
      params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
      params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
      params.mt_workers_shared = 0;
      s = FromUcs(ucp_init(&params, config, &w->context_), "ucp_init");
    }
    ucp_config_release(config);
    OC_RETURN_IF_ERROR(s);
    w->teardown_timeout_ = options.teardown_timeout;

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_CLIENT_ID;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    wparams.client_id = options.client_id;
    OC_RETURN_IF_ERROR(
        FromUcs(ucp_worker_create(w->context_, &wparams, &w->worker_), "ucp_worker_create"));
    OC_RETURN_IF_ERROR(FromUcs(ucp_worker_get_efd(w->worker_, &w->efd_), "ucp_worker_get_efd"));

    ucp_address_t* address = nullptr;
    size_t address_bytes = 0;
    OC_RETURN_IF_ERROR(FromUcs(ucp_worker_get_address(w->worker_, &address, &address_bytes),
                               "ucp_worker_get_address"));
    const auto* first = reinterpret_cast<const std::byte*>(address);
    w->address_.assign(first, first + address_bytes);
    ucp_worker_release_address(w->worker_, address);
    return w;
  }

  // Starts the progress thread. Until then (and after Stop) the creating thread owns the
  // worker and Submit/Call run tasks inline. Separate from Create so that owners can register
  // active-message handlers and map memory first. REQUIRES: called once.
  void Start() {
    running_.store(true, std::memory_order_release);
    thread_ = std::thread([this] { ProgressLoop(); });
  }

  // Stops the progress thread, then runs any tasks still queued, on the calling thread, which
  // owns the worker from then on: no callback or handler runs any more except inside calls it
  // makes. Owners call it before tearing down what callbacks touch. Idempotent.
  void Stop() {
    stop_.store(true, std::memory_order_release);
    if (thread_.joinable()) {
      Wake();
      thread_.join();
    }
    running_.store(false, std::memory_order_release);
    progress_thread_.store(std::thread::id(), std::memory_order_release);
    RunTasks();
  }

  // Runs `task` on the thread that owns the worker, after every task submitted before it:
  // queued for the progress thread (which is woken), or run now if the caller is that thread
  // or the thread is not running.
  void Submit(std::function<void()> task) {
    if (!running_.load(std::memory_order_acquire) || OnProgressThread()) {
      task();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      tasks_.push_back(std::move(task));
    }
    Wake();
  }

  // Queues `task` for the progress thread's next turn even when called on that thread: how a
  // UCX callback has work done outside any callback (closing endpoints). Tasks queued while
  // the thread is stopped run at the next Stop() or never, when the worker goes first.
  void Defer(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      tasks_.push_back(std::move(task));
    }
    if (running_.load(std::memory_order_acquire)) {
      Wake();
    }
  }

  // Runs `f` on the owning thread as Submit does and waits for its result (f must return a
  // value). Never call it while holding a lock that a callback or task may take.
  template <typename F>
  auto Call(F&& f) -> std::invoke_result_t<F> {
    using R = std::invoke_result_t<F>;
    if (!running_.load(std::memory_order_acquire) || OnProgressThread()) {
      return f();
    }
    std::mutex mu;
    std::condition_variable cv;
    std::optional<R> result;
    Submit([&] {
      R r = f();
      std::lock_guard<std::mutex> lock(mu);
      result.emplace(std::move(r));
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return result.has_value(); });
    return std::move(*result);
  }

  bool OnProgressThread() const {
    return std::this_thread::get_id() == progress_thread_.load(std::memory_order_acquire);
  }

  // Progresses the worker on the calling thread until `done()` or `deadline`; false if the
  // deadline passed first. REQUIRES: the caller owns the worker (after Stop()) and is not
  // inside a UCX callback.
  template <typename Done>
  bool ProgressUntil(Done&& done, std::chrono::steady_clock::time_point deadline) {
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return false;
      }
      (void)ucp_worker_progress(worker_);
    }
    return true;
  }

  // Flushes every endpoint of the worker, those UCX created for peers that connected to it
  // included (their wireup replies), progressing until the flush completes or `deadline`.
  // True once nothing is pending on any lane. REQUIRES: as ProgressUntil.
  bool FlushAll(std::chrono::steady_clock::time_point deadline) {
    bool done = false;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = [](void*, ucs_status_t, void* user_data) {
      *static_cast<bool*>(user_data) = true;
    };
    param.user_data = &done;
    ucs_status_ptr_t sp = ucp_worker_flush_nbx(worker_, &param);
    if (!UCS_PTR_IS_PTR(sp)) {
      return UCS_PTR_STATUS(sp) == UCS_OK;
    }
    if (ProgressUntil([&] { return done; }, deadline)) {
      ucp_request_free(sp);
      return true;
    }
    return false;  // the request still points at `done`: the caller leaks the worker
  }

  // Orderly teardown: stops the progress thread, flushes the worker (FlushAll, bounded by
  // WorkerOptions::teardown_timeout) and destroys it. UCX 1.13 asserts in
  // ucp_worker_destroy when a message is still pending on a lane (a wireup reply on a TCP
  // lane that was still connecting), so a worker that does not flush in time is leaked,
  // logged, instead: nothing progresses it any more, so UCX touches nothing after this.
  // Owners close their own endpoints first (with a flush, progressing until each close
  // completes). The context stays, so memory mapped with it can still be unmapped.
  // Idempotent.
  void DestroyWorker() {
    Stop();
    if (worker_ == nullptr) {
      return;
    }
    if (!FlushAll(std::chrono::steady_clock::now() + teardown_timeout_)) {
      static const Logger kLog{"data_plane"};
      kLog.Error("UCX worker did not flush within {} ms at teardown; leaking it",
                 teardown_timeout_.count());
      worker_ = nullptr;
      leaked_ = true;
      return;
    }
    ucp_worker_destroy(std::exchange(worker_, nullptr));
  }

  ~UcxWorker() {
    DestroyWorker();
    if (context_ != nullptr && !leaked_) {
      ucp_cleanup(context_);
    }
  }
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_context_h context() const { return context_; }
  // REQUIRES: used on the owning thread (inside Submit/Call, a callback, or after Stop).
  ucp_worker_h worker() const { return worker_; }
  // This worker's address, what a peer passes to ucp_ep_create.
  ByteSpan address() const { return address_; }

  // True while the progress thread is inside ucp_worker_progress, i.e. when called from a
  // UCX callback, where progressing the worker again is not allowed. REQUIRES: owning thread.
  bool InCallback() const { return in_progress_; }

  // Makes the progress thread look at its worker and task queue now (ucp_worker_signal is
  // the one worker call UCX allows from any thread).
  void Wake() { (void)ucp_worker_signal(worker_); }

 private:
  // Upper bound on one idle sleep of the progress thread; only matters if a wakeup is lost.
  static constexpr int kIdlePollMs = 50;
  // After the last event the thread keeps polling this long before it sleeps: some
  // completions (shared-memory flushes, CMA) raise no event on the worker's fd, so a thread
  // that slept at once would wait out kIdlePollMs for each of them (measured: ~1 per layer).
  static constexpr std::chrono::microseconds kSpin{200};

  UcxWorker() = default;

  // Runs the queued tasks; true if there were any. The queue and batch_ trade storage, so
  // the idle spin allocates nothing.
  bool RunTasks() {
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (tasks_.empty()) {
        return false;
      }
      batch_.swap(tasks_);
    }
    for (auto& task : batch_) {
      task();
    }
    batch_.clear();
    return true;
  }

  void ProgressLoop() {
    progress_thread_.store(std::this_thread::get_id(), std::memory_order_release);
    auto last_event = std::chrono::steady_clock::now();
    while (!stop_.load(std::memory_order_acquire)) {
      const bool ran = RunTasks();
      in_progress_ = true;
      const unsigned events = ucp_worker_progress(worker_);
      in_progress_ = false;
      if (events != 0 || ran) {
        last_event = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - last_event < kSpin) {
        continue;
      }
      const ucs_status_t armed = ucp_worker_arm(worker_);
      if (armed == UCS_ERR_BUSY) {
        continue;  // events arrived meanwhile
      }
      if (armed != UCS_OK) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      {
        // A task queued before arm may have had its wakeup consumed by it; one queued after
        // signals the fd again.
        std::lock_guard<std::mutex> lock(tasks_mu_);
        if (!tasks_.empty()) {
          continue;
        }
      }
      pollfd pfd{efd_, POLLIN, 0};
      (void)::poll(&pfd, 1, kIdlePollMs);
    }
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  bool leaked_ = false;  // DestroyWorker gave up on the worker: the context stays too
  std::chrono::milliseconds teardown_timeout_{5'000};
  int efd_ = -1;
  std::vector<std::byte> address_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::thread::id> progress_thread_{};
  bool in_progress_ = false;  // progress thread only
  std::thread thread_;
  std::mutex tasks_mu_;
  std::deque<std::function<void()>> tasks_;  // guarded by tasks_mu_
  std::deque<std::function<void()>> batch_;  // the owning thread's: tasks being run
};

// A target that UCX allocates for a client (MappedMemory::Allocate) begins with one page
// naming its owner: the SHA-256 of a domain string and the owning data plane's secret, a
// random value the client sends only to the servers its UCX connects to (HelloMessage), never
// in an HTTP header. A server writes in place, or lets UCX attach the segment at all, only if
// that page names the connection the request's notifications go to, so a client cannot aim
// writes at another client's segment by sending its rkey (docs/decisions.md, "Data plane:
// attached targets must be the requester's own").
inline constexpr uint64_t kOwnerPageBytes = 4096;
inline constexpr size_t kOwnerSecretBytes = 32;
using OwnerSecret = std::array<std::byte, kOwnerSecretBytes>;
using OwnerToken = std::array<std::byte, SHA256_DIGEST_LENGTH>;
inline OwnerToken MakeOwnerToken(const OwnerSecret& secret) {
  static constexpr std::string_view kDomain = "objectcache data-plane target owner v2";
  std::array<unsigned char, kDomain.size() + kOwnerSecretBytes> in{};
  std::memcpy(in.data(), kDomain.data(), kDomain.size());
  std::memcpy(in.data() + kDomain.size(), secret.data(), secret.size());
  OwnerToken token;
  SHA256(in.data(), in.size(), reinterpret_cast<unsigned char*>(token.data()));
  return token;
}

// Maps [data, data + length) for RMA; unmapped on destruction. The packed rkey is what a
// peer needs to reach it. Create and destroy it on the worker's owning thread (UcxWorker::Call).
class MappedMemory {
 public:
  static Result<std::unique_ptr<MappedMemory>> Map(ucp_context_h context, void* data,
                                                   uint64_t length) {
    std::unique_ptr<MappedMemory> m(new MappedMemory(context));
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = data;
    params.length = length;
    OC_RETURN_IF_ERROR(FromUcs(ucp_mem_map(context, &params, &m->memh_), "ucp_mem_map"));
    m->bytes_ = MutableByteSpan(static_cast<std::byte*>(data), length);
    OC_RETURN_IF_ERROR(m->Pack());
    return m;
  }
  // Has UCX allocate `length` bytes for the data plane whose token is `owner` and map them: on
  // one host UCX takes shared memory (UCX_ALLOC_PRIO: System V first), which a peer's UCX
  // attaches when it unpacks the rkey, so a server on the same host can write it in place
  // (UcxDataPlane). The mapping starts with an owner page (OwnerToken) before the bytes.
  // Elsewhere UCX falls back to ordinary pages. The bytes are zeroed and live as long as the
  // mapping.
  static Result<std::unique_ptr<MappedMemory>> Allocate(ucp_context_h context, uint64_t length,
                                                        const OwnerToken& owner) {
    std::unique_ptr<MappedMemory> m(new MappedMemory(context));
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = nullptr;
    params.length = kOwnerPageBytes + length;
    params.flags = UCP_MEM_MAP_ALLOCATE;
    OC_RETURN_IF_ERROR(FromUcs(ucp_mem_map(context, &params, &m->memh_), "ucp_mem_map(allocate)"));
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    OC_RETURN_IF_ERROR(FromUcs(ucp_mem_query(m->memh_, &attr), "ucp_mem_query"));
    if (attr.address == nullptr || attr.length < params.length) {
      return Status::Internal("ucp_mem_map allocated less than asked");
    }
    // Shared-memory and mmap pages come zeroed from the kernel, UCX's heap fallback does not.
    auto* start = static_cast<std::byte*>(attr.address);
    std::memset(start, 0, params.length);
    std::memcpy(start, owner.data(), owner.size());
    m->bytes_ = MutableByteSpan(start + kOwnerPageBytes, length);
    OC_RETURN_IF_ERROR(m->Pack());
    return m;
  }
  ~MappedMemory() {
    if (memh_ != nullptr) {
      (void)ucp_mem_unmap(context_, memh_);
    }
  }
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;

  ucp_mem_h memh() const { return memh_; }
  ByteSpan rkey() const { return rkey_; }
  // The mapped bytes.
  MutableByteSpan bytes() const { return bytes_; }

 private:
  explicit MappedMemory(ucp_context_h context) : context_(context) {}
  Status Pack() {
    void* rkey = nullptr;
    size_t rkey_bytes = 0;
    OC_RETURN_IF_ERROR(
        FromUcs(ucp_rkey_pack(context_, memh_, &rkey, &rkey_bytes), "ucp_rkey_pack"));
    const auto* first = static_cast<const std::byte*>(rkey);
    rkey_.assign(first, first + rkey_bytes);
    ucp_rkey_buffer_release(rkey);
    return Status::Ok();
  }
  ucp_context_h context_;
  ucp_mem_h memh_ = nullptr;
  MutableByteSpan bytes_;
  std::vector<std::byte> rkey_;
};

}  // namespace oc::data_plane
