#include "codec_fields.h"

#include <utility>

namespace oc::descriptor::codec_internal {

Status Invalid(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(field),
                std::move(message));
}

bool HasOcPrefix(std::string_view name) {
  return name.size() >= kPrefix.size() && EqualsIgnoreCase(name.substr(0, kPrefix.size()), kPrefix);
}

std::optional<Field> Lookup(std::string_view name) {
  for (size_t i = 0; i < kFieldNames.size(); ++i) {
    if (EqualsIgnoreCase(name, kFieldNames[i])) {
      return static_cast<Field>(i);
    }
  }
  return std::nullopt;
}

std::string EchoName(std::string_view name) {
  std::string out;
  for (const char c : name.substr(0, kMaxEchoedNameChars)) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(b >= 0x21 && b <= 0x7e ? AsciiLower(c) : '?');
  }
  return out;
}

uint64_t CountItems(std::string_view list) {
  uint64_t n = 0;
  (void)ForEachItem(list, [&n](std::string_view) {
    ++n;
    return Status::Ok();
  });
  return n;
}

}  // namespace oc::descriptor::codec_internal
