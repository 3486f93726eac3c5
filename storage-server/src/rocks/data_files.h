#pragma once
// DataFiles: the extent bytes of ExtentLayout::kDataFiles, outside RocksDB (WiscKey's
// key-value separation; docs/decisions/storage-data-files.md). Extents are
// appended to numbered files in one directory (000001.ocd, ...), each as a frame:
//
//   u32 magic "OCD1" | u32 0 | u64 data id | u64 extent index | u64 length | u64 XXH3-64 of
//   the bytes | u64 XXH3-64 of the 40 header bytes before it | the bytes
//
// all little-endian, frames back to back with no padding. RocksDB keeps only a locator per
// extent (file, frame offset, length, hash) under the extent key it always had, so object
// records and segments keep their shape (a segment's kSegmentDataFile flag says its extent
// values are locators). The headers make a file self-describing: a tool (or a test) can walk
// its frames without RocksDB; the server never does (no scrub:
// docs/decisions/storage-data-files-default.md).
//
// Writers append concurrently: Append reserves the frame's offset under a short lock and
// writes header and bytes with one pwritev outside it. A file is rolled once it holds
// `roll_bytes`; after a restart appends go to a fresh file, so a torn tail of an older file
// is never appended to and nothing names it (garbage, reclaimed with the file). Durability:
// AwaitSynced(ticket) returns once an fdatasync that started after the append finished has
// covered it (grouped: GroupSync); RocksStore calls it before writing the records that name
// the bytes, so a record never names unsynced bytes.
//
// Reads verify the XXH3-64 of the whole extent, and both read a read-only shared mapping of
// the file: Read copies into the caller's buffer, View lends the mapped bytes with a hold
// that keeps the mapping alive. A file is never truncated; it is unlinked once reclaimed (Retire),
// and its descriptor and mapping live on until the last reader that may name it is gone (Release).
//
// Space: the frame bytes that committed records name are counted per file (AddLive and
// SubLive, which RocksStore calls with its commits; SetLive at open from a scan of the
// locators); the rest of a file is garbage. Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"

namespace oc::storage {

class GroupSync;

// A bit of Segment::flags (records/meta_codec.h, beside kSegmentExtentHash): the segment's
// extent values are locators into the data files.
inline constexpr uint8_t kSegmentDataFile = 2;

inline constexpr uint32_t kFrameMagic = 0x3144434f;  // "OCD1" little-endian
inline constexpr uint64_t kFrameHeaderBytes = 48;
inline constexpr size_t kLocatorBytes = 32;

// Where one extent's frame lies. Encoded (EncodeLocator) as four u64 little-endian: file,
// frame offset, length, hash.
struct ExtentLocator {
  uint32_t file = 0;
  uint64_t offset = 0;  // of the frame header
  uint64_t length = 0;  // of the extent's bytes (the frame is kFrameHeaderBytes more)
  uint64_t hash = 0;    // XXH3-64 of the bytes
  uint64_t frame_bytes() const { return kFrameHeaderBytes + length; }
  bool operator==(const ExtentLocator&) const = default;
};
std::string EncodeLocator(const ExtentLocator& loc);
// kCorruption unless `value` is kLocatorBytes long with a file number below 2^32.
Result<ExtentLocator> DecodeLocator(std::string_view value);

// Frame bytes per file, added or removed by one commit.
struct FileBytes {
  std::vector<std::pair<uint32_t, uint64_t>> items;
  void Add(uint32_t file, uint64_t bytes) {
    if (!items.empty() && items.back().first == file) {
      items.back().second += bytes;
    } else {
      items.emplace_back(file, bytes);
    }
  }
};

// A file as Files() reports it.
struct DataFileInfo {
  uint32_t number = 0;
  uint64_t bytes = 0;  // appended (reserved) so far
  uint64_t live = 0;   // frame bytes committed records name
  bool active = false;
  bool writing = false;  // a writer that appended to it may still commit locators into it
};

// Bytes lent by View: valid while `hold` lives.
struct ExtentView {
  ByteSpan bytes;
  std::shared_ptr<const void> hold;
};

class DataFiles {
 public:
  // Opens (creating it if absent) the directory `dir`; files of earlier runs are sealed.
  // `sync`: Append's bytes are made durable by AwaitSynced (else AwaitSynced is free).
  // `writeback_bytes` (with `sync`; 0: off): once that many bytes were appended to a file
  // since its last kick, Append starts their write-back (sync_file_range) without waiting.
  static Result<std::unique_ptr<DataFiles>> Open(std::string dir, uint64_t roll_bytes, bool sync,
                                                 uint64_t writeback_bytes = 0);
  ~DataFiles();

  // Whether any data file exists (a store that never used the layout has none).
  bool empty() const;

  struct Appended {
    ExtentLocator locator;
    uint64_t ticket = 0;  // for AwaitSynced
    // While any copy lives, the file counts as written to (DataFileInfo::writing): hold it
    // until the record naming the locator is written or given up.
    std::shared_ptr<const void> pin;
  };
  // Appends `data` as extent `index` of `data_id`. kResourceExhausted/storage.space
  // (oc/storage/no_space.h) if the file system is full, kIOError if the file cannot be
  // created or written otherwise, or if a sync of the file failed earlier. A failed write
  // is cut back off the file when no later append reserved space after it (else the range
  // is garbage).
  Result<Appended> Append(uint64_t data_id, uint64_t index, ByteSpan data);
  // Returns once every append up to `ticket` is on stable storage; the sync's error if the
  // sync that covered it failed (sticky: later tickets fail too, until Rearm). The files a
  // failed sync covered take no appends again.
  Status AwaitSynced(uint64_t ticket);
  // Ends a failed sync's stickiness (GroupSync::Rearm): appends from now on go to files no
  // failed sync covered and are acknowledged again. Returns whether a failure was pending.
  bool Rearm();

  // Copies bytes [within, within + dest.size()) of the extent at `loc` from the file's mapping
  // into dest and verifies the extent's hash (fused with the copy when dest is the whole
  // extent, else over the mapped extent first). kCorruption on a mismatch or a locator
  // outside its file.
  Status Read(const ExtentLocator& loc, uint64_t within, MutableByteSpan dest) const;
  // The whole extent at `loc` from the file's mapping, verified. `resident_only`: kUnavailable,
  // without touching the bytes, when a page of the extent is not in the page cache (reading
  // it would wait for the disk; oc/storage/cached_reads.h).
  Result<ExtentView> View(const ExtentLocator& loc, bool resident_only = false) const;

  void AddLive(const FileBytes& bytes);
  void SubLive(const FileBytes& bytes);
  // Replaces every file's live count (open: from a scan of the locators).
  void SetLive(const std::map<uint32_t, uint64_t>& live);
  std::vector<DataFileInfo> Files() const;

  // Unlinks sealed file `number` (nothing durable names it any more), keeping its descriptor
  // and mapping for readers whose snapshots may still name it until Release(sequence) with
  // `sequence` >= `retire_sequence`. kFailedPrecondition for the active file.
  Status Retire(uint32_t number, uint64_t retire_sequence);
  // Drops retired files that no snapshot older than `oldest_sequence` can name (0: there is
  // no snapshot). Returns how many are still held.
  size_t Release(uint64_t oldest_sequence);

  // Ends appends to the current file; the next append starts a new one.
  void Seal();

  const std::string& dir() const { return dir_; }
  // Write-backs started early (StartWriteback) and the bytes they covered.
  uint64_t writeback_kicks() const { return writeback_kicks_.load(std::memory_order_relaxed); }
  uint64_t writeback_kicked_bytes() const {
    return writeback_kicked_bytes_.load(std::memory_order_relaxed);
  }
  // Syncs started in the background every kSyncBehindBytes appended.
  uint64_t syncs_behind() const { return syncs_behind_.load(std::memory_order_relaxed); }

 private:
  class File;
  DataFiles(std::string dir, uint64_t roll_bytes, bool sync, uint64_t writeback_bytes);
  // Starts the write-back of `file`'s bytes below `end` not yet kicked, once they are at
  // least writeback_bytes_.
  void StartWriteback(File& file, uint64_t end);
  Status Scan();
  std::shared_ptr<File> Find(uint32_t number) const;
  // The file to append `frame_bytes` to and the frame's offset in it; rolls when full.
  struct Reserved {
    std::shared_ptr<File> file;
    uint64_t offset = 0;
    std::shared_ptr<const void> pin;
  };
  Result<Reserved> Reserve(uint64_t frame_bytes);
  // The extent's bytes in its file's mapping, not verified; kCorruption for a locator
  // outside its file.
  Result<ExtentView> MapExtent(const ExtentLocator& loc) const;
  Status SyncDirty();
  // After a failed write of a frame at `offset`: gives its reservation back if it is the
  // file's last one, and cuts the file to `offset`.
  void GiveBack(File& file, uint64_t offset, uint64_t frame_bytes);

  const std::string dir_;
  const uint64_t roll_bytes_;
  // With write-back on, every this many bytes appended (over all files) Append also starts a
  // sync in the background (GroupSync::SyncInBackground). A write-back kick only moves bytes
  // to the disk's cache; this disk's flush, which fdatasync waits for, took 0.21-0.22 s for
  // 448 MiB at the end against 0.04 s when the bytes before were flushed every 64 MiB
  // (bench/tcp_file_floor --sync-every; docs/decisions/data-files-sync-behind.md).
  static constexpr uint64_t kSyncBehindBytes = 64ull << 20;
  const uint64_t writeback_bytes_;
  std::atomic<uint64_t> sync_bytes_{0};  // appended since the last background sync
  std::atomic<uint64_t> syncs_behind_{0};
  std::atomic<uint64_t> writeback_kicks_{0};
  std::atomic<uint64_t> writeback_kicked_bytes_{0};
  std::unique_ptr<GroupSync> sync_;  // null when not syncing

  mutable std::mutex mu_;
  std::map<uint32_t, std::shared_ptr<File>> files_ OC_GUARDED_BY(mu_);
  std::shared_ptr<File> active_ OC_GUARDED_BY(mu_);
  uint32_t next_number_ OC_GUARDED_BY(mu_) = 1;
  // Files appended to since the last sync started.
  std::map<uint32_t, std::shared_ptr<File>> dirty_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage
