#pragma once
// Helpers shared by the storage tests: a store in a temp dir and byte round trips.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "oc/common/bytes.h"
#include "oc/storage/local_store.h"
#include "oc/storage/store.h"
#include "oc/testutil/testutil.h"

namespace oc::storage::test {

// Small extents and flush batches so that modest objects exercise multi-extent reads and
// streamed (unsynced, pending) flushes.
inline StoreOptions SmallOptions(const std::filesystem::path& dir, ExtentLayout layout) {
  StoreOptions o;
  o.data_dir = dir.string();
  o.default_extent_bytes = 4096;
  o.write_batch_bytes = 16384;
  o.block_cache_bytes = 64 << 20;
  o.read_threads = 2;
  o.extent_layout = layout;
  return o;
}

inline std::string Bytes(uint64_t seed, uint64_t size) {
  std::vector<std::byte> b = testutil::PatternBytes(seed, size);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline Result<ObjectMeta> PutString(Store& store, const ObjectKey& key, std::string_view data,
                                    PutOptions options = {}, size_t piece = 3000) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w, store.Put(key, options));
  for (size_t pos = 0; pos < data.size(); pos += piece) {
    OC_RETURN_IF_ERROR(w->Append(AsBytes(data.substr(pos, piece))));
  }
  return w->Commit();
}

inline Result<std::string> ReadAll(ObjectReader& reader, size_t piece = 5000) {
  std::string out;
  std::string buf(piece, '\0');
  for (;;) {
    OC_ASSIGN_OR_RETURN(uint64_t n, reader.Read(MutableByteSpan(
                                        reinterpret_cast<std::byte*>(buf.data()), buf.size())));
    if (n == 0) {
      return out;
    }
    out.append(buf.data(), n);
  }
}

inline Result<std::string> GetString(Store& store, const ObjectKey& key,
                                     ByteRange range = ByteRange::All(), size_t piece = 5000) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> r, store.Get(key, range));
  return ReadAll(*r, piece);
}

inline std::string LayoutName(const ::testing::TestParamInfo<ExtentLayout>& info) {
  return info.param == ExtentLayout::kSstBlocks ? "Sst" : "Blob";
}

}  // namespace oc::storage::test
