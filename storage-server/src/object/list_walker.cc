#include "object/list_walker.h"

#include <string>

#include "records/meta_codec.h"

namespace oc::storage {
namespace {

// What one listing walks: the S3 options both listings share.
struct Walk {
  std::string_view prefix;
  std::string_view delimiter;
  ListMarker marker;
  uint32_t max_entries = 0;
};

// The common prefix `name` falls under: up to and including the first delimiter after the
// prefix; empty if none.
std::string_view CommonPrefixOf(std::string_view name, const Walk& walk) {
  if (walk.delimiter.empty()) {
    return {};
  }
  const size_t pos = name.find(walk.delimiter, walk.prefix.size());
  if (pos == std::string_view::npos) {
    return {};
  }
  return name.substr(0, pos + walk.delimiter.size());
}

// The walk itself: calls `on_entry(item)` for each entry listed and `on_prefix(common)` for
// each common prefix, in order; true if more entries follow the last one listed.
template <typename OnEntry, typename OnPrefix>
Result<bool> WalkListing(ListCursor& cursor, const Walk& walk, OnEntry on_entry,
                         OnPrefix on_prefix) {
  if (walk.max_entries == 0) {
    return false;
  }
  OC_RETURN_IF_ERROR(cursor.Seek(walk.prefix, walk.marker));
  uint32_t count = 0;
  ListItem item;
  for (;;) {
    OC_ASSIGN_OR_RETURN(const bool valid, cursor.Current(&item));
    if (!valid) {
      return false;
    }
    if (AtOrBefore(item, walk.marker)) {
      cursor.Next();
      continue;
    }
    const std::string common(CommonPrefixOf(item.name, walk));
    if (!common.empty() && walk.marker.name.starts_with(common)) {
      cursor.SkipPrefix(common);  // returned on an earlier page
      continue;
    }
    if (count == walk.max_entries) {
      return true;
    }
    ++count;
    if (!common.empty()) {
      on_prefix(common);
      cursor.SkipPrefix(common);
      continue;
    }
    OC_RETURN_IF_ERROR(on_entry(item));
    cursor.Next();
  }
}

}  // namespace

bool AtOrBefore(const ListItem& item, const ListMarker& marker) {
  if (marker.name.empty() || item.name > marker.name) {
    return false;
  }
  if (item.name < marker.name) {
    return true;
  }
  return marker.upload_id.empty() || item.upload_id <= marker.upload_id;
}

Result<ListResult> ListObjects(ListCursor& cursor, const ListOptions& options) {
  ListResult result;
  const Walk walk{options.prefix, options.delimiter, ListMarker{options.start_after, {}},
                  options.max_keys};
  OC_ASSIGN_OR_RETURN(
      result.truncated,
      WalkListing(
          cursor, walk,
          [&](const ListItem& item) -> Status {
            OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(item.value));
            result.objects.push_back(ListEntry{std::string(item.name), std::move(record.meta)});
            result.next_start_after = result.objects.back().name;
            return Status::Ok();
          },
          [&](const std::string& common) {
            result.common_prefixes.push_back(common);
            result.next_start_after = common;
          }));
  return result;
}

Result<ListUploadsResult> ListUploads(ListCursor& cursor, const ListUploadsOptions& options) {
  ListUploadsResult result;
  ListMarker marker;
  if (!options.key_marker.empty()) {
    marker = ListMarker{options.key_marker, options.upload_id_marker};
  }
  const Walk walk{options.prefix, options.delimiter, marker, options.max_uploads};
  OC_ASSIGN_OR_RETURN(
      result.truncated,
      WalkListing(
          cursor, walk,
          [&](const ListItem& item) -> Status {
            OC_ASSIGN_OR_RETURN(UploadRecord record, DecodeUploadRecord(item.value));
            result.next_key_marker = item.name;
            result.next_upload_id_marker = item.upload_id;
            result.uploads.push_back(UploadInfo{std::string(item.name), std::string(item.upload_id),
                                                record.initiated_unix_ms});
            return Status::Ok();
          },
          [&](const std::string& common) {
            result.common_prefixes.push_back(common);
            result.next_key_marker = common;
            result.next_upload_id_marker.clear();
          }));
  return result;
}

}  // namespace oc::storage
