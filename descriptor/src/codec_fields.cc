#include "codec_fields.h"

#include <utility>

namespace oc::descriptor::codec_internal {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

Status Invalid(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(field),
                std::move(message));
}

bool EqualsIgnoreCase(std::string_view input, std::string_view lower) {
  if (input.size() != lower.size()) {
    return false;
  }
  for (size_t i = 0; i < input.size(); ++i) {
    if (Lower(input[i]) != lower[i]) {
      return false;
    }
  }
  return true;
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

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && IsOws(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

std::string EchoName(std::string_view name) {
  std::string out;
  for (const char c : name.substr(0, kMaxEchoedNameChars)) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(b >= 0x21 && b <= 0x7e ? Lower(c) : '?');
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
