// RocksStore, space reclamation: replaced and deleted versions leave range tombstones over
// their extents; after StoreOptions::reclaim_after_bytes of them a background thread compacts
// the extent column family (and its blob files) so the space comes back.

#include <memory>
#include <mutex>
#include <vector>

#include "oc/common/log.h"
#include "rocks/extent_key.h"
#include "rocks/rocks_store.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

}  // namespace

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

}  // namespace oc::storage
