// Counting a quota bucket's usage from what the store lists (quota_internal.h): at open, and on
// RADOS every recount_interval. The listing is the truth the tests compare with.
#include <utility>

#include "quota/quota_internal.h"

namespace oc::storage::quota {
namespace {

constexpr uint32_t kPage = 1000;  // S3's page size; the stores' own bound per call

}  // namespace

Result<std::map<uint32_t, uint64_t>> ListAllParts(Store& store, const ObjectKey& key,
                                                  std::string_view upload_id) {
  std::map<uint32_t, uint64_t> parts;
  uint32_t marker = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ListPartsResult page, store.ListParts(key, upload_id, marker, kPage));
    for (const PartInfo& p : page.parts) {
      parts[p.part_number] = p.size;
      marker = p.part_number;
    }
    if (!page.truncated || page.parts.empty()) {
      return parts;
    }
  }
}

Result<Usage> CountBucket(Store& store, std::string_view bucket) {
  Usage usage;
  ListOptions options;
  options.max_keys = kPage;
  for (;;) {
    Result<ListResult> page = store.List(bucket, options);
    if (!page.has_value()) {
      if (page.error().code() == Code::kNotFound && page.error().subject() == Subject::kBucket) {
        return Usage{};  // not created yet: it holds nothing
      }
      return std::move(page).error();
    }
    for (const ListEntry& e : page->objects) {
      usage.bytes += e.meta.size;
      ++usage.objects;
    }
    if (!page->truncated || page->next_start_after.empty()) {
      break;
    }
    options.start_after = page->next_start_after;
  }
  ListUploadsOptions uploads;
  uploads.max_uploads = kPage;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ListUploadsResult page, store.ListMultipartUploads(bucket, uploads));
    for (const UploadInfo& u : page.uploads) {
      Result<std::map<uint32_t, uint64_t>> parts =
          ListAllParts(store, ObjectKey{std::string(bucket), u.key}, u.upload_id);
      if (!parts.has_value()) {
        if (parts.error().code() == Code::kNotFound) {
          continue;  // completed or aborted since it was listed
        }
        return std::move(parts).error();
      }
      for (const auto& [number, size] : *parts) {
        usage.upload_bytes += size;
      }
    }
    if (!page.truncated) {
      break;
    }
    uploads.key_marker = page.next_key_marker;
    uploads.upload_id_marker = page.next_upload_id_marker;
  }
  return usage;
}

}  // namespace oc::storage::quota
