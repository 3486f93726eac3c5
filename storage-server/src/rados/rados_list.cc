// RadosStore::List and RadosStore::ListMultipartUploads: the S3 rules are
// object/list_walker.h's; here is only the cursor they walk, the k-way merge of a bucket's
// index shards in omap key order (rados_shard_merge.h). Object omap keys are "o/<key>";
// upload omap keys keep the (key, upload id) order (rados_keys.h: the key with 0x01 escaped,
// then 01 01, then the id), so merging the shards in omap key order lists uploads by key, then
// by id, keys holding 0x01 included. A common prefix is skipped on every shard at once. A
// listing is consistent per shard page, not across the bucket.

#include <optional>
#include <string>

#include "object/list_walker.h"
#include "rados/rados_shard_merge.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

class RadosListCursor final : public ListCursor {
 public:
  // `uploads`: the u/ entries (uploads in progress), else the o/ entries (objects). The
  // shards are paged by a share of `max_entries`. `store` and `bucket` outlive the cursor.
  RadosListCursor(RadosStore& store, std::string_view bucket, const RadosStore::BucketRef& ref,
                  bool uploads, uint32_t max_entries)
      : store_(store), bucket_(bucket), ref_(ref), uploads_(uploads), max_entries_(max_entries) {}

  Status Seek(std::string_view prefix, const ListMarker& marker) override {
    std::string filter;
    std::string start;  // omap keys after it; "" for the start of the filter
    if (uploads_) {
      filter = rados::kUploadPrefix + rados::EscapeUploadName(prefix);
      if (!marker.name.empty()) {
        // Without an id, past every upload of the key (0xff sorts after any upload id).
        start = rados::UploadOmapKey(
            marker.name, marker.upload_id.empty() ? std::string_view("\xff") : marker.upload_id);
      }
    } else {
      filter = rados::kObjectPrefix + std::string(prefix);
      if (!marker.name.empty() && marker.name >= prefix) {
        start = rados::kObjectPrefix + std::string(marker.name);
      }
    }
    merge_.emplace(store_, bucket_, ref_, std::move(filter), max_entries_);
    return merge_->Start(start);
  }

  Result<bool> Current(ListItem* item) override {
    OC_ASSIGN_OR_RETURN(const rados::ShardMerge::Entry* entry, merge_->Peek());
    if (entry == nullptr) {
      return false;
    }
    if (uploads_) {
      if (!rados::ParseUploadOmapKey(entry->first, &name_, &upload_id_)) {
        return Status::Corruption("malformed upload key");
      }
      *item = ListItem{name_, upload_id_, entry->second};
    } else {
      const size_t base = std::string_view(rados::kObjectPrefix).size();
      *item = ListItem{std::string_view(entry->first).substr(base), {}, entry->second};
    }
    return true;
  }

  void Next() override { merge_->Pop(); }

  void SkipPrefix(std::string_view name_prefix) override {
    // An omap key after every key under the prefix: keys are at most kMaxKeyBytes bytes
    // (twice that escaped, then 01 01 and the id), so that many 0xff bytes more is past them.
    std::string omap_prefix;
    if (uploads_) {
      omap_prefix = rados::kUploadPrefix + rados::EscapeUploadName(name_prefix);
    } else {
      omap_prefix = rados::kObjectPrefix + std::string(name_prefix);
    }
    std::string past = omap_prefix;
    past.append(uploads_ ? 2 * kMaxKeyBytes + 64 : kMaxKeyBytes + 1, '\xff');
    merge_->SkipPrefix(omap_prefix, past);
  }

 private:
  RadosStore& store_;
  const std::string_view bucket_;
  const RadosStore::BucketRef ref_;
  const bool uploads_;
  const uint32_t max_entries_;
  std::optional<rados::ShardMerge> merge_;
  std::string name_;  // the current upload's key and id, parsed from its omap key
  std::string upload_id_;
};

}  // namespace

Result<ListResult> RadosStore::List(std::string_view bucket, const ListOptions& options) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  if (options.max_keys == 0) {
    // Still an existence check of the bucket's shards.
    std::string state;
    if (rados::GetXattr(io(), rados::IndexOid(ref.id, 0), rados::kStateXattr, &state) == -ENOENT) {
      return ShardGone(bucket);
    }
    return ListResult{};
  }
  RadosListCursor cursor(*this, bucket, ref, /*uploads=*/false, options.max_keys);
  return ListObjects(cursor, options);
}

Result<ListUploadsResult> RadosStore::ListMultipartUploads(std::string_view bucket,
                                                           const ListUploadsOptions& options) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  RadosListCursor cursor(*this, bucket, ref, /*uploads=*/true, options.max_uploads);
  return ListUploads(cursor, options);
}

}  // namespace oc::storage
