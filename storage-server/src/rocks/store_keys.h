#pragma once
// RocksDB keys of the metadata column families (layout in rocks_store.h). Bucket names
// never contain '/', so "bucket/" prefixes exactly one bucket's keys, and keys sort by
// object name within it; object names never contain NUL, so "name\0upload" sorts by
// (name, upload id). Pure, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/bytes.h"

namespace oc::storage {

inline std::string BucketPrefix(std::string_view bucket) {
  std::string key;
  key.reserve(bucket.size() + 1);
  key.append(bucket);
  key.push_back('/');
  return key;
}

inline std::string ObjectDbKey(std::string_view bucket, std::string_view name) {
  std::string key = BucketPrefix(bucket);
  key.append(name);
  return key;
}

inline std::string UploadDbKey(std::string_view bucket, std::string_view name,
                               std::string_view upload_id) {
  std::string key = ObjectDbKey(bucket, name);
  key.push_back('\0');
  key.append(upload_id);
  return key;
}

// A bucket's lifecycle configuration, in the default column family (beside "next_data_id",
// which no bucket name can collide with: this key has a '/').
inline std::string LifecycleDbKey(std::string_view bucket) {
  std::string key = "lifecycle/";
  key.append(bucket);
  return key;
}

// Upload ids are fixed-length, so (upload id, BE32 part number) sorts by upload then part.
inline std::string PartDbKey(std::string_view upload_id, uint32_t part_number) {
  std::string key(upload_id);
  std::byte be[4];
  PutBigEndian32(part_number, be);
  key.append(reinterpret_cast<const char*>(be), 4);
  return key;
}

// The smallest string greater than every string that starts with `prefix`; empty when
// there is none (the prefix is all 0xff bytes or empty).
inline std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(s.back());
    if (c != 0xff) {
      ++c;
      return s;
    }
    s.pop_back();
  }
  return s;
}

}  // namespace oc::storage
