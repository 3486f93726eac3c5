// RemoteStore: the Store interface over the storage RPC (ConnectRemoteStore in remote_store.h).
//
// Placement, chosen once at connect from every server's ServerInfo (remote_store.h;
// docs/decisions/remote-store-shared-placement.md):
// - Partitioned (RocksDB servers, each holding its own data): each bucket lives on one
//   server, chosen by XXH3-64 (seed 0) of its name modulo the number of endpoints, so every
//   gateway with the same endpoint list agrees without coordination. There is no replication
//   and no rebalancing: a lost server loses its buckets, and changing the list moves buckets
//   away from their data. ListBuckets and Stats ask every server and merge.
// - Shared (servers over one RADOS pool and namespace, which all serve every bucket): calls
//   go round-robin over the servers that are available; a call that fails with kUnavailable
//   skips its server for kEndpointRetryDelay, and a call that never reached its server
//   (kNotSentField), or whose Retry in calls.h allows a second run after it was sent (reads,
//   idempotent mutations), is run once more on another server; any other mutation that was
//   sent never is. A stream stays on the server that opened it. A bucket's DataPlane and
//   its descriptor calls with a data-plane target go to the bucket's "home" (the first
//   available server from its hash on), so the client's UCX connection and the calls naming
//   it meet the same data plane.
//
// Connections: each call takes a connection from its endpoint's idle pool (checked alive
// first) or opens one (connect + Hello), uses it alone, and gives it back if the call ended
// cleanly; at most max_idle_connections wait per endpoint. A streamed writer or reader owns
// its connection until it ends; a reader dropped before its last byte closes the connection
// rather than draining an unknown amount.
//
// Descriptor calls (ProbeChunks, GetLayers, PutChunks) go to one server as one call each
// (wire.h kKv*; remote_kv.cc says how their payload moves).
//
// Failures: a broken connection is dropped and the call fails with kUnavailable. A call
// that only reads (and opening a writer, which creates nothing) or an idempotent mutation
// (calls.h, Retry) is retried once on a fresh connection when it failed on a pooled one, since
// a server may have closed that idle connection meanwhile; other mutations are never retried,
// because the server may have applied them before the connection broke.
//
// The members are spread by concern (remote_store_impl.h); this file holds placement, the
// calls that ask every server and ConnectRemoteStore.

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <random>

#include <fmt/core.h>
#include <fmt/format.h>
#include <xxhash.h>

#include "backend_registry.h"
#include "oc/common/log.h"

#include "oc/storage/remote_store.h"
#include "rpc/calls.h"
#include "rpc/remote_store_impl.h"
#include "rpc/wire.h"

namespace oc::storage {

Status RemoteStoreOptions::Validate() const {
  if (endpoints.empty()) {
    return Status::InvalidArgument("endpoints", "at least one storage server is required");
  }
  for (const std::string& e : endpoints) {
    OC_ASSIGN_OR_RETURN(rpc::HostPort hp, rpc::ParseHostPort(e, "endpoints"));
    if (hp.port == 0) {
      return Status::InvalidArgument("endpoints", fmt::format("'{}' has port 0", e));
    }
  }
  if (secret.empty()) {
    return Status::InvalidArgument("secret", "the RPC shared secret (OC_RPC_SECRET) is required");
  }
  if (secret.size() > rpc::kMaxSecretBytes) {
    return Status::InvalidArgument("secret",
                                   fmt::format("longer than {} bytes", rpc::kMaxSecretBytes));
  }
  return Status::Ok();
}

namespace rpc {

RemoteStore::RemoteStore(const RemoteStoreOptions& options) {
  std::random_device rd;
  next_rid_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  for (const std::string& e : options.endpoints) {
    HostPort hp = *ParseHostPort(e, "endpoints");  // checked by Validate()
    endpoints_.push_back(
        std::make_unique<Endpoint>(std::move(hp), options.secret, options.max_idle_connections));
  }
}

Endpoint& RemoteStore::For(std::string_view bucket) {
  const uint64_t h = XXH3_64bits(bucket.data(), bucket.size());
  return *endpoints_[h % endpoints_.size()];
}

namespace {

const Logger kLog{"remote_store"};

bool SameTarget(const StoreIdentity& a, const StoreIdentity& b) {
  return a.backend == b.backend && a.fsid == b.fsid && a.pool == b.pool &&
         a.rados_namespace == b.rados_namespace;
}

// A backend of shared placement (backends.def): its servers serve every bucket. One the
// registry does not know (a newer server's) holds its own data, as a server that does not say.
bool IsShared(const StoreIdentity& id) {
  const BackendInfo* backend = FindBackend(id.backend);
  return backend != nullptr && backend->placement == BackendPlacement::kShared;
}

std::string Describe(const StoreIdentity& id) {
  if (IsShared(id)) {
    return fmt::format("{} fsid={} pool={} namespace='{}'", id.backend, id.fsid, id.pool,
                       id.rados_namespace);
  }
  return id.backend.empty() ? std::string("an unnamed backend") : id.backend;
}

}  // namespace

Result<StoreIdentity> RemoteStore::AskServerInfo(Endpoint& ep) {
  const uint64_t rid = NextRid();
  std::vector<std::byte> frame;
  EncodeRequest<ServerInfoCall>(&frame, rid, {});
  bool reused = false;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> conn, ep.Acquire(rid, &reused));
  Lease lease(&ep, std::move(conn));
  // A server that accepts but does not answer must not hold the gateway's start for the
  // whole I/O timeout.
  lease->set_io_timeout(kConnectTimeout);
  OC_RETURN_IF_ERROR(lease->WriteAll(frame));
  Result<std::vector<std::byte>> body = ReadReply(lease.conn(), Op::kServerInfo, rid);
  lease->set_io_timeout(kIoTimeout);
  if (!body.has_value()) {
    // A server older than ServerInfo answers it as an unknown op and closes the connection
    // (the lease is not returned): it is a RocksDB server.
    if (body.error().code() == Code::kUnimplemented && body.error().field() == "op") {
      return StoreIdentity{"rocksdb", "", "", ""};
    }
    return std::move(body).error();
  }
  lease.MarkClean();
  StoreIdentity id;
  if (Status d = DecodeBody(*body, &id); !d.ok()) {
    return MalformedReply(Op::kServerInfo, d);
  }
  return id;
}

Status RemoteStore::ChoosePlacement() {
  std::vector<std::optional<StoreIdentity>> ids(endpoints_.size());
  std::vector<std::string> shared;  // servers of a shared-placement backend
  std::vector<std::string> others;
  std::string own_backend;  // the first own-data backend heard of
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    Endpoint& ep = *endpoints_[i];
    Result<StoreIdentity> id = AskServerInfo(ep);
    if (!id.has_value()) {
      kLog.Warn("storage server {} did not answer ServerInfo: {}", ep.name(),
                id.error().ToString());
      ep.MarkDown(std::chrono::steady_clock::now());
      continue;
    }
    if (!IsShared(*id) && own_backend.empty()) {
      own_backend = id->backend;
    }
    (IsShared(*id) ? shared : others).push_back(fmt::format("{} ({})", ep.name(), Describe(*id)));
    ids[i] = std::move(*id);
  }
  if (!shared.empty() && !others.empty()) {
    return Status::InvalidArgument(
        "endpoints", fmt::format("storage servers mix backends: {} shared but {}; shared "
                                 "placement needs every server on one shared target",
                                 fmt::join(shared, ", "), fmt::join(others, ", ")));
  }
  if (shared.empty()) {
    placement_ = Placement::kPartitioned;
    if (!others.empty()) {
      identity_ = StoreIdentity{own_backend, "", "", ""};
    }
    kLog.Info("placement=partitioned endpoints={} (each bucket on one server by hash of its name)",
              endpoints_.size());
    return Status::Ok();
  }
  const StoreIdentity* first = nullptr;
  for (const std::optional<StoreIdentity>& id : ids) {
    if (!id.has_value()) {
      continue;
    }
    if (first == nullptr) {
      first = &*id;
    } else if (!SameTarget(*first, *id)) {
      return Status::InvalidArgument(
          "endpoints", fmt::format("storage servers are on different shared targets: {}; shared "
                                   "placement needs one backend, cluster, pool and namespace",
                                   fmt::join(shared, ", ")));
    }
  }
  placement_ = Placement::kShared;
  identity_ = *first;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (ids[i].has_value()) {
      endpoints_[i]->set_membership(Endpoint::Membership::kMember);
    }
  }
  kLog.Info("placement=shared endpoints={} answered={} target=({})", endpoints_.size(),
            shared.size(), Describe(identity_));
  return Status::Ok();
}

bool RemoteStore::Usable(Endpoint& ep, std::chrono::steady_clock::time_point now) {
  switch (ep.membership()) {
    case Endpoint::Membership::kMember:
      return ep.Available(now);
    case Endpoint::Membership::kForeign:
      return false;
    case Endpoint::Membership::kUnknown:
      break;
  }
  if (!ep.Available(now)) {
    return false;
  }
  // Not heard from at connect: it joins once it reports the shared target.
  Result<StoreIdentity> id = AskServerInfo(ep);
  if (!id.has_value()) {
    ep.MarkDown(now);
    return false;
  }
  if (!SameTarget(*id, identity_)) {
    kLog.Error("storage server {} serves {}, not the shared ({}): never used", ep.name(),
               Describe(*id), Describe(identity_));
    ep.set_membership(Endpoint::Membership::kForeign);
    return false;
  }
  kLog.Info("storage server {} joined the shared placement", ep.name());
  ep.set_membership(Endpoint::Membership::kMember);
  return true;
}

Endpoint* RemoteStore::Pick(std::string_view bucket, Route route, const Endpoint* failed) {
  if (placement_ == Placement::kPartitioned) {
    return failed == nullptr ? &For(bucket) : nullptr;
  }
  const size_t n = endpoints_.size();
  const uint64_t start = route == Route::kAny
                             ? next_endpoint_.fetch_add(1, std::memory_order_relaxed)
                             : XXH3_64bits(bucket.data(), bucket.size());
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    Endpoint& ep = *endpoints_[(start + i) % n];
    if (&ep != failed && Usable(ep, now)) {
      return &ep;
    }
  }
  if (failed != nullptr) {
    // A retry and every other server is skipped: the first other member from `start` takes
    // it. A skipped server may be back (a rolling restart stops the next server within the
    // skip of the last one), and a retry that is not tried fails for certain.
    for (size_t i = 0; i < n; ++i) {
      Endpoint& ep = *endpoints_[(start + i) % n];
      if (&ep != failed && ep.membership() == Endpoint::Membership::kMember) {
        return &ep;
      }
    }
    return nullptr;
  }
  // None available: the first member from `start` takes the call, which then reports why.
  for (size_t i = 0; i < n; ++i) {
    Endpoint& ep = *endpoints_[(start + i) % n];
    if (ep.membership() == Endpoint::Membership::kMember) {
      return &ep;
    }
  }
  return endpoints_[start % n].get();
}

Result<std::vector<BucketInfo>> RemoteStore::ListBuckets() {
  if (placement_ == Placement::kShared) {
    return RoutedUnary<ListBucketsCall>("");  // every server lists the same buckets
  }
  std::vector<BucketInfo> all;
  for (const auto& ep : endpoints_) {
    OC_ASSIGN_OR_RETURN(std::vector<BucketInfo> some, Unary<ListBucketsCall>(*ep));
    std::move(some.begin(), some.end(), std::back_inserter(all));
  }
  std::sort(all.begin(), all.end(),
            [](const BucketInfo& a, const BucketInfo& b) { return a.name < b.name; });
  return all;
}

Result<StoreStats> RemoteStore::Stats() {
  // Figures of every server, summed by name. Shared placement: of every member that answers
  // (the data is reachable through any one of them); an error only if none does.
  std::map<std::string, uint64_t> sums;
  uint64_t answered = 0;
  Status last;
  for (const auto& ep : endpoints_) {
    if (placement_ == Placement::kShared && ep->membership() != Endpoint::Membership::kMember) {
      continue;
    }
    Result<StoreStats> s = Unary<StatsCall>(*ep);
    if (!s.has_value()) {
      if (placement_ == Placement::kPartitioned) {
        return std::move(s).error();
      }
      last = s.error();
      continue;
    }
    ++answered;
    for (auto& [name, value] : s->figures) {
      // A quota bucket's figures are each server's view of the whole bucket (its owner's
      // under partitioned placement, everyone's on a shared pool): the largest, not the sum
      // (docs/decisions/bucket-quotas.md).
      if (name.starts_with("quota.")) {
        sums[name] = std::max(sums[name], value);
      } else {
        sums[name] += value;
      }
    }
  }
  if (answered == 0 && !last.ok()) {
    return last;
  }
  StoreStats out;
  out.figures.assign(sums.begin(), sums.end());
  out.figures.emplace_back("remote_endpoints", endpoints_.size());
  out.figures.emplace_back("remote_endpoints_answering", answered);
  return out;
}

}  // namespace rpc

Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  auto store = std::make_unique<rpc::RemoteStore>(options);
  OC_RETURN_IF_ERROR(store->ChoosePlacement());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace oc::storage
