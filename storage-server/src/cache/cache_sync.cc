// CacheStore (cache_store.h) over a pool several servers share (RADOS): who evicts, how the
// evicting server learns what the others wrote and hit, and how a new leader takes over
// (docs/decisions/cache-buckets.md, "RADOS").
//
// - The lead is the backend's (Backend::IsMaintenanceLeader: on RADOS the GC's oc.gc lock),
//   asked before every pass; only the leader evicts and writes the snapshot.
// - Every sync_interval a follower persists its hit log (its PUTs' chains, its hits, its plain
//   GETs since the last part) as `<bucket>/hits-<server id>-<seq>` in kCacheStateBucket, and
//   the leader folds every such part into its index (then deletes it with DeleteIf on the
//   version it read). Then each server re-lists its cache buckets (EvictionIndex::Reconcile),
//   so the leader evicts, and every server admits, against the pool's usage of at most one
//   interval ago plus its own writes since.
// - A server taking the lead rebuilds each index from a listing and the snapshot, and folds
//   every hit log (its own too) before its first pass. A victim found already gone (a former
//   leader deleted it) counts as freed but not as evicted here: nothing is counted twice.
#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "cache/cache_bucket.h"
#include "cache/cache_store.h"
#include "oc/common/log.h"

namespace oc::storage::cache {
namespace {

const Logger kLog{"cache"};

std::string HitLogPrefix(std::string_view bucket) { return fmt::format("{}/hits-", bucket); }

}  // namespace

void CacheStore::Bucket::Log(std::string_view key, std::string_view predecessor, uint64_t size,
                             uint64_t kind) {
  if (!logging.load(std::memory_order_relaxed)) {
    return;
  }
  std::lock_guard lock(log_mu);
  if (log.size() >= kMaxHitLogRows) {
    log_rows_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  log.push_back(SnapshotRow{std::string(key), std::string(predecessor), size, kind});
}

std::vector<SnapshotRow> CacheStore::Bucket::TakeLog() {
  std::lock_guard lock(log_mu);
  return std::exchange(log, {});
}

bool CacheStore::CheckLead() {
  if (!role_.shared) {
    return true;
  }
  const bool lead = role_.is_leader == nullptr || role_.is_leader();
  const bool was = leading();
  if (lead && !was) {
    kLog.Info("server={} takes the cache eviction lead: rebuilding from listings", server_id_);
    for (const auto& b : buckets_) {
      // What this server saw as a follower goes in with everyone's logs.
      if (Status s = PersistHitLog(*b); !s.ok()) {
        kLog.Warn("bucket={} own hit log lost: {}", b->name, s.ToString());
      }
      b->logging.store(false, std::memory_order_relaxed);
      if (Status s = Restore(*b); !s.ok()) {
        kLog.Warn("bucket={} cannot rebuild ({}): not leading yet", b->name, s.ToString());
        for (const auto& c : buckets_) {
          c->logging.store(true, std::memory_order_relaxed);
        }
        return false;
      }
      if (Status s = FoldHitLogs(*b); !s.ok()) {
        kLog.Warn("bucket={} hit logs not folded: {}", b->name, s.ToString());
      }
      // A log may name objects evicted since it was written: the listing has the last word.
      if (Status s = Relist(*b); !s.ok()) {
        kLog.Warn("bucket={} re-listing failed: {}", b->name, s.ToString());
      }
      b->dirty.store(true, std::memory_order_relaxed);
    }
  } else if (!lead && was) {
    kLog.Info("server={} no longer leads the cache eviction", server_id_);
    for (const auto& b : buckets_) {
      b->logging.store(true, std::memory_order_relaxed);
    }
  }
  leading_.store(lead, std::memory_order_relaxed);
  return lead;
}

void CacheStore::SyncNow() {
  std::lock_guard pass(pass_mu_);
  (void)CheckLead();
  SyncLocked();
}

void CacheStore::SyncLocked() {
  if (!role_.shared) {
    return;
  }
  for (const auto& b : buckets_) {
    Status s = leading() ? FoldHitLogs(*b) : PersistHitLog(*b);
    if (!s.ok()) {
      kLog.Warn("bucket={} hit log {} failed: {}", b->name, leading() ? "fold" : "write",
                s.ToString());
    }
    if (s = Relist(*b); !s.ok()) {
      kLog.Warn("bucket={} re-listing failed: {}", b->name, s.ToString());
    }
  }
}

Status CacheStore::PersistHitLog(Bucket& b) {
  const std::vector<SnapshotRow> rows = b.TakeLog();
  for (size_t begin = 0; begin < rows.size(); begin += kSnapshotRowsPerPart) {
    const size_t end = std::min(rows.size(), begin + kSnapshotRowsPerPart);
    const std::string bytes =
        EncodeSnapshot(std::span<const SnapshotRow>(rows).subspan(begin, end - begin));
    const std::string name =
        fmt::format("{}{}-{:08}", HitLogPrefix(b.name), server_id_, hit_log_seq_++);
    OC_RETURN_IF_ERROR(WriteState(*inner_, name, bytes));  // the rest is lost: recency only
    b.hit_logs_written.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status CacheStore::FoldHitLogs(Bucket& b) {
  OC_ASSIGN_OR_RETURN(std::vector<ListedObject> parts,
                      ListAll(*inner_, kCacheStateBucket, HitLogPrefix(b.name)));
  for (const ListedObject& part : parts) {
    const ObjectKey key{std::string(kCacheStateBucket), part.key};
    ObjectMeta meta;
    Result<std::string> bytes = ReadWhole(*inner_, key, kMaxSnapshotPartBytes, &meta);
    if (!bytes.has_value()) {
      if (bytes.error().code() != Code::kNotFound) {
        kLog.Warn("bucket={} hit log {} unreadable: {}", b.name, part.key,
                  bytes.error().ToString());
      }
      continue;
    }
    Result<std::vector<SnapshotRow>> rows = DecodeSnapshot(*bytes);
    if (!rows.has_value()) {
      kLog.Warn("bucket={} hit log {} dropped: {}", b.name, part.key, rows.error().ToString());
    } else {
      for (const SnapshotRow& row : *rows) {
        if (row.last_tick == kLogPut) {
          const ChunkRef chunk{row.key, row.size};
          b.index.OnPut(std::span<const ChunkRef>(&chunk, 1), row.predecessor);
        } else if (row.last_tick == kLogHit) {
          const std::string_view chain[] = {row.predecessor, row.key};
          b.index.OnHit(row.predecessor.empty() ? std::span<const std::string_view>(chain + 1, 1)
                                                : std::span<const std::string_view>(chain, 2));
        } else if (row.last_tick == kLogGet) {
          b.index.OnPlainGet(row.key);
        }
      }
      b.hit_logs_folded.fetch_add(1, std::memory_order_relaxed);
    }
    // Only the version read: a part is written once, so this fails only if another leader
    // folded it first.
    (void)inner_->DeleteIf(key, ObjectVersionMatch{meta.etag, meta.mtime_unix_ms});
  }
  b.dirty.store(true, std::memory_order_relaxed);
  return Status::Ok();
}

Status CacheStore::Relist(Bucket& b) {
  const uint64_t since = b.index.Tick();
  OC_ASSIGN_OR_RETURN(std::vector<ListedObject> listing, ListAll(*inner_, b.name));
  b.index.Reconcile(listing, since);
  if (leading()) {
    b.dirty.store(true, std::memory_order_relaxed);
  }
  NotifyRoom(b);  // room the leader made (or the pool's truth) for PUTs waiting here
  return Status::Ok();
}

}  // namespace oc::storage::cache
