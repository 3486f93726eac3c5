#include "rados/rados_shard_merge.h"

#include <algorithm>
#include <cassert>

namespace oc::storage::rados {
namespace {

// Entries per shard page: a share of the page size with room to spare, bounded.
uint64_t ShardPage(uint32_t max_entries, uint32_t shards) {
  const uint64_t share = 2ull * max_entries / shards + 16;
  return std::clamp<uint64_t>(share, 16, 1000);
}

}  // namespace

ShardMerge::ShardMerge(RadosStore& store, std::string_view bucket, const RadosStore::BucketRef& ref,
                       std::string filter, uint32_t max_entries)
    : store_(store),
      bucket_(bucket),
      bucket_id_(ref.id),
      filter_(std::move(filter)),
      page_(ShardPage(max_entries, ref.shards)),
      cursors_(ref.shards) {
  for (uint32_t s = 0; s < ref.shards; ++s) {
    cursors_[s].shard = s;
  }
}

void ShardMerge::Issue(Cursor& cur) {
  cur.op = std::make_unique<ReadOp>();
  cur.it = std::make_unique<OmapIter>();
  cur.op->OmapGetVals(cur.next_after, filter_, page_, cur.it.get(), &cur.more_flag, &cur.prval);
  cur.rc = cur.op->OperateAsync(store_.io(), IndexOid(bucket_id_, cur.shard), cur.c);
}

Status ShardMerge::Collect(Cursor& cur) {
  if (cur.rc == 0) {
    cur.rc = cur.c.Wait();
  }
  if (cur.rc == -ENOENT) {
    return store_.ShardGone(bucket_);
  }
  OC_RETURN_IF_ERROR(FromRados(cur.rc, "listing an index shard"));
  OC_RETURN_IF_ERROR(FromRados(cur.prval, "listing an index shard"));
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
  cur.c = Completion();
  return Status::Ok();
}

Status ShardMerge::Start(const std::string& start_after) {
  for (Cursor& cur : cursors_) {
    cur.next_after = start_after;
    Issue(cur);
  }
  Status first;
  for (Cursor& cur : cursors_) {
    Status st = Collect(cur);  // every op is waited for, even after an error
    if (first.ok()) {
      first = st;
    }
  }
  return first;
}

Result<const ShardMerge::Entry*> ShardMerge::Peek() {
  front_ = nullptr;
  for (Cursor& cur : cursors_) {
    while (cur.buffered.empty() && cur.more) {
      Issue(cur);
      OC_RETURN_IF_ERROR(Collect(cur));
    }
    if (!cur.buffered.empty() &&
        (front_ == nullptr || cur.buffered.front().first < front_->buffered.front().first)) {
      front_ = &cur;
    }
  }
  return front_ == nullptr ? nullptr : &front_->buffered.front();
}

void ShardMerge::Pop() {
  assert(front_ != nullptr && !front_->buffered.empty());
  front_->buffered.pop_front();
  front_ = nullptr;
}

void ShardMerge::SkipPrefix(std::string_view omap_prefix, const std::string& past) {
  front_ = nullptr;
  for (Cursor& cur : cursors_) {
    while (!cur.buffered.empty() && cur.buffered.front().first.starts_with(omap_prefix)) {
      cur.buffered.pop_front();
    }
    if (cur.buffered.empty() && cur.next_after < past) {
      cur.next_after = past;
    }
  }
}

}  // namespace oc::storage::rados
