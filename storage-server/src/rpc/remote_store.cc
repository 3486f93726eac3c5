// RemoteStore: the Store interface over the storage RPC (ConnectRemoteStore in remote_store.h).
//
// Endpoints: each bucket lives on one server, chosen by XXH3-64 (seed 0) of its name modulo
// the number of endpoints, so every gateway with the same endpoint list agrees without
// coordination (changing the list moves buckets: it is a deployment decision). ListBuckets
// and Stats ask every server and merge.
//
// Connections: each call takes a connection from its endpoint's idle pool (checked alive
// first) or opens one (connect + Hello), uses it alone, and gives it back if the call ended
// cleanly; at most max_idle_connections wait per endpoint. A streamed writer or reader owns
// its connection until it ends; a reader dropped before its last byte closes the connection
// rather than draining an unknown amount.
//
// Descriptor calls (ProbeChunks, GetLayers, PutChunks) go to the bucket's server as one call
// each (wire.h kKv*; remote_kv.cc says how their payload moves).
//
// Failures: a broken connection is dropped and the call fails with kUnavailable. A call
// that only reads (and opening a writer, which creates nothing) is retried once on a fresh
// connection when it failed on a pooled one, since a server may have closed that idle
// connection meanwhile; mutations are never retried, because the server may have applied
// them before the connection broke.
//
// The members are spread by concern (remote_store_impl.h); this file holds placement, the
// calls that ask every server and ConnectRemoteStore.

#include <algorithm>
#include <iterator>
#include <map>
#include <random>

#include <fmt/core.h>
#include <xxhash.h>

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

Result<std::vector<BucketInfo>> RemoteStore::ListBuckets() {
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
  // Figures of every server, summed by name.
  std::map<std::string, uint64_t> sums;
  for (const auto& ep : endpoints_) {
    OC_ASSIGN_OR_RETURN(StoreStats s, Unary<StatsCall>(*ep));
    for (auto& [name, value] : s.figures) {
      sums[name] += value;
    }
  }
  StoreStats out;
  out.figures.assign(sums.begin(), sums.end());
  out.figures.emplace_back("remote_endpoints", endpoints_.size());
  return out;
}

}  // namespace rpc

Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<Store>(new rpc::RemoteStore(options));
}

}  // namespace oc::storage
