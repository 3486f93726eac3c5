#pragma once
// ShardMerge: the omap entries under one key prefix of all of a bucket's index shards, in
// omap key order, as a k-way merge (the listing cursor of RadosStore::List and
// RadosStore::ListMultipartUploads, rados_list.cc). Each shard is paged with
// omap_get_vals2(start_after, filter prefix); the first page of every shard is read in
// parallel, later pages as a shard's buffer runs dry. The smallest buffered key of all
// shards comes next. SkipPrefix drops a common prefix on every shard: buffered keys under it
// go, and a shard's next page starts past it. Each shard's entries come from one op per page,
// so a listing is consistent per shard page, not across the bucket.
//
// One listing call owns one ShardMerge; not thread-safe. No op is left in flight when a
// method returns.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rados/rados_store.h"

namespace oc::storage::rados {

class ShardMerge {
 public:
  // An omap key and its value.
  using Entry = std::pair<std::string, std::string>;

  // Merges the entries of every shard of `ref` whose keys start with `filter`, paging each
  // shard by a share of `max_entries` (what the caller lists at most). `store` and `bucket`
  // must outlive the merge. REQUIRES: ref.shards >= 1.
  ShardMerge(RadosStore& store, std::string_view bucket, const RadosStore::BucketRef& ref,
             std::string filter, uint32_t max_entries);
  ShardMerge(const ShardMerge&) = delete;
  ShardMerge& operator=(const ShardMerge&) = delete;

  // Reads the first page of every shard, keys after `start_after` ("" for the start), all in
  // flight together. kNotFound/kBucket if a shard vanished (RadosStore::ShardGone); the
  // error of the first failing shard otherwise.
  Status Start(const std::string& start_after);
  // The smallest buffered entry, reading the next page of every dry shard that has more
  // first; nullptr when every shard is done. The entry stays valid until the next call of
  // any method. Errors as for Start.
  Result<const Entry*> Peek();
  // Drops the entry Peek returned. REQUIRES: Peek returned an entry and neither Pop nor
  // SkipPrefix has been called since.
  void Pop();
  // Drops every buffered entry whose key starts with `omap_prefix`, and moves the next page
  // of each shard left dry past `past` (an omap key after every key under the prefix).
  void SkipPrefix(std::string_view omap_prefix, const std::string& past);

 private:
  struct Cursor {
    uint32_t shard = 0;
    std::deque<Entry> buffered;
    std::string next_after;  // start_after of the next page
    bool more = true;
    // The page being read.
    std::unique_ptr<ReadOp> op;
    std::unique_ptr<OmapIter> it;
    unsigned char more_flag = 0;
    int prval = 0;
    Completion c;
    int rc = 0;
  };
  void Issue(Cursor& cur);
  // Waits for the page Issue started and buffers its entries.
  Status Collect(Cursor& cur);

  RadosStore& store_;
  const std::string_view bucket_;
  const uint64_t bucket_id_;
  const std::string filter_;
  const uint64_t page_;
  std::vector<Cursor> cursors_;
  Cursor* front_ = nullptr;  // the cursor of the entry Peek returned
};

}  // namespace oc::storage::rados
