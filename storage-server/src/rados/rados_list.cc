// RadosStore::List: S3 listing semantics (rocks_list.cc has the same rules) over a bucket's
// index shards, merged in key order by a ShardMerge (rados_shard_merge.h). A common prefix
// is returned once and then skipped on every shard. A listing is consistent per shard page,
// not across the bucket.

#include <string>

#include "rados/rados_shard_merge.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

// A string after every key that starts with `prefix`: keys are at most kMaxKeyBytes bytes,
// so `prefix` + that many 0xff bytes is at least any of them (a C string: no NUL needed).
std::string PastPrefix(std::string_view prefix) {
  std::string s(prefix);
  s.append(kMaxKeyBytes + 1, '\xff');
  return s;
}

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
  rados::ShardMerge merge(*this, bucket, ref, filter, options.max_keys);
  OC_RETURN_IF_ERROR(merge.Start(start));
  // Drops every key under `common` on every shard.
  auto skip_prefix = [&](const std::string& common) {
    const std::string omap_prefix = std::string(rados::kObjectPrefix) + common;
    merge.SkipPrefix(omap_prefix, PastPrefix(omap_prefix));
  };

  const size_t base = std::string_view(rados::kObjectPrefix).size();
  uint32_t count = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(const rados::ShardMerge::Entry* entry, merge.Peek());
    if (entry == nullptr) {
      break;
    }
    const std::string& key = entry->first;
    const std::string_view name = std::string_view(key).substr(base);
    if (!after.empty() && name <= after) {
      merge.Pop();
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
      skip_prefix(common);  // returned on an earlier page
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
      skip_prefix(common);
      continue;
    }
    OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(entry->second));
    result.objects.push_back(ListEntry{std::string(name), std::move(record.meta)});
    result.next_start_after = result.objects.back().name;
    merge.Pop();
  }
  return result;
}

}  // namespace oc::storage
