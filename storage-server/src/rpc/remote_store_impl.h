#pragma once
// RemoteStore: the Store interface over the storage RPC (ConnectRemoteStore in
// oc/storage/remote_store.h). Private to oc_storage_rpc_client; its members are defined by
// concern:
//   remote_store.cc    endpoints, placement (partitioned or shared, chosen at connect from
//                      every server's ServerInfo), the calls that ask every server
//                      (ListBuckets, Stats), ConnectRemoteStore
//   remote_objects.cc  bucket, object and multipart calls; the streamed writer and reader
//   remote_kv.cc       the descriptor calls (ProbeChunks, GetLayers, PutChunks, DataPlane)
// Each unary call is one line over UnaryCall (remote_call.h) with its row of calls.h.
//
// Thread safety: every method may be called concurrently (store.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/storage/remote_store.h"
#include "oc/storage/store.h"
#include "rpc/calls.h"
#include "rpc/remote_call.h"
#include "rpc/remote_pool.h"

namespace oc::storage::rpc {

// Where calls go (remote_store.h describes both).
enum class Placement {
  kPartitioned,  // each bucket on one server: XXH3-64(bucket) mod N (own-data backends)
  kShared,       // every server serves every bucket: round-robin (servers over one shared
                 // target, e.g. one RADOS pool; backends.def's placement)
};

class RemoteStore final : public Store {
 public:
  explicit RemoteStore(const RemoteStoreOptions& options);

  // Asks every server's ServerInfo and chooses the placement (remote_store.h). Called once,
  // by ConnectRemoteStore, before the store is shared.
  Status ChoosePlacement();
  Placement placement() const { return placement_; }

  // --- Buckets (remote_objects.cc; ListBuckets in remote_store.cc) ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override;
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override;

  // --- Objects (remote_objects.cc) ---
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override;
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;

  // --- Multipart (remote_objects.cc) ---
  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override;
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& options) override;
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override;
  Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                    uint32_t part_number_marker, uint32_t max_parts) override;
  Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                 const ListUploadsOptions& options) override;

  // --- KV-cache descriptor calls (remote_kv.cc) ---
  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override;
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override;
  // The data plane of the storage server that owns the bucket (descriptor requests of a
  // bucket go to that server, which writes the targets with its own data plane).
  Result<DataPlaneInfo> DataPlane(std::string_view bucket) override;
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override;

  // --- Operations (remote_store.cc) ---
  Result<StoreStats> Stats() override;
  // Shared placement: the servers' common identity; partitioned: {the first server's backend}
  // if any server answered ServerInfo, else {}.
  StoreIdentity identity() const override { return identity_; }

 private:
  // Which server a call goes to (remote_store.cc).
  enum class Route {
    kAny,         // shared: the next available server in turn; partitioned: the bucket's
    kBucketHome,  // shared: the first available server from the bucket's hash on, so that a
                  // bucket's DataPlane and its descriptor calls with a target meet the same
                  // data plane; partitioned: the bucket's
  };

  // The server that holds `bucket`: XXH3-64 (seed 0) of its name modulo the endpoint count.
  Endpoint& For(std::string_view bucket);
  // The server for a call on `bucket` under `route`, skipping `failed` (a server the call
  // already failed on), or nullptr if no other is available.
  Endpoint* Pick(std::string_view bucket, Route route, const Endpoint* failed = nullptr);
  // Shared placement: true if `ep` may take calls now (a member not skipped after a failure);
  // asks ServerInfo of a server not heard from yet.
  bool Usable(Endpoint& ep, std::chrono::steady_clock::time_point now);
  // The server's identity: its ServerInfo reply, {"rocksdb"} from a server older than the op.
  Result<StoreIdentity> AskServerInfo(Endpoint& ep);

  // Runs `call` (Endpoint& -> Status or Result<T>) on the server `route` picks. Shared
  // placement: a kUnavailable failure skips that server for a while and runs the call once
  // more on another server if it never reached the server (kNotSentField: a stopped peer
  // refuses the connection) or if `retry` says a second run is safe after it was sent
  // (RepeatableAfterSend, calls.h: reads and idempotent mutations). Any other mutation is run
  // again only when the first server cannot have applied it.
  template <typename F>
  auto Routed(std::string_view bucket, Route route, Retry retry, F&& call)
      -> decltype(call(std::declval<Endpoint&>()));
  // A unary call C on the server for `bucket`, routed as above.
  template <typename C, typename... Args>
  typename C::Return RoutedUnary(std::string_view bucket, const Args&... args) {
    return Routed(bucket, Route::kAny, C::retry,
                  [&](Endpoint& ep) { return Unary<C>(ep, args...); });
  }
  uint64_t NextRid() { return next_rid_.fetch_add(1, std::memory_order_relaxed); }

  // Unary call C on `ep` with the request fields `params` (calls.h, in wire order).
  template <typename C, typename... Args>
  typename C::Return Unary(Endpoint& ep, const Args&... args) {
    return UnaryCall<C>(ep, NextRid(), MakeParams<C>(args...));
  }
  // Opens a streamed writer with call C (PutBeginCall or UploadPartBeginCall).
  template <typename C, typename... Args>
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(Endpoint& ep, const Args&... args);

  Result<ObjectMeta> CopyAcross(const ObjectKey& src, const ObjectKey& dst,
                                const std::optional<PutOptions>& replace,
                                const WriteConditions& conditions);

  // Sends a descriptor call's request frame on a connection of the server it is routed to
  // (remote_kv.cc): a pooled one if it looks alive, else a new one.
  Result<Lease> SendKvRequest(std::string_view bucket, Op op, uint64_t rid,
                              const descriptor::Descriptor& d);
  Result<Lease> SendKvRequestTo(Endpoint& ep, std::string_view bucket, Op op, uint64_t rid,
                                const descriptor::Descriptor& d);

  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::atomic<uint64_t> next_rid_{0};
  // Set by ChoosePlacement, read-only afterwards.
  Placement placement_ = Placement::kPartitioned;
  StoreIdentity identity_;
  // Shared placement's turn counter.
  std::atomic<uint64_t> next_endpoint_{0};
};

// The Status of a call's outcome, for routing decisions.
inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.has_value() ? Status::Ok() : r.error();
}

template <typename F>
auto RemoteStore::Routed(std::string_view bucket, Route route, Retry retry, F&& call)
    -> decltype(call(std::declval<Endpoint&>())) {
  Endpoint* ep = Pick(bucket, route);
  auto r = call(*ep);
  if (placement_ != Placement::kShared || StatusOf(r).code() != Code::kUnavailable) {
    return r;
  }
  ep->MarkDown(std::chrono::steady_clock::now());
  if (!RepeatableAfterSend(retry) && StatusOf(r).field() != kNotSentField) {
    return r;  // the server may have applied it before the connection broke
  }
  Endpoint* other = Pick(bucket, route, ep);
  if (other == nullptr) {
    return r;
  }
  auto again = call(*other);
  if (StatusOf(again).code() == Code::kUnavailable) {
    other->MarkDown(std::chrono::steady_clock::now());
  }
  return again;
}

}  // namespace oc::storage::rpc
