#pragma once
// The S3 listing rules, once for every backend and for both listings (Store::List, S3
// ListObjects/ListObjectsV2, and Store::ListMultipartUploads): entries after a marker in
// (key, upload id) byte order, limited to a prefix, grouped by a delimiter into common
// prefixes, each common prefix counted once against the page size, truncation and the next
// marker. A common prefix already returned (the marker's key starts with it) is skipped whole.
//
// A backend provides only an ordered ListCursor over its records (rocks_list.cc: a RocksDB
// iterator; rados_list.cc: the k-way merge of the index shards, rados_shard_merge.h) and calls
// ListObjects or ListUploads. Pure functions over the cursor: thread-safe as far as the cursor
// is; one listing call owns its cursor.

#include <cstdint>
#include <string_view>

#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/types.h"

namespace oc::storage {

// One entry as a cursor yields it. The views stay valid until the cursor moves.
struct ListItem {
  std::string_view name;       // the object key
  std::string_view upload_id;  // an upload listing's upload id; empty in an object listing
  std::string_view value;      // the encoded record: ObjectRecord, or UploadRecord for uploads
};

// Where a listing resumes: entries at or before it are not listed. Empty `name`: from the
// start. Empty `upload_id`: past every entry of `name` (always so in an object listing).
struct ListMarker {
  std::string_view name;
  std::string_view upload_id;
};

// true if `item` sorts at or before `marker` (so it is not listed).
bool AtOrBefore(const ListItem& item, const ListMarker& marker);

// A backend's records of one bucket (objects, or uploads in progress) in (name, upload id)
// byte order. Not thread-safe.
class ListCursor {
 public:
  virtual ~ListCursor() = default;
  // Positions at the first entry whose name starts with `prefix` and that sorts after
  // `marker`. It may stop earlier than the first entry after the marker (the walker skips
  // entries at or before it), never later; it never yields a name without the prefix.
  virtual Status Seek(std::string_view prefix, const ListMarker& marker) = 0;
  // The entry at the cursor in `*item`, or false past the last one. The backend's read error
  // (kCorruption for a malformed key).
  virtual Result<bool> Current(ListItem* item) = 0;
  // Moves to the next entry. REQUIRES: Current returned true since the last move.
  virtual void Next() = 0;
  // Moves past every entry whose name starts with `name_prefix`, a prefix of the name of the
  // entry at the cursor. `name_prefix` may not view the cursor's own memory.
  virtual void SkipPrefix(std::string_view name_prefix) = 0;
};

// Store::List over `cursor` (store.h): objects and common prefixes after
// options.start_after, at most options.max_keys of them; truncated when more follow;
// next_start_after the last one returned. Values decode as ObjectRecord (kCorruption if not).
// max_keys 0 lists nothing and does not touch the cursor: a backend checks its bucket first.
Result<ListResult> ListObjects(ListCursor& cursor, const ListOptions& options);

// Store::ListMultipartUploads over `cursor`: the same rules with the (key_marker,
// upload_id_marker) marker (no upload id marker: every upload of key_marker is skipped;
// no key marker: the upload id marker is ignored); next_key_marker and
// next_upload_id_marker ("" after a common prefix) name the last one returned. Values decode
// as UploadRecord.
Result<ListUploadsResult> ListUploads(ListCursor& cursor, const ListUploadsOptions& options);

}  // namespace oc::storage
