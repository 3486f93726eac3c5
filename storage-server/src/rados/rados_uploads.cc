// RadosStore::ListMultipartUploads: S3 listing of uploads in progress with the rules of
// RocksStore (rocks_list.cc), merged over the bucket's index shards by a ShardMerge
// (rados_shard_merge.h) like RadosStore::List (rados_list.cc). Upload omap keys keep the
// (key, upload id) order (rados_keys.h: the key with 0x01 escaped, then 01 01, then the id),
// so merging the shards in omap key order lists uploads by key, then by id, keys holding 0x01
// included. A listing is consistent per shard page, not across the bucket.

#include <string>

#include "rados/rados_shard_merge.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

// An omap key after every upload key whose escaped name starts with `escaped_prefix`: an
// escaped name is at most twice kMaxKeyBytes, then come 01 01 and the id.
std::string PastPrefix(std::string_view escaped_prefix) {
  std::string s(rados::kUploadPrefix);
  s.append(escaped_prefix);
  s.append(2 * kMaxKeyBytes + 64, '\xff');
  return s;
}

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
  rados::ShardMerge merge(*this, bucket, ref, filter, options.max_uploads);
  OC_RETURN_IF_ERROR(merge.Start(start));
  // Drops every upload whose key starts with `common` on every shard.
  auto skip_prefix = [&](std::string_view common) {
    const std::string escaped = rados::EscapeUploadName(common);
    merge.SkipPrefix(rados::kUploadPrefix + escaped, PastPrefix(escaped));
  };

  uint32_t count = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(const rados::ShardMerge::Entry* entry, merge.Peek());
    if (entry == nullptr) {
      break;
    }
    std::string name;
    std::string upload_id;
    if (!rados::ParseUploadOmapKey(entry->first, &name, &upload_id)) {
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
    OC_ASSIGN_OR_RETURN(UploadRecord record, DecodeUploadRecord(entry->second));
    result.next_key_marker = name;
    result.next_upload_id_marker = upload_id;
    result.uploads.push_back(
        UploadInfo{std::move(name), std::move(upload_id), record.initiated_unix_ms});
    merge.Pop();
  }
  return result;
}

}  // namespace oc::storage
