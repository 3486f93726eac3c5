#include "data_plane/ucx_data_plane.h"

#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "data_plane/rkey_check.h"
#include "data_plane/ucx_layer_sink.h"
#include "oc/common/log.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/data_plane_wire.h"
#include "oc/ucx/op_waiter.h"
#include "oc/ucx/owner_token.h"
#include "oc/ucx/socket_address.h"
#include "oc/ucx/status.h"
#include "oc/ucx/transports.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

// Packed rkeys larger than this are refused before they are parsed (the descriptor's own
// limit, Limits::max_target_blob_bytes, is the same by default).
constexpr uint64_t kMaxTargetBlobBytes = 8ull << 10;
// Longest wait at shutdown for the endpoints' closes, and then for the worker's flush.
constexpr std::chrono::milliseconds kTeardownTimeout{5'000};
constexpr uint64_t kMinStagingBytes = 4ull << 10;
constexpr uint64_t kMaxStagingBytes = 1ull << 30;
constexpr uint32_t kMaxStagingBuffers = 1024;
struct SysvMapping {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  int id = -1;  // the segment id (a System V mapping's inode in /proc/self/maps)
};

// The System V segment this process has attached at `local`, or nullopt.
// ucp_rkey_ptr gives the local address of a target UCX attached while unpacking its rkey
// (shared memory) but checks nothing against the segment's size, and the target's length is
// the client's word: writes in place are bounded by the mapping found here instead. Only
// System V segments qualify, since they cannot shrink under the server (a client could
// truncate a POSIX one, and a write past its end faults); /proc/self/maps names their
// mappings "/SYSV<key>".
std::optional<SysvMapping> SysvMappingAt(const void* local) {
  const auto at = reinterpret_cast<uintptr_t>(local);
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) {
    return std::nullopt;
  }
  std::optional<SysvMapping> found;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    SysvMapping m;
    char perms[8] = {};
    unsigned long inode = 0;
    int path_at = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %lu %n", &m.lo, &m.hi, perms,
                    &inode, &path_at) != 4 ||
        at < m.lo || at >= m.hi) {
      continue;
    }
    if (perms[1] == 'w' && perms[3] == 's' && std::strncmp(line + path_at, "/SYSV", 5) == 0 &&
        inode <= static_cast<unsigned long>(INT_MAX)) {
      m.id = static_cast<int>(inode);
      found = m;
    }
    break;
  }
  std::fclose(maps);
  return found;
}

// True if the segment starts with the owner page `want` (ucx::MakeOwnerToken).
bool OwnedBy(const SysvMapping& m, const ucx::OwnerToken& want) {
  return m.hi - m.lo > ucx::kOwnerPageBytes &&
         std::memcmp(reinterpret_cast<const void*>(m.lo), want.data(), want.size()) == 0;
}

}  // namespace

bool SegmentInUse(int id) {
  shmid_ds ds{};
  return id >= 0 && ::shmctl(id, IPC_STAT, &ds) == 0 && ds.shm_nattch >= 2;
}

// A client's target segment attached in this process: the unpacked rkey that keeps it
// attached, and the mapping's bounds. Kept across requests (AttachedTargets), so a buffer
// the client reuses is attached, and its page tables filled, once.
struct UcxDataPlane::Attached {
  Attached(UcxDataPlane& p, std::shared_ptr<Endpoint> ep, ucp_rkey_h rk, SysvMapping m)
      : plane(p), endpoint(std::move(ep)), rkey(rk), lo(m.lo), hi(m.hi), segment(m.id) {}
  ~Attached() {
    if (!plane.endpoints().shut_down()) {  // else destroying the worker released it
      const ucp_rkey_h key = rkey;
      plane.worker().Submit([key] { ucp_rkey_destroy(key); });
    }
  }
  // [address, address + length) of the client as this process writes it, or empty if it
  // leaves the segment's bytes after the owner page.
  MutableByteSpan Span(uint64_t address, uint64_t length) const {
    void* local = nullptr;
    uintptr_t end = 0;
    if (ucp_rkey_ptr(rkey, address, &local) != UCS_OK ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(local), length, &end) ||
        reinterpret_cast<uintptr_t>(local) < lo + ucx::kOwnerPageBytes || end > hi) {
      return {};
    }
    return MutableByteSpan(static_cast<std::byte*>(local), length);
  }

  // Maps `span`'s pages (a Span of this entry) into this process's page tables in one call
  // per run, for writing or for reading, instead of taking one fault per 4 KiB page as they
  // are first touched (on a virtual machine each fault is an exit to the hypervisor: a fresh
  // 470 MiB target took 115,000 faults and 3.9 CPU-s/GB,
  // docs/decisions/data-plane-populate-targets.md). Granules of kGranule wholly inside a span
  // are remembered, so a target the client reuses is populated once, not per request (again
  // over 470 MiB: 7 ms). Advice only: pages it leaves out fault in as before.
  void Populate(ByteSpan span, bool write) const {
    const auto page_bytes = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(span.data()) & ~(page_bytes - 1);
    const uintptr_t end = reinterpret_cast<uintptr_t>(span.data()) + span.size();
    const uint8_t want = write ? kWrite : kRead;
    std::vector<std::pair<uintptr_t, uintptr_t>> runs;
    {
      std::lock_guard lock(populate_mu);
      for (uintptr_t g = (begin - lo) / kGranule; lo + g * kGranule < end; ++g) {
        const uintptr_t g_begin = lo + g * kGranule;
        const uintptr_t g_end = std::min(hi, g_begin + kGranule);
        if (populated[g] >= want) {
          continue;
        }
        const uintptr_t from = std::max(g_begin, begin);
        const uintptr_t to = std::min(g_end, end);
        if (from == g_begin && to == g_end) {
          populated[g] = want;  // a request meanwhile faults these pages in itself
        }
        if (!runs.empty() && runs.back().second == from) {
          runs.back().second = to;
        } else {
          runs.emplace_back(from, to);
        }
      }
    }
    for (const auto& [from, to] : runs) {
      (void)::madvise(reinterpret_cast<void*>(from), to - from,
                      write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
    }
  }

  static constexpr uintptr_t kGranule = uintptr_t{2} << 20;
  static constexpr uint8_t kRead = 1;   // populated for reading
  static constexpr uint8_t kWrite = 2;  // ...and for writing

  UcxDataPlane& plane;
  const std::shared_ptr<Endpoint> endpoint;
  const ucp_rkey_h rkey;
  const uintptr_t lo;
  const uintptr_t hi;
  const int segment;
  mutable std::mutex populate_mu;
  // Per kGranule of [lo, hi): 0, kRead or kWrite.
  mutable std::vector<uint8_t> populated OC_GUARDED_BY(populate_mu) =
      std::vector<uint8_t>((hi - lo + kGranule - 1) / kGranule, 0);
};

// The most recently used attached targets, by connection id + packed rkey. An entry
// keeps its segment's memory alive, so every lookup, and a sweeper thread every kSweepEvery
// while the server is idle, drops the entries whose client is gone or has freed the buffer
// (the segment's only attachment is ours); at most kCapacity stay.
class UcxDataPlane::AttachedTargets {
 public:
  static constexpr size_t kCapacity = 16;
  static constexpr std::chrono::seconds kSweepEvery{1};

  AttachedTargets() : sweeper_([this] { SweepLoop(); }) {}
  ~AttachedTargets() { Clear(); }

  std::shared_ptr<const Attached> Find(const std::string& key) {
    Entries gone;  // released outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    Sweep(gone);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
    }
    return nullptr;
  }
  void Add(std::string key, std::shared_ptr<const Attached> entry) {
    Entries gone;
    std::lock_guard<std::mutex> lock(mu_);
    Sweep(gone);
    entries_.emplace_front(std::move(key), std::move(entry));
    if (entries_.size() > kCapacity) {
      gone.splice(gone.end(), entries_, std::prev(entries_.end()));
    }
  }
  // Stops the sweeper and drops every entry. Idempotent.
  void Clear() {
    Entries gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      gone.swap(entries_);
    }
    cv_.notify_one();
    if (sweeper_.joinable()) {
      sweeper_.join();
    }
  }

 private:
  using Entries = std::list<std::pair<std::string, std::shared_ptr<const Attached>>>;
  // Moves the entries nobody else uses any more to `gone`. REQUIRES: mu_ held.
  void Sweep(Entries& gone) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      const auto next = std::next(it);
      if (it->second->endpoint->failed() || !SegmentInUse(it->second->segment)) {
        gone.splice(gone.end(), entries_, it);
      }
      it = next;
    }
  }

  void SweepLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, kSweepEvery, [&] { return stop_; })) {
      Entries gone;
      Sweep(gone);
      lock.unlock();
      gone.clear();  // rkeys destroyed outside the lock
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Entries entries_;      // guarded by mu_, most recently used first
  bool stop_ = false;    // guarded by mu_
  std::thread sweeper_;  // last: starts once the members above exist
};

Status DataPlaneOptions::Validate() const {
  if (max_endpoints == 0) {
    return Status::InvalidArgument("data_plane.max_endpoints", "must be positive");
  }
  if (staging_buffers == 0 || staging_buffers > kMaxStagingBuffers) {
    return Status::InvalidArgument("data_plane.staging_buffers",
                                   fmt::format("must be 1..{}", kMaxStagingBuffers));
  }
  if (staging_buffer_bytes < kMinStagingBytes || staging_buffer_bytes > kMaxStagingBytes) {
    return Status::InvalidArgument("data_plane.staging_buffer_bytes", "must be 4KiB..1GiB");
  }
  if (op_timeout.count() <= 0) {
    return Status::InvalidArgument("data_plane.op_timeout", "must be positive");
  }
  return Status::Ok();
}

struct UcxDataPlane::Remote {
  std::shared_ptr<Endpoint> endpoint;
  ucp_rkey_h rkey = nullptr;                 // unpacked for this request (null when `attached`)
  std::shared_ptr<const Attached> attached;  // the target is written in place
  MutableByteSpan direct;                    // with `attached`: the target here
  int segment = -1;  // the target's System V segment when UCX attached it here
};

UcxDataPlane::UcxDataPlane(const DataPlaneOptions& options) : options_(options) {}

Result<std::unique_ptr<UcxDataPlane>> UcxDataPlane::Create(const DataPlaneOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<UcxDataPlane> plane(new UcxDataPlane(options));
  OC_ASSIGN_OR_RETURN(const sockaddr_storage listen,
                      ucx::ParseSocketAddress(options.listen, "data_plane.listen"));
  const std::string transports = ucx::EffectiveTransports(options.transports);
  plane->shared_memory_ = ucx::AllowsSharedMemory(transports);
  ucx::WorkerOptions wopts;
  wopts.transports = ucx::WithConnectionManager(transports);
  wopts.keepalive_interval = options.keepalive_interval;
  wopts.teardown_timeout = kTeardownTimeout;
  OC_ASSIGN_OR_RETURN(plane->worker_, ucx::UcxWorker::Create(wopts));
  OC_ASSIGN_OR_RETURN(plane->pool_, StagingPool::Create(*plane->worker_, options.staging_buffers,
                                                        options.staging_buffer_bytes));
  plane->pinned_ = std::make_unique<ByteBudget>(uint64_t{options.staging_buffers} *
                                                options.staging_buffer_bytes);
  plane->endpoints_ = std::make_unique<EndpointCache>(*plane->worker_, options.max_endpoints,
                                                      plane->shared_memory_);
  plane->attached_ = std::make_unique<AttachedTargets>();
  OC_RETURN_IF_ERROR(plane->Listen(listen));
  plane->worker_->Start();
  kLog.Info(
      "data plane up listen={} transports={} shared_memory={} staging_buffers={} "
      "staging_buffer_bytes={} ordering={} direct_writes={}",
      plane->listen_address_, wopts.transports.empty() ? "ucx-default" : wopts.transports,
      plane->shared_memory_, options.staging_buffers, options.staging_buffer_bytes,
      options.ordering == LayerOrdering::kFlush ? "flush" : "fence", options.direct_writes);
  return plane;
}

UcxDataPlane::~UcxDataPlane() {
  if (worker_ == nullptr) {
    return;
  }
  // Teardown order: callbacks touch the cache and the pool, so no callback may run once they
  // go. Stop progress; close the cached endpoints with a flush, progressing until the closes
  // complete (a failed endpoint by force); flush and destroy the worker, which completes
  // (with an error) every request still stuck on a vanished client, running its callback
  // now; then the cache and the pool; the context last, since the pool's memory is mapped
  // with it (docs/decisions/data-plane-orderly-teardown.md).
  copier_.reset();  // every sink has finished: nothing is queued
  worker_->Stop();
  if (listener_ != nullptr) {
    ucp_listener_destroy(listener_);  // no new connection from here on
    listener_ = nullptr;
  }
  attached_->Clear();  // their rkeys are destroyed now, on this thread
  if (endpoints_ != nullptr) {
    (void)endpoints_->Shutdown(kTeardownTimeout);  // late closes: DestroyWorker's flush waits
  }
  worker_->DestroyWorker();  // flushes the worker first; leaks it (logged) if that hangs
  endpoints_.reset();
  pool_.reset();
  worker_.reset();
}

Status UcxDataPlane::Listen(const sockaddr_storage& address) {
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&address);
  params.sockaddr.addrlen = ucx::SocketAddressBytes(address);
  params.conn_handler.cb = [](ucp_conn_request_h request, void* arg) {
    auto* self = static_cast<UcxDataPlane*>(arg);
    self->endpoints_->Accept(self->listener_, request);
  };
  params.conn_handler.arg = this;
  OC_RETURN_IF_ERROR(ucx::FromUcs(ucp_listener_create(worker_->worker(), &params, &listener_),
                                  "ucp_listener_create"));
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  OC_RETURN_IF_ERROR(ucx::FromUcs(ucp_listener_query(listener_, &attr), "ucp_listener_query"));
  listen_address_ = ucx::FormatSocketAddress(attr.sockaddr);
  // The hello of a connecting client: UCX names the endpoint it came on (sent with
  // UCP_AM_SEND_FLAG_REPLY), which is the one Accept created.
  ucp_am_handler_param_t hello{};
  hello.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                     UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hello.id = descriptor::kHelloAmId;
  hello.flags = UCP_AM_FLAG_WHOLE_MSG;
  hello.cb = [](void* arg, const void* header, size_t header_length, void*, size_t,
                const ucp_am_recv_param_t* param) -> ucs_status_t {
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 && param->reply_ep != nullptr) {
      static_cast<EndpointCache*>(arg)->OnHello(
          param->reply_ep, ByteSpan(static_cast<const std::byte*>(header), header_length));
    }
    return UCS_OK;
  };
  hello.arg = endpoints_.get();
  return ucx::FromUcs(ucp_worker_set_am_recv_handler(worker_->worker(), &hello),
                      "ucp_worker_set_am_recv_handler(hello)");
}

Result<UcxDataPlane::Remote> UcxDataPlane::Connect(const descriptor::DataPlaneTarget& target,
                                                   bool in_place) {
  if (target.rkey.empty() || target.rkey.size() > kMaxTargetBlobBytes) {
    return Status::InvalidArgument("x-oc-target-rkey",
                                   fmt::format("must be 1..{} bytes", kMaxTargetBlobBytes));
  }
  uint64_t end = 0;
  if (target.length == 0 || __builtin_add_overflow(target.address, target.length, &end)) {
    return Status::InvalidArgument("x-oc-target-address", "address + length overflows");
  }
  // The connection first (unknown id: 400; another principal's: 403), then the rkey against
  // what that connection's endpoint reaches, all before UCX sees a byte of either.
  Remote remote;
  OC_ASSIGN_OR_RETURN(remote.endpoint, endpoints_->Find(target.connection, target.principal));
  std::string attach_key;
  if (in_place) {
    // A target attached before under this connection and exactly this rkey passed every
    // check below then, and its segment is still the client's (the cache drops it otherwise).
    attach_key.reserve(target.connection.size() + target.rkey.size());
    attach_key.append(reinterpret_cast<const char*>(target.connection.data()),
                      target.connection.size());
    attach_key.append(reinterpret_cast<const char*>(target.rkey.data()), target.rkey.size());
    std::shared_ptr<const Attached> known = attached_->Find(attach_key);
    if (known != nullptr && known->endpoint == remote.endpoint) {
      remote.direct = known->Span(target.address, target.length);
      if (!remote.direct.empty()) {
        remote.segment = known->segment;
        remote.attached = std::move(known);
        return remote;
      }
    }
  }
  OC_ASSIGN_OR_RETURN(CheckedRkey checked,
                      CheckRkey(target.rkey, remote.endpoint->info(), target.address, target.length,
                                remote.endpoint->owner()));
  const ucs_status_t st = worker_->Call([&] {
    ucs_status_t unpacked = UCS_ERR_CONNECTION_RESET;
    (void)remote.endpoint->Post([&](ucp_ep_h ep) {
      unpacked = ucp_ep_rkey_unpack(ep, checked.packed.data(), &remote.rkey);
      return UCS_STATUS_PTR(UCS_OK);
    });
    return unpacked;
  });
  if (remote.endpoint->failed()) {
    if (remote.rkey != nullptr) {
      const ucp_rkey_h key = std::exchange(remote.rkey, nullptr);
      worker_->Submit([key] { ucp_rkey_destroy(key); });
    }
    return Status::Unavailable("data-plane endpoint to the client failed");
  }
  if (st != UCS_OK) {
    return Status::InvalidArgument("x-oc-target-rkey",
                                   std::string(ucx::FromUcs(st, "ucp_ep_rkey_unpack").message()));
  }
  void* local = nullptr;
  if (ucp_rkey_ptr(remote.rkey, target.address, &local) == UCS_OK) {
    // UCX attached the target in this process while unpacking: its own puts and gets would
    // then be plain copies into and out of that memory, whatever process it belongs to. So
    // the memory must be a System V segment whose owner page names the requesting
    // connection, for every write mode and for reads, not only for writes in place
    // (docs/decisions/data-plane-attached-targets-own.md).
    // CheckRkey checked the segment before UCX attached it; this checks the mapping UCX made.
    std::optional<SysvMapping> segment = SysvMappingAt(local);
    if (!segment.has_value() || !OwnedBy(*segment, remote.endpoint->owner())) {
      const ucp_rkey_h key = std::exchange(remote.rkey, nullptr);
      worker_->Submit([key] { ucp_rkey_destroy(key); });
      return Status(Code::kPermissionDenied, Subject::kNone, "x-oc-target-rkey",
                    "the rkey names shared memory that the requesting connection does not own");
    }
    remote.segment = segment->id;  // its liveness tells whether the client is there
    if (in_place) {
      auto entry = std::make_shared<const Attached>(*this, remote.endpoint, remote.rkey, *segment);
      remote.rkey = nullptr;  // the entry owns it now
      remote.direct = entry->Span(target.address, target.length);
      if (!remote.direct.empty()) {
        remote.attached = entry;
      }
      attached_->Add(std::move(attach_key), std::move(entry));
      if (remote.attached == nullptr) {
        return Status::InvalidArgument("x-oc-target-length",
                                       "the target is not inside the memory the client mapped");
      }
    }
  }
  return remote;
}

Result<std::unique_ptr<LayerSink>> UcxDataPlane::OpenSink(
    const descriptor::DataPlaneTarget& target) {
  OC_ASSIGN_OR_RETURN(Remote remote, Connect(target, options_.direct_writes));
  if (remote.attached != nullptr) {
    remote.attached->Populate(remote.direct, /*write=*/true);
  }
  return std::unique_ptr<LayerSink>(
      new UcxLayerSink(*this, std::move(remote.endpoint), remote.rkey, target,
                       InPlace{remote.direct, remote.attached, remote.segment}));
}

CopyEngine& UcxDataPlane::copier() {
  std::call_once(copier_once_,
                 [this] { copier_ = std::make_unique<CopyEngine>(options_.copy_threads); });
  return *copier_;
}

Result<std::optional<UcxDataPlane::InPlaceSource>> UcxDataPlane::SourceInPlace(
    const descriptor::DataPlaneTarget& source) {
  OC_ASSIGN_OR_RETURN(Remote remote, Connect(source, /*in_place=*/true));
  if (remote.attached == nullptr) {
    if (remote.rkey != nullptr) {
      const ucp_rkey_h key = remote.rkey;
      worker_->Submit([key] { ucp_rkey_destroy(key); });
    }
    return std::optional<InPlaceSource>();
  }
  remote.attached->Populate(remote.direct, /*write=*/false);
  return std::optional<InPlaceSource>(
      InPlaceSource{std::move(remote.attached), ByteSpan(remote.direct)});
}

Result<StagingBuffer> UcxDataPlane::AcquireStaging() { return pool_->Acquire(options_.op_timeout); }

Status UcxDataPlane::ReadRemote(const descriptor::DataPlaneTarget& source, uint64_t src_offset,
                                const StagingBuffer& into, uint64_t length) {
  if (!pool_->Owns(into)) {
    return Status::InvalidArgument("", "staging buffer not lent by this data plane");
  }
  if (length == 0 || length > into.bytes().size() || src_offset > source.length ||
      length > source.length - src_offset) {
    return Status::OutOfRange(fmt::format("read [{}, +{}) outside the {}-byte source", src_offset,
                                          length, source.length));
  }
  // A source UCX attached here is always read in place: UCX 1.13's get from a System V
  // segment over shared memory never completed (data_plane_test, ReadRemotePullsTheClientsBytes).
  OC_ASSIGN_OR_RETURN(Remote remote, Connect(source, /*in_place=*/true));
  if (remote.attached != nullptr) {
    std::memcpy(into.bytes().data(), remote.direct.data() + src_offset, length);
    return Status::Ok();
  }
  ucx::OpWaiter* waiter = ucx::OpWaiter::New();
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  param.cb.send = &ucx::OpWaiter::OnComplete;
  param.user_data = waiter;
  param.memh = pool_->memh(into.slot());
  // Everything by value: after a timeout this function returns while the task may not have
  // run yet.
  worker_->Submit([endpoint = remote.endpoint, rkey = remote.rkey, dst = into.bytes().data(),
                   length, src = source.address + src_offset, waiter, param] {
    ucs_status_ptr_t sp = endpoint->Post(
        [&](ucp_ep_h ep) { return ucp_get_nbx(ep, dst, length, src, rkey, &param); });
    waiter->Posted(sp);
  });
  // A get is complete locally only when the bytes have arrived (no flush needed).
  const ucs_status_t st = waiter->WaitAndRelease(options_.op_timeout);
  if (st == UCS_ERR_TIMED_OUT) {
    // The get may still land later: keep its rkey alive rather than free it under UCX.
    kLog.Warn("remote read timed out bytes={}; its rkey is leaked", length);
    endpoints_->Fail(*remote.endpoint, "remote read timed out", /*close_now=*/true);
    return Status::Unavailable("data-plane read did not complete in time");
  }
  const ucp_rkey_h key = remote.rkey;
  worker_->Submit([key] { ucp_rkey_destroy(key); });
  if (st != UCS_OK) {
    endpoints_->Fail(*remote.endpoint, ucs_status_string(st), /*close_now=*/false);
  }
  return ucx::FromUcs(st, "ucp_get_nbx");
}

}  // namespace oc::storage
