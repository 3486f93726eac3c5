// RocksStore, reclaiming data files (ExtentLayout::kDataFiles, data_files.h;
// docs/decisions/storage-data-files.md). A sealed file that no writer still
// appends to and whose garbage reaches the threshold is rewritten: its live extents (found
// through the records, so the counts only choose the files) are appended to the current
// file straight from the old file's mapping, synced, and their locators replaced in one
// batch per piece under bucket_mu_ held exclusively, each only if it is still the one that
// was copied (a commit that deleted or replaced it meanwhile wins; the copy is garbage).
// Once those batches and every earlier commit are WAL-synced, the file is unlinked; its
// descriptor and mapping stay for readers whose snapshots may still name it, until the
// oldest snapshot is newer than the rewrite (ReleaseDataFiles).

#include <algorithm>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <vector>

#include <rocksdb/snapshot.h>

#include "oc/common/log.h"
#include "rocks/group_sync.h"
#include "rocks/rocks_store.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

// A rewrite replaces locators in pieces of at most this many extents or bytes, so the
// exclusive lock is held for one MultiGet and one batch write at a time.
constexpr size_t kRewritePieceExtents = 256;
constexpr uint64_t kRewritePieceBytes = 64ull << 20;

}  // namespace

Status RocksStore::ForEachDataExtent(
    const std::function<Status(const ExtentKey&, const ExtentLocator&)>& visit) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions meta_ro = meta_read_;
  meta_ro.snapshot = snapshot.snapshot();
  rocksdb::ReadOptions extent_ro = extent_read_;
  extent_ro.snapshot = snapshot.snapshot();
  extent_ro.fill_cache = false;
  auto segment = [&](const Segment& seg) -> Status {
    if ((seg.flags & kSegmentDataFile) == 0) {
      return Status::Ok();
    }
    const ExtentKey end = ExtentRangeEnd(seg.data_id);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(extent_ro, extents_cf_));
    for (it->Seek(AsSlice(ExtentRangeBegin(seg.data_id)));
         it->Valid() && it->key().compare(AsSlice(end)) < 0; it->Next()) {
      if (it->key().size() != kExtentKeyBytes) {
        return Status::Corruption("malformed extent key");
      }
      ExtentKey key;
      std::copy_n(it->key().data(), kExtentKeyBytes, key.begin());
      OC_ASSIGN_OR_RETURN(ExtentLocator loc, DecodeLocator(it->value().ToStringView()));
      OC_RETURN_IF_ERROR(visit(key, loc));
    }
    return FromRocks(it->status());
  };
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_ro, objects_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(it->value().ToStringView()));
      for (const Segment& seg : record.segments) {
        OC_RETURN_IF_ERROR(segment(seg));
      }
    }
    OC_RETURN_IF_ERROR(FromRocks(it->status()));
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(meta_ro, parts_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    OC_ASSIGN_OR_RETURN(PartRecord part, DecodePartRecord(it->value().ToStringView()));
    OC_RETURN_IF_ERROR(segment(part.segment));
  }
  return FromRocks(it->status());
}

Result<uint64_t> RocksStore::ReclaimDataFiles(uint32_t min_garbage_percent, bool seal_active) {
  std::lock_guard lock(data_reclaim_mu_);
  if (seal_active) {
    data_files_->Seal();
  }
  std::vector<uint32_t> victims;
  for (const DataFileInfo& f : data_files_->Files()) {
    if (f.active || f.writing || f.bytes <= f.live) {
      continue;
    }
    if ((f.bytes - f.live) * 100 >= uint64_t{min_garbage_percent} * f.bytes) {
      victims.push_back(f.number);
    }
  }
  if (victims.empty()) {
    return 0;
  }
  OC_RETURN_IF_ERROR(RewriteDataFiles(victims));
  (void)ReleaseDataFiles();
  return victims.size();
}

Status RocksStore::RewriteDataFiles(const std::vector<uint32_t>& victims) {
  // The files are sealed and unpinned: no locator into them can appear any more, so one scan
  // finds every extent that may still need them.
  const std::set<uint32_t> in(victims.begin(), victims.end());
  struct Move {
    ExtentKey key;
    ExtentLocator from;
  };
  std::vector<Move> moves;
  OC_RETURN_IF_ERROR(ForEachDataExtent([&](const ExtentKey& key, const ExtentLocator& loc) {
    if (in.count(loc.file) != 0) {
      moves.push_back(Move{key, loc});
    }
    return Status::Ok();
  }));
  uint64_t moved = 0;
  for (size_t start = 0; start < moves.size();) {
    StagedData staged;
    std::vector<ExtentLocator> to;
    uint64_t bytes = 0;
    size_t end = start;
    while (end < moves.size() && end - start < kRewritePieceExtents &&
           (end == start || bytes < kRewritePieceBytes)) {
      const Move& m = moves[end];
      OC_ASSIGN_OR_RETURN(ExtentView view, data_files_->View(m.from));  // verified
      const std::optional<ExtentId> id =
          DecodeExtentKey(std::string_view(m.key.data(), m.key.size()));
      OC_ASSIGN_OR_RETURN(DataFiles::Appended a,
                          data_files_->Append(id->data_id, id->index, view.bytes));
      staged.ticket = std::max(staged.ticket, a.ticket);
      staged.pins.push_back(std::move(a.pin));
      to.push_back(a.locator);
      bytes += m.from.length;
      ++end;
    }
    // The copies are durable before any locator names them.
    OC_RETURN_IF_ERROR(data_files_->AwaitSynced(staged.ticket));
    const size_t n = end - start;
    std::vector<rocksdb::Slice> keys;
    keys.reserve(n);
    for (size_t j = start; j < end; ++j) {
      keys.push_back(AsSlice(moves[j].key));
    }
    std::vector<rocksdb::PinnableSlice> values(n);
    std::vector<rocksdb::Status> statuses(n);
    uint64_t ticket = 0;
    if (rewrite_hook_) {
      rewrite_hook_();
    }
    {
      // No commit deletes or replaces extents while this is held (they hold it shared).
      std::unique_lock bucket_lock(bucket_mu_);
      db_->MultiGet(extent_read_, extents_cf_, n, keys.data(), values.data(), statuses.data());
      rocksdb::WriteBatch batch;
      FileBytes added;
      FileBytes dead;
      for (size_t j = 0; j < n; ++j) {
        const Move& m = moves[start + j];
        if (!statuses[j].ok() || values[j].ToStringView() != EncodeLocator(m.from)) {
          continue;  // deleted or replaced since the scan: the copy is garbage
        }
        OC_RETURN_IF_ERROR(FromRocks(batch.Put(extents_cf_, keys[j], EncodeLocator(to[j]))));
        added.Add(to[j].file, to[j].frame_bytes());
        dead.Add(m.from.file, m.from.frame_bytes());
        ++moved;
      }
      if (batch.Count() > 0) {
        OC_ASSIGN_OR_RETURN(ticket, WriteForDurability(&batch));
        NoteDataFiles(added, dead);
      }
    }
    OC_RETURN_IF_ERROR(AwaitDurable(ticket));
    start = end;
  }
  // Every commit that dropped the files' other extents must be durable too before the files
  // go: a crash must not bring back a record that names them.
  const uint64_t sequence = db_->GetLatestSequenceNumber();
  if (wal_sync_ != nullptr) {
    OC_RETURN_IF_ERROR(AwaitDurable(wal_sync_->Written()));
  }
  for (const uint32_t number : victims) {
    OC_RETURN_IF_ERROR(data_files_->Retire(number, sequence));
  }
  kLog.Info("data files: rewrote {} files, {} live extents moved", victims.size(), moved);
  return Status::Ok();
}

}  // namespace oc::storage
