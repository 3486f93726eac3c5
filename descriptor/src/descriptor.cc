#include "oc/descriptor/descriptor.h"

#include "oc/common/check.h"

namespace oc::descriptor {

uint64_t Descriptor::num_chunks() const {
  if (const auto* compact_keys = std::get_if<CompactKeys>(&keys)) {
    return compact_keys->hashes.size();
  }
  return std::get<ExplicitKeys>(keys).names.size();
}

std::string Descriptor::ObjectName(uint64_t j) const {
  if (const auto* compact_keys = std::get_if<CompactKeys>(&keys)) {
    OC_CHECK(j < compact_keys->hashes.size());
    return ChunkObjectName(compact_keys->prefix, compact_keys->hashes[j]);
  }
  const auto& names = std::get<ExplicitKeys>(keys).names;
  OC_CHECK(j < names.size());
  return names[j];
}

}  // namespace oc::descriptor
