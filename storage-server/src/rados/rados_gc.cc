// RadosStore's garbage collector. Every commit that replaces or removes a version writes a GC
// entry g/<due ms>/<version> in the same op (rados_store.h), naming the data objects the
// index no longer references; due = commit time + gc_min_wait, so a reader that opened the
// old version keeps reading it that long. The leader removes the data objects of due
// entries, then the entries.
//
// Leadership: the holder of the exclusive RADOS lock "oc.gc" on the object oc.gc of the
// namespace (30 s, renewed every 10 s while it leads). With RadosOptions::gc a background
// thread competes for it; the leader collects every minute and scrubs for orphans
// (rados_scrub.cc) once a day. A leader that dies loses the lock when it expires. Two leaders
// (a renewal that came too late) only duplicate work: removing a removed object is success.
// The same lead decides which server of the pool runs the cache layer's eviction
// (IsMaintenanceLeader; docs/decisions/cache-buckets.md, "RADOS").

#include <sys/time.h>

#include <fmt/core.h>

#include "oc/common/log.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

using rados::FromRados;

const Logger kLog{"rados-gc"};

constexpr char kGcLockName[] = "oc.gc";
// The lock lasts this long unless renewed.
constexpr auto kLockDuration = std::chrono::seconds(30);
// The background thread wakes this often: to take or renew the lock.
constexpr auto kGcTick = std::chrono::seconds(10);
// GC passes while leading.
constexpr auto kGcInterval = std::chrono::seconds(60);
// Orphan scrubs while leading (the first one a GC interval after taking the lead).
constexpr auto kScrubInterval = std::chrono::hours(24);
// GC entries removed per shard op (their data objects first).
constexpr size_t kGcBatch = 500;

}  // namespace

void RadosStore::StartGc() {
  gc_thread_ = std::thread([this] { GcLoop(); });
}

void RadosStore::StopGc() {
  {
    std::lock_guard lock(gc_stop_mu_);
    gc_stop_ = true;
  }
  gc_stop_cv_.notify_all();
  if (gc_thread_.joinable()) {
    gc_thread_.join();
  }
  std::lock_guard lock(gc_mu_);
  if (gc_leader_ && cluster_ != nullptr) {
    const std::string cookie = fmt::format("{:016x}", writer_id_);
    (void)rados_unlock(io(), rados::kGcLockOid, kGcLockName, cookie.c_str());
    gc_leader_ = false;
  }
  lead_until_ns_.store(0, std::memory_order_relaxed);
}

bool RadosStore::IsMaintenanceLeader() const {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  return now < lead_until_ns_.load(std::memory_order_relaxed);
}

void RadosStore::GcLoop() {
  auto next_gc = std::chrono::steady_clock::now();
  auto next_scrub = std::chrono::steady_clock::time_point::max();
  // The first attempt at once: a lone server leads (and so evicts its cache buckets) from
  // its start, not one tick later.
  for (bool first = true;; first = false) {
    if (!first) {
      std::unique_lock lock(gc_stop_mu_);
      if (gc_stop_cv_.wait_for(lock, kGcTick, [&] { return gc_stop_; })) {
        return;
      }
    }
    std::lock_guard lock(gc_mu_);
    const bool was_leader = gc_leader_;
    Status lead = TakeGcLead();
    if (!lead.ok()) {
      if (was_leader || lead.code() != Code::kUnavailable) {
        kLog.Warn("not leading the GC: {}", lead.ToString());
      }
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!was_leader) {
      kLog.Info("leading the GC and the orphan scrub");
      next_gc = now;
      next_scrub = now + kGcInterval;
    }
    if (now >= next_gc) {
      Result<uint64_t> removed = GcPass();
      if (!removed.has_value()) {
        kLog.Warn("GC pass failed: {}", removed.error().ToString());
      } else if (*removed > 0) {
        kLog.Info("GC removed data_objects={}", *removed);
      }
      next_gc = std::chrono::steady_clock::now() + kGcInterval;
    }
    if (now >= next_scrub) {
      Result<ScrubReport> r = ScrubPass();
      if (!r.has_value()) {
        kLog.Warn("orphan scrub failed: {}", r.error().ToString());
      } else {
        kLog.Info("orphan scrub removed data_objects={} index_objects={} parts={}", r->data_objects,
                  r->index_objects, r->parts);
      }
      next_scrub = std::chrono::steady_clock::now() + kScrubInterval;
    }
  }
}

Status RadosStore::TakeGcLead() {
  const std::string cookie = fmt::format("{:016x}", writer_id_);
  timeval duration{static_cast<time_t>(kLockDuration.count()), 0};
  const int rc =
      rados_lock_exclusive(io(), rados::kGcLockOid, kGcLockName, cookie.c_str(),
                           "objectcache GC leader", &duration, LIBRADOS_LOCK_FLAG_MAY_RENEW);
  if (rc == -EBUSY) {
    gc_leader_ = false;
    lead_until_ns_.store(0, std::memory_order_relaxed);
    return Status::Unavailable("another process leads the GC (lock oc.gc)");
  }
  if (rc < 0) {
    gc_leader_ = false;
    lead_until_ns_.store(0, std::memory_order_relaxed);
    return FromRados(rc, "taking the GC lock");
  }
  gc_leader_ = true;
  gc_renewed_ = std::chrono::steady_clock::now();
  // The lock lasts kLockDuration from the request; trusting it kGcTick less leaves the time
  // of one late renewal between this process letting go and another taking it.
  lead_until_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           (gc_renewed_ + kLockDuration - kGcTick).time_since_epoch())
                           .count(),
                       std::memory_order_relaxed);
  return Status::Ok();
}

Status RadosStore::KeepGcLead() {
  if (std::chrono::steady_clock::now() - gc_renewed_ < kGcTick) {
    return Status::Ok();
  }
  return TakeGcLead();
}

Result<uint64_t> RadosStore::RunGcOnce() {
  std::lock_guard lock(gc_mu_);
  OC_RETURN_IF_ERROR(TakeGcLead());
  return GcPass();
}

Result<RadosStore::ScrubReport> RadosStore::RunScrubOnce() {
  std::lock_guard lock(gc_mu_);
  OC_RETURN_IF_ERROR(TakeGcLead());
  return ScrubPass();
}

Result<std::vector<rados::RadosBucketRecord>> RadosStore::AllBuckets() {
  std::vector<rados::RadosBucketRecord> out;
  Status s = ScanOmap(
      rados::kRegistryOid, "", "", [&](std::string_view, std::string_view v) -> Result<bool> {
        OC_ASSIGN_OR_RETURN(rados::RadosBucketRecord r, rados::DecodeRadosBucketRecord(v));
        out.push_back(std::move(r));
        return true;
      });
  OC_RETURN_IF_ERROR(s);
  return out;
}

Result<uint64_t> RadosStore::GcPass() {
  OC_ASSIGN_OR_RETURN(std::vector<rados::RadosBucketRecord> buckets, AllBuckets());
  const int64_t now = RadosNowUnixMs();
  uint64_t removed = 0;
  Status first;
  for (const rados::RadosBucketRecord& b : buckets) {
    for (uint32_t s = 0; s < b.index_shards; ++s) {
      OC_RETURN_IF_ERROR(KeepGcLead());
      Result<uint64_t> n = CollectShard(b.bucket_id, s, now);
      if (n.has_value()) {
        removed += *n;
      } else if (!n.error().IsNotFound() && first.ok()) {
        first = n.error();  // a bucket deleted meanwhile took its entries with it
      }
    }
  }
  OC_RETURN_IF_ERROR(first);
  return removed;
}

Result<uint64_t> RadosStore::CollectShard(uint64_t bucket_id, uint32_t shard, int64_t now) {
  const std::string oid = rados::IndexOid(bucket_id, shard);
  uint64_t removed = 0;
  for (;;) {
    std::vector<std::string> keys;
    std::vector<std::string> data;
    OC_RETURN_IF_ERROR(ScanOmap(oid, rados::kGcPrefix, "",
                                [&](std::string_view k, std::string_view v) -> Result<bool> {
                                  int64_t due = 0;
                                  if (!rados::ParseGcOmapKey(k, &due)) {
                                    return Status::Corruption("malformed GC key");
                                  }
                                  if (due > now) {
                                    return false;  // entries sort by due time
                                  }
                                  keys.emplace_back(k);
                                  for (const Segment& seg : SegmentsOfEntry(k, v)) {
                                    AppendDataOids(bucket_id, seg, &data);
                                  }
                                  return keys.size() < kGcBatch;
                                }));
    if (keys.empty()) {
      return removed;
    }
    const uint64_t n = RemoveObjects(data);
    removed += n;
    if (n < data.size()) {
      return Status::IOError("some data objects could not be removed; the GC retries later");
    }
    // The entries go only while the shard is live: a bucket being deleted removes them itself
    // (and a removed shard must not be recreated by this op).
    rados::WriteOp op;
    op.CmpXattr(rados::kStateXattr, rados::kStateLive);
    op.OmapRm(keys);
    const int rc = op.Operate(io(), oid);
    if (rc == -ENOENT || rc == -ECANCELED) {
      return removed;
    }
    OC_RETURN_IF_ERROR(FromRados(rc, "removing GC entries"));
    if (keys.size() < kGcBatch) {
      return removed;
    }
    OC_RETURN_IF_ERROR(KeepGcLead());
  }
}

}  // namespace oc::storage
