#pragma once
// CacheStore: the cache layer OpenStore (open_store.h) composes over the ComposedStore when
// [cache] names cache buckets (oc/storage/cache_options.h; docs/decisions/cache-buckets.md).
// Every backend gets it, in `objectcache serve` and oc-storage-server alike, because it sits
// above the storage seam and sees only the Store interface.
//
// Per cache bucket it keeps one EvictionIndex (eviction_index.h), rebuilt at open from a
// listing of the bucket plus the last persisted snapshot, and fed as requests complete:
// descriptor PUT -> OnPut (the descriptor's chain order), probe and descriptor GET -> OnHit of
// the matched prefix (one in-memory update per request, no write on the read path), plain PUT,
// multipart completion and copy -> OnPlainPut, GET/HEAD -> OnPlainGet, DELETE and the lifecycle
// worker's DeleteIf -> OnRemove. Bytes are the stored objects' sizes.
// A background thread evicts (PickVictims; a batch's deletes start in the order returned,
// kDeletesInFlight at once, each a DeleteIf on the version a HeadMany saw; Reinstate when the
// object was rewritten meanwhile: cache_evict.cc) from the high watermark down to the low
// one, and persists each changed bucket's snapshot every snapshot_interval into
// kCacheStateBucket, which clients never see. A PUT whose bytes would pass a bucket's
// capacity waits up to put_wait for room, else is refused (kResourceExhausted naming
// kCacheFullField: 503 SlowDown) before anything is stored.
// Calls on other buckets go straight to the store below: one comparison with the (few) cache
// bucket names.
//
// Several servers over one pool (RADOS; CacheRole::shared): only the server the backend names
// maintenance leader (its GC lead) evicts and writes the snapshot. Every sync_interval each
// server re-lists its cache buckets (EvictionIndex::Reconcile: usage is the pool's within one
// interval, for eviction and admission alike), and a follower first persists what it saw
// (its PUTs' chains, its hits) as a hit-log part `<bucket>/hits-<server id>-<seq>` in
// kCacheStateBucket; the leader folds every part into its index, then deletes it. A server
// that takes the lead rebuilds from a listing and the snapshot, folds the parts, then evicts
// (cache_sync.cc; docs/decisions/cache-buckets.md, "RADOS").
//
// Thread safety: as Store. mu_ guards the worker's wake-up and the PUT admission (capacity
// check and reservation together); each index has its own lock and is never held while
// taking mu_. A commit enters its bytes in the index and releases its reservation in one step
// under mu_, and an eviction pass reads both under mu_: neither ever counts a commit twice
// (a pass that did freed one batch more than the watermarks ask) nor misses it. pass_mu_
// serializes eviction passes and syncs (the worker's and the hooks').

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cache/eviction_index.h"
#include "oc/common/executor.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/cache_options.h"
#include "oc/storage/store.h"

namespace oc::storage::cache {

// Rows of a snapshot per object in kCacheStateBucket ("<bucket>/<8-digit part>"): at most
// ~2 KiB a row (two keys of kMaxSnapshotKeyBytes), so a part stays under ~128 MiB.
inline constexpr size_t kSnapshotRowsPerPart = 65'536;

// One cache bucket's counters beyond its index's (/stats, /metrics).
struct CacheBucketStats {
  EvictionStats index;
  uint64_t chunks_requested = 0;  // chunks named by probes and descriptor GETs
  uint64_t chunks_served = 0;     // of those, in the matched prefix
  uint64_t puts_waited = 0;       // PUTs that waited for eviction to make room
  uint64_t puts_refused = 0;      // ...and were refused after put_wait
  uint64_t eviction_failures = 0;
  uint64_t client_deletes = 0;     // DeleteObject(s)
  uint64_t lifecycle_expired = 0;  // DeleteIf: the lifecycle worker's expirations
  uint64_t snapshots_written = 0;  // snapshot persists (all parts of one bucket = 1)
  uint64_t evicting_bytes = 0;     // picked victims' bytes whose delete is in flight
  // A shared pool (several servers): picked victims found already deleted elsewhere, hit-log
  // parts this server wrote (follower) and folded (leader), rows dropped over the log's bound.
  uint64_t victims_gone = 0;
  uint64_t hit_logs_written = 0;
  uint64_t hit_logs_folded = 0;
  uint64_t hit_log_rows_dropped = 0;
  uint64_t admitted_peak = 0;   // largest stored + in-flight bytes an admission saw
  uint64_t victims_spared = 0;  // picked victims left because a GET in flight named them
  uint64_t puts_linked = 0;     // descriptor PUTs linked under the chunk a request last hit
};

// What the cache layer asks of the backend below, which OpenStore (open_store.cc) wires.
struct CacheRole {
  // Other servers write the same buckets (a backend with a shared identity: RADOS).
  bool shared = false;
  // Whether this server runs eviction now (Backend::IsMaintenanceLeader); null: always.
  std::function<bool()> is_leader;
};

class CacheStore final : public Store {
 public:
  // Rebuilds each cache bucket's index (listing + snapshot; an absent bucket starts empty),
  // creates kCacheStateBucket when missing, starts the worker. The listing's errors are
  // returned; an unreadable snapshot is logged and ignored (recency lost, never data).
  // REQUIRES: options.Validate().ok(), !options.buckets.empty(), inner != null.
  static Result<std::unique_ptr<CacheStore>> Open(std::unique_ptr<Store> inner,
                                                  const CacheOptions& options, CacheRole role = {});
  // Stops the worker, persists every changed snapshot, then closes the store below.
  ~CacheStore() override;

  Store& inner() { return *inner_; }
  // The bucket's figures; nullopt when it is not a cache bucket.
  std::optional<CacheBucketStats> BucketStats(std::string_view bucket) const;
  // Tests' and shutdown's hooks: persist every bucket's snapshot now (changed or not), and
  // run one eviction pass on the calling thread.
  Status PersistSnapshots();
  void EvictNow() OC_EXCLUDES(pass_mu_);
  // One sync now (shared stores; a no-op otherwise): a follower persists its hit log, the
  // leader folds every hit log, then each re-lists its cache buckets (Reconcile).
  void SyncNow() OC_EXCLUDES(pass_mu_);
  // Whether this server evicts (the backend's answer at the last pass or sync).
  bool leading() const { return leading_.load(std::memory_order_relaxed); }
  // This server's name in its hit-log parts (random per open).
  const std::string& server_id() const { return server_id_; }

  // --- Store ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status SetBucketLifecycle(std::string_view bucket, std::string_view config) override;
  Result<std::string> GetBucketLifecycle(std::string_view bucket) override;
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override;
  Result<ObjectMeta> Head(const ObjectKey& key) override;
  bool SupportsCachedReads() const override { return inner_->SupportsCachedReads(); }
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override;
  Status Delete(const ObjectKey& key) override;
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override;
  Result<ObjectMeta> PutObjectTags(const ObjectKey& key, const Tags& tags) override;
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;
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
  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override;
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override;
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override;
  BoundedExecutor* descriptor_executor() override { return inner_->descriptor_executor(); }
  Result<DataPlaneInfo> DataPlane(std::string_view bucket) override;
  StoreIdentity identity() const override { return inner_->identity(); }
  // The store's figures, then per cache bucket "cache.<bucket>.<figure>".
  Result<StoreStats> Stats() override;

  // One cache bucket: its index and counters. Public for the writers of cache_store.cc.
  struct Bucket;
  // Bytes an admitted write holds against its bucket's capacity until it commits or fails.
  class Reservation;
  // Waits up to put_wait until `incoming` more bytes fit `b`'s capacity, then reserves them.
  Result<Reservation> Admit(Bucket& b, uint64_t incoming) OC_EXCLUDES(mu_);
  // A plain object was committed: records it, releases `reservation` (if held) with it, and
  // wakes the worker when over the watermark.
  void PlainCommitted(Bucket& b, std::string_view key, uint64_t size, Reservation& reservation)
      OC_EXCLUDES(mu_);
  // Wakes PUTs waiting for room in `b` (after a reservation is released or a batch deleted).
  void NotifyRoom(Bucket& b) OC_EXCLUDES(mu_);

 private:
  CacheStore(std::unique_ptr<Store> inner, const CacheOptions& options, CacheRole role);
  Bucket* Find(std::string_view bucket) const;
  Status Restore(Bucket& b);
  Status PersistSnapshot(Bucket& b);
  // Deletes one batch of b's victims, up to kDeletesInFlight at once (cache_evict.cc): how many
  // went, and the bytes of those spared because a GET in flight named them (given back to the
  // index with every other victim not deleted, predecessors first).
  struct EvictBatchResult {
    uint64_t deleted = 0;
    uint64_t spared_bytes = 0;
  };
  EvictBatchResult EvictBatch(Bucket& b, std::vector<Victim> victims);
  // Victims of one batch whose DeleteIf runs at once: enough for RocksDB's group commit to
  // cover many deletes with one WAL sync and for RADOS to overlap its round trips; the
  // threads mostly wait (docs/decisions/cache-eviction-concurrent-deletes.md).
  static constexpr size_t kDeletesInFlight = 16;
  static BoundedExecutor::Options EvictorOptions();
  void EvictLocked() OC_REQUIRES(pass_mu_);
  // Asks the backend whether this server leads; on taking the lead, rebuilds every bucket
  // from a listing and the snapshot and folds the hit logs before the first pass.
  bool CheckLead() OC_REQUIRES(pass_mu_);
  // The shared-pool sync (cache_sync.cc).
  void SyncLocked() OC_REQUIRES(pass_mu_);
  Status PersistHitLog(Bucket& b) OC_REQUIRES(pass_mu_);
  Status FoldHitLogs(Bucket& b) OC_REQUIRES(pass_mu_);
  Status Relist(Bucket& b) OC_REQUIRES(pass_mu_);
  void Kick() OC_EXCLUDES(mu_);
  void MaybeKick(Bucket& b) OC_EXCLUDES(mu_);
  void Run() OC_EXCLUDES(mu_);

  const CacheOptions options_;
  const CacheRole role_;
  const std::string server_id_;
  std::unique_ptr<Store> inner_;
  std::vector<std::unique_ptr<Bucket>> buckets_;  // fixed after Open
  // The lanes of a batch beyond the thread running it; idle between batches. Declared after
  // inner_, so it stops before the store below closes.
  BoundedExecutor evictors_{EvictorOptions()};

  std::mutex mu_;
  std::condition_variable work_cv_;  // the worker: kicked, stopping, or a timer
  std::condition_variable room_cv_;  // PUTs waiting for room
  bool kicked_ OC_GUARDED_BY(mu_) = false;
  bool stopping_ OC_GUARDED_BY(mu_) = false;
  std::thread worker_;

  std::mutex pass_mu_;
  std::atomic<bool> leading_{false};
  uint64_t hit_log_seq_ OC_GUARDED_BY(pass_mu_) = 0;
};

// Wraps `inner` in a CacheStore when options.buckets names cache buckets; else returns it.
Result<std::unique_ptr<Store>> ComposeCache(std::unique_ptr<Store> inner,
                                            const CacheOptions& options, CacheRole role = {});

// The CacheStore `store` is, or null.
CacheStore* CacheStoreOf(Store& store);

}  // namespace oc::storage::cache
