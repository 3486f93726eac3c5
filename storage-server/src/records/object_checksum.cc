#include "records/object_checksum.h"

namespace oc::storage {

ObjectChecksum ChecksumOfHeaders(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) {
    if (name.starts_with(kChecksumHeaderPrefix)) {
      return ObjectChecksum{name, value};
    }
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> CopyHeaders(
    const ObjectMeta& source,
    const std::vector<std::pair<std::string, std::string>>& replace_headers) {
  std::vector<std::pair<std::string, std::string>> out = replace_headers;
  if (ChecksumOfHeaders(replace_headers).empty()) {
    ObjectChecksum kept = ChecksumOfHeaders(source.headers);
    if (!kept.empty()) {
      out.emplace_back(std::move(kept.header), std::move(kept.value));
    }
  }
  return out;
}

}  // namespace oc::storage
