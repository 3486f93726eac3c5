// RocksStore, the core: the one translation of RocksDB errors, construction and shutdown,
// the lookups every part shares (bucket check, object record, key lock stripe), the bucket
// calls and Stats. The other parts: rocks_open.cc, rocks_write.cc, rocks_read.cc,
// rocks_group.cc, rocks_multipart.cc, rocks_list.cc, rocks_slices.cc, rocks_reclaim.cc.
#include "rocks/rocks_store.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <shared_mutex>

#include "names.h"
#include "oc/storage/cached_reads.h"
#include "oc/storage/no_space.h"
#include "rocks/group_sync.h"
#include "rocks/store_keys.h"

namespace oc::storage {

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
    return NoSpace(s.ToString());  // also a write refused while the DB is stopped by one
  }
  // A write held back by the background error of a compaction that ran out of space comes
  // back as Incomplete carrying that error's text (RocksDB 7.8), not as NoSpace.
  if (s.IsIncomplete() && (s.subcode() == rocksdb::Status::kNoSpace ||
                           s.ToString().find("No space left on device") != std::string::npos)) {
    return NoSpace(s.ToString());
  }
  if (s.IsIncomplete() && CachedReadsOnly::Active()) {
    CachedReadsOnly::NoteMiss();  // a kBlockCacheTier read that needed the disk
    return Status::Unavailable("not in memory");
  }
  return Status::IOError(s.ToString());
}

rocksdb::ReadOptions RocksStore::ForThisThread(rocksdb::ReadOptions ro) {
  if (CachedReadsOnly::Active()) {
    ro.read_tier = rocksdb::kBlockCacheTier;
  }
  return ro;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RocksStore::RocksStore(const StoreOptions& options) : options_(options) {
  meta_read_.verify_checksums = true;
  // Blob values carry their own hash (checked on read); SST blocks and locators are cheap to check.
  extent_read_.verify_checksums = options_.extent_layout != ExtentLayout::kBlobFiles;
  extent_read_.fill_cache = true;
  synced_.sync = options_.sync_writes;
  unsynced_.sync = false;
}

RocksStore::~RocksStore() {
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
  OC_RETURN_IF_ERROR(AdmitWrite(0));
  BucketRecord record{std::string(owner), NowUnixMs()};
  return FromRocks(db_->Put(synced_, buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size()),
                            EncodeBucketRecord(record)));
}

Status RocksStore::DeleteBucket(std::string_view bucket) {
  std::unique_lock lock(bucket_mu_);
  OC_RETURN_IF_ERROR(CheckBucket(bucket, meta_read_));
  const std::string prefix = BucketPrefix(bucket);
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, objects_cf_));
    it->Seek(prefix);
    OC_RETURN_IF_ERROR(FromRocks(it->status()));
    if (it->Valid() && it->key().starts_with(prefix)) {
      return Status::FailedPrecondition(Subject::kBucket, "bucket is not empty");
    }
  }
  // S3 counts only objects: unfinished multipart uploads are aborted with the bucket, in the
  // same batch (their records, their parts and the parts' extents). No part commit can run
  // meanwhile: commits hold bucket_mu_ shared.
  rocksdb::WriteBatch batch;
  uint64_t freed = 0;
  FileBytes dead;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, uploads_cf_));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    // bucket '/' key '\0' upload id; keys hold no NUL (store_keys.h).
    const std::string_view db_key = it->key().ToStringView();
    const size_t nul = db_key.find('\0', prefix.size());
    if (nul == std::string_view::npos) {
      return Status::Corruption("malformed upload key");
    }
    const std::string_view upload_id = db_key.substr(nul + 1);
    OC_ASSIGN_OR_RETURN(const std::vector<NumberedPart> parts, GetParts(meta_read_, upload_id));
    for (const NumberedPart& p : parts) {
      OC_RETURN_IF_ERROR(FromRocks(batch.Delete(parts_cf_, PartDbKey(upload_id, p.number))));
      freed += DeleteSegments({p.part.segment}, &batch, &dead);
    }
    OC_RETURN_IF_ERROR(FromRocks(batch.Delete(uploads_cf_, it->key())));
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  OC_RETURN_IF_ERROR(FromRocks(batch.Delete(default_cf_, LifecycleDbKey(bucket))));
  OC_RETURN_IF_ERROR(
      FromRocks(batch.Delete(buckets_cf_, rocksdb::Slice(bucket.data(), bucket.size()))));
  OC_RETURN_IF_ERROR(FromRocks(db_->Write(synced_, &batch)));
  NoteDataFiles({}, dead);
  NoteFreed(freed);
  return Status::Ok();
}

Result<BucketInfo> RocksStore::HeadBucket(std::string_view bucket) {
  std::string value;
  rocksdb::Status s = db_->Get(ForThisThread(meta_read_), buckets_cf_,
                               rocksdb::Slice(bucket.data(), bucket.size()), &value);
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

Status RocksStore::SetBucketLifecycle(std::string_view bucket, std::string_view config) {
  if (config.size() > kMaxLifecycleConfigBytes) {
    return Status(
        Code::kInvalidArgument, Subject::kBucket, "lifecycle",
        "lifecycle configuration over " + std::to_string(kMaxLifecycleConfigBytes) + " bytes");
  }
  // Exclusive, as CreateBucket and DeleteBucket: the key cannot outlive a bucket deleted
  // between the check and the write.
  std::unique_lock lock(bucket_mu_);
  OC_RETURN_IF_ERROR(CheckBucket(bucket, meta_read_));
  const std::string key = LifecycleDbKey(bucket);
  if (config.empty()) {
    return FromRocks(db_->Delete(synced_, default_cf_, key));
  }
  return FromRocks(
      db_->Put(synced_, default_cf_, key, rocksdb::Slice(config.data(), config.size())));
}

Result<std::string> RocksStore::GetBucketLifecycle(std::string_view bucket) {
  // One snapshot for both reads: the bucket and its configuration as of one moment.
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  std::string value;
  rocksdb::Status s = db_->Get(ro, default_cf_, LifecycleDbKey(bucket), &value);
  if (s.IsNotFound()) {
    return std::string();
  }
  OC_RETURN_IF_ERROR(FromRocks(s));
  return value;
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
  uint64_t pending = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_read_, pending_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++pending;
    }
    OC_RETURN_IF_ERROR(FromRocks(it->status()));
  }
  stats.figures.emplace_back("writes_in_progress", pending);
  uint64_t files = 0;
  uint64_t file_bytes = 0;
  uint64_t live_bytes = 0;
  for (const DataFileInfo& f : data_files_->Files()) {
    ++files;
    file_bytes += f.bytes;
    live_bytes += f.live;
  }
  stats.figures.emplace_back("data_files", files);
  stats.figures.emplace_back("data_file_bytes", file_bytes);
  stats.figures.emplace_back("data_file_live_bytes", live_bytes);
  // The free-space reserve (space_guard.h) and what is free beside it.
  stats.figures.emplace_back("space_available_bytes", space_->Available());
  stats.figures.emplace_back("space_reserve_bytes", space_->reserve());
  stats.figures.emplace_back("data_file_writeback_kicks", data_files_->writeback_kicks());
  stats.figures.emplace_back("data_file_syncs_behind", data_files_->syncs_behind());
  stats.figures.emplace_back("data_file_writeback_kicked_bytes",
                             data_files_->writeback_kicked_bytes());
  return stats;
}

}  // namespace oc::storage
