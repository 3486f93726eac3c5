// CacheStore (cache_store.h): opening (each bucket's index rebuilt from a listing and its
// snapshot), the background worker (eviction passes, snapshots), and the figures. One batch's
// deletes are cache_evict.cc's.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <random>
#include <utility>

#include "cache/cache_bucket.h"
#include "cache/cache_store.h"
#include "oc/common/log.h"

namespace oc::storage::cache {
namespace {

const Logger kLog{"cache"};

// The worker wakes at least this often to re-check the watermarks (a kick is the usual wake).
constexpr std::chrono::milliseconds kRecheck{1'000};
// A follower with PUTs waiting for room re-lists at most this often (cache_sync.cc).
constexpr std::chrono::milliseconds kWaitingRelist{200};

std::string PartName(std::string_view bucket, uint64_t part) {
  return fmt::format("{}/{:08}", bucket, part);
}

// Whether `name` is one of `bucket`'s snapshot parts (not a hit-log part: cache_sync.cc).
bool IsSnapshotPart(std::string_view name, std::string_view bucket) {
  if (name.size() != bucket.size() + 9 || !name.starts_with(bucket) || name[bucket.size()] != '/') {
    return false;
  }
  for (char c : name.substr(bucket.size() + 1)) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<ListedObject>> ListAll(Store& store, std::string_view bucket,
                                          std::string_view prefix) {
  std::vector<ListedObject> out;
  ListOptions options;
  options.prefix = std::string(prefix);
  for (;;) {
    Result<ListResult> page = store.List(bucket, options);
    if (!page.has_value()) {
      if (page.error().code() == Code::kNotFound && page.error().subject() == Subject::kBucket) {
        return out;
      }
      return page.error();
    }
    for (ListEntry& e : page->objects) {
      out.push_back(ListedObject{std::move(e.name), e.meta.size});
    }
    if (!page->truncated) {
      return out;
    }
    options.start_after = page->next_start_after;
  }
}

Result<std::string> ReadWhole(Store& store, const ObjectKey& key, uint64_t max_bytes,
                              ObjectMeta* meta) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> reader, store.Get(key, ByteRange::All()));
  if (meta != nullptr) {
    *meta = reader->meta();
  }
  if (reader->length() > max_bytes) {
    return Status::Corruption(fmt::format("{} is {} bytes", key.name, reader->length()));
  }
  std::string bytes(reader->length(), '\0');
  uint64_t at = 0;
  while (at < bytes.size()) {
    OC_ASSIGN_OR_RETURN(
        uint64_t n, reader->Read(MutableByteSpan(reinterpret_cast<std::byte*>(bytes.data()) + at,
                                                 bytes.size() - at)));
    if (n == 0) {
      break;
    }
    at += n;
  }
  bytes.resize(at);
  return bytes;
}

Status WriteState(Store& store, const std::string& name, std::string_view bytes) {
  const ObjectKey key{std::string(kCacheStateBucket), name};
  Result<std::unique_ptr<ObjectWriter>> writer = store.Put(key, PutOptions{});
  if (!writer.has_value() && writer.error().code() == Code::kNotFound) {
    (void)store.CreateBucket(kCacheStateBucket, "objectcache");  // deleted under us
    writer = store.Put(key, PutOptions{});
  }
  OC_RETURN_IF_ERROR(writer.status());
  OC_RETURN_IF_ERROR(
      (*writer)->Append(ByteSpan(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size())));
  return (*writer)->Commit().status();
}

CacheStore::CacheStore(std::unique_ptr<Store> inner, const CacheOptions& options, CacheRole role)
    : options_(options),
      role_(std::move(role)),
      server_id_(fmt::format("{:016x}",
                             (uint64_t{std::random_device{}()} << 32) | std::random_device{}())),
      inner_(std::move(inner)) {
  leading_.store(!role_.shared, std::memory_order_relaxed);
  for (const auto& [name, capacity] : options_.buckets) {
    EvictionOptions o;
    o.capacity_bytes = capacity;
    o.high_watermark = options_.high_watermark;
    o.low_watermark = options_.low_watermark;
    buckets_.push_back(std::make_unique<Bucket>(name, o));
    buckets_.back()->logging.store(role_.shared, std::memory_order_relaxed);
  }
}

Result<std::unique_ptr<CacheStore>> CacheStore::Open(std::unique_ptr<Store> inner,
                                                     const CacheOptions& options, CacheRole role) {
  std::unique_ptr<CacheStore> store(new CacheStore(std::move(inner), options, std::move(role)));
  const Status created = store->inner_->CreateBucket(kCacheStateBucket, "objectcache");
  if (!created.ok() && created.code() != Code::kAlreadyExists) {
    kLog.Warn("cannot create {}: {}; snapshots wait for it", kCacheStateBucket, created.ToString());
  }
  for (const auto& b : store->buckets_) {
    OC_RETURN_IF_ERROR(store->Restore(*b));
  }
  store->worker_ = std::thread([s = store.get()] { s->Run(); });
  return store;
}

CacheStore::~CacheStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  room_cv_.notify_all();
  if (worker_.joinable()) {
    worker_.join();
  }
  std::lock_guard pass(pass_mu_);
  for (const auto& b : buckets_) {
    if (!leading()) {
      // A follower hands what it saw to the leader; only the leader writes the snapshot.
      if (Status s = PersistHitLog(*b); !s.ok()) {
        kLog.Warn("bucket={} hit log at shutdown failed: {}", b->name, s.ToString());
      }
    } else if (b->dirty.load(std::memory_order_relaxed)) {
      if (Status s = PersistSnapshot(*b); !s.ok()) {
        kLog.Warn("bucket={} snapshot at shutdown failed: {}", b->name, s.ToString());
      }
    }
  }
  // inner_ (the store below) closes after the worker stopped and the snapshots are written.
}

Status CacheStore::Restore(Bucket& b) {
  OC_ASSIGN_OR_RETURN(std::vector<ListedObject> listing, ListAll(*inner_, b.name));
  std::vector<SnapshotRow> rows;
  Result<std::vector<ListedObject>> parts = ListAll(*inner_, kCacheStateBucket, b.name + "/");
  if (!parts.has_value()) {
    kLog.Warn("bucket={} snapshot unreadable ({}); recency starts afresh", b.name,
              parts.error().ToString());
  } else {
    for (const ListedObject& part : *parts) {
      if (!IsSnapshotPart(part.key, b.name)) {
        continue;  // a hit-log part: the leader folds those (cache_sync.cc)
      }
      Result<std::string> bytes =
          ReadWhole(*inner_, {std::string(kCacheStateBucket), part.key}, kMaxSnapshotPartBytes);
      Result<std::vector<SnapshotRow>> decoded =
          bytes.has_value() ? DecodeSnapshot(*bytes)
                            : Result<std::vector<SnapshotRow>>(bytes.error());
      if (!decoded.has_value()) {
        kLog.Warn("bucket={} snapshot part {} skipped: {}", b.name, part.key,
                  decoded.error().ToString());
        continue;
      }
      std::move(decoded->begin(), decoded->end(), std::back_inserter(rows));
    }
  }
  b.index.Rebuild(listing, rows);
  const EvictionStats s = b.index.Stats();
  kLog.Info("bucket={} cache index rebuilt: objects={} used_bytes={} capacity={} snapshot_rows={}",
            b.name, s.objects, s.used_bytes, b.capacity, rows.size());
  return Status::Ok();
}

Status CacheStore::PersistSnapshot(Bucket& b) {
  b.dirty.store(false, std::memory_order_relaxed);  // a change from now on marks it again
  const std::vector<SnapshotRow> rows = b.index.Snapshot();
  const uint64_t parts = (rows.size() + kSnapshotRowsPerPart - 1) / kSnapshotRowsPerPart;
  for (uint64_t p = 0; p < parts; ++p) {
    const size_t begin = p * kSnapshotRowsPerPart;
    const size_t end = std::min(rows.size(), begin + kSnapshotRowsPerPart);
    const std::string bytes =
        EncodeSnapshot(std::span<const SnapshotRow>(rows).subspan(begin, end - begin));
    if (Status s = WriteState(*inner_, PartName(b.name, p), bytes); !s.ok()) {
      b.dirty.store(true, std::memory_order_relaxed);
      return s;
    }
  }
  // Parts beyond this snapshot's are an older, larger one's.
  OC_ASSIGN_OR_RETURN(std::vector<ListedObject> old,
                      ListAll(*inner_, kCacheStateBucket, b.name + "/"));
  const std::string first_stale = PartName(b.name, parts);  // names sort by part number
  for (const ListedObject& o : old) {
    if (IsSnapshotPart(o.key, b.name) && o.key >= first_stale) {
      (void)inner_->Delete({std::string(kCacheStateBucket), o.key});
    }
  }
  b.snapshots_written.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status CacheStore::PersistSnapshots() {
  Status first;
  for (const auto& b : buckets_) {
    Status s = PersistSnapshot(*b);
    if (!s.ok() && first.ok()) {
      first = s;
    }
  }
  return first;
}

void CacheStore::EvictNow() {
  std::lock_guard pass(pass_mu_);
  if (CheckLead()) {
    EvictLocked();
  }
}

void CacheStore::EvictLocked() {
  for (const auto& b : buckets_) {
    uint64_t spared = 0;  // bytes the last batch spared
    for (;;) {
      if (role_.shared && role_.is_leader != nullptr && !role_.is_leader()) {
        return;  // lost the lead mid-pass: the next leader carries on
      }
      uint64_t want = 0;
      {
        std::lock_guard lock(mu_);  // a commit moves its bytes from reserved to the index
        const uint64_t incoming = b->reserved.load(std::memory_order_relaxed) +
                                  b->waiting.load(std::memory_order_relaxed);
        want = std::min(b->index.BytesToFree(incoming), options_.eviction_batch_bytes);
      }
      if (want == 0) {
        break;
      }
      // Counted as deleting before the pick takes them out of the index's used bytes, so an
      // admission in between never sees the picked bytes in neither (it sees them twice, which
      // only errs on the safe side for a moment); then corrected to what was picked.
      // Victims spared for GETs in flight go back as the least recent; asking for their bytes
      // on top reaches past them, and a pick of nothing but spared ones ends the pass.
      const uint64_t ask = want + spared;
      b->deleting.fetch_add(ask, std::memory_order_relaxed);
      std::vector<Victim> victims = b->index.PickVictims(ask);
      uint64_t picked = 0;
      for (const Victim& v : victims) {
        picked += v.size;
      }
      b->deleting.fetch_add(picked - ask, std::memory_order_relaxed);  // mod 2^64: may shrink
      if (victims.empty()) {
        break;
      }
      const EvictBatchResult r = EvictBatch(*b, std::move(victims));
      { std::lock_guard lock(mu_); }  // as NotifyRoom, whoever waits
      room_cv_.notify_all();
      if (r.deleted == 0 && r.spared_bytes <= spared) {
        break;  // nothing could go, nor anything new be picked: the next wake tries again
      }
      spared = r.spared_bytes;
    }
  }
}

void CacheStore::Run() {
  using Clock = std::chrono::steady_clock;
  auto next_snapshot = Clock::now() + options_.snapshot_interval;
  auto next_sync = Clock::now() + options_.sync_interval;
  auto last_relist = Clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto wake = std::min(next_snapshot, Clock::now() + kRecheck);
    if (role_.shared) {
      wake = std::min(wake, next_sync);
      if (!leading() && std::any_of(buckets_.begin(), buckets_.end(), [](const auto& b) {
            return b->waiting.load(std::memory_order_relaxed) > 0;
          })) {
        wake = std::min(wake, Clock::now() + kWaitingRelist);
      }
    }
    work_cv_.wait_until(lock, wake, [&] { return stopping_ || kicked_; });
    if (stopping_) {
      break;
    }
    kicked_ = false;
    lock.unlock();
    bool lead = true;
    {
      std::lock_guard pass(pass_mu_);
      lead = CheckLead();
      const auto now = Clock::now();
      if (role_.shared && now >= next_sync) {
        SyncLocked();
        next_sync = Clock::now() + options_.sync_interval;
        last_relist = Clock::now();
      } else if (role_.shared && !lead && now - last_relist >= kWaitingRelist &&
                 std::any_of(buckets_.begin(), buckets_.end(), [](const auto& b) {
                   return b->waiting.load(std::memory_order_relaxed) > 0;
                 })) {
        // PUTs wait here for room the leader makes: see its evictions before a whole interval.
        for (const auto& b : buckets_) {
          if (Status s = Relist(*b); !s.ok()) {
            kLog.Warn("bucket={} re-listing failed: {}", b->name, s.ToString());
          }
        }
        last_relist = Clock::now();
      }
      if (lead) {
        EvictLocked();
      }
    }
    if (lead && Clock::now() >= next_snapshot) {
      for (const auto& b : buckets_) {
        if (b->dirty.load(std::memory_order_relaxed)) {
          if (Status s = PersistSnapshot(*b); !s.ok()) {
            kLog.Warn("bucket={} snapshot failed: {}", b->name, s.ToString());
          }
        }
      }
      next_snapshot = std::chrono::steady_clock::now() + options_.snapshot_interval;
    }
    lock.lock();
  }
}

std::optional<CacheBucketStats> CacheStore::BucketStats(std::string_view bucket) const {
  const Bucket* b = Find(bucket);
  if (b == nullptr) {
    return std::nullopt;
  }
  CacheBucketStats s;
  s.index = b->index.Stats();
  s.chunks_requested = b->chunks_requested.load(std::memory_order_relaxed);
  s.chunks_served = b->chunks_served.load(std::memory_order_relaxed);
  s.puts_waited = b->puts_waited.load(std::memory_order_relaxed);
  s.puts_refused = b->puts_refused.load(std::memory_order_relaxed);
  s.eviction_failures = b->eviction_failures.load(std::memory_order_relaxed);
  s.client_deletes = b->client_deletes.load(std::memory_order_relaxed);
  s.lifecycle_expired = b->lifecycle_expired.load(std::memory_order_relaxed);
  s.snapshots_written = b->snapshots_written.load(std::memory_order_relaxed);
  s.evicting_bytes = b->deleting.load(std::memory_order_relaxed);
  s.victims_gone = b->victims_gone.load(std::memory_order_relaxed);
  s.hit_logs_written = b->hit_logs_written.load(std::memory_order_relaxed);
  s.hit_logs_folded = b->hit_logs_folded.load(std::memory_order_relaxed);
  s.hit_log_rows_dropped = b->log_rows_dropped.load(std::memory_order_relaxed);
  s.admitted_peak = b->admitted_peak.load(std::memory_order_relaxed);
  s.victims_spared = b->victims_spared.load(std::memory_order_relaxed);
  s.puts_linked = b->puts_linked.load(std::memory_order_relaxed);
  return s;
}

Result<StoreStats> CacheStore::Stats() {
  OC_ASSIGN_OR_RETURN(StoreStats stats, inner_->Stats());
  auto& f = stats.figures;
  // Watermarks in parts per million: figures are integers.
  f.emplace_back("cache.high_watermark_ppm",
                 static_cast<uint64_t>(options_.high_watermark * 1e6 + 0.5));
  f.emplace_back("cache.low_watermark_ppm",
                 static_cast<uint64_t>(options_.low_watermark * 1e6 + 0.5));
  // 1 where this server evicts (always, unless several servers share the pool).
  f.emplace_back("cache.leader", leading() ? uint64_t{1} : uint64_t{0});
  for (const auto& b : buckets_) {
    const CacheBucketStats s = *BucketStats(b->name);
    const std::string p = "cache." + b->name + ".";
    f.emplace_back(p + "capacity_bytes", b->capacity);
    f.emplace_back(p + "used_bytes", s.index.used_bytes);
    f.emplace_back(p + "dead_bytes", s.index.dead_bytes);
    f.emplace_back(p + "objects", s.index.objects);
    f.emplace_back(p + "evicted_objects_total", s.index.evicted_objects);
    f.emplace_back(p + "evicted_bytes_total", s.index.evicted_bytes);
    f.emplace_back(p + "evicting_bytes", s.evicting_bytes);
    f.emplace_back(p + "admitted_bytes_peak", s.admitted_peak);
    f.emplace_back(p + "victims_spared_total", s.victims_spared);
    f.emplace_back(p + "puts_linked_total", s.puts_linked);
    f.emplace_back(p + "eviction_failures_total", s.eviction_failures);
    f.emplace_back(p + "chunks_requested_total", s.chunks_requested);
    f.emplace_back(p + "chunks_served_total", s.chunks_served);
    f.emplace_back(p + "prefix_hit_ratio_ppm",
                   s.chunks_requested == 0 ? 0 : s.chunks_served * 1'000'000 / s.chunks_requested);
    f.emplace_back(p + "puts_waited_total", s.puts_waited);
    f.emplace_back(p + "puts_refused_total", s.puts_refused);
    f.emplace_back(p + "client_deletes_total", s.client_deletes);
    f.emplace_back(p + "lifecycle_expired_total", s.lifecycle_expired);
    f.emplace_back(p + "snapshots_written_total", s.snapshots_written);
    f.emplace_back(p + "index_memory_bytes", s.index.memory_bytes);
    f.emplace_back(p + "victims_gone_total", s.victims_gone);
    f.emplace_back(p + "hit_logs_written_total", s.hit_logs_written);
    f.emplace_back(p + "hit_logs_folded_total", s.hit_logs_folded);
    f.emplace_back(p + "hit_log_rows_dropped_total", s.hit_log_rows_dropped);
  }
  return stats;
}

Result<std::unique_ptr<Store>> ComposeCache(std::unique_ptr<Store> inner,
                                            const CacheOptions& options, CacheRole role) {
  if (options.buckets.empty()) {
    return inner;
  }
  OC_RETURN_IF_ERROR(options.Validate());
  OC_ASSIGN_OR_RETURN(std::unique_ptr<CacheStore> cache,
                      CacheStore::Open(std::move(inner), options, std::move(role)));
  return std::unique_ptr<Store>(std::move(cache));
}

CacheStore* CacheStoreOf(Store& store) { return dynamic_cast<CacheStore*>(&store); }

}  // namespace oc::storage::cache
