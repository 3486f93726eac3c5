#pragma once
// What the cache layer's tests share (cache_store_test.cc, cache_shared_test.cc): the cache
// bucket's shape and capacity, and store-level helpers that read the truth from the store.

#include <chrono>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "kv_test_util.h"

namespace oc::storage::kvtest {

inline constexpr char kPlainBucket[] = "plain-bucket";
// A chunk is L·S = 2 x 4 KiB; a descriptor of 4 chunks is 32 KiB; the cache holds 8 of them.
inline constexpr Shape kShape{4, 2, 4096, StoredLayout::kL2TD};
inline constexpr uint64_t kChunkBytes = 2 * 4096;
inline constexpr uint64_t kCapacity = 256 << 10;
inline constexpr uint64_t kEvictionBatch = 4 * kChunkBytes;
// put_wait where a test expects the PUT refused after it (nothing can be evicted).
inline constexpr std::chrono::milliseconds kRefusalWait{300};

inline StoreOptions CacheStoreOptions(const std::filesystem::path& dir) {
  StoreOptions o = TestStoreOptions(dir);
  o.cache.buckets = {{kBucket, kCapacity}};
  o.cache.eviction_batch_bytes = kEvictionBatch;
  // A PUT that will fit waits for the worker's evictions (RADOS deletes on a loaded machine):
  // a deadline, not a timing. Tests of refusals set kRefusalWait.
  o.cache.put_wait = kWait;
  o.cache.snapshot_interval = std::chrono::hours(1);  // tests persist explicitly
  o.cache.sync_interval = std::chrono::hours(1);      // ...and sync explicitly
  return o;
}

// Stores descriptor `d`'s chunks with bytes from `seed`.
inline Status PutDescriptorInto(Store& store, const Descriptor& d, uint64_t seed) {
  std::vector<std::byte> body;
  for (uint64_t j = 0; j < d.num_chunks(); ++j) {
    const std::vector<std::byte> c = ChunkBytes(seed, j, kShape);
    body.insert(body.end(), c.begin(), c.end());
  }
  MemorySource source(std::move(body), 5000);
  return store.PutChunks(kBucket, d, &source).status();
}

// Objects of `bucket` and their bytes, from the store's own listing.
inline std::pair<uint64_t, uint64_t> ListedIn(Store& store, std::string_view bucket) {
  uint64_t objects = 0;
  uint64_t bytes = 0;
  ListOptions o;
  for (;;) {
    auto page = store.List(bucket, o);
    EXPECT_TRUE(page.has_value()) << page.error();
    if (!page.has_value()) {
      return {};
    }
    for (const ListEntry& e : page->objects) {
      ++objects;
      bytes += e.meta.size;
    }
    if (!page->truncated) {
      return {objects, bytes};
    }
    o.start_after = page->next_start_after;
  }
}

// Which chunks of `d` are present.
inline std::vector<bool> PresentIn(Store& store, const Descriptor& d) {
  std::vector<bool> out;
  for (uint64_t j = 0; j < d.num_chunks(); ++j) {
    out.push_back(store.Head({kBucket, d.ObjectName(j)}).has_value());
  }
  return out;
}

}  // namespace oc::storage::kvtest
