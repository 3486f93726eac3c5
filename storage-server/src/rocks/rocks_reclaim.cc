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
#include "rocks/group_sync.h"
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

// After a refusal for lack of space, every delete wakes the space recovery until this many
// reserves are free again (one recovery may run before most of a batch of deletes landed).
constexpr uint64_t kRecoveredReserves = 4;
// The space recovery runs at most once per this pause.
constexpr auto kRecoveryPause = std::chrono::milliseconds(50);

}  // namespace

uint64_t RocksStore::DeleteSegments(const std::vector<Segment>& segments,
                                    rocksdb::WriteBatch* batch, FileBytes* dead) {
  uint64_t bytes = 0;
  for (const Segment& s : segments) {
    if ((s.flags & kSegmentDataFile) == 0) {
      std::lock_guard lock(reclaim_mu_);  // the range the space recovery compacts
      deleted_lo_ = std::min(deleted_lo_, s.data_id);
      deleted_hi_ = std::max(deleted_hi_, s.data_id);
    }
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
  if (bytes > 0) {
    MaybeRecoverSpace();
  }
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
    bool recover = false;
    {
      std::unique_lock lock(reclaim_mu_);
      auto due = [this] {
        return stopping_ || recover_space_ ||
               (options_.reclaim_after_bytes != 0 &&
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
      recover = recover_space_;
      recover_space_ = false;
      reclaim = options_.reclaim_after_bytes != 0 &&
                freed_since_compaction_ >= options_.reclaim_after_bytes;
      if (reclaim) {
        freed_since_compaction_ = 0;
      }
    }
    if (recover) {
      Status s = RecoverSpace();
      if (!s.ok()) {
        kLog.Warn("space recovery: {}", s.ToString());
      }
      // Refused writes wake it as fast as they come: at most one recovery per pause.
      std::unique_lock lock(reclaim_mu_);
      reclaim_cv_.wait_for(lock, kRecoveryPause, [this] { return stopping_; });
    }
    // No compaction while short of space: it writes its output before it frees its input.
    if (reclaim && space_->Admit(0).ok()) {
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

void RocksStore::MaybeRecoverSpace() {
  if (!space_->short_of_space() && space_->Available() >= 2 * space_->reserve()) {
    return;
  }
  {
    std::lock_guard lock(reclaim_mu_);
    recover_space_ = true;
  }
  reclaim_cv_.notify_one();
}

Status RocksStore::ResumeDb(bool flush) {
  // A no-op unless a background error (a full disk during a flush, compaction or WAL write)
  // stopped the database; then it clears the error and flushes the memtables.
  OC_RETURN_IF_ERROR(FromRocks(db_->Resume()));
  if (!flush) {
    return Status::Ok();
  }
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;
  return FromRocks(db_->Flush(fo, handles_));
}

Status RocksStore::RecoverSpace() {
  const auto start = std::chrono::steady_clock::now();
  // RocksDB first: a stopped database refuses the deletes and locator swaps below. A failed
  // WAL sync is sticky (group_sync.h): its records are made durable by a flush into synced
  // tables before later syncs may acknowledge anything again.
  const bool wal_failed = wal_sync_ != nullptr && wal_sync_->failed();
  if (Status resumed = ResumeDb(/*flush=*/wal_failed); !resumed.ok()) {
    // Still stopped (too full for the memtables' flush, or Busy: RocksDB's own recovery
    // retries that flush every 5 s): the tables the deletes emptied go anyway (no running
    // database needed), which makes the room either retry resumes with (full-disk.md).
    (void)CompactDeletedRange(/*running=*/false);
    return resumed;
  }
  if (wal_failed) {
    (void)wal_sync_->Rearm();  // after the flush: the failed WAL is no longer replayed
  }
  const bool data_failed = data_files_->Rearm();
  uint64_t retired = 0;
  if (!data_files_->empty()) {
    std::lock_guard lock(data_reclaim_mu_);
    // Deleted bytes of the current file come back only once it is sealed (the rewrite never
    // touches the file being appended to); then the files no record names go, which needs
    // no room, and then partly dead ones whose live bytes fit in what is free.
    data_files_->Seal();
    std::vector<uint32_t> dead;
    std::vector<DataFileInfo> partly;
    for (const DataFileInfo& f : data_files_->Files()) {
      if (f.active || f.writing || f.bytes <= f.live) {
        continue;
      }
      // Short of space a file is worth rewriting at half the usual garbage share.
      if (f.live == 0) {
        dead.push_back(f.number);
      } else if ((f.bytes - f.live) * 200 >=
                 uint64_t{options_.data_file_garbage_percent} * f.bytes) {
        partly.push_back(f);
      }
    }
    if (!dead.empty()) {
      OC_RETURN_IF_ERROR(RewriteDataFiles(dead));  // nothing to copy: only retires them
      retired += dead.size();
    }
    (void)ReleaseDataFiles();
    std::sort(partly.begin(), partly.end(), [](const DataFileInfo& a, const DataFileInfo& b) {
      return a.live * b.bytes < b.live * a.bytes;  // most space back per byte copied first
    });
    for (const DataFileInfo& f : partly) {
      const uint64_t available = space_->Available();
      if (available == UINT64_MAX || f.live > available / 2) {
        break;
      }
      OC_RETURN_IF_ERROR(RewriteDataFiles({f.number}));
      (void)ReleaseDataFiles();
      ++retired;
    }
  }
  Status compacted = CompactDeletedRange(/*running=*/true);
  if (!compacted.ok()) {
    kLog.Warn("space recovery: compacting the deleted range: {}", compacted.ToString());
    (void)ResumeDb(/*flush=*/false);  // a compaction that met a full disk stops RocksDB
  }
  // Deletes keep waking the recovery until a few reserves are free again.
  if (space_->Available() >= kRecoveredReserves * space_->reserve()) {
    space_->ClearRefused();
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  kLog.Info(
      "space recovery: wal_sync_rearmed={} data_sync_rearmed={} data_files_retired={} "
      "available={} reserve={} ms={}",
      wal_failed, data_failed, retired, space_->Available(), space_->reserve(), ms);
  return Status::Ok();
}

Status RocksStore::CompactDeletedRange(bool running) {
  uint64_t lo = 0;
  uint64_t hi = 0;
  {
    std::lock_guard lock(reclaim_mu_);
    if (deleted_lo_ > deleted_hi_) {
      return Status::Ok();
    }
    lo = deleted_lo_;
    hi = deleted_hi_;
    deleted_lo_ = UINT64_MAX;
    deleted_hi_ = 0;
  }
  auto again = [&] {  // the range stays due for the next recovery
    std::lock_guard lock(reclaim_mu_);
    deleted_lo_ = std::min(deleted_lo_, lo);
    deleted_hi_ = std::max(deleted_hi_, hi);
  };
  // The deletes' tombstones into tables (room for one memtable: within the reserve). A
  // stopped database flushes nothing, but reads, and a dead table still goes (a version edit).
  Status flushed = Status::Unavailable("RocksDB stopped by a background error");
  if (running) {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    fo.allow_write_stall = true;
    flushed = FromRocks(db_->Flush(fo, extents_cf_));
  }
  const uint64_t deletes_sequence = db_->GetLatestSequenceNumber();
  const ExtentKey begin_key = ExtentRangeBegin(lo);
  const ExtentKey end_key = ExtentRangeEnd(hi);
  const rocksdb::Slice begin = AsSlice(begin_key);
  const rocksdb::Slice end = AsSlice(end_key);

  // A compaction writes its output before it frees its input, so near full it cannot run.
  // A table of the last level with no visible key left goes whole instead (DB::DeleteFile:
  // no room needed; last level only, so no older value can resurface). Not while a snapshot
  // older than the deletes exists: its reader may still read the table's extents.
  uint64_t oldest = 0;
  if (!db_->GetIntProperty(rocksdb::DB::Properties::kOldestSnapshotSequence, &oldest)) {
    oldest = 1;
  }
  uint64_t dropped = 0;
  uint64_t dropped_bytes = 0;
  if (oldest == 0 || oldest > deletes_sequence) {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(extents_cf_, &meta);
    const rocksdb::LevelMetaData* last = nullptr;
    for (auto it = meta.levels.rbegin(); it != meta.levels.rend(); ++it) {
      if (!it->files.empty()) {
        last = &*it;
        break;
      }
    }
    rocksdb::ReadOptions ro = extent_read_;
    ro.fill_cache = false;
    for (size_t i = 0; last != nullptr && i < last->files.size(); ++i) {
      const rocksdb::SstFileMetaData& f = last->files[i];
      const rocksdb::Slice smallest(f.smallestkey);
      const rocksdb::Slice largest(f.largestkey);
      if (f.being_compacted || largest.compare(begin) < 0 || smallest.compare(end) >= 0) {
        continue;
      }
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, extents_cf_));
      it->Seek(smallest);
      OC_RETURN_IF_ERROR(FromRocks(it->status()));
      if (it->Valid() && it->key().compare(largest) <= 0) {
        continue;  // a live extent: only a compaction frees the rest of this table
      }
      it.reset();
      if (db_->DeleteFile(f.relative_filename).ok()) {
        ++dropped;
        dropped_bytes += f.size;
      }
    }
  } else {
    again();
  }
  if (dropped > 0) {
    kLog.Info("space recovery: dropped {} dead extent tables, {} bytes", dropped, dropped_bytes);
  }
  if (!flushed.ok()) {
    again();
    return flushed;
  }
  // Tables with live extents left: compacted only with room to spare (its output is at most
  // the range's live bytes; deletes spread over every id leave about half of them live).
  if (space_->Available() < 4 * space_->reserve()) {
    return Status::Ok();
  }
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  o.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
  o.blob_garbage_collection_age_cutoff = 1.0;
  o.allow_write_stall = true;
  Status s = FromRocks(db_->CompactRange(o, extents_cf_, &begin, &end));
  if (!s.ok()) {
    again();
  }
  return s;
}

}  // namespace oc::storage
