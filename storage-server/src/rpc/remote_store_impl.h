#pragma once
// RemoteStore: the Store interface over the storage RPC (ConnectRemoteStore in
// oc/storage/remote_store.h). Private to oc_storage_rpc_client; its members are defined by
// concern:
//   remote_store.cc    endpoints, bucket placement, the calls that ask every server
//                      (ListBuckets, Stats), ConnectRemoteStore
//   remote_objects.cc  bucket, object and multipart calls; the streamed writer and reader
//   remote_kv.cc       the descriptor calls (ProbeChunks, GetLayers, PutChunks, DataPlane)
// Each unary call is one line over UnaryCall (remote_call.h) with its row of calls.h.
//
// Thread safety: every method may be called concurrently (store.h).

#include <atomic>
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

class RemoteStore final : public Store {
 public:
  explicit RemoteStore(const RemoteStoreOptions& options);

  // --- Buckets (remote_objects.cc; ListBuckets in remote_store.cc) ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;

  // --- Objects (remote_objects.cc) ---
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;

  // --- Multipart (remote_objects.cc) ---
  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override;
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts) override;
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

 private:
  // The server that holds `bucket`: XXH3-64 (seed 0) of its name modulo the endpoint count.
  Endpoint& For(std::string_view bucket);
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
                                const std::optional<PutOptions>& replace);

  // Sends a descriptor call's request frame on a connection of the bucket's server: a
  // pooled one if it looks alive, else a new one.
  Result<Lease> SendKvRequest(std::string_view bucket, Op op, uint64_t rid,
                              const descriptor::Descriptor& d);

  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::atomic<uint64_t> next_rid_{0};
};

}  // namespace oc::storage::rpc
