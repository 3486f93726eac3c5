// ComposedStore (composed_store.h): a backend's object calls, forwarded, and the KV engine's
// descriptor calls over the backend's SliceSource.
#include "composed_store.h"

#include <utility>

#include "cache/cache_store.h"
#include "kv/kv_engine.h"
#include "kv/pacing.h"
#include "quota/quota_store.h"

namespace oc::storage {
namespace {

class ComposedStore final : public Store {
 public:
  ComposedStore(std::unique_ptr<Backend> backend, const KvOptions& options)
      : backend_(std::move(backend)), engine_(std::make_unique<kv::KvEngine>(*backend_, options)) {}

  ~ComposedStore() override {
    engine_->Shutdown();  // descriptor tasks still running read the backend: drain them first
    engine_.reset();      // the UCX data plane goes with it
    backend_.reset();     // closes the backend (RocksDB flush, the RADOS connection)
  }

  Backend& backend() { return *backend_; }

  // --- Buckets, objects, multipart: the backend's ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override {
    return backend_->CreateBucket(bucket, owner);
  }
  Status DeleteBucket(std::string_view bucket) override { return backend_->DeleteBucket(bucket); }
  Result<BucketInfo> HeadBucket(std::string_view bucket) override {
    return backend_->HeadBucket(bucket);
  }
  Result<std::vector<BucketInfo>> ListBuckets() override { return backend_->ListBuckets(); }
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override {
    return backend_->SetBucketLifecycle(bucket, config);
  }
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override {
    return backend_->GetBucketLifecycle(bucket);
  }
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override {
    return backend_->Put(key, options);
  }
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override {
    return backend_->Get(key, range);
  }
  Result<ObjectMeta> Head(const ObjectKey& key) override { return backend_->Head(key); }
  bool SupportsCachedReads() const override { return backend_->SupportsCachedReads(); }
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override {
    return backend_->HeadMany(bucket, names);
  }
  Status Delete(const ObjectKey& key) override { return backend_->Delete(key); }
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override {
    return backend_->DeleteIf(key, expected);
  }
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override {
    return backend_->Copy(src, dst, replace, conditions);
  }
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override {
    return backend_->PutObjectTags(key, tags);
  }
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override {
    return backend_->PutGroup(bucket);
  }
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override {
    return backend_->List(bucket, options);
  }
  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override {
    return backend_->CreateMultipartUpload(key, options);
  }
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override {
    return backend_->UploadPart(key, upload_id, part_number, options);
  }
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& options) override {
    return backend_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override {
    return backend_->AbortMultipartUpload(key, upload_id);
  }
  Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                    uint32_t part_number_marker, uint32_t max_parts) override {
    return backend_->ListParts(key, upload_id, part_number_marker, max_parts);
  }
  Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                 const ListUploadsOptions& options) override {
    return backend_->ListMultipartUploads(bucket, options);
  }

  // --- The descriptor calls: the engine's ---
  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override {
    return engine_->ProbeChunks(bucket, d);
  }
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override {
    return engine_->GetLayers(bucket, d, body_sink, on_plan);
  }
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override {
    return engine_->PutChunks(bucket, d, body);
  }
  BoundedExecutor* descriptor_executor() override { return &engine_->executor(); }
  Result<DataPlaneInfo> DataPlane(std::string_view /*bucket*/) override {
    return engine_->DataPlaneInfo();
  }

  // --- Operations ---
  StoreIdentity identity() const override { return backend_->identity(); }
  // The backend's figures, then the scheduler's per active request (kv/pacing.h).
  Result<StoreStats> Stats() override {
    OC_ASSIGN_OR_RETURN(StoreStats stats, backend_->Stats());
    if (engine_->pacing() != nullptr) {
      kv::AppendStatsFigures(engine_->pacing()->Stats(), &stats.figures);
    }
    return stats;
  }

 private:
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<kv::KvEngine> engine_;  // over *backend_; destroyed first
};

}  // namespace

std::unique_ptr<Store> ComposeKvEngine(std::unique_ptr<Backend> backend, const KvOptions& options) {
  return std::make_unique<ComposedStore>(std::move(backend), options);
}

Backend* BackendOf(Store& store) {
  if (Store& inner = InnerOfQuotaStore(store); &inner != &store) {
    return BackendOf(inner);
  }
  if (auto* cached = cache::CacheStoreOf(store)) {
    return BackendOf(cached->inner());
  }
  if (auto* composed = dynamic_cast<ComposedStore*>(&store)) {
    return &composed->backend();
  }
  return dynamic_cast<Backend*>(&store);
}

}  // namespace oc::storage
