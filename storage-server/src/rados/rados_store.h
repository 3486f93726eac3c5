#pragma once
// RadosStore: the Store backed by one Ceph RADOS pool and namespace through librados' C API
// (target oc_storage_rados, opened by OpenRadosStore in rados_store.h of the public headers).
// Like RocksStore it is also the KV engine's SliceSource (src/kv/slice_source.h) and runs its
// own kv::KvEngine over itself. Any number of processes may open the same pool and namespace:
// they share nothing but the cluster (docs/design.md, "RADOS mapping"; names in rados_keys.h).
// Its parts: rados_store.cc (open, buckets, records, the commit op, stats), rados_write.cc
// (writer, Put, Delete, Copy), rados_read.cc (reader, Get, Head, HeadMany), rados_list.cc,
// rados_slices.cc (ReadSlices), rados_group.cc (PutGroup).
//
// The commit point of every mutation is ONE write op on ONE index shard object, atomic in
// RADOS: cmpxattr(oc.state == live) + omap_cmp(o/<key> == the record it replaces, "" for
// none) + omap_set/rm of the record + omap_set of a GC entry (g/...) naming the replaced
// version's data objects. Data objects are written first, under a fresh version id no record
// names, so a crash before the commit leaves nothing visible (only unreferenced data objects,
// the orphan scrub's work). A conflicting commit (-ECANCELED) re-reads the shard and retries;
// the last writer wins. Replaced data stays until the GC removes it (RadosOptions::
// gc_min_wait), which is how a reader keeps reading the version it opened.
//
// Bucket state: DeleteBucket marks every shard `deleting` before checking that they are
// empty, so no commit lands between the check and the removal; commits that meet `deleting`
// wait (2 s at most), then ask the registry. Bucket records are cached per process; a shard
// that vanished (-ENOENT) drops the cache entry.
//
// Thread safety: every method may be called concurrently (store.h).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kv/kv_engine.h"
#include "kv/slice_source.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"
#include "rados/rados_keys.h"
#include "rados/rados_wrap.h"
#include "records/meta_codec.h"

namespace oc::storage {

int64_t RadosNowUnixMs();

class RadosStore final : public Store, public kv::SliceSource {
 public:
  static Result<std::unique_ptr<RadosStore>> Open(const StoreOptions& options);
  ~RadosStore() override;

  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;

  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  // One read op per index shard holding any of the names, all in flight together: each
  // shard's answers are one consistent view, not the whole batch (store.h).
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override;

  // Multipart uploads are not implemented on RADOS yet: kUnimplemented.
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

  Result<StoreStats> Stats() override;
  StoreIdentity identity() const override;

  // rados_slices.cc: pieces grouped per data object, one read op per object.
  Result<std::vector<kv::SliceStatus>> ReadSlices(std::string_view bucket,
                                                  std::span<const kv::SliceRead> slices) override;

  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override {
    return kv_->ProbeChunks(bucket, d);
  }
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override {
    return kv_->GetLayers(bucket, d, body_sink, on_plan);
  }
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override {
    return kv_->PutChunks(bucket, d, body);
  }
  Result<DataPlaneInfo> DataPlane(std::string_view /*bucket*/) override {
    return kv_->DataPlaneInfo();
  }
  BoundedExecutor* descriptor_executor() override { return &kv_->executor(); }

  // --- Test hooks ---
  // Data objects (oc.d.*) in this store's namespace now, by listing it.
  Result<uint64_t> CountDataObjects();

  // --- Used by the writer, reader, listing and group parts ---
  struct BucketRef {
    uint64_t id = 0;
    uint32_t shards = 0;
  };
  // The bucket's registry record, cached. kNotFound/kBucket if absent.
  Result<BucketRef> Bucket(std::string_view bucket);
  // Drops the cached record (its shards vanished).
  void ForgetBucket(std::string_view bucket);
  // kNotFound/kBucket after a shard of `ref` vanished (ENOENT): forgets the cache entry.
  Status ShardGone(std::string_view bucket);
  rados_ioctx_t io() const { return cluster_->io(); }
  const RadosOptions& rados_options() const { return options_.rados; }
  // A fresh version id: this process's writer id and the next sequence number.
  Segment NewVersion(uint64_t extent_bytes);
  // Data object size of a new object: the chunk rule or the explicit/configured extent,
  // clamped to kMinRadosObjectBytes..kMaxRadosObjectBytes. kInvalidArgument for a bad shape.
  Result<uint64_t> ChooseObjectBytes(const PutOptions& options) const;
  // Removes the data objects of `segment` in bucket `bucket_id` (best effort, waited for).
  void RemoveData(uint64_t bucket_id, const Segment& segment);
  // The records of `names` in one shard (absent: nullopt), read in one op.
  Result<std::vector<std::optional<ObjectRecord>>> ReadRecords(
      std::string_view bucket, const BucketRef& ref, uint32_t shard,
      const std::vector<std::string>& names);
  // The records of any names, one op per shard in flight together (HeadMany, ReadSlices).
  Result<std::vector<std::optional<ObjectRecord>>> ReadManyRecords(
      std::string_view bucket, const BucketRef& ref, std::span<const std::string> names);

  // One key's change in a shard commit: `decide` gets the current record (nullopt if
  // absent) and returns the next one (nullopt removes the key) or an error that ends the
  // commit. `read_first` reads the current record before the first attempt; otherwise the
  // first attempt assumes the key absent (a new object costs no read).
  struct KeyChange {
    std::string name;
    std::function<Result<std::optional<ObjectRecord>>(const std::optional<ObjectRecord>&)> decide;
  };
  // Commits `changes` (all of one shard, distinct names) in one guarded write op, retrying
  // conflicts; returns the next record of each change in order (nullopt for a removal).
  // Each replaced version's data objects that the next record does not name get a GC entry
  // in the same op.
  Result<std::vector<std::optional<ObjectRecord>>> CommitShard(std::string_view bucket,
                                                               const BucketRef& ref, uint32_t shard,
                                                               std::vector<KeyChange>& changes,
                                                               bool read_first);

  // Bounds of ReadSlices' ops in flight, all requests together (RadosOptions).
  class InFlight {
   public:
    InFlight(uint32_t max_ops, uint64_t max_bytes) : max_ops_(max_ops), max_bytes_(max_bytes) {}
    void Acquire(uint64_t bytes);
    void Release(uint64_t bytes);

   private:
    const uint32_t max_ops_;
    const uint64_t max_bytes_;
    std::mutex mu_;
    std::condition_variable cv_;
    uint32_t ops_ OC_GUARDED_BY(mu_) = 0;
    uint64_t bytes_ OC_GUARDED_BY(mu_) = 0;
  };
  InFlight& in_flight() { return in_flight_; }

 private:
  explicit RadosStore(const StoreOptions& options);
  Result<rados::RadosBucketRecord> ReadRegistry(std::string_view bucket);

  const StoreOptions options_;
  std::unique_ptr<rados::Cluster> cluster_;
  const uint64_t writer_id_;
  std::atomic<uint64_t> next_seq_{1};
  InFlight in_flight_;

  std::mutex buckets_mu_;
  std::map<std::string, BucketRef, std::less<>> buckets_ OC_GUARDED_BY(buckets_mu_);

  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> commit_conflicts_{0};

  // Created in Open; reset first in the destructor (it owns the UCX data plane).
  std::unique_ptr<kv::KvEngine> kv_;
};

}  // namespace oc::storage
