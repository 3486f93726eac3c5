#pragma once
// RadosStore: the Backend (backend.h) over one Ceph RADOS pool and namespace through librados'
// C API (target oc_storage_rados, opened by OpenStore, which composes the KV engine over it:
// composed_store.h). Like RocksStore it is the KV engine's SliceSource (src/kv/slice_source.h).
// Any number of processes may open the same pool and namespace:
// they share nothing but the cluster (docs/design.md, "RADOS mapping"; names in rados_keys.h).
// Its parts: rados_store.cc (open, buckets, records, stats), rados_handles.cc (the read
// handles: [rados] cluster_handles), rados_commit.cc (the commit op,
// with rados_commit_memo.h: one process's writers of a key take turns), rados_write.cc
// (writer, Put, Delete, Copy), rados_read.cc (reader, Get, Head, HeadMany), rados_list.cc
// (both listings: the cursor over rados_shard_merge.h, the k-way merge of the index shards,
// that object/list_walker.h walks), rados_slices.cc (ReadSlices and its
// in-flight budget), rados_group.cc (PutGroup),
// rados_multipart.cc (multipart), rados_gc.cc (the GC leader), rados_scrub.cc (orphans).
//
// The commit point of every mutation is ONE write op on ONE index shard object, atomic in
// RADOS: cmpxattr(oc.state == live) + omap_cmp(o/<key> == the record it replaces, "" for
// none) + omap_set/rm of the record + omap_set of a GC entry (g/...) naming the replaced
// version's data objects. Data objects are written first, under a fresh version id no record
// names, so a crash before the commit leaves nothing visible (only unreferenced data objects,
// the orphan scrub's work). A conflicting commit (-ECANCELED) re-reads the shard's state and
// records (one read op) and retries; the last writer wins. Within one process the commits of
// a key never conflict: they take turns, a PUT's commit takes the PUTs of its key waiting
// behind it into its op, and it expects the record the process committed last
// (rados_commit_memo.h), so a PUT costs two ops, its data and its commit. Replaced data stays until
// the GC removes it (RadosOptions:: gc_min_wait), which is how a reader keeps reading the version
// it opened.
//
// Bucket state: DeleteBucket marks every shard `deleting` before checking that they are
// empty, so no commit lands between the check and the removal; commits that meet `deleting`
// wait (2 s at most), then ask the registry. Bucket records are cached per process; a shard
// that vanished (-ENOENT) drops the cache entry.
//
// Thread safety: every method may be called concurrently (store.h).

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "kv/slice_source.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"
#include "rados/rados_commit_memo.h"
#include "rados/rados_keys.h"
#include "rados/rados_wrap.h"
#include "records/meta_codec.h"

namespace oc::storage {

int64_t RadosNowUnixMs();
// The segments an index entry names: an o/ or g/ entry's ObjectRecord, an m/ entry's part
// (empty for other entries and for values that do not decode).
std::vector<Segment> SegmentsOfEntry(std::string_view omap_key, std::string_view value);
// Appends the oids of `segment`'s data objects in bucket `bucket_id`.
void AppendDataOids(uint64_t bucket_id, const Segment& segment, std::vector<std::string>* out);

class RadosStore final : public Backend {
 public:
  static Result<std::unique_ptr<RadosStore>> Open(const StoreOptions& options);
  ~RadosStore() override;

  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  // An omap key of shard 0 (rados_keys.h), written in one op guarded by oc.state == live like
  // every commit, so it cannot land on a bucket being deleted, and removed with the shard.
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override;
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override;

  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  // One read op per index shard holding any of the names, all in flight together: each
  // shard's answers are one consistent view, not the whole batch (store.h).
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override;
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override;

  // Multipart uploads (rados_multipart.cc, listing in rados_list.cc): an upload's u/ and
  // m/ records live in its key's shard; completion is one guarded op whose object record
  // names the parts' data objects (no byte copied).
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
  StoreIdentity identity() const override;

  // rados_slices.cc: pieces grouped per data object, one read op per object.
  Result<std::vector<kv::SliceStatus>> ReadSlices(std::string_view bucket,
                                                  std::span<const kv::SliceRead> slices) override;
  // A request's reads look each chunk's record up once (rados_slices.cc, Reads).
  std::unique_ptr<kv::ReadSession> OpenReads(std::string_view bucket) override;
  // Layer reads ahead in windows of [rados] read_ahead_window_bytes: the OSD pays per read.
  kv::ReadAheadPolicy read_ahead() override {
    return {options_.rados.read_ahead_window_bytes, &read_ahead_budget_};
  }

  // Holds the oc.gc lock (rados_gc.cc), with margin: true only until kGcTick before the lock
  // could expire unrenewed, so two processes never both answer true while the lock is kept.
  bool IsMaintenanceLeader() const override;

  // --- Test hooks ---
  // Data objects (oc.d.*) in this store's namespace now, by listing it.
  Result<uint64_t> CountDataObjects();
  // One GC pass as the leader (rados_gc.cc): takes or renews the oc.gc lock, removes the
  // data objects of every due g/ entry of every bucket, then the entries. Returns the data
  // objects removed; kUnavailable if another process leads.
  Result<uint64_t> RunGcOnce();
  // What one scrub pass removed (rados_scrub.cc).
  struct ScrubReport {
    uint64_t data_objects = 0;   // unreferenced, or of a bucket that is gone
    uint64_t index_objects = 0;  // shards of unregistered buckets
    uint64_t parts = 0;          // m/ entries of finished uploads, handed to the GC
  };
  // One orphan scrub as the leader: lists the namespace, then removes every oc.d.* object
  // older than orphan_min_age that no o/, m/ or g/ entry names (or whose bucket is gone) and
  // every index shard of an unregistered bucket of that age; parts of uploads that are gone
  // go to the GC. kUnavailable if another process leads.
  Result<ScrubReport> RunScrubOnce();

  // --- Used by the writer, reader, listing and group parts ---
  struct BucketRef {
    uint64_t id = 0;
    uint32_t shards = 0;
  };
  // The bucket's registry record, cached. kNotFound/kBucket if absent.
  Result<BucketRef> Bucket(std::string_view bucket);
  // Drops the cached record (its shards vanished).
  void ForgetBucket(std::string_view bucket);
  // kNotFound/kBucket after a shard of `ref` vanished (ENOENT): forgets the cache entry.
  Status ShardGone(std::string_view bucket);
  rados_ioctx_t io() const { return cluster_->io(); }
  // The read handles ([rados] cluster_handles; 0 is the handle io() belongs to): ReadSlices
  // spreads its data reads over them round-robin, so no single messenger thread carries every
  // byte a descriptor GET reads (docs/decisions/rados-read-handles.md).
  size_t read_handles() const { return read_ios_.size(); }
  // The next live read handle, round-robin (0 when none is live).
  size_t PickReadHandle();
  rados_ioctx_t read_io(size_t handle) const { return read_ios_[handle]; }
  // An op on `handle` failed as a dead session (DeadSession): the handle takes no more data
  // reads. True when another handle is still live (the op can go again there).
  bool ReadHandleFailed(size_t handle);
  // A session that will not answer again: blocklisted (-EBLOCKLISTED is -ESHUTDOWN) or shut
  // down. Not a timeout: an OSD that is slow or down would time out on every handle.
  static bool DeadSession(int rc) { return rc == -ESHUTDOWN || rc == -ENOTCONN; }
  // Test hook: blocklists read handle `handle`'s session at the cluster (through handle 0),
  // so the OSDs refuse its ops from the next map on.
  Status BlocklistReadHandleForTest(size_t handle);
  const RadosOptions& rados_options() const { return options_.rados; }
  // A fresh version id: this process's writer id and the next sequence number.
  Segment NewVersion(uint64_t extent_bytes);
  // Data object size of a new object: the chunk rule or the explicit/configured extent,
  // clamped to kMinRadosObjectBytes..kMaxRadosObjectBytes. kInvalidArgument for a bad shape.
  Result<uint64_t> ChooseObjectBytes(const PutOptions& options) const;
  // Removes the data objects of `segment` in bucket `bucket_id` (best effort, waited for).
  void RemoveData(uint64_t bucket_id, const Segment& segment);
  // The records of `names` in one shard (absent: nullopt), read in one op.
  Result<std::vector<std::optional<ObjectRecord>>> ReadRecords(
      std::string_view bucket, const BucketRef& ref, uint32_t shard,
      const std::vector<std::string>& names);
  // The records of any names, one op per shard in flight together (HeadMany, ReadSlices).
  Result<std::vector<std::optional<ObjectRecord>>> ReadManyRecords(
      std::string_view bucket, const BucketRef& ref, std::span<const std::string> names);

  // One key's change in a shard commit: `decide` gets the current record (nullopt if
  // absent) and returns the next one (nullopt removes the key; the current one unchanged
  // keeps it, the op then only compares it) or an error that ends the commit. `read_first` reads
  // the current record before the first attempt; otherwise the first attempt expects the record
  // this process committed last for the key, or the key absent if it remembers none (a new object
  // costs no read). `superseded`: records of versions that never became visible (PUTs grouped into
  // this commit), whose data goes to the GC in the same op.
  struct KeyChange {
    std::string name;
    std::function<Result<std::optional<ObjectRecord>>(const std::optional<ObjectRecord>&)> decide;
    std::vector<ObjectRecord> superseded;
  };
  // Commits `changes` (all of one shard, distinct names) in one guarded write op, retrying
  // conflicts; returns the next record of each change in order (nullopt for a removal).
  // Each replaced version's data objects that the next record does not name get a GC entry
  // in the same op. Waits for this process's other commits of the same keys.
  Result<std::vector<std::optional<ObjectRecord>>> CommitShard(std::string_view bucket,
                                                               const BucketRef& ref, uint32_t shard,
                                                               std::vector<KeyChange>& changes,
                                                               bool read_first);
  // A PUT's commit: `record` (a fresh version) becomes the record of `name` unless another
  // PUT of the key in this process is committed later in the same op, which replaces it at
  // once (its data goes to the GC); OK either way. The errors of CommitShard.
  Status CommitPut(std::string_view bucket, const BucketRef& ref, const std::string& name,
                   const ObjectRecord& record);
  // Test hooks: hold the commits of `name` (its lock stripe) in this process until the
  // returned hold dies; PUTs of `name` waiting for their commit.
  rados::CommitMemo::StripeHold HoldCommitsForTest(const BucketRef& ref, std::string_view name) {
    return memo_.LockStripes({rados::CommitMemo::KeyId(ref.id, name)});
  }
  size_t WaitingPutsForTest(const BucketRef& ref, std::string_view name) {
    return memo_.PendingCount(rados::CommitMemo::KeyId(ref.id, name));
  }

  // --- Shared by multipart, GC and scrub (rados_multipart.cc) ---
  // Runs ONE write op on shard `shard` of `ref`, guarded by cmpxattr(oc.state == live);
  // `build` adds the compares and changes to a fresh op per attempt. true once applied;
  // false when a compare failed on a live shard (the caller re-reads and retries);
  // kNotFound/kBucket when the shard vanished; kUnavailable when the bucket stays `deleting`.
  Result<bool> GuardedWrite(std::string_view bucket, const BucketRef& ref, uint32_t shard,
                            const std::function<void(rados::WriteOp&)>& build);
  // The values of those of `keys` that exist in one shard, read in one op.
  Result<std::map<std::string, std::string>> ReadOmapKeys(std::string_view bucket,
                                                          const BucketRef& ref, uint32_t shard,
                                                          const std::vector<std::string>& keys);
  // Pages the omap of `oid` in key order from after `after`, keys starting with `prefix`,
  // calling `visit` for each until it returns false. kNotFound if the object is absent.
  Status ScanOmap(const std::string& oid, const std::string& prefix, std::string after,
                  const std::function<Result<bool>(std::string_view, std::string_view)>& visit);
  // Removes data objects, a bounded number in flight; ENOENT counts as removed. Returns how
  // many were removed.
  uint64_t RemoveObjects(const std::vector<std::string>& oids);
  // Every registered bucket (pages the registry).
  Result<std::vector<rados::RadosBucketRecord>> AllBuckets();

  // Bounds of ReadSlices' ops in flight, all requests together (RadosOptions). A caller that
  // holds ops must not wait in Acquire (it would wait for itself, or for another caller that
  // waits for it): it uses TryAcquire and frees its own ops first.
  class InFlight {
   public:
    InFlight(uint32_t max_ops, uint64_t max_bytes) : max_ops_(max_ops), max_bytes_(max_bytes) {}
    // Waits for room; an op bigger than the byte cap waits for an idle store.
    void Acquire(uint64_t bytes);
    // Takes room only if there is some now.
    bool TryAcquire(uint64_t bytes);
    void Release(uint64_t bytes);

   private:
    const uint32_t max_ops_;
    const uint64_t max_bytes_;
    std::mutex mu_;
    std::condition_variable cv_;
    uint32_t ops_ OC_GUARDED_BY(mu_) = 0;
    uint64_t bytes_ OC_GUARDED_BY(mu_) = 0;
    bool Fits(uint64_t bytes) const OC_REQUIRES(mu_) {
      return ops_ == 0 || (ops_ < max_ops_ && bytes_ + bytes <= max_bytes_);
    }
  };
  InFlight& in_flight() { return in_flight_; }

 private:
  class Reads;  // a request's ReadSession (rados_slices.cc)
  // The records a Reads session found, by name (shared: a record stays while a read uses it).
  struct RecordMemo {
    std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const ObjectRecord>> records OC_GUARDED_BY(mu);
  };
  // The records of `names` (each named once) from the index in one batch
  // (ReadManyRecords), shared; each found one goes into `memo` (null: none kept), replacing
  // what it held, and each absent one is dropped from it.
  Result<std::vector<std::shared_ptr<const ObjectRecord>>> LookUpRecords(
      std::string_view bucket, const BucketRef& ref, std::span<const std::string> names,
      RecordMemo* memo);
  // ReadSlices, taking records from and adding them to `memo` (null: none kept).
  Result<std::vector<kv::SliceStatus>> ReadSlicesWith(std::string_view bucket,
                                                      std::span<const kv::SliceRead> slices,
                                                      RecordMemo* memo);

  explicit RadosStore(const StoreOptions& options);
  // Opens the handles after the first (RadosClusterHandlesFor) and fills read_ios_.
  Status ConnectReadHandles();
  // Stats' figures of the read handles (rados_handles.cc).
  void AddReadHandleFigures(StoreStats& stats) const;
  Result<rados::RadosBucketRecord> ReadRegistry(std::string_view bucket);
  // Delete and DeleteIf (nullptr: unconditional).
  Status DeleteObject(const ObjectKey& key, const ObjectVersionMatch* expected);

  // CommitShard once the stripes of its keys are held (rados_commit.cc).
  Result<std::vector<std::optional<ObjectRecord>>> CommitShardLocked(
      std::string_view bucket, const BucketRef& ref, uint32_t shard,
      std::vector<KeyChange>& changes, bool read_first);
  // An index shard's state xattr and the records of `names`, read in one op.
  struct ShardView {
    std::string state;
    std::vector<std::optional<ObjectRecord>> records;
  };
  Result<ShardView> ReadShardView(std::string_view bucket, const BucketRef& ref, uint32_t shard,
                                  const std::vector<std::string>& names);

  // The GC leader (rados_gc.cc): with RadosOptions::gc a thread competes for the oc.gc lock,
  // renews it while it leads, collects due GC entries and scrubs for orphans now and then.
  void StartGc();
  void StopGc();
  void GcLoop();
  // Takes or renews the oc.gc lock; kUnavailable if another process holds it.
  Status TakeGcLead() OC_REQUIRES(gc_mu_);
  // Renews the lock if a renewal is due (long passes call it between shards).
  Status KeepGcLead() OC_REQUIRES(gc_mu_);
  Result<uint64_t> GcPass() OC_REQUIRES(gc_mu_);
  Result<ScrubReport> ScrubPass() OC_REQUIRES(gc_mu_);
  // The data object names of the due entries of one shard's GC page are collected, removed,
  // then the entries (rados_gc.cc).
  Result<uint64_t> CollectShard(uint64_t bucket_id, uint32_t shard, int64_t now)
      OC_REQUIRES(gc_mu_);

  const StoreOptions options_;
  std::unique_ptr<rados::Cluster> cluster_;
  // The other cluster handles (cluster_handles - 1), and every read handle's io context
  // (cluster_'s first); fixed after Open. read_dead_[k]: handle k's session died.
  std::vector<std::unique_ptr<rados::Cluster>> extra_clusters_;
  std::vector<rados_ioctx_t> read_ios_;
  std::unique_ptr<std::atomic<bool>[]> read_dead_;
  std::atomic<uint64_t> next_read_{0};
  const uint64_t writer_id_;
  std::atomic<uint64_t> next_seq_{1};
  InFlight in_flight_;
  kv::ReadAheadBudget read_ahead_budget_;

  std::mutex buckets_mu_;
  std::map<std::string, BucketRef, std::less<>> buckets_ OC_GUARDED_BY(buckets_mu_);

  // Commits of one key in this process take turns (rados_commit_memo.h).
  rados::CommitMemo memo_;
  std::atomic<uint64_t> commits_{0};              // commit ops applied
  std::atomic<uint64_t> commit_conflicts_{0};     // commit ops refused (-ECANCELED)
  std::atomic<uint64_t> commit_ops_{0};           // commit ops sent
  std::atomic<uint64_t> commit_rereads_{0};       // state + records read after a conflict
  std::atomic<uint64_t> commit_remembered_{0};    // first attempts expecting a remembered record
  std::atomic<uint64_t> puts_grouped_{0};         // PUTs committed in another PUT's op
  std::atomic<uint64_t> slice_read_ops_{0};       // data-object read ops of ReadSlices
  std::atomic<uint64_t> slice_index_lookups_{0};  // names ReadSlices looked up in the index
  std::atomic<uint64_t> slice_index_batches_{0};  // ...in this many batches (LookUpRecords)
  std::atomic<uint64_t> read_retries_{0};         // of those, sent again after a dead session

  // One GC or scrub pass at a time in this process; the lock's cookie is writer_id_.
  std::mutex gc_mu_;
  bool gc_leader_ OC_GUARDED_BY(gc_mu_) = false;
  std::chrono::steady_clock::time_point gc_renewed_ OC_GUARDED_BY(gc_mu_);
  // Until when (steady clock, ns since its epoch) IsMaintenanceLeader answers true; 0 when
  // not leading. Written under gc_mu_, read without it (a GC pass holds gc_mu_ for long).
  std::atomic<int64_t> lead_until_ns_{0};
  std::thread gc_thread_;
  std::mutex gc_stop_mu_;
  std::condition_variable gc_stop_cv_;
  bool gc_stop_ OC_GUARDED_BY(gc_stop_mu_) = false;
};

}  // namespace oc::storage
