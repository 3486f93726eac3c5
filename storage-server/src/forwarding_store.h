#pragma once
// ForwardingStore: a Store that runs every call on the store below it. A layer OpenStore puts
// over the composed store (the quota layer, src/quota/) derives from it and overrides only the
// calls it changes, instead of repeating ~20 pass-throughs of its own.
// Thread safety: as Store (the calls are the inner store's).

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/storage/store.h"

namespace oc::storage {

class ForwardingStore : public Store {
 public:
  Store& inner() { return *inner_; }

  Status CreateBucket(std::string_view bucket, std::string_view owner) override {
    return inner_->CreateBucket(bucket, owner);
  }
  Status DeleteBucket(std::string_view bucket) override { return inner_->DeleteBucket(bucket); }
  Result<BucketInfo> HeadBucket(std::string_view bucket) override {
    return inner_->HeadBucket(bucket);
  }
  Result<std::vector<BucketInfo>> ListBuckets() override { return inner_->ListBuckets(); }
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override {
    return inner_->SetBucketLifecycle(bucket, config);
  }
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override {
    return inner_->GetBucketLifecycle(bucket);
  }
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override {
    return inner_->Put(key, options);
  }
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override {
    return inner_->Get(key, range);
  }
  Result<ObjectMeta> Head(const ObjectKey& key) override { return inner_->Head(key); }
  bool SupportsCachedReads() const override { return inner_->SupportsCachedReads(); }
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override {
    return inner_->HeadMany(bucket, names);
  }
  Status Delete(const ObjectKey& key) override { return inner_->Delete(key); }
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override {
    return inner_->DeleteIf(key, expected);
  }
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override {
    return inner_->Copy(src, dst, replace, conditions);
  }
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override {
    return inner_->PutObjectTags(key, tags);
  }
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override {
    return inner_->PutGroup(bucket);
  }
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override {
    return inner_->List(bucket, options);
  }
  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override {
    return inner_->CreateMultipartUpload(key, options);
  }
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override {
    return inner_->UploadPart(key, upload_id, part_number, options);
  }
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& options) override {
    return inner_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override {
    return inner_->AbortMultipartUpload(key, upload_id);
  }
  Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                    uint32_t part_number_marker, uint32_t max_parts) override {
    return inner_->ListParts(key, upload_id, part_number_marker, max_parts);
  }
  Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                 const ListUploadsOptions& options) override {
    return inner_->ListMultipartUploads(bucket, options);
  }
  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override {
    return inner_->ProbeChunks(bucket, d);
  }
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override {
    return inner_->GetLayers(bucket, d, body_sink, on_plan);
  }
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override {
    return inner_->PutChunks(bucket, d, body);
  }
  BoundedExecutor* descriptor_executor() override { return inner_->descriptor_executor(); }
  Result<DataPlaneInfo> DataPlane(std::string_view bucket) override {
    return inner_->DataPlane(bucket);
  }
  StoreIdentity identity() const override { return inner_->identity(); }
  Result<StoreStats> Stats() override { return inner_->Stats(); }

 protected:
  // REQUIRES: inner != null.
  explicit ForwardingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

  std::unique_ptr<Store> inner_;
};

}  // namespace oc::storage
