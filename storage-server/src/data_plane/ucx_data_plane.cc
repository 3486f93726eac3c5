#include "ucx_data_plane.h"

#include <sys/shm.h>

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

#include "oc/common/log.h"
#include "ucx_layer_sink.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

// Worker addresses and packed rkeys larger than this are refused before UCX parses them
// (the descriptor's own limit, Limits::max_target_blob_bytes, is the same by default).
constexpr uint64_t kMaxTargetBlobBytes = 8ull << 10;
// Longest wait at shutdown for the endpoints' closes, and then for the worker's flush.
constexpr std::chrono::milliseconds kTeardownTimeout{5'000};
constexpr uint64_t kMinStagingBytes = 4ull << 10;
constexpr uint64_t kMaxStagingBytes = 1ull << 30;
constexpr uint32_t kMaxStagingBuffers = 1024;
// ucp_ep_rkey_unpack takes no length, so the server unpacks from a zero-padded copy: even a
// key that passes RkeyIsWhole cannot make UCX read past what the client sent.
constexpr size_t kRkeyPadding = 64;

// Walks a packed rkey the way UCX 1.13's ucp_rkey_pack lays it out: a 64-bit little-endian
// map of memory domains, one memory-type byte, then per domain in the map one length byte
// and that many bytes (anything after is an optional trailer). A key that runs out before
// the walk ends is truncated or not an rkey at all; refusing it here keeps UCX from parsing
// it (UCX checks none of this).
bool RkeyIsWhole(ByteSpan rkey) {
  constexpr size_t kFixed = sizeof(uint64_t) + 1;
  if (rkey.size() < kFixed) {
    return false;
  }
  uint64_t md_map = GetLittleEndian64(rkey.data());
  size_t at = kFixed;
  for (; md_map != 0; md_map &= md_map - 1) {
    if (at >= rkey.size()) {
      return false;
    }
    at += 1 + static_cast<size_t>(rkey[at]);
    if (at > rkey.size()) {
      return false;
    }
  }
  return true;
}

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

// True if the segment starts with the owner page of the worker at `worker_address`
// (data_plane::MakeOwnerToken).
bool OwnedBy(const SysvMapping& m, ByteSpan worker_address) {
  const data_plane::OwnerToken want = data_plane::MakeOwnerToken(worker_address);
  return m.hi - m.lo > data_plane::kOwnerPageBytes &&
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
        reinterpret_cast<uintptr_t>(local) < lo + data_plane::kOwnerPageBytes || end > hi) {
      return {};
    }
    return MutableByteSpan(static_cast<std::byte*>(local), length);
  }

  UcxDataPlane& plane;
  const std::shared_ptr<Endpoint> endpoint;
  const ucp_rkey_h rkey;
  const uintptr_t lo;
  const uintptr_t hi;
  const int segment;
};

// The most recently used attached targets, by client worker address + packed rkey. An entry
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
  data_plane::WorkerOptions wopts;
  wopts.transports = options.transports;
  wopts.keepalive_interval = options.keepalive_interval;
  wopts.teardown_timeout = kTeardownTimeout;
  OC_ASSIGN_OR_RETURN(plane->worker_, data_plane::UcxWorker::Create(wopts));
  OC_ASSIGN_OR_RETURN(plane->pool_, StagingPool::Create(*plane->worker_, options.staging_buffers,
                                                        options.staging_buffer_bytes));
  plane->pinned_ = std::make_unique<ByteBudget>(uint64_t{options.staging_buffers} *
                                                options.staging_buffer_bytes);
  plane->endpoints_ = std::make_unique<EndpointCache>(*plane->worker_, options.max_endpoints);
  plane->attached_ = std::make_unique<AttachedTargets>();
  plane->worker_->Start();
  kLog.Info(
      "data plane up transports={} staging_buffers={} staging_buffer_bytes={} ordering={} "
      "direct_writes={}",
      options.transports.empty() ? "ucx-default" : options.transports, options.staging_buffers,
      options.staging_buffer_bytes, options.ordering == LayerOrdering::kFlush ? "flush" : "fence",
      options.direct_writes);
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
  // with it (docs/decisions.md, "Data plane: orderly UCX teardown").
  copier_.reset();  // every sink has finished: nothing is queued
  worker_->Stop();
  attached_->Clear();  // their rkeys are destroyed now, on this thread
  if (endpoints_ != nullptr) {
    (void)endpoints_->Shutdown(kTeardownTimeout);  // late closes: DestroyWorker's flush waits
  }
  worker_->DestroyWorker();  // flushes the worker first; leaks it (logged) if that hangs
  endpoints_.reset();
  pool_.reset();
  worker_.reset();
}

Result<UcxDataPlane::Remote> UcxDataPlane::Connect(const descriptor::DataPlaneTarget& target,
                                                   bool in_place) {
  if (target.worker_address.empty() || target.worker_address.size() > kMaxTargetBlobBytes) {
    return Status::InvalidArgument("x-oc-target-worker",
                                   fmt::format("must be 1..{} bytes", kMaxTargetBlobBytes));
  }
  if (target.rkey.empty() || target.rkey.size() > kMaxTargetBlobBytes) {
    return Status::InvalidArgument("x-oc-target-rkey",
                                   fmt::format("must be 1..{} bytes", kMaxTargetBlobBytes));
  }
  uint64_t end = 0;
  if (target.length == 0 || __builtin_add_overflow(target.address, target.length, &end)) {
    return Status::InvalidArgument("x-oc-target-address", "address + length overflows");
  }
  if (!RkeyIsWhole(target.rkey)) {
    return Status::InvalidArgument("x-oc-target-rkey", "not a whole packed rkey");
  }
  Remote remote;
  OC_ASSIGN_OR_RETURN(remote.endpoint, endpoints_->Get(target.worker_address));
  if (remote.endpoint->failed()) {
    return Status::Unavailable("data-plane endpoint to the client failed");
  }
  std::string attach_key;
  if (in_place) {
    attach_key.reserve(target.worker_address.size() + target.rkey.size());
    attach_key.append(reinterpret_cast<const char*>(target.worker_address.data()),
                      target.worker_address.size());
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
  std::vector<std::byte> padded(target.rkey.size() + kRkeyPadding);
  std::memcpy(padded.data(), target.rkey.data(), target.rkey.size());
  const ucs_status_t st = worker_->Call([&] {
    ucs_status_t unpacked = UCS_ERR_CONNECTION_RESET;
    (void)remote.endpoint->Post([&](ucp_ep_h ep) {
      unpacked = ucp_ep_rkey_unpack(ep, padded.data(), &remote.rkey);
      return UCS_STATUS_PTR(UCS_OK);
    });
    return unpacked;
  });
  if (remote.endpoint->failed()) {
    return Status::Unavailable("data-plane endpoint to the client failed");
  }
  if (st != UCS_OK) {
    return Status::InvalidArgument(
        "x-oc-target-rkey", std::string(data_plane::FromUcs(st, "ucp_ep_rkey_unpack").message()));
  }
  void* local = nullptr;
  if (ucp_rkey_ptr(remote.rkey, target.address, &local) == UCS_OK) {
    // UCX attached the target in this process while unpacking: its own puts and gets would
    // then be plain copies into and out of that memory, whatever process it belongs to. So
    // the memory must be a System V segment whose owner page names the requesting worker,
    // for every write mode and for reads, not only for writes in place
    // (docs/decisions.md, "Data plane: attached targets must be the requester's own").
    std::optional<SysvMapping> segment = SysvMappingAt(local);
    if (!segment.has_value() || !OwnedBy(*segment, target.worker_address)) {
      const ucp_rkey_h key = std::exchange(remote.rkey, nullptr);
      worker_->Submit([key] { ucp_rkey_destroy(key); });
      return Status(Code::kPermissionDenied, Subject::kNone, "x-oc-target-rkey",
                    "the rkey names shared memory that the requesting worker does not own");
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
  return std::unique_ptr<LayerSink>(
      new UcxLayerSink(*this, std::move(remote.endpoint), remote.rkey, target,
                       InPlace{remote.direct, remote.attached, remote.segment}));
}

CopyEngine& UcxDataPlane::copier() {
  std::call_once(copier_once_, [this] { copier_ = std::make_unique<CopyEngine>(); });
  return *copier_;
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
  data_plane::OpWaiter* waiter = data_plane::OpWaiter::New();
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  param.cb.send = &data_plane::OpWaiter::OnComplete;
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
  return data_plane::FromUcs(st, "ucp_get_nbx");
}

}  // namespace oc::storage
