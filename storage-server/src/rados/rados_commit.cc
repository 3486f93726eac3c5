// RadosStore, the commit point: CommitShard (one guarded write op on one index shard, retried
// on conflicts) and CommitPut (a PUT's commit, grouped with the other PUTs of its key waiting in
// this process), rados_store.h. How many ops a PUT costs, and why:
// docs/decisions/rados-put-one-commit-op.md.
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "rados/rados_store.h"

namespace oc::storage {
namespace {

using rados::CommitMemo;
using rados::FromRados;
using rados::ReadOp;
using rados::WriteOp;

// Conflicting commits (-ECANCELED) retry this often before giving up with kUnavailable. Each
// conflict means another commit to the same records landed, so this bounds how many writers
// of one key may overtake a commit, not how long a commit may take; 64 was too few under load
// (8 threads overwriting one key on 2 loaded cores lost one PUT in CI-like runs, before the
// writers of one process were serialised).
constexpr int kMaxCommitTries = 1024;
// A commit that meets a shard in state `deleting` waits this long for DeleteBucket to finish
// or give up before asking the registry.
constexpr auto kDeletingWait = std::chrono::seconds(2);

void Backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int cap_us = std::min(200 << std::min(attempt, 5), 5000);
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % (cap_us + 1)));
}

bool SameVersion(const Segment& a, const Segment& b) {
  return a.writer == b.writer && a.data_id == b.data_id;
}

// The segments of `old` that `next` no longer names: what a commit hands to the GC.
std::vector<Segment> Replaced(const ObjectRecord& old, const std::optional<ObjectRecord>& next) {
  std::vector<Segment> out;
  for (const Segment& s : old.segments) {
    bool kept = false;
    if (next.has_value()) {
      for (const Segment& n : next->segments) {
        kept = kept || SameVersion(s, n);
      }
    }
    if (!kept && s.writer != 0 && s.size > 0) {
      out.push_back(s);
    }
  }
  return out;
}

// Adds the GC entry of `segments` (due at `due`) to `sets`; nothing if there are none.
void AddGcEntry(int64_t due, std::vector<Segment> segments,
                std::vector<std::pair<std::string, std::string>>* sets) {
  if (segments.empty()) {
    return;
  }
  ObjectRecord gc;
  gc.segments = std::move(segments);
  for (const Segment& s : gc.segments) {
    gc.meta.size += s.size;
  }
  sets->emplace_back(rados::GcOmapKey(due, gc.segments.front()), EncodeObjectRecord(gc));
}

}  // namespace

Result<RadosStore::ShardView> RadosStore::ReadShardView(std::string_view bucket,
                                                        const BucketRef& ref, uint32_t shard,
                                                        const std::vector<std::string>& names) {
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const std::string& n : names) {
    keys.push_back(rados::ObjectOmapKey(n));
  }
  ReadOp op;
  rados::XattrIter xattrs;
  rados::OmapIter it;
  int xattrs_rc = 0;
  int omap_rc = 0;
  op.GetXattrs(&xattrs, &xattrs_rc);
  op.OmapGetByKeys(keys, &it, &omap_rc);
  const int rc = op.Operate(io(), rados::IndexOid(ref.id, shard));
  commit_rereads_.fetch_add(1, std::memory_order_relaxed);
  if (rc == -ENOENT) {
    return ShardGone(bucket);
  }
  OC_RETURN_IF_ERROR(FromRados(rc, "reading an index shard"));
  OC_RETURN_IF_ERROR(FromRados(xattrs_rc, "reading an index shard's state"));
  OC_RETURN_IF_ERROR(FromRados(omap_rc, "reading an index shard"));
  ShardView view;
  std::string_view k;
  std::string_view v;
  while (xattrs.Next(&k, &v)) {
    if (k == rados::kStateXattr) {
      view.state.assign(v);
    }
  }
  view.records.resize(names.size());
  while (it.Next(&k, &v)) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == k && !view.records[i].has_value()) {
        OC_ASSIGN_OR_RETURN(ObjectRecord r, DecodeObjectRecord(v));
        view.records[i] = std::move(r);
      }
    }
  }
  return view;
}

Result<std::vector<std::optional<ObjectRecord>>> RadosStore::CommitShard(
    std::string_view bucket, const BucketRef& ref, uint32_t shard, std::vector<KeyChange>& changes,
    bool read_first) {
  std::vector<std::string> ids;
  for (const KeyChange& c : changes) {
    ids.push_back(CommitMemo::KeyId(ref.id, c.name));
  }
  const CommitMemo::StripeHold hold = memo_.LockStripes(ids);
  return CommitShardLocked(bucket, ref, shard, changes, read_first);
}

Status RadosStore::CommitPut(std::string_view bucket, const BucketRef& ref, const std::string& name,
                             const ObjectRecord& record) {
  CommitMemo::PendingPut put{record};
  CommitMemo::PutTurn turn = memo_.AwaitPutTurn(CommitMemo::KeyId(ref.id, name), &put);
  if (!turn.hold.has_value()) {
    return put.status;  // another PUT of the key committed this one in its op
  }
  // The last PUT registered is the one left visible; the others are replaced in the same op.
  std::vector<KeyChange> changes(1);
  changes[0].name = name;
  const ObjectRecord& last = turn.batch.back()->record;
  changes[0].decide = [&](const std::optional<ObjectRecord>&) {
    return Result<std::optional<ObjectRecord>>(last);
  };
  for (size_t i = 0; i + 1 < turn.batch.size(); ++i) {
    changes[0].superseded.push_back(turn.batch[i]->record);
  }
  const Status status =
      CommitShardLocked(bucket, ref, rados::ShardOf(name, ref.shards), changes, false).status();
  if (status.ok()) {
    puts_grouped_.fetch_add(turn.batch.size() - 1, std::memory_order_relaxed);
  }
  memo_.FinishPuts(turn.batch, status);
  return status;
}

Result<std::vector<std::optional<ObjectRecord>>> RadosStore::CommitShardLocked(
    std::string_view bucket, const BucketRef& ref, uint32_t shard, std::vector<KeyChange>& changes,
    bool read_first) {
  const std::string oid = rados::IndexOid(ref.id, shard);
  std::vector<std::string> names;
  std::vector<std::string> ids;
  for (const KeyChange& c : changes) {
    names.push_back(c.name);
    ids.push_back(CommitMemo::KeyId(ref.id, c.name));
  }
  auto forget = [&] {
    for (const std::string& id : ids) {
      memo_.Forget(id);
    }
  };
  std::vector<std::optional<ObjectRecord>> current(changes.size());
  if (read_first) {
    OC_ASSIGN_OR_RETURN(current, ReadRecords(bucket, ref, shard, names));
  } else {
    // What this process committed last, else absent (a new object costs no read).
    bool remembered = false;
    for (size_t i = 0; i < changes.size(); ++i) {
      current[i] = memo_.Recall(ids[i]);
      remembered = remembered || current[i].has_value();
    }
    if (remembered) {
      commit_remembered_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const auto deleting_since = std::chrono::steady_clock::now();
  for (int attempt = 0; attempt < kMaxCommitTries; ++attempt) {
    std::vector<std::optional<ObjectRecord>> next(changes.size());
    std::vector<std::pair<std::string, std::string>> sets;
    std::vector<std::string> removes;
    std::vector<std::string> expected(changes.size());
    std::vector<int> cmp(changes.size(), 0);
    const int64_t due = RadosNowUnixMs() + options_.rados.gc_min_wait.count();
    WriteOp op;
    op.CmpXattr(rados::kStateXattr, rados::kStateLive);
    for (size_t i = 0; i < changes.size(); ++i) {
      OC_ASSIGN_OR_RETURN(next[i], changes[i].decide(current[i]));
      const std::string key = rados::ObjectOmapKey(changes[i].name);
      if (current[i].has_value()) {
        expected[i] = EncodeObjectRecord(*current[i]);
        AddGcEntry(due, Replaced(*current[i], next[i]), &sets);
      }
      for (const ObjectRecord& r : changes[i].superseded) {
        AddGcEntry(due, Replaced(r, next[i]), &sets);
      }
      op.OmapCmp(key, expected[i], &cmp[i]);
      if (next[i].has_value()) {
        std::string value = EncodeObjectRecord(*next[i]);
        if (!current[i].has_value() || value != expected[i]) {  // a kept record: compare only
          sets.emplace_back(key, std::move(value));
        }
      } else if (current[i].has_value()) {
        removes.push_back(key);
      }
    }
    op.OmapSet(sets);
    op.OmapRm(removes);
    const int rc = op.Operate(io(), oid);
    commit_ops_.fetch_add(1, std::memory_order_relaxed);
    if (rc >= 0) {
      commits_.fetch_add(1, std::memory_order_relaxed);
      for (size_t i = 0; i < changes.size(); ++i) {
        memo_.Remember(ids[i], next[i]);
      }
      return next;
    }
    if (rc == -ENOENT) {
      forget();
      return ShardGone(bucket);
    }
    if (rc != -ECANCELED) {
      forget();  // a timed-out op may still have applied
      return FromRados(rc, "committing to an index shard");
    }
    commit_conflicts_.fetch_add(1, std::memory_order_relaxed);
    // A record changed under us (another process wrote it), or the shard is being deleted:
    // the state and the records again, in one read op.
    OC_ASSIGN_OR_RETURN(ShardView view, ReadShardView(bucket, ref, shard, names));
    current = std::move(view.records);
    if (view.state != rados::kStateLive) {
      if (std::chrono::steady_clock::now() - deleting_since > kDeletingWait) {
        Result<rados::RadosBucketRecord> reg = ReadRegistry(bucket);
        if (!reg.has_value() || reg->bucket_id != ref.id) {
          return ShardGone(bucket);
        }
        return Status::Unavailable("bucket " + std::string(bucket) + " is being deleted");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      --attempt;  // waiting for the state is not a conflict
      continue;
    }
    Backoff(attempt);
  }
  return Status::Unavailable("too many conflicting commits to one index shard; try again");
}

}  // namespace oc::storage
