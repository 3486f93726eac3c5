#include "oc/common/headers.h"

#include "oc/common/text.h"

namespace oc {

std::vector<HeaderField> HeaderViews(const HeaderList& headers) {
  std::vector<HeaderField> out;
  out.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    out.emplace_back(name, value);
  }
  return out;
}

std::optional<std::string_view> FindHeader(std::span<const HeaderField> headers,
                                           std::string_view name) {
  for (const HeaderField& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) {
      return h.value;
    }
  }
  return std::nullopt;
}

}  // namespace oc
