#pragma once
// RocksStore: the Backend (backend.h) over one RocksDB database (target oc_storage_rocks,
// opened by OpenStore, which composes the KV engine over it: composed_store.h). It is the KV
// engine's SliceSource (src/kv/slice_source.h). Its parts, one idea per file: rocks_store.cc (core,
// buckets, stats), rocks_open.cc, rocks_write.cc, rocks_read.cc, rocks_group.cc,
// rocks_multipart.cc, rocks_list.cc, rocks_slices.cc, rocks_reclaim.cc, group_sync.cc, and
// data_files.cc (the extent bytes of ExtentLayout::kDataFiles).
//
// Column families (keys -> values):
//   default   "next_data_id" -> u64 LE: ceiling of data ids handed out (reserved in blocks);
//             "lifecycle/" bucket -> the bucket's lifecycle configuration (opaque bytes)
//   buckets   bucket name -> BucketRecord
//   objects   bucket '/' key -> ObjectRecord (metadata + segments {data id, size, extent})
//   extents   BE64 data id, BE64 extent index -> extent bytes (extent_key.h), or, in a segment
//             flagged kSegmentDataFile, the extent's locator in the data files (data_files.h)
//   uploads   bucket '/' key '\0' upload id -> UploadRecord
//   parts     upload id, BE32 part number -> PartRecord
//   pending   BE64 data id -> "" while a streaming writer has extents on disk but has not
//             committed; recovery at open frees every pending id's extents.
//
// Writes: every object version (and every part) gets a fresh data id. Extents are written
// under it (small objects: in the commit batch; large ones: flushed unsynced in bounded
// batches after a pending record), then one synced WriteBatch puts the metadata, removes
// the pending record and DeleteRanges the extents of the version it replaces. A group of
// objects (PutGroup, rocks_group.cc: a descriptor PUT's chunks) stages every object the same
// way and commits all their records in one such batch. Readers take a RocksDB snapshot, so
// they keep seeing the version they opened.
//
// Locks: bucket_mu_ is held shared by every commit and exclusively by CreateBucket and
// DeleteBucket (so a bucket cannot be emptied-and-deleted under a commit); a striped key
// mutex serialises the read-old-metadata/write-new step of commits to the same key.
// Durability and group commit: an object or part commit (and Delete) writes its batch
// unsynced under the key lock, releases the lock, and returns only after a WAL sync that
// started after its write has finished (GroupSync, group_sync.h). One fdatasync covers every commit
// written before it, including commits to the same key, which RocksDB's own write groups
// cannot share because the key lock is held across a synced Write. A commit is visible to
// readers from its write, before it is acknowledged; a crash before the sync loses it (and
// every later write: the WAL is replayed as a prefix), never an acknowledged one. The
// same holds for group commits; the other writes (buckets, multipart records) keep
// WriteOptions::sync.
//
// Data files (ExtentLayout::kDataFiles, data_files.h): a writer appends each extent to the
// current data file as it fills and puts only its locator in the commit batch (never
// flushed early, so no pending record: bytes no record names are garbage of their file).
// Before the commit batch is written, the writer waits for a grouped fdatasync of the data
// files that covers its appends, so a record never names unsynced bytes; then the batch is
// written and WAL-synced as above. Each data file's live bytes are counted under the same
// locks as the commits that add and drop them; the reclaimer rewrites files that are mostly
// garbage (rocks_reclaim.cc).

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/write_batch.h>

#include "backend.h"
#include "kv/slice_source.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/no_space.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"
#include "records/md5.h"
#include "records/meta_codec.h"
#include "records/multipart_complete.h"
#include "rocks/data_files.h"
#include "rocks/extent_key.h"
#include "rocks/space_guard.h"
#include "rocks/thread_pool.h"

namespace oc::storage {

// The one translation of RocksDB errors: nothing above this seam sees a rocksdb::Status.
Status FromRocks(const rocksdb::Status& s);

int64_t NowUnixMs();

inline rocksdb::Slice AsSlice(const ExtentKey& key) { return {key.data(), key.size()}; }

// Key of a data id's record in the pending column family.
std::string PendingKey(uint64_t data_id);

// Adds extent `index` of `data_id` to *batch in `cf`: `bytes`, followed by their XXH3-64 when
// `flags` has kSegmentExtentHash (extent_io.h reads both forms). With `hash` set, *hash is
// that XXH3-64 (computed once for both uses: a descriptor PUT's ETag, records/chunk_etag.h).
Status AddExtent(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, uint64_t data_id,
                 uint64_t index, uint8_t flags, ByteSpan bytes, uint64_t* hash = nullptr);

// Extent size of a new object or part: explicit, else the chunk's contiguous layer range
// (S for KV_L2TD, S/2 for KV_2LTD), else `default_bytes` (types.h PutOptions).
// kInvalidArgument for a bad chunk shape or a size outside 1..kMaxExtentBytes.
Result<uint64_t> ChooseExtentBytes(const PutOptions& options, uint64_t default_bytes);

class GroupSync;

// What a writer appended to the data files: the group-sync ticket of its last append, the
// frame bytes per file its locators name (counted live when its record is written), and a
// pin on each file it appended to: the reclaimer leaves a file alone while a writer that
// may still commit locators into it holds a pin.
struct StagedData {
  uint64_t ticket = 0;
  FileBytes live;
  std::vector<std::shared_ptr<const void>> pins;
};

class RocksStore final : public Backend {
 public:
  static Result<std::unique_ptr<RocksStore>> Open(const StoreOptions& options);
  ~RocksStore() override;

  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  // The default column family's "lifecycle/<bucket>", written under bucket_mu_ held
  // exclusively (as CreateBucket) and deleted in DeleteBucket's batch.
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override;
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override;

  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  bool SupportsCachedReads() const override { return true; }
  // Store's and SliceSource's (one override answers both).
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override;
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;
  // rocks_group.cc: one metadata batch commits the whole group. Store's and SliceSource's.
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override;

  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override;
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& options) override;
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override;
  Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                    uint32_t part_number_marker, uint32_t max_parts) override;
  Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                 const ListUploadsOptions& options) override;

  Result<StoreStats> Stats() override;
  StoreIdentity identity() const override { return StoreIdentity{"rocksdb", "", "", ""}; }

  // The KV engine's slice reads (kv::SliceSource; rocks_slices.cc).
  Result<std::vector<kv::SliceStatus>> ReadSlices(std::string_view bucket,
                                                  std::span<const kv::SliceRead> slices) override;
  bool SupportsPinnedSlices() const override { return true; }
  Result<std::vector<kv::SliceStatus>> PinSlices(std::string_view bucket,
                                                 std::span<const kv::SlicePin> slices,
                                                 std::vector<kv::PinnedPiece>* pieces) override;

  // Compacts the extent column family (and with it the blob files) now, and rewrites the
  // data files whose garbage reaches data_file_garbage_percent; what the background
  // reclaimer runs. Also a test hook.
  Status CompactExtents();
  // Rewrites every sealed data file whose garbage is at least `min_garbage_percent` of it
  // (0: any garbage at all) and deletes it once no snapshot can name it; with `seal_active`
  // the current file is sealed first, so it qualifies too. Returns the files rewritten.
  // Also a test hook.
  Result<uint64_t> ReclaimDataFiles(uint32_t min_garbage_percent, bool seal_active);
  // Number of extent records visible now; a test hook.
  Result<uint64_t> CountExtents();
  // Tests only: `hook` runs in every data-file rewrite after a piece of live extents is
  // copied and synced and before its locators are swapped, on the reclaiming thread with no
  // store lock held, so a test can delete or overwrite the objects being moved.
  // REQUIRES: no reclaim running.
  void SetRewriteHookForTest(std::function<void()> hook) { rewrite_hook_ = std::move(hook); }

  // --- used by the writer and reader classes (rocks_write.cc, rocks_read.cc) ---
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
  // `ro` limited to memory when the calling thread is in a CachedReadsOnly scope.
  static rocksdb::ReadOptions ForThisThread(rocksdb::ReadOptions ro);
  const rocksdb::WriteOptions& unsynced() const { return unsynced_; }
  DataFiles* data_files() { return data_files_.get(); }
  // Segment flags of a new object or part under the configured layout.
  uint8_t NewSegmentFlags() const;
  // Appends extent `index` of `data_id` (`bytes`) to the data files and puts its locator into
  // *batch; notes the append in *staged (ticket, pin) and its frame in *live. Returns the
  // extent's XXH3-64 (its frame's hash).
  Result<uint64_t> AppendDataExtent(rocksdb::WriteBatch* batch, uint64_t data_id, uint64_t index,
                                    ByteSpan bytes, StagedData* staged, FileBytes* live);
  Result<uint64_t> NewDataId();
  // The free-space reserve (space_guard.h) for an ordinary write bringing `incoming` bytes:
  // kResourceExhausted/storage.space (oc/storage/no_space.h) when it would eat into it.
  // A refusal wakes the space recovery: garbage of the data files may be reclaimable.
  Status AdmitWrite(uint64_t incoming) { return NoteSpace(space_->Admit(incoming)); }
  // Returns `s`, noting it first if it is a refusal for lack of space (the recovery is woken
  // now and by every delete until a few reserves are free).
  Status NoteSpace(Status s) {
    if (IsNoSpace(s)) {
      space_->NoteRefused();
      MaybeRecoverSpace();
    }
    return s;
  }
  // Tests and /stats: the reserve's size and the recoveries run so far.
  uint64_t space_reserve() const { return space_->reserve(); }
  Result<std::unique_ptr<ObjectWriter>> NewWriter(WriteTarget target, uint64_t extent_bytes);
  // Commits a streamed object or part whose last extents are in *batch; returns once it is
  // durable. If it fails before the record is written, the data id's extents are freed.
  // Appended data-file extents (`staged`) are synced before the record is written.
  Result<ObjectMeta> CommitWrite(const WriteTarget& target, const Segment& segment,
                                 const std::array<std::byte, 16>& md5, bool flushed,
                                 rocksdb::WriteBatch* batch, const StagedData& staged);
  // Frees the extents of an uncommitted data id (a writer dropped without Commit).
  void DiscardData(uint64_t data_id, bool flushed);
  // One object of an ObjectGroupWriter (rocks_group.cc): its extents are under segment.data_id
  // (with a pending record once any reached RocksDB).
  struct GroupMember {
    std::string name;
    PutOptions options;
    Segment segment;
    std::string etag;  // records/chunk_etag.h
    FileBytes live;    // data-file frames of its extents
  };
  // Commits `members` of `bucket` in one batch: *batch (their last extents) plus every
  // object record, the removal of every pending record and the DeleteRange of every
  // replaced version (and of a member whose name a later member repeats); returns once it is
  // durable. *written tells whether the batch was written: if not, nothing refers to the
  // members' extents and the caller frees them. Data-file appends up to `data_ticket` are
  // synced before the batch is written.
  // A member with PutOptions::if_none_match whose key exists (read under the keys' locks) is
  // freed like a superseded one and reported as existing.
  Result<std::vector<GroupCommitted>> CommitGroup(std::string_view bucket,
                                                  std::span<const GroupMember> members,
                                                  rocksdb::WriteBatch* batch, uint64_t data_ticket,
                                                  bool* written);

 private:
  explicit RocksStore(const StoreOptions& options);
  Status OpenDb();
  Status Recover();
  Status CheckBucket(std::string_view bucket, const rocksdb::ReadOptions& ro);
  // Delete and DeleteIf (nullptr: unconditional).
  Status DeleteObject(const ObjectKey& key, const ObjectVersionMatch* expected);
  Result<std::optional<ObjectRecord>> GetRecord(const std::string& db_key,
                                                const rocksdb::ReadOptions& ro);
  // The key_mu_ stripe of an object's metadata key.
  static size_t KeyStripe(std::string_view db_key);
  std::mutex& KeyMutex(std::string_view db_key) { return key_mu_[KeyStripe(db_key)]; }
  // CommitWrite's locked part: checks, builds and writes the batch under the key lock.
  Result<ObjectMeta> WriteCommit(const WriteTarget& target, const Segment& segment,
                                 const std::array<std::byte, 16>& md5, bool flushed,
                                 rocksdb::WriteBatch* batch, const StagedData& staged,
                                 uint64_t* freed_out, uint64_t* ticket_out);
  // Writes `batch` so that it is durable when the returned ticket is passed to
  // AwaitDurable (unsynced plus group sync when options_.sync_writes, else unsynced).
  Result<uint64_t> WriteForDurability(rocksdb::WriteBatch* batch);
  Status AwaitDurable(uint64_t ticket);
  // Adds the deletes of every segment's extents to *batch (point deletes for a few extents,
  // else one DeleteRange: rocks_reclaim.cc); returns the bytes freed. For
  // data-file segments it reads their locators and adds the frame bytes they free per file
  // to *dead. REQUIRES: bucket_mu_ held (shared), as the write of *batch.
  uint64_t DeleteSegments(const std::vector<Segment>& segments, rocksdb::WriteBatch* batch,
                          FileBytes* dead);
  // After a commit batch was written (under the same locks): the data files' live counts.
  void NoteDataFiles(const FileBytes& added, const FileBytes& dead);
  void NoteFreed(uint64_t bytes);
  // Opens the data files and counts each file's live bytes from the locators.
  Status OpenDataFiles();
  // Where a data file rolls: data_file_bytes, at most the reserve on a small file system.
  uint64_t DataFileRollBytes() const;
  // The space recovery's part for extents inside RocksDB (the sst and blob layouts, and small
  // objects under data files), over the key range of the data ids deleted since it last ran:
  // flushes the extents' memtable, drops last-level tables with no visible key left (no room
  // needed), and compacts the range when four times the reserve is free. With `running`
  // false (RocksDB stopped by a full disk) only the drop: the range stays due.
  Status CompactDeletedRange(bool running);
  // Calls `visit` with the extent key and locator of every extent of every data-file segment
  // that an object or part record names now (rocks_data_reclaim.cc).
  Status ForEachDataExtent(
      const std::function<Status(const ExtentKey&, const ExtentLocator&)>& visit);
  // Copies the live extents of `victims` (sealed, unpinned files) to the current file,
  // replaces each locator still unchanged, and retires the files.
  Status RewriteDataFiles(const std::vector<uint32_t>& victims);
  // Drops retired data files no snapshot can name; returns how many are still held.
  size_t ReleaseDataFiles();
  void ReclaimLoop();
  // After a refusal or a delete (or anything else that frees space): wakes the space recovery
  // if a write was refused for lack of space or less than twice the reserve is free.
  void MaybeRecoverSpace();
  // The space recovery, on the reclaimer's thread (docs/decisions/full-disk.md): resumes
  // RocksDB after a background error, re-arms the WAL and data-file syncs after a failed
  // one, seals the current data file and retires the data files no record names, then
  // rewrites partly dead ones whose live bytes fit in the free space. Never compacts the
  // extents while short of space (a compaction writes its output before it frees its input).
  Status RecoverSpace();
  // RocksDB's Resume() after a background error (a no-op without one), then a flush of every
  // column family when `flush` (so the records of a failed WAL sync are in synced tables).
  Status ResumeDb(bool flush);
  Status ReadSlice(const rocksdb::ReadOptions& meta_ro, const rocksdb::ReadOptions& extent_ro,
                   std::string_view bucket, const kv::SliceRead& slice, kv::SliceStatus* out);
  // Read options for one slice batch, both on `snapshot`; checks the bucket in it.
  Status SnapshotReads(std::string_view bucket, rocksdb::ManagedSnapshot& snapshot,
                       rocksdb::ReadOptions* meta_ro, rocksdb::ReadOptions* extent_ro);
  Status ReadSlicesMultiGet(const rocksdb::ReadOptions& meta_ro,
                            const rocksdb::ReadOptions& extent_ro, std::string_view bucket,
                            std::span<const kv::SliceRead> slices,
                            std::vector<kv::SliceStatus>* out);
  // What MultiGetSlices visits: `n` bytes at `within` of a fetched extent of `segment` (the
  // pinned `value`, which the visitor may move out), which are bytes [done, done + n) of
  // slice `slice`.
  using ExtentVisitor =
      std::function<Status(size_t slice, uint64_t done, const Segment& segment, uint64_t within,
                           uint64_t n, rocksdb::PinnableSlice& value)>;
  // Every slice's metadata in one MultiGet (*out: kOk, kMissing or kShort per slice), then
  // every extent the kOk slices cover in MultiGet batches, each handed to `visit`.
  Status MultiGetSlices(const rocksdb::ReadOptions& meta_ro, const rocksdb::ReadOptions& extent_ro,
                        std::string_view bucket, std::span<const kv::SlicePin> slices,
                        std::vector<kv::SliceStatus>* out, const ExtentVisitor& visit);
  Result<UploadRecord> GetUpload(const rocksdb::ReadOptions& ro, const ObjectKey& key,
                                 std::string_view upload_id);
  // Every part record of `upload_id`, ascending by part number.
  Result<std::vector<NumberedPart>> GetParts(const rocksdb::ReadOptions& ro,
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

  std::unique_ptr<GroupSync> wal_sync_;    // set in Open when options_.sync_writes
  std::unique_ptr<DataFiles> data_files_;  // set in Open
  std::unique_ptr<ThreadPool> pool_;

  std::mutex data_reclaim_mu_;          // one data-file reclaim at a time
  std::function<void()> rewrite_hook_;  // SetRewriteHookForTest
  std::mutex reclaim_mu_;
  std::condition_variable reclaim_cv_;
  uint64_t freed_since_compaction_ OC_GUARDED_BY(reclaim_mu_) = 0;
  bool stopping_ OC_GUARDED_BY(reclaim_mu_) = false;
  bool recover_space_ OC_GUARDED_BY(reclaim_mu_) = false;  // MaybeRecoverSpace asked
  // The data ids of RocksDB-held extents deleted since the last CompactDeletedRange
  // (lo > hi: none).
  uint64_t deleted_lo_ OC_GUARDED_BY(reclaim_mu_) = UINT64_MAX;
  uint64_t deleted_hi_ OC_GUARDED_BY(reclaim_mu_) = 0;
  std::unique_ptr<SpaceGuard> space_;  // set in OpenDb
  std::thread reclaimer_;
};

}  // namespace oc::storage
