#include "rocks_store.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/table.h>

#include "extent_io.h"
#include "extent_key.h"
#include "kv/pacing.h"
#include "md5.h"
#include "names.h"
#include "oc/common/log.h"
#include "store_keys.h"
#include "stream_copy.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

constexpr char kCfBuckets[] = "buckets";
constexpr char kCfObjects[] = "objects";
constexpr char kCfExtents[] = "extents";
constexpr char kCfUploads[] = "uploads";
constexpr char kCfParts[] = "parts";
constexpr char kCfPending[] = "pending";
constexpr char kNextDataIdKey[] = "next_data_id";
// Data ids are reserved in blocks so that one synced counter write covers many objects;
// ids of a block left unused after a restart are simply skipped.
constexpr uint64_t kDataIdBlock = 1 << 16;
// Copy streams through a buffer of this size.
constexpr uint64_t kCopyBufferBytes = 1 << 20;

Status BadKeyStatus(std::string field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kNone, std::move(field), std::move(message));
}

class RocksWriter final : public ObjectWriter {
 public:
  RocksWriter(RocksStore* store, RocksStore::WriteTarget target, uint64_t data_id,
              uint64_t extent_bytes, uint8_t flags)
      : store_(store),
        target_(std::move(target)),
        data_id_(data_id),
        extent_bytes_(extent_bytes),
        flags_(flags) {}

  ~RocksWriter() override {
    if (!spent_) {
      store_->DiscardData(data_id_, flushed_);
    }
  }

  Status Append(ByteSpan data) override {
    if (spent_) {
      return Status::FailedPrecondition(Subject::kEntity, "writer already committed");
    }
    OC_RETURN_IF_ERROR(failed_);
    md5_.Update(data);
    size_ += data.size();
    while (!data.empty()) {
      if (buf_.capacity() == 0) {
        uint64_t want = extent_bytes_;
        if (target_.options.expected_size.has_value()) {
          want = std::min(want, *target_.options.expected_size);
        }
        buf_.reserve(want + kExtentHashBytes);
      }
      const uint64_t n = std::min<uint64_t>(extent_bytes_ - buf_.size(), data.size());
      buf_.append(reinterpret_cast<const char*>(data.data()), n);
      data = data.subspan(n);
      if (buf_.size() == extent_bytes_) {
        failed_ = EmitExtent(/*may_flush=*/true);
        OC_RETURN_IF_ERROR(failed_);
      }
    }
    return Status::Ok();
  }

  Result<ObjectMeta> Commit() override {
    if (spent_) {
      return Status::FailedPrecondition(Subject::kEntity, "writer already committed");
    }
    spent_ = true;
    Status s = failed_;
    if (s.ok() && !buf_.empty()) {
      s = EmitExtent(/*may_flush=*/false);
    }
    const Md5Digest md5 = md5_.Finish();
    const PutOptions& o = target_.options;
    if (s.ok() && o.expected_size.has_value() && *o.expected_size != size_) {
      s = Status(Code::kInvalidArgument, Subject::kEntity, "Content-Length",
                 "body has " + std::to_string(size_) + " bytes, expected " +
                     std::to_string(*o.expected_size));
    }
    if (s.ok() && o.content_md5.has_value() && *o.content_md5 != md5) {
      s = Status(Code::kInvalidArgument, Subject::kDigest, "Content-MD5",
                 "Content-MD5 does not match the body");
    }
    if (!s.ok()) {
      store_->DiscardData(data_id_, flushed_);
      return s;
    }
    // CommitWrite frees the extents itself when it fails before writing the record.
    return store_->CommitWrite(target_, Segment{data_id_, size_, extent_bytes_, flags_}, md5,
                               flushed_, &batch_);
  }

 private:
  Status EmitExtent(bool may_flush) {
    OC_RETURN_IF_ERROR(
        AddExtent(&batch_, store_->extents_cf(), data_id_, next_extent_++, flags_, &buf_));
    batch_bytes_ += buf_.size();
    buf_.clear();
    if (may_flush && batch_bytes_ >= store_->options().write_batch_bytes) {
      return Flush();
    }
    return Status::Ok();
  }

  // Writes the buffered extents unsynced; the first flush also records the data id as
  // pending, in the same batch, so recovery can free it if Commit never happens.
  Status Flush() {
    if (!flushed_) {
      OC_RETURN_IF_ERROR(FromRocks(batch_.Put(store_->pending_cf(), PendingKey(data_id_), "")));
    }
    OC_RETURN_IF_ERROR(FromRocks(store_->db()->Write(store_->unsynced(), &batch_)));
    flushed_ = true;
    batch_.Clear();
    batch_bytes_ = 0;
    return Status::Ok();
  }

  RocksStore* const store_;
  const RocksStore::WriteTarget target_;
  const uint64_t data_id_;
  const uint64_t extent_bytes_;
  const uint8_t flags_;
  Md5 md5_;
  std::string buf_;  // the extent being filled
  rocksdb::WriteBatch batch_;
  uint64_t batch_bytes_ = 0;
  uint64_t next_extent_ = 0;
  uint64_t size_ = 0;
  bool flushed_ = false;
  bool spent_ = false;
  Status failed_;
};

class RocksReader final : public ObjectReader {
 public:
  RocksReader(RocksStore* store, std::unique_ptr<rocksdb::ManagedSnapshot> snapshot,
              ObjectRecord record, uint64_t offset, uint64_t length)
      : store_(store),
        snapshot_(std::move(snapshot)),
        record_(std::move(record)),
        offset_(offset),
        length_(length) {
    read_options_ = store_->extent_read_options();
    read_options_.snapshot = snapshot_->snapshot();
  }

  const ObjectMeta& meta() const override { return record_.meta; }
  uint64_t offset() const override { return offset_; }
  uint64_t length() const override { return length_; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    const uint64_t n = std::min<uint64_t>(out.size(), length_ - pos_);
    uint64_t done = 0;
    while (done < n) {
      const uint64_t at = offset_ + pos_;
      if (!have_extent_ || at < extent_start_ || at >= extent_start_ + extent_len_) {
        OC_RETURN_IF_ERROR(LoadExtent(at));
      }
      const uint64_t m = std::min(extent_start_ + extent_len_ - at, n - done);
      std::memcpy(out.data() + done, pinned_.data() + (at - extent_start_), m);
      done += m;
      pos_ += m;
    }
    if (pos_ == length_ && have_extent_) {
      pinned_.Reset();  // release the cache pin as soon as the range is done
      have_extent_ = false;
    }
    return done;
  }

 private:
  Status LoadExtent(uint64_t at) {
    have_extent_ = false;
    const ExtentPos pos = LocateExtent(record_.segments, at);
    const Segment& seg = record_.segments[pos.segment];
    OC_RETURN_IF_ERROR(
        FetchExtent(store_->db(), store_->extents_cf(), read_options_, seg, pos.extent, &pinned_));
    OC_RETURN_IF_ERROR(VerifyExtent(seg, pinned_));
    extent_start_ = at - pos.within;
    extent_len_ = ExtentDataBytes(seg, pos.extent);
    have_extent_ = true;
    return Status::Ok();
  }

  RocksStore* const store_;
  std::unique_ptr<rocksdb::ManagedSnapshot> snapshot_;
  const ObjectRecord record_;
  const uint64_t offset_;
  const uint64_t length_;
  rocksdb::ReadOptions read_options_;
  uint64_t pos_ = 0;
  rocksdb::PinnableSlice pinned_;
  bool have_extent_ = false;
  uint64_t extent_start_ = 0;  // object offset of the pinned extent's first byte
  uint64_t extent_len_ = 0;
};

}  // namespace

std::string PendingKey(uint64_t data_id) {
  std::string key(8, '\0');
  PutBigEndian64(data_id, reinterpret_cast<std::byte*>(key.data()));
  return key;
}

Status AddExtent(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, uint64_t data_id,
                 uint64_t index, uint8_t flags, std::string* bytes) {
  if ((flags & kSegmentExtentHash) != 0) {
    std::byte trailer[kExtentHashBytes];
    PutLittleEndian64(ExtentHash(AsBytes(*bytes)), trailer);
    bytes->append(reinterpret_cast<const char*>(trailer), kExtentHashBytes);
  }
  const ExtentKey key = EncodeExtentKey(data_id, index);
  return FromRocks(batch->Put(cf, AsSlice(key), *bytes));
}

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) {
    return Status::Ok();
  }
  if (s.IsNotFound()) {
    return Status::NotFound(Subject::kNone, s.ToString());
  }
  if (s.IsCorruption()) {
    return Status::Corruption(s.ToString());
  }
  if (s.IsInvalidArgument()) {
    return Status(Code::kInvalidArgument, Subject::kNone, "", s.ToString());
  }
  if (s.IsBusy() || s.IsTryAgain() || s.IsShutdownInProgress()) {
    return Status::Unavailable(s.ToString());
  }
  if (s.IsNoSpace()) {
    return Status::ResourceExhausted("", s.ToString());
  }
  return Status::IOError(s.ToString());
}

uint64_t WalSync::Written() {
  std::lock_guard lock(mu_);
  const uint64_t ticket = ++written_;
  written_cv_.notify_one();  // only a gathering leader waits on it
  return ticket;
}

Status WalSync::AwaitSynced(uint64_t ticket) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!failure_.ok() && ticket > failed_after_) {
      return failure_;
    }
    if (synced_ >= ticket) {
      return Status::Ok();
    }
    if (syncing_) {
      synced_cv_.wait(lock);
      continue;
    }
    // Lead the next sync. Writers that piled up during the last sync are one cohort; the
    // writers that sync released are the other, and come back within a round trip.
    syncing_ = true;
    const uint64_t piled_up = written_at_sync_end_ - synced_;
    const uint64_t expect = std::min<uint64_t>(piled_up + last_group_, kMaxGroup);
    const auto wait = std::min<std::chrono::microseconds>(kMaxGatherWait, last_sync_time_ / 2);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    written_cv_.wait_until(lock, deadline, [&] { return written_ - synced_ >= expect; });
    const uint64_t target = written_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Status s = FromRocks(db_->SyncWAL());
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    lock.lock();
    syncing_ = false;
    last_sync_time_ = took;
    last_group_ = std::max<uint64_t>(1, target - synced_);
    written_at_sync_end_ = written_;
    if (s.ok()) {
      synced_ = target;
    } else if (failure_.ok()) {
      // Sticky: what was written after a failed sync cannot be promised either.
      failure_ = std::move(s);
      failed_after_ = synced_;
    }
    synced_cv_.notify_all();
  }
}

// Extent size of a new object or part: explicit, else the chunk's contiguous layer range
// (S for KV_L2TD, S/2 for KV_2LTD), else the store default (types.h PutOptions).
Result<uint64_t> ChooseExtentBytes(const PutOptions& o, uint64_t default_bytes) {
  if (o.chunk.has_value()) {
    const ChunkShape& c = *o.chunk;
    if (c.num_layers == 0 || c.layer_bytes == 0 ||
        (c.layout == descriptor::StoredLayout::k2LTD && c.layer_bytes % 2 != 0)) {
      return BadKeyStatus("chunk", "chunk shape needs L > 0 and S > 0 (even for KV_2LTD)");
    }
  }
  uint64_t bytes = default_bytes;
  if (o.extent_bytes != 0) {
    bytes = o.extent_bytes;
  } else if (o.chunk.has_value()) {
    bytes = o.chunk->layout == descriptor::StoredLayout::kL2TD ? o.chunk->layer_bytes
                                                               : o.chunk->layer_bytes / 2;
  }
  if (bytes == 0 || bytes > kMaxExtentBytes) {
    return BadKeyStatus("extent_bytes",
                        "extent size must be 1.." + std::to_string(kMaxExtentBytes));
  }
  return bytes;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RocksStore::RocksStore(const StoreOptions& options) : options_(options) {
  meta_read_.verify_checksums = true;
  extent_read_.verify_checksums = options_.extent_layout == ExtentLayout::kSstBlocks;
  extent_read_.fill_cache = true;
  synced_.sync = options_.sync_writes;
  unsynced_.sync = false;
}

Result<std::unique_ptr<RocksStore>> RocksStore::Open(const StoreOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<RocksStore> store(new RocksStore(options));
  OC_RETURN_IF_ERROR(store->OpenDb());
  OC_RETURN_IF_ERROR(store->Recover());
  if (options.sync_writes) {
    store->wal_sync_ = std::make_unique<WalSync>(store->db_.get());
  }
  if (options.read_threads > 0) {
    store->pool_ = std::make_unique<ThreadPool>(options.read_threads);
  }
  store->kv_ = std::make_unique<kv::KvEngine>(*store, options.kv);
  RocksStore* raw = store.get();
  store->reclaimer_ = std::thread([raw] { raw->ReclaimLoop(); });
  return store;
}

Status RocksStore::OpenDb() {
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create " + options_.data_dir + ": " + ec.message());
  }
  rocksdb::LRUCacheOptions cache_options;
  cache_options.capacity = options_.block_cache_bytes;
  cache_options.high_pri_pool_ratio = 0.1;  // index and filter blocks
  block_cache_ = rocksdb::NewLRUCache(cache_options);

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  db_options.bytes_per_sync = 1 << 20;
  db_options.keep_log_file_num = 4;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Reused WAL files are overwritten in place, so a commit's fdatasync flushes data only;
  // appending to a fresh file also commits its new size to the journal (~1.5x the time of
  // an in-place 64 KiB write + fdatasync on this machine's disk).
  db_options.recycle_log_file_num = 4;

  auto table = [&](size_t block_size, bool bloom, bool prepopulate) {
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = block_cache_;
    t.checksum = rocksdb::kXXH3;  // hashed in software fast; CRC32C is not (MACHINE-FACTS)
    t.block_size = block_size;
    t.cache_index_and_filter_blocks = true;
    t.cache_index_and_filter_blocks_with_high_priority = true;
    t.pin_l0_filter_and_index_blocks_in_cache = true;
    t.metadata_cache_options.top_level_index_pinning = rocksdb::PinningTier::kAll;
    t.metadata_cache_options.unpartitioned_pinning = rocksdb::PinningTier::kAll;
    if (bloom) {
      t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    }
    if (prepopulate) {
      t.prepopulate_block_cache =
          rocksdb::BlockBasedTableOptions::PrepopulateBlockCache::kFlushOnly;
    }
    return std::shared_ptr<rocksdb::TableFactory>(rocksdb::NewBlockBasedTableFactory(t));
  };

  rocksdb::ColumnFamilyOptions meta_cf;
  meta_cf.compression = rocksdb::kNoCompression;
  meta_cf.level_compaction_dynamic_level_bytes = true;
  meta_cf.table_factory = table(16 << 10, /*bloom=*/true, /*prepopulate=*/false);

  rocksdb::ColumnFamilyOptions extent_cf;
  extent_cf.compression = rocksdb::kNoCompression;  // KV tensors and S3 payloads: rarely pay
  extent_cf.level_compaction_dynamic_level_bytes = true;
  extent_cf.write_buffer_size = 128 << 20;
  extent_cf.max_write_buffer_number = 3;
  extent_cf.target_file_size_base = 256 << 20;
  extent_cf.max_bytes_for_level_base = 1ull << 30;
  extent_cf.optimize_filters_for_hits = true;
  // Freshly written KV chunks are usually read back soon: flushes warm the cache.
  extent_cf.table_factory = table(64 << 10, /*bloom=*/false, /*prepopulate=*/true);
  if (options_.extent_layout == ExtentLayout::kBlobFiles) {
    extent_cf.enable_blob_files = true;
    extent_cf.min_blob_size = 0;
    extent_cf.blob_file_size = 256 << 20;
    extent_cf.blob_compression_type = rocksdb::kNoCompression;
    extent_cf.enable_blob_garbage_collection = true;
    extent_cf.blob_garbage_collection_age_cutoff = 0.5;
    extent_cf.blob_cache = block_cache_;
    extent_cf.prepopulate_blob_cache = rocksdb::PrepopulateBlobCache::kFlushOnly;
  }

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, meta_cf},
      {kCfBuckets, meta_cf},
      {kCfObjects, meta_cf},
      {kCfExtents, extent_cf},
      {kCfUploads, meta_cf},
      {kCfParts, meta_cf},
      {kCfPending, meta_cf},
  };
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options_.data_dir, cfs, &handles_, &raw);
  if (!s.ok()) {
    return Status::IOError("cannot open store in " + options_.data_dir + ": " + s.ToString());
  }
  db_.reset(raw);
  default_cf_ = handles_[0];
  buckets_cf_ = handles_[1];
  objects_cf_ = handles_[2];
  extents_cf_ = handles_[3];
  uploads_cf_ = handles_[4];
  parts_cf_ = handles_[5];
  pending_cf_ = handles_[6];

  std::string raw_ceiling;
  s = db_->Get(meta_read_, default_cf_, kNextDataIdKey, &raw_ceiling);
  std::lock_guard lock(id_mu_);
  if (s.IsNotFound()) {
    data_id_ceiling_ = 1;
  } else {
    OC_RETURN_IF_ERROR(FromRocks(s));
    if (raw_ceiling.size() != 8) {
      return Status::Corruption("malformed data id counter");
    }
    data_id_ceiling_ = GetLittleEndian64(reinterpret_cast<const std::byte*>(raw_ceiling.data()));
  }
  next_data_id_ = data_id_ceiling_;
  return Status::Ok();
}

Status RocksStore::Recover() {
  rocksdb::WriteBatch batch;
  uint64_t freed = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, pending_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().size() != 8) {
      return Status::Corruption("malformed pending record");
    }
    const uint64_t id = GetBigEndian64(reinterpret_cast<const std::byte*>(it->key().data()));
    OC_RETURN_IF_ERROR(FromRocks(batch.DeleteRange(extents_cf_, AsSlice(ExtentRangeBegin(id)),
                                                   AsSlice(ExtentRangeEnd(id)))));
    OC_RETURN_IF_ERROR(FromRocks(batch.Delete(pending_cf_, it->key())));
    ++freed;
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  if (freed == 0) {
    return Status::Ok();
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  OC_RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch)));
  kLog.Info("recovered: freed the extents of {} uncommitted writes", freed);
  return Status::Ok();
}

RocksStore::~RocksStore() {
  kv_.reset();
  {
    std::lock_guard lock(reclaim_mu_);
    stopping_ = true;
  }
  reclaim_cv_.notify_all();
  if (reclaimer_.joinable()) {
    reclaimer_.join();
  }
  pool_.reset();
  if (db_ != nullptr) {
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      (void)db_->DestroyColumnFamilyHandle(h);
    }
    (void)db_->Close();
  }
}

Result<uint64_t> RocksStore::NewDataId() {
  std::lock_guard lock(id_mu_);
  if (next_data_id_ == data_id_ceiling_) {
    const uint64_t ceiling = data_id_ceiling_ + kDataIdBlock;
    std::string value(8, '\0');
    PutLittleEndian64(ceiling, reinterpret_cast<std::byte*>(value.data()));
    rocksdb::WriteOptions wo;
    wo.sync = true;  // an id must never be handed out twice, even across a crash
    OC_RETURN_IF_ERROR(FromRocks(db_->Put(wo, default_cf_, kNextDataIdKey, value)));
    data_id_ceiling_ = ceiling;
  }
  return next_data_id_++;
}

size_t RocksStore::KeyStripe(std::string_view db_key) {
  return std::hash<std::string_view>{}(db_key) % kKeyStripes;
}

Status RocksStore::CheckBucket(std::string_view bucket, const rocksdb::ReadOptions& ro) {
  rocksdb::PinnableSlice value;
  rocksdb::Status s =
      db_->Get(ro, buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size()), &value);
  if (s.IsNotFound()) {
    return Status::NotFound(Subject::kBucket, std::string(bucket));
  }
  return FromRocks(s);
}

Result<std::optional<ObjectRecord>> RocksStore::GetRecord(const std::string& db_key,
                                                          const rocksdb::ReadOptions& ro) {
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(ro, objects_cf_, db_key, &value);
  if (s.IsNotFound()) {
    return std::optional<ObjectRecord>();
  }
  OC_RETURN_IF_ERROR(FromRocks(s));
  OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(value.ToStringView()));
  return std::optional<ObjectRecord>(std::move(record));
}

uint64_t RocksStore::DeleteSegments(const std::vector<Segment>& segments,
                                    rocksdb::WriteBatch* batch) {
  uint64_t bytes = 0;
  for (const Segment& s : segments) {
    // Cannot fail for a batch that is not size-capped.
    (void)batch->DeleteRange(extents_cf_, AsSlice(ExtentRangeBegin(s.data_id)),
                             AsSlice(ExtentRangeEnd(s.data_id)));
    bytes += s.size;
  }
  return bytes;
}

void RocksStore::NoteFreed(uint64_t bytes) {
  if (bytes == 0 || options_.reclaim_after_bytes == 0) {
    return;
  }
  bool wake = false;
  {
    std::lock_guard lock(reclaim_mu_);
    freed_since_compaction_ += bytes;
    wake = freed_since_compaction_ >= options_.reclaim_after_bytes;
  }
  if (wake) {
    reclaim_cv_.notify_one();
  }
}

void RocksStore::ReclaimLoop() {
  for (;;) {
    {
      std::unique_lock lock(reclaim_mu_);
      reclaim_cv_.wait(lock, [this] {
        return stopping_ || (options_.reclaim_after_bytes != 0 &&
                             freed_since_compaction_ >= options_.reclaim_after_bytes);
      });
      if (stopping_) {
        return;
      }
      freed_since_compaction_ = 0;
    }
    Status s = CompactExtents();
    if (!s.ok()) {
      kLog.Warn("reclaim compaction failed: {}", s.ToString());
    }
  }
}

Status RocksStore::CompactExtents() {
  // Range tombstones drop the extents they cover when compaction moves them into the
  // files holding those extents; blob files whose blobs are all dropped are deleted, and
  // the forced GC cutoff relocates live blobs out of partly dead files.
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  o.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
  o.blob_garbage_collection_age_cutoff = 1.0;
  o.allow_write_stall = true;
  return FromRocks(db_->CompactRange(o, extents_cf_, nullptr, nullptr));
}

Result<uint64_t> RocksStore::CountExtents() {
  uint64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(extent_read_, extents_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++n;
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return n;
}

void RocksStore::DiscardData(uint64_t data_id, bool flushed) {
  if (!flushed) {
    return;  // nothing reached RocksDB
  }
  rocksdb::WriteBatch batch;
  (void)batch.DeleteRange(extents_cf_, AsSlice(ExtentRangeBegin(data_id)),
                          AsSlice(ExtentRangeEnd(data_id)));
  (void)batch.Delete(pending_cf_, PendingKey(data_id));
  // Unsynced: if this is lost in a crash, recovery frees the still-pending id.
  Status s = FromRocks(db_->Write(unsynced_, &batch));
  if (!s.ok()) {
    kLog.Warn("discarding data id {} failed: {}", data_id, s.ToString());
  }
}

// --- Buckets ---

Status RocksStore::CreateBucket(std::string_view bucket, std::string_view owner) {
  OC_RETURN_IF_ERROR(ValidateBucketName(bucket));
  std::unique_lock lock(bucket_mu_);
  Status exists = CheckBucket(bucket, meta_read_);
  if (exists.ok()) {
    return Status::AlreadyExists(Subject::kBucket, std::string(bucket));
  }
  if (!exists.IsNotFound()) {
    return exists;
  }
  BucketRecord record{std::string(owner), NowUnixMs()};
  return FromRocks(db_->Put(synced_, buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size()),
                            EncodeBucketRecord(record)));
}

Status RocksStore::DeleteBucket(std::string_view bucket) {
  std::unique_lock lock(bucket_mu_);
  OC_RETURN_IF_ERROR(CheckBucket(bucket, meta_read_));
  const std::string prefix = BucketPrefix(bucket);
  for (rocksdb::ColumnFamilyHandle* cf : {objects_cf_, uploads_cf_}) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, cf));
    it->Seek(prefix);
    OC_RETURN_IF_ERROR(FromRocks(it->status()));
    if (it->Valid() && it->key().starts_with(prefix)) {
      return Status::FailedPrecondition(
          Subject::kBucket,
          cf == objects_cf_ ? "bucket is not empty" : "bucket has multipart uploads in progress");
    }
  }
  return FromRocks(db_->Delete(synced_, buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size())));
}

Result<BucketInfo> RocksStore::HeadBucket(std::string_view bucket) {
  std::string value;
  rocksdb::Status s =
      db_->Get(meta_read_, buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size()), &value);
  if (s.IsNotFound()) {
    return Status::NotFound(Subject::kBucket, std::string(bucket));
  }
  OC_RETURN_IF_ERROR(FromRocks(s));
  OC_ASSIGN_OR_RETURN(BucketRecord record, DecodeBucketRecord(value));
  return BucketInfo{std::string(bucket), std::move(record.owner), record.created_unix_ms};
}

Result<std::vector<BucketInfo>> RocksStore::ListBuckets() {
  std::vector<BucketInfo> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, buckets_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    OC_ASSIGN_OR_RETURN(BucketRecord record, DecodeBucketRecord(it->value().ToStringView()));
    out.push_back(
        BucketInfo{it->key().ToString(), std::move(record.owner), record.created_unix_ms});
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return out;
}

// --- Objects ---

Result<std::unique_ptr<ObjectWriter>> RocksStore::Put(const ObjectKey& key,
                                                      const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(uint64_t extent_bytes,
                      ChooseExtentBytes(options, options_.default_extent_bytes));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  return NewWriter(WriteTarget{key, "", 0, options}, extent_bytes);
}

Result<std::unique_ptr<ObjectWriter>> RocksStore::NewWriter(WriteTarget target,
                                                            uint64_t extent_bytes) {
  OC_ASSIGN_OR_RETURN(uint64_t data_id, NewDataId());
  const uint8_t flags = options_.extent_layout == ExtentLayout::kBlobFiles ? kSegmentExtentHash : 0;
  return std::unique_ptr<ObjectWriter>(
      new RocksWriter(this, std::move(target), data_id, extent_bytes, flags));
}

Result<ObjectMeta> RocksStore::CommitWrite(const WriteTarget& target, const Segment& segment,
                                           const std::array<std::byte, 16>& md5, bool flushed,
                                           rocksdb::WriteBatch* batch) {
  uint64_t freed = 0;
  uint64_t ticket = 0;
  Result<ObjectMeta> meta = WriteCommit(target, segment, md5, flushed, batch, &freed, &ticket);
  if (!meta.has_value()) {
    DiscardData(segment.data_id, flushed);  // nothing refers to the extents
    return meta;
  }
  // Written: the record is visible and refers to the extents, so they stay even if the sync
  // fails (the commit is then reported failed, as it may not survive a crash).
  OC_RETURN_IF_ERROR(AwaitDurable(ticket));
  NoteFreed(freed);
  return meta;
}

Result<ObjectMeta> RocksStore::WriteCommit(const WriteTarget& target, const Segment& segment,
                                           const std::array<std::byte, 16>& md5, bool flushed,
                                           rocksdb::WriteBatch* batch, uint64_t* freed_out,
                                           uint64_t* ticket_out) {
  const std::string object_key = ObjectDbKey(target.key.bucket, target.key.name);
  const int64_t now = NowUnixMs();
  std::shared_lock bucket_lock(bucket_mu_);
  std::lock_guard key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(target.key.bucket, meta_read_));
  if (flushed) {
    OC_RETURN_IF_ERROR(FromRocks(batch->Delete(pending_cf_, PendingKey(segment.data_id))));
  }
  ObjectMeta meta;
  meta.size = segment.size;
  meta.etag = HexEncode(md5);
  meta.mtime_unix_ms = now;
  uint64_t freed = 0;
  if (target.upload_id.empty()) {
    OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> old, GetRecord(object_key, meta_read_));
    ObjectRecord record;
    record.meta = meta;
    record.meta.content_type = target.options.content_type;
    record.meta.user_meta = target.options.user_meta;
    record.meta.headers = target.options.headers;
    record.meta.chunk = target.options.chunk;
    record.segments.push_back(segment);
    OC_RETURN_IF_ERROR(FromRocks(batch->Put(objects_cf_, object_key, EncodeObjectRecord(record))));
    if (old.has_value()) {
      freed = DeleteSegments(old->segments, batch);
    }
    meta = std::move(record.meta);
  } else {
    const std::string upload_key =
        UploadDbKey(target.key.bucket, target.key.name, target.upload_id);
    rocksdb::PinnableSlice upload;
    rocksdb::Status s = db_->Get(meta_read_, uploads_cf_, upload_key, &upload);
    if (s.IsNotFound()) {
      return Status::NotFound(Subject::kUpload, target.upload_id);
    }
    OC_RETURN_IF_ERROR(FromRocks(s));
    const std::string part_key = PartDbKey(target.upload_id, target.part_number);
    std::string old_part;
    s = db_->Get(meta_read_, parts_cf_, part_key, &old_part);
    if (!s.IsNotFound()) {
      OC_RETURN_IF_ERROR(FromRocks(s));
      OC_ASSIGN_OR_RETURN(PartRecord old, DecodePartRecord(old_part));
      freed = DeleteSegments({old.segment}, batch);
    }
    PartRecord part{segment, md5, now};
    OC_RETURN_IF_ERROR(FromRocks(batch->Put(parts_cf_, part_key, EncodePartRecord(part))));
  }
  OC_ASSIGN_OR_RETURN(*ticket_out, WriteForDurability(batch));
  *freed_out = freed;
  return meta;
}

Result<uint64_t> RocksStore::WriteForDurability(rocksdb::WriteBatch* batch) {
  OC_RETURN_IF_ERROR(FromRocks(db_->Write(unsynced_, batch)));
  return wal_sync_ != nullptr ? wal_sync_->Written() : 0;
}

Status RocksStore::AwaitDurable(uint64_t ticket) {
  return wal_sync_ != nullptr ? wal_sync_->AwaitSynced(ticket) : Status::Ok();
}

Result<std::unique_ptr<ObjectReader>> RocksStore::Get(const ObjectKey& key, ByteRange range) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  auto snapshot = std::make_unique<rocksdb::ManagedSnapshot>(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot->snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, ro));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record,
                      GetRecord(ObjectDbKey(key.bucket, key.name), ro));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  const uint64_t size = record->meta.size;
  uint64_t offset = 0;
  uint64_t length = 0;
  if (range.suffix) {
    length = std::min(range.length, size);
    offset = size - length;
  } else if (size > 0) {
    if (range.offset >= size) {
      return Status::OutOfRange("range starts at or past the end of the object");
    }
    offset = range.offset;
    length = std::min(range.length, size - offset);
  }
  return std::unique_ptr<ObjectReader>(
      new RocksReader(this, std::move(snapshot), std::move(*record), offset, length));
}

Result<ObjectMeta> RocksStore::Head(const ObjectKey& key) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record,
                      GetRecord(ObjectDbKey(key.bucket, key.name), meta_read_));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  return std::move(record->meta);
}

Result<std::vector<std::optional<ObjectMeta>>> RocksStore::HeadMany(
    std::string_view bucket, std::span<const std::string> names) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  std::vector<std::optional<ObjectMeta>> out(names.size());
  std::vector<std::string> keys;
  std::vector<size_t> index;  // position in `names` of each looked-up key
  keys.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (ValidateObjectKey(names[i]).ok()) {
      keys.push_back(ObjectDbKey(bucket, names[i]));
      index.push_back(i);
    }
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  if (!keys.empty()) {
    db_->MultiGet(ro, objects_cf_, keys.size(), slices.data(), values.data(), statuses.data());
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    if (statuses[k].IsNotFound()) {
      continue;
    }
    OC_RETURN_IF_ERROR(FromRocks(statuses[k]));
    OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(values[k].ToStringView()));
    out[index[k]] = std::move(record.meta);
  }
  return out;
}

Status RocksStore::Delete(const ObjectKey& key) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  const std::string object_key = ObjectDbKey(key.bucket, key.name);
  std::shared_lock bucket_lock(bucket_mu_);
  std::unique_lock key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record, GetRecord(object_key, meta_read_));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  rocksdb::WriteBatch batch;
  OC_RETURN_IF_ERROR(FromRocks(batch.Delete(objects_cf_, object_key)));
  const uint64_t freed = DeleteSegments(record->segments, &batch);
  OC_ASSIGN_OR_RETURN(const uint64_t ticket, WriteForDurability(&batch));
  key_lock.unlock();
  bucket_lock.unlock();
  OC_RETURN_IF_ERROR(AwaitDurable(ticket));
  NoteFreed(freed);
  return Status::Ok();
}

Result<ObjectMeta> RocksStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                    const std::optional<PutOptions>& replace) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(src.name));
  OC_RETURN_IF_ERROR(ValidateObjectKey(dst.name));
  if (src.bucket == dst.bucket && src.name == dst.name) {
    // Same key: the bytes stay where they are; only the metadata (and mtime) change.
    const std::string object_key = ObjectDbKey(dst.bucket, dst.name);
    std::shared_lock bucket_lock(bucket_mu_);
    std::lock_guard key_lock(KeyMutex(object_key));
    OC_RETURN_IF_ERROR(CheckBucket(dst.bucket, meta_read_));
    OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record, GetRecord(object_key, meta_read_));
    if (!record.has_value()) {
      return Status::NotFound(Subject::kKey, src.name);
    }
    if (replace.has_value()) {
      record->meta.content_type = replace->content_type;
      record->meta.user_meta = replace->user_meta;
      record->meta.headers = replace->headers;
    }
    record->meta.mtime_unix_ms = NowUnixMs();
    OC_RETURN_IF_ERROR(
        FromRocks(db_->Put(synced_, objects_cf_, object_key, EncodeObjectRecord(*record))));
    return std::move(record->meta);
  }
  return StreamCopy(*this, src, *this, dst, replace, kCopyBufferBytes);
}

// --- Operations ---

Result<StoreStats> RocksStore::Stats() {
  StoreStats stats;
  auto add_int = [&](std::string name, rocksdb::ColumnFamilyHandle* cf, const char* property) {
    uint64_t v = 0;
    if (db_->GetIntProperty(cf, property, &v)) {
      stats.figures.emplace_back(std::move(name), v);
    }
  };
  add_int("objects_estimated", objects_cf_, "rocksdb.estimate-num-keys");
  add_int("extents_estimated", extents_cf_, "rocksdb.estimate-num-keys");
  add_int("uploads_estimated", uploads_cf_, "rocksdb.estimate-num-keys");
  add_int("extent_live_data_bytes", extents_cf_, "rocksdb.estimate-live-data-size");
  add_int("extent_sst_bytes", extents_cf_, "rocksdb.total-sst-files-size");
  add_int("extent_blob_bytes", extents_cf_, "rocksdb.total-blob-file-size");
  add_int("extent_live_blob_bytes", extents_cf_, "rocksdb.live-blob-file-size");
  add_int("memtable_bytes", extents_cf_, "rocksdb.cur-size-all-mem-tables");
  add_int("pending_compaction_bytes", extents_cf_, "rocksdb.estimate-pending-compaction-bytes");
  add_int("running_compactions", default_cf_, "rocksdb.num-running-compactions");
  add_int("block_cache_usage_bytes", default_cf_, "rocksdb.block-cache-usage");
  add_int("block_cache_pinned_bytes", default_cf_, "rocksdb.block-cache-pinned-usage");
  add_int("block_cache_capacity_bytes", default_cf_, "rocksdb.block-cache-capacity");
  if (kv_ != nullptr && kv_->pacing() != nullptr) {
    kv::AppendStatsFigures(kv_->pacing()->Stats(), &stats.figures);  // per active request
  }
  uint64_t pending = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, pending_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++pending;
    }
    OC_RETURN_IF_ERROR(FromRocks(it->status()));
  }
  stats.figures.emplace_back("writes_in_progress", pending);
  return stats;
}

Result<std::unique_ptr<Store>> OpenLocalStore(const StoreOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<RocksStore> store, RocksStore::Open(options));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace oc::storage
