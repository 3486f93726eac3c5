#pragma once
// RocksStore: the Store backed by one RocksDB database (private to storage-server/src).
//
// Column families (keys -> values):
//   default   "next_data_id" -> u64 LE: ceiling of data ids handed out (reserved in blocks)
//   buckets   bucket name -> BucketRecord
//   objects   bucket '/' key -> ObjectRecord (metadata + segments {data id, size, extent})
//   extents   BE64 data id, BE64 extent index -> extent bytes (extent_key.h)
//   uploads   bucket '/' key '\0' upload id -> UploadRecord
//   parts     upload id, BE32 part number -> PartRecord
//   pending   BE64 data id -> "" while a streaming writer has extents on disk but has not
//             committed; recovery at open frees every pending id's extents.
//
// Writes: every object version (and every part) gets a fresh data id. Extents are written
// under it (small objects: in the commit batch; large ones: flushed unsynced in bounded
// batches after a pending record), then one synced WriteBatch puts the metadata, removes
// the pending record and DeleteRanges the extents of the version it replaces. Readers take
// a RocksDB snapshot, so they keep seeing the version they opened.
//
// Locks: bucket_mu_ is held shared by every commit and exclusively by CreateBucket and
// DeleteBucket (so a bucket cannot be emptied-and-deleted under a commit); a striped key
// mutex serialises the read-old-metadata/write-new step of commits to the same key.
// Durability and group commit: commits use WriteOptions::sync; RocksDB's write thread
// groups concurrent writers into one WAL write and one fsync (its leader/follower write
// groups), which is the group commit we rely on.

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "kv/kv_engine.h"
#include "meta_codec.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"
#include "thread_pool.h"

namespace oc::storage {

// The one translation of RocksDB errors (STYLE.md 3.4).
Status FromRocks(const rocksdb::Status& s);

int64_t NowUnixMs();

// Extent size of a new object or part: explicit, else the chunk's contiguous layer range
// (S for KV_L2TD, S/2 for KV_2LTD), else `default_bytes` (types.h PutOptions).
// kInvalidArgument for a bad chunk shape or a size outside 1..kMaxExtentBytes.
Result<uint64_t> ChooseExtentBytes(const PutOptions& options, uint64_t default_bytes);

class RocksStore final : public Store {
 public:
  static Result<std::unique_ptr<RocksStore>> Open(const StoreOptions& options);
  ~RocksStore() override;

  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;

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

  Result<std::vector<SliceStatus>> ReadSlices(std::string_view bucket,
                                              std::span<const SliceRead> slices) override;
  Result<StoreStats> Stats() override;

  // The KV-cache descriptor calls, delegated to kv::KvEngine (src/kv/) over this store.
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

  // Compacts the extent column family (and with it the blob files) now; what the
  // background reclaimer runs. Also a test hook.
  Status CompactExtents();
  // Number of extent records visible now; a test hook.
  Result<uint64_t> CountExtents();

  // --- used by the writer and reader classes in rocks_store.cc ---
  struct WriteTarget {
    // An object commit when upload_id is empty, else a part commit.
    ObjectKey key;
    std::string upload_id;
    uint32_t part_number = 0;
    PutOptions options;
  };
  const StoreOptions& options() const { return options_; }
  rocksdb::DB* db() { return db_.get(); }
  rocksdb::ColumnFamilyHandle* extents_cf() { return extents_cf_; }
  rocksdb::ColumnFamilyHandle* pending_cf() { return pending_cf_; }
  const rocksdb::ReadOptions& extent_read_options() const { return extent_read_; }
  const rocksdb::WriteOptions& unsynced() const { return unsynced_; }
  Result<uint64_t> NewDataId();
  Result<std::unique_ptr<ObjectWriter>> NewWriter(WriteTarget target, uint64_t extent_bytes);
  // Commits a streamed object or part whose last extents are in *batch.
  Result<ObjectMeta> CommitWrite(const WriteTarget& target, const Segment& segment,
                                 const std::array<std::byte, 16>& md5, bool flushed,
                                 rocksdb::WriteBatch* batch);
  // Frees the extents of an uncommitted data id (a writer dropped without Commit).
  void DiscardData(uint64_t data_id, bool flushed);

 private:
  explicit RocksStore(const StoreOptions& options);
  Status OpenDb();
  Status Recover();
  Status CheckBucket(std::string_view bucket, const rocksdb::ReadOptions& ro);
  Result<std::optional<ObjectRecord>> GetRecord(const std::string& db_key,
                                                const rocksdb::ReadOptions& ro);
  std::mutex& KeyMutex(std::string_view db_key);
  // Adds DeleteRange of every segment's extents to *batch; returns the bytes freed.
  uint64_t DeleteSegments(const std::vector<Segment>& segments, rocksdb::WriteBatch* batch);
  void NoteFreed(uint64_t bytes);
  void ReclaimLoop();
  Status ReadSlice(const rocksdb::ReadOptions& meta_ro, const rocksdb::ReadOptions& extent_ro,
                   std::string_view bucket, const SliceRead& slice, SliceStatus* out);
  Status ReadSlicesMultiGet(const rocksdb::ReadOptions& meta_ro,
                            const rocksdb::ReadOptions& extent_ro, std::string_view bucket,
                            std::span<const SliceRead> slices, std::vector<SliceStatus>* out);
  Result<UploadRecord> GetUpload(const rocksdb::ReadOptions& ro, const ObjectKey& key,
                                 std::string_view upload_id);
  // Every part record of `upload_id`, ascending by part number.
  Result<std::vector<std::pair<uint32_t, PartRecord>>> GetParts(const rocksdb::ReadOptions& ro,
                                                                std::string_view upload_id);

  const StoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* buckets_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* objects_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* extents_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* uploads_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* parts_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* pending_cf_ = nullptr;
  std::shared_ptr<rocksdb::Cache> block_cache_;

  rocksdb::ReadOptions meta_read_;
  rocksdb::ReadOptions extent_read_;
  rocksdb::WriteOptions synced_;
  rocksdb::WriteOptions unsynced_;

  std::mutex id_mu_;
  uint64_t next_data_id_ OC_GUARDED_BY(id_mu_) = 0;
  uint64_t data_id_ceiling_ OC_GUARDED_BY(id_mu_) = 0;

  std::shared_mutex bucket_mu_;
  static constexpr size_t kKeyStripes = 64;
  std::array<std::mutex, kKeyStripes> key_mu_;

  std::unique_ptr<ThreadPool> pool_;
  // Created in Open; reset first in the destructor (it owns the UCX data plane).
  std::unique_ptr<kv::KvEngine> kv_;

  std::mutex reclaim_mu_;
  std::condition_variable reclaim_cv_;
  uint64_t freed_since_compaction_ OC_GUARDED_BY(reclaim_mu_) = 0;
  bool stopping_ OC_GUARDED_BY(reclaim_mu_) = false;
  std::thread reclaimer_;
};

}  // namespace oc::storage
