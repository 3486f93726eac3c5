// Listing of objects and multipart uploads (S3 ListObjectsV2 / ListMultipartUploads
// semantics): keys in byte order after a marker, grouped by a delimiter into common
// prefixes, each common prefix counted once against the page size. Everything returned
// sorts after the marker, so a common prefix already returned (the marker starts with it)
// is skipped whole by seeking past every key that carries it.

#include <rocksdb/snapshot.h>

#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {

Result<ListResult> RocksStore::List(std::string_view bucket, const ListOptions& options) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  ListResult result;
  if (options.max_keys == 0) {
    return result;
  }
  const std::string base = BucketPrefix(bucket);
  const std::string full_prefix = base + options.prefix;
  const std::string upper = PrefixSuccessor(full_prefix);  // never empty: base ends in '/'
  const rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, objects_cf_));
  const std::string& after = options.start_after;
  if (after > options.prefix) {
    it->Seek(base + after);
  } else {
    it->Seek(full_prefix);
  }
  uint32_t count = 0;
  while (it->Valid()) {
    std::string_view name = it->key().ToStringView().substr(base.size());
    if (!after.empty() && name <= after) {
      it->Next();
      continue;
    }
    std::string_view common;
    if (!options.delimiter.empty()) {
      const size_t pos = name.find(options.delimiter, options.prefix.size());
      if (pos != std::string_view::npos) {
        common = name.substr(0, pos + options.delimiter.size());
      }
    }
    if (!common.empty() && after.starts_with(common)) {
      it->Seek(PrefixSuccessor(base + std::string(common)));  // returned on an earlier page
      continue;
    }
    if (count == options.max_keys) {
      result.truncated = true;
      break;
    }
    ++count;
    if (!common.empty()) {
      result.common_prefixes.emplace_back(common);
      result.next_start_after = result.common_prefixes.back();
      it->Seek(PrefixSuccessor(base + result.common_prefixes.back()));
      continue;
    }
    OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(it->value().ToStringView()));
    result.objects.push_back(ListEntry{std::string(name), std::move(record.meta)});
    result.next_start_after = result.objects.back().name;
    it->Next();
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return result;
}

Result<ListUploadsResult> RocksStore::ListMultipartUploads(std::string_view bucket,
                                                           const ListUploadsOptions& options) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  ListUploadsResult result;
  if (options.max_uploads == 0) {
    return result;
  }
  const std::string base = BucketPrefix(bucket);
  const std::string full_prefix = base + options.prefix;
  const std::string upper = PrefixSuccessor(full_prefix);
  const rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, uploads_cf_));

  // The marker as an encoded key: everything at or before it is skipped. With only a key
  // marker, every upload of that key is skipped too ("key\x01" sorts after "key\0<id>").
  const std::string& km = options.key_marker;
  std::string marker;
  if (!km.empty()) {
    marker = options.upload_id_marker.empty() ? km + '\x01' : km + '\0' + options.upload_id_marker;
  }
  if (marker > options.prefix) {
    it->Seek(base + marker);
  } else {
    it->Seek(full_prefix);
  }
  uint32_t count = 0;
  while (it->Valid()) {
    std::string_view rest = it->key().ToStringView().substr(base.size());
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) {
      return Status::Corruption("malformed upload key");
    }
    if (!marker.empty() && rest <= marker && options.upload_id_marker.size() > 0) {
      it->Next();
      continue;
    }
    const std::string_view name = rest.substr(0, nul);
    const std::string_view upload_id = rest.substr(nul + 1);
    std::string_view common;
    if (!options.delimiter.empty()) {
      const size_t pos = name.find(options.delimiter, options.prefix.size());
      if (pos != std::string_view::npos) {
        common = name.substr(0, pos + options.delimiter.size());
      }
    }
    if (!common.empty() && km.starts_with(common)) {
      it->Seek(PrefixSuccessor(base + std::string(common)));
      continue;
    }
    if (count == options.max_uploads) {
      result.truncated = true;
      break;
    }
    ++count;
    if (!common.empty()) {
      result.common_prefixes.emplace_back(common);
      result.next_key_marker = result.common_prefixes.back();
      result.next_upload_id_marker.clear();
      it->Seek(PrefixSuccessor(base + result.common_prefixes.back()));
      continue;
    }
    OC_ASSIGN_OR_RETURN(UploadRecord record, DecodeUploadRecord(it->value().ToStringView()));
    result.uploads.push_back(
        UploadInfo{std::string(name), std::string(upload_id), record.initiated_unix_ms});
    result.next_key_marker = name;
    result.next_upload_id_marker = upload_id;
    it->Next();
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return result;
}

}  // namespace oc::storage
