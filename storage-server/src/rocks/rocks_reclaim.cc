// RocksStore, space reclamation: replaced and deleted versions leave tombstones over their
// extents (point deletes for a version of a few extents, one range tombstone for a larger
// one); after StoreOptions::reclaim_after_bytes of them a background thread compacts
// the extent column family (and its blob files) so the space comes back, and rewrites the
// data files that are mostly garbage (rocks_data_reclaim.cc).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "oc/common/log.h"
#include "rocks/extent_key.h"
#include "rocks/rocks_store.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

// A version of at most this many extents is freed by point deletes of its extent keys, a
// larger one by one DeleteRange. Every new iterator fragments all the range tombstones of
// the mutable memtable, so a range tombstone per overwrite made each PUT and read cost
// O(overwrites since the last flush), which in the data-file layout (small locator values,
// rare flushes) grew to milliseconds
// (docs/decisions/storage-point-deletes.md).
constexpr uint64_t kPointDeleteMaxExtents = 256;

}  // namespace

uint64_t RocksStore::DeleteSegments(const std::vector<Segment>& segments,
                                    rocksdb::WriteBatch* batch, FileBytes* dead) {
  uint64_t bytes = 0;
  for (const Segment& s : segments) {
    const ExtentKey begin = ExtentRangeBegin(s.data_id);
    const ExtentKey end = ExtentRangeEnd(s.data_id);
    if ((s.flags & kSegmentDataFile) != 0) {
      // The frames this frees, per file (bucket_mu_ is held, so no rewrite moves them).
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(extent_read_, extents_cf_));
      for (it->Seek(AsSlice(begin)); it->Valid() && it->key().compare(AsSlice(end)) < 0;
           it->Next()) {
        Result<ExtentLocator> loc = DecodeLocator(it->value().ToStringView());
        if (loc.has_value()) {
          dead->Add(loc->file, loc->frame_bytes());
        }
      }
      if (!it->status().ok()) {  // the count stays high until the next open: reclaims later
        kLog.Warn("reading locators of data id {}: {}", s.data_id, it->status().ToString());
      }
    }
    // Extents are extent_bytes each but the last, numbered from 0 (rocks_write.cc); an empty
    // version may have written one. Deleting a key that was never written is harmless.
    const uint64_t extents =
        s.extent_bytes == 0 ? UINT64_MAX
                            : std::max<uint64_t>(1, s.size / s.extent_bytes +
                                                        (s.size % s.extent_bytes != 0 ? 1 : 0));
    // Cannot fail for a batch that is not size-capped.
    if (extents <= kPointDeleteMaxExtents) {
      for (uint64_t i = 0; i < extents; ++i) {
        (void)batch->Delete(extents_cf_, AsSlice(EncodeExtentKey(s.data_id, i)));
      }
    } else {
      (void)batch->DeleteRange(extents_cf_, AsSlice(begin), AsSlice(end));
    }
    bytes += s.size;
  }
  return bytes;
}

void RocksStore::NoteDataFiles(const FileBytes& added, const FileBytes& dead) {
  data_files_->AddLive(added);
  data_files_->SubLive(dead);
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
  // Retired data files wait for the snapshots that may name them; while any do, the loop
  // looks again this often.
  constexpr auto kReleasePoll = std::chrono::seconds(1);
  size_t held = 0;
  for (;;) {
    bool reclaim = false;
    {
      std::unique_lock lock(reclaim_mu_);
      auto due = [this] {
        return stopping_ || (options_.reclaim_after_bytes != 0 &&
                             freed_since_compaction_ >= options_.reclaim_after_bytes);
      };
      if (held > 0) {
        reclaim_cv_.wait_for(lock, kReleasePoll, due);
      } else {
        reclaim_cv_.wait(lock, due);
      }
      if (stopping_) {
        return;
      }
      reclaim = due();
      if (reclaim) {
        freed_since_compaction_ = 0;
      }
    }
    if (reclaim) {
      Status s = CompactExtents();
      if (!s.ok()) {
        kLog.Warn("reclaim failed: {}", s.ToString());
      }
    }
    held = ReleaseDataFiles();
  }
}

size_t RocksStore::ReleaseDataFiles() {
  uint64_t oldest = 0;  // 0 when no snapshot exists
  if (!db_->GetIntProperty(rocksdb::DB::Properties::kOldestSnapshotSequence, &oldest)) {
    oldest = 1;  // unknown: release nothing
  }
  return data_files_->Release(oldest);
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
  OC_RETURN_IF_ERROR(FromRocks(db_->CompactRange(o, extents_cf_, nullptr, nullptr)));
  if (data_files_->empty()) {
    return Status::Ok();
  }
  return ReclaimDataFiles(options_.data_file_garbage_percent, /*seal_active=*/false).status();
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
