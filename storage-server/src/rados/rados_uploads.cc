// RadosStore::ListMultipartUploads: S3 listing of uploads in progress with the rules of
// RocksStore (rocks_list.cc), as a k-way merge over the bucket's index shards like
// RadosStore::List (rados_list.cc). Upload omap keys keep the (key, upload id) order
// (rados_keys.h: the key with 0x01 escaped, then 01 01, then the id), so merging the shards in
// omap key order lists uploads by key, then by id, keys holding 0x01 included. A listing is
// consistent per shard page, not across the bucket.

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "rados/rados_store.h"

namespace oc::storage {
namespace {

// Entries per shard page: a share of the page size with room to spare, bounded.
uint64_t ShardPage(uint32_t max_uploads, uint32_t shards) {
  const uint64_t share = 2ull * max_uploads / shards + 16;
  return std::clamp<uint64_t>(share, 16, 1000);
}

// An omap key after every upload key whose escaped name starts with `escaped_prefix`: an
// escaped name is at most twice kMaxKeyBytes, then come 01 01 and the id.
std::string PastPrefix(std::string_view escaped_prefix) {
  std::string s(rados::kUploadPrefix);
  s.append(escaped_prefix);
  s.append(2 * kMaxKeyBytes + 64, '\xff');
  return s;
}

struct ShardCursor {
  uint32_t shard = 0;
  std::deque<std::pair<std::string, std::string>> buffered;  // omap key (u/...), value
  std::string next_after;                                    // start_after of the next page
  bool more = true;
  std::unique_ptr<rados::ReadOp> op;
  std::unique_ptr<rados::OmapIter> it;
  unsigned char more_flag = 0;
  int prval = 0;
  rados::Completion c;
  int rc = 0;
};

}  // namespace

Result<ListUploadsResult> RadosStore::ListMultipartUploads(std::string_view bucket,
                                                           const ListUploadsOptions& options) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  ListUploadsResult result;
  if (options.max_uploads == 0) {
    return result;
  }
  const std::string filter = rados::kUploadPrefix + rados::EscapeUploadName(options.prefix);
  // The marker as an omap key; everything at or before it is skipped. With only a key
  // marker, every upload of that key is skipped too (0xff sorts after any upload id).
  const std::string& km = options.key_marker;
  std::string start;
  if (!km.empty()) {
    start = rados::UploadOmapKey(
        km, options.upload_id_marker.empty() ? std::string_view("\xff") : options.upload_id_marker);
  }
  const uint64_t page = ShardPage(options.max_uploads, ref.shards);

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

  // Drops every buffered upload whose key starts with `common` and moves each shard's next
  // page past them.
  auto skip_prefix = [&](std::string_view common) {
    const std::string escaped = rados::kUploadPrefix + rados::EscapeUploadName(common);
    const std::string past = PastPrefix(rados::EscapeUploadName(common));
    for (ShardCursor& cur : cursors) {
      while (!cur.buffered.empty() && cur.buffered.front().first.starts_with(escaped)) {
        cur.buffered.pop_front();
      }
      if (cur.buffered.empty() && cur.next_after < past) {
        cur.next_after = past;
      }
    }
  };
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

  uint32_t count = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ShardCursor * cur, smallest());
    if (cur == nullptr) {
      break;
    }
    std::string name;
    std::string upload_id;
    if (!rados::ParseUploadOmapKey(cur->buffered.front().first, &name, &upload_id)) {
      return Status::Corruption("malformed upload key");
    }
    std::string common;
    if (!options.delimiter.empty()) {
      const size_t pos = name.find(options.delimiter, options.prefix.size());
      if (pos != std::string::npos) {
        common = name.substr(0, pos + options.delimiter.size());
      }
    }
    if (!common.empty() && km.starts_with(common)) {
      skip_prefix(common);  // returned on an earlier page
      continue;
    }
    if (count == options.max_uploads) {
      result.truncated = true;
      break;
    }
    ++count;
    if (!common.empty()) {
      result.common_prefixes.push_back(common);
      result.next_key_marker = common;
      result.next_upload_id_marker.clear();
      skip_prefix(common);
      continue;
    }
    OC_ASSIGN_OR_RETURN(UploadRecord record, DecodeUploadRecord(cur->buffered.front().second));
    result.next_key_marker = name;
    result.next_upload_id_marker = upload_id;
    result.uploads.push_back(
        UploadInfo{std::move(name), std::move(upload_id), record.initiated_unix_ms});
    cur->buffered.pop_front();
  }
  return result;
}

}  // namespace oc::storage
