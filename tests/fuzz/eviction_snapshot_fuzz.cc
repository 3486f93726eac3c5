// The cache bucket's eviction snapshot as read back from the store
// (storage-server/src/cache/eviction_index.h): DecodeSnapshot must refuse or decode without
// crashing; decoded rows must survive an encode/decode round trip; and a Rebuild from them (the
// listing made of the same rows, so hostile links, cycles and missing predecessors all reach
// the forest) must account every listed byte and give them all back through PickVictims.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "cache/eviction_index.h"

namespace cache = oc::storage::cache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  oc::Result<std::vector<cache::SnapshotRow>> rows = cache::DecodeSnapshot(bytes);
  if (!rows.has_value()) {
    return 0;
  }
  oc::Result<std::vector<cache::SnapshotRow>> again =
      cache::DecodeSnapshot(cache::EncodeSnapshot(*rows));
  if (!again.has_value() || again->size() != rows->size()) {
    std::abort();
  }
  std::vector<cache::ListedObject> listing;
  for (const cache::SnapshotRow& row : *rows) {
    listing.push_back({row.key, row.size % (uint64_t{1} << 40)});  // sums cannot wrap
  }
  cache::EvictionOptions options;
  options.capacity_bytes = 1;
  cache::EvictionIndex index(options);
  index.Rebuild(listing, *rows);
  const uint64_t used = index.Stats().used_bytes;
  uint64_t freed = 0;
  for (const cache::Victim& v : index.PickVictims(UINT64_MAX)) {
    freed += v.size;
  }
  const cache::EvictionStats after = index.Stats();
  if (freed != used || after.used_bytes != 0 || after.objects != 0 || after.ghosts != 0 ||
      after.dead_bytes != 0) {
    std::abort();
  }
  return 0;
}
