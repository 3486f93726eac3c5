// RadosStore::List: S3 listing semantics (rocks_list.cc has the same rules) over a bucket's
// index shards, a k-way merge. Each shard is paged with omap_get_vals2(start_after,
// filter_prefix "o/" + prefix); the first page of every shard is read in parallel, later
// pages as a shard's buffer runs dry. The smallest buffered key of all shards comes next. A
// common prefix is returned once and then skipped on every shard: buffered keys under it are
// dropped and the shard's next page starts past it. Each shard's entries come from one op
// each, so a listing is consistent per shard page, not across the bucket.

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "rados/rados_store.h"

namespace oc::storage {
namespace {

// Entries per shard page: a share of the page size with room to spare, bounded.
uint64_t ShardPage(uint32_t max_keys, uint32_t shards) {
  const uint64_t share = 2ull * max_keys / shards + 16;
  return std::clamp<uint64_t>(share, 16, 1000);
}

// A string after every key that starts with `prefix`: keys are at most kMaxKeyBytes bytes,
// so `prefix` + that many 0xff bytes is at least any of them (a C string: no NUL needed).
std::string PastPrefix(std::string_view prefix) {
  std::string s(prefix);
  s.append(kMaxKeyBytes + 1, '\xff');
  return s;
}

struct ShardCursor {
  uint32_t shard = 0;
  std::deque<std::pair<std::string, std::string>> buffered;  // omap key (o/...), value
  std::string next_after;                                    // start_after of the next page
  bool more = true;
  // The page being read.
  std::unique_ptr<rados::ReadOp> op;
  std::unique_ptr<rados::OmapIter> it;
  unsigned char more_flag = 0;
  int prval = 0;
  rados::Completion c;
  int rc = 0;
};

}  // namespace

Result<ListResult> RadosStore::List(std::string_view bucket, const ListOptions& options) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  ListResult result;
  if (options.max_keys == 0) {
    // Still an existence check of the bucket's shards.
    std::string state;
    if (rados::GetXattr(io(), rados::IndexOid(ref.id, 0), rados::kStateXattr, &state) == -ENOENT) {
      return ShardGone(bucket);
    }
    return result;
  }
  const std::string filter = std::string(rados::kObjectPrefix) + options.prefix;
  const std::string& after = options.start_after;
  std::string start = std::string(rados::kObjectPrefix) + after;
  if (after.empty() || after < options.prefix) {
    start.clear();  // the prefix filter starts the page
  }
  const uint64_t page = ShardPage(options.max_keys, ref.shards);

  std::vector<ShardCursor> cursors(ref.shards);
  auto issue = [&](ShardCursor& cur) {
    cur.op = std::make_unique<rados::ReadOp>();
    cur.it = std::make_unique<rados::OmapIter>();
    cur.op->OmapGetVals(cur.next_after, filter, page, cur.it.get(), &cur.more_flag, &cur.prval);
    cur.rc = cur.op->OperateAsync(io(), rados::IndexOid(ref.id, cur.shard), cur.c);
  };
  auto collect = [&](ShardCursor& cur) -> Status {
    if (cur.rc == 0) {
      cur.rc = cur.c.Wait();
    }
    if (cur.rc == -ENOENT) {
      return ShardGone(bucket);
    }
    OC_RETURN_IF_ERROR(rados::FromRados(cur.rc, "listing an index shard"));
    OC_RETURN_IF_ERROR(rados::FromRados(cur.prval, "listing an index shard"));
    std::string_view k;
    std::string_view v;
    while (cur.it->Next(&k, &v)) {
      cur.buffered.emplace_back(std::string(k), std::string(v));
    }
    cur.more = cur.more_flag != 0 && !cur.buffered.empty();
    if (!cur.buffered.empty()) {
      cur.next_after = std::max(cur.next_after, cur.buffered.back().first);
    }
    cur.it.reset();
    cur.op.reset();
    cur.c = rados::Completion();
    return Status::Ok();
  };
  for (uint32_t s = 0; s < ref.shards; ++s) {
    cursors[s].shard = s;
    cursors[s].next_after = start;
    issue(cursors[s]);
  }
  Status first;
  for (ShardCursor& cur : cursors) {
    Status st = collect(cur);
    if (first.ok()) {
      first = st;
    }
  }
  OC_RETURN_IF_ERROR(first);

  // Drops every buffered key under `common` (an omap key prefix) and moves each shard's next
  // page past it.
  auto skip_prefix = [&](const std::string& common) {
    const std::string past = PastPrefix(common);
    for (ShardCursor& cur : cursors) {
      while (!cur.buffered.empty() && cur.buffered.front().first.starts_with(common)) {
        cur.buffered.pop_front();
      }
      if (cur.buffered.empty() && cur.next_after < past) {
        cur.next_after = past;
      }
    }
  };
  // The cursor holding the smallest key, refilling dry shards first; nullptr at the end.
  auto smallest = [&]() -> Result<ShardCursor*> {
    ShardCursor* best = nullptr;
    for (ShardCursor& cur : cursors) {
      while (cur.buffered.empty() && cur.more) {
        issue(cur);
        OC_RETURN_IF_ERROR(collect(cur));
      }
      if (!cur.buffered.empty() &&
          (best == nullptr || cur.buffered.front().first < best->buffered.front().first)) {
        best = &cur;
      }
    }
    return best;
  };

  const size_t base = std::string_view(rados::kObjectPrefix).size();
  uint32_t count = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ShardCursor * cur, smallest());
    if (cur == nullptr) {
      break;
    }
    const std::string& key = cur->buffered.front().first;
    const std::string_view name = std::string_view(key).substr(base);
    if (!after.empty() && name <= after) {
      cur->buffered.pop_front();
      continue;
    }
    std::string common;
    if (!options.delimiter.empty()) {
      const size_t pos = name.find(options.delimiter, options.prefix.size());
      if (pos != std::string_view::npos) {
        common = std::string(name.substr(0, pos + options.delimiter.size()));
      }
    }
    if (!common.empty() && after.starts_with(common)) {
      skip_prefix(std::string(rados::kObjectPrefix) + common);  // returned on an earlier page
      continue;
    }
    if (count == options.max_keys) {
      result.truncated = true;
      break;
    }
    ++count;
    if (!common.empty()) {
      result.common_prefixes.push_back(common);
      result.next_start_after = common;
      skip_prefix(std::string(rados::kObjectPrefix) + common);
      continue;
    }
    OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(cur->buffered.front().second));
    result.objects.push_back(ListEntry{std::string(name), std::move(record.meta)});
    result.next_start_after = result.objects.back().name;
    cur->buffered.pop_front();
  }
  return result;
}

}  // namespace oc::storage
