// RocksStore, opening: the database's column families and their table options, the data id
// counter (read at open, reserved in synced blocks), recovery of writes a crash left
// uncommitted, and OpenRocksBackend (OpenStore's opener of this backend).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

#include "oc/common/log.h"
#include "rocks/extent_key.h"
#include "rocks/group_sync.h"
#include "rocks/rocks_store.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError(fmt::format("open {}: {}", dir, std::strerror(errno)));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? Status::Ok()
                 : Status::IOError(fmt::format("fsync {}: {}", dir, std::strerror(err)));
}

constexpr char kCfBuckets[] = "buckets";
constexpr char kCfObjects[] = "objects";
constexpr char kCfExtents[] = "extents";
constexpr char kCfUploads[] = "uploads";
constexpr char kCfParts[] = "parts";
constexpr char kCfPending[] = "pending";
constexpr char kNextDataIdKey[] = "next_data_id";
// ExtentLayout::kDataFiles keeps its files in this directory of data_dir.
constexpr char kDataFilesDir[] = "extents";
// Data ids are reserved in blocks so that one synced counter write covers many objects;
// ids of a block left unused after a restart are simply skipped.
constexpr uint64_t kDataIdBlock = 1 << 16;
// The smallest memtable on a small file system (OpenDb).
constexpr uint64_t kMinWriteBufferBytes = 256 << 10;

}  // namespace

Result<std::unique_ptr<RocksStore>> RocksStore::Open(const StoreOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<RocksStore> store(new RocksStore(options));
  OC_RETURN_IF_ERROR(store->OpenDb());
  OC_RETURN_IF_ERROR(store->Recover());
  OC_RETURN_IF_ERROR(store->OpenDataFiles());
  if (options.sync_writes) {
    rocksdb::DB* db = store->db_.get();
    store->wal_sync_ = std::make_unique<GroupSync>([db] { return FromRocks(db->SyncWAL()); });
  }
  if (options.read_threads > 0) {
    store->pool_ = std::make_unique<ThreadPool>(options.read_threads);
  }
  RocksStore* raw = store.get();
  store->reclaimer_ = std::thread([raw] { raw->ReclaimLoop(); });
  return store;
}

Status RocksStore::OpenDb() {
  std::error_code ec;
  // The directories this creates, deepest first: each one's name is durable only once its
  // parent is synced (POSIX; the power-loss test's file system drops it otherwise, and with it
  // every acknowledged write of a fresh store: docs/design.md, "Power-loss test").
  std::vector<std::filesystem::path> created;
  for (std::filesystem::path p = std::filesystem::absolute(options_.data_dir, ec);
       !ec && !p.empty() && !std::filesystem::exists(p, ec) && p != p.parent_path();
       p = p.parent_path()) {
    created.push_back(p);
  }
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create " + options_.data_dir + ": " + ec.message());
  }
  if (options_.sync_writes) {
    for (const std::filesystem::path& dir : created) {
      OC_RETURN_IF_ERROR(SyncDir(dir.parent_path().string()));
    }
  }
  OC_ASSIGN_OR_RETURN(SpaceGuard guard, SpaceGuard::Open(options_.data_dir));
  space_ = std::make_unique<SpaceGuard>(guard);
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
  // A file system smaller than the reserve's top size (docs/decisions/full-disk.md): the
  // WAL is preallocated at 1.1x the largest write buffer (141 MiB for the extents' 128 MiB,
  // which alone made the first PUT fail on a 48 MiB file system), and a memtable flush, which
  // RocksDB's recovery from a full disk needs, writes the memtable's bytes again: so no
  // preallocation, and memtables and the WAL bounded by the reserve, which ordinary writes
  // leave free. Large file systems keep the measured settings.
  const bool small_fs = space_->reserve() < SpaceGuard::kMaxReserveBytes;
  if (small_fs) {
    db_options.allow_fallocate = false;
    db_options.max_total_wal_size = space_->reserve();
  }

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
  if (small_fs) {
    meta_cf.write_buffer_size = std::max<uint64_t>(kMinWriteBufferBytes, space_->reserve() / 8);
  }
  meta_cf.compression = rocksdb::kNoCompression;
  meta_cf.level_compaction_dynamic_level_bytes = true;
  meta_cf.table_factory = table(16 << 10, /*bloom=*/true, /*prepopulate=*/false);

  rocksdb::ColumnFamilyOptions extent_cf;
  extent_cf.compression = rocksdb::kNoCompression;  // KV tensors and S3 payloads: rarely pay
  extent_cf.level_compaction_dynamic_level_bytes = true;
  extent_cf.write_buffer_size =
      small_fs ? std::max<uint64_t>(kMinWriteBufferBytes, space_->reserve() / 4) : 128 << 20;
  extent_cf.max_write_buffer_number = 3;
  // Small files on a small file system: a compaction then pulls in fewer bytes of the
  // level below, so it needs less free room to run.
  extent_cf.target_file_size_base =
      small_fs ? std::max<uint64_t>(1 << 20, space_->reserve() / 2) : 256 << 20;
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

Status RocksStore::OpenDataFiles() {
  OC_ASSIGN_OR_RETURN(
      data_files_,
      DataFiles::Open((std::filesystem::path(options_.data_dir) / kDataFilesDir).string(),
                      DataFileRollBytes(), options_.sync_writes,
                      options_.data_file_writeback_bytes));
  if (data_files_->empty()) {
    return Status::Ok();
  }
  // Live bytes per file: the frames every record names.
  std::map<uint32_t, uint64_t> live;
  OC_RETURN_IF_ERROR(ForEachDataExtent([&](const ExtentKey&, const ExtentLocator& loc) {
    live[loc.file] += loc.frame_bytes();
    return Status::Ok();
  }));
  data_files_->SetLive(live);
  kLog.Info("data files: {} files", data_files_->Files().size());
  return Status::Ok();
}

uint64_t RocksStore::DataFileRollBytes() const {
  // On a small file system a file of deleted and live extents is rewritten only when its live
  // bytes fit in what is free, which near full is about the reserve: files no larger than it
  // can always be (docs/decisions/full-disk.md).
  if (space_->reserve() < SpaceGuard::kMaxReserveBytes) {
    return std::min(options_.data_file_bytes, space_->reserve());
  }
  return options_.data_file_bytes;
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

Result<std::unique_ptr<Backend>> OpenRocksBackend(const StoreOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<RocksStore> store, RocksStore::Open(options));
  return std::unique_ptr<Backend>(std::move(store));
}

}  // namespace oc::storage
