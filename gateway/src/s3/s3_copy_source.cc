#include "s3/s3_copy_source.h"

#include <charconv>

#include "oc/common/text.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kField = "x-amz-copy-source";

}  // namespace

Result<CopySourceName> ParseCopySourceHeader(std::string_view source) {
  constexpr std::string_view kVersion = "?versionId=";
  const size_t version = source.find(kVersion);
  if (version != std::string_view::npos) {
    if (source.substr(version + kVersion.size()) != "null") {
      return Status(Code::kUnimplemented, Subject::kNone, std::string(kField),
                    "Object versions are not supported.");
    }
    source = source.substr(0, version);
  }
  std::optional<std::string> decoded = PercentDecode(source);
  std::string_view path = decoded ? std::string_view(*decoded) : std::string_view();
  if (path.starts_with('/')) {
    path.remove_prefix(1);
  }
  const size_t slash = path.find('/');
  if (!decoded || slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) {
    return Status::InvalidArgument(std::string(kField),
                                   "Copy Source must mention the source bucket and key: "
                                   "sourcebucket/sourcekey.");
  }
  return CopySourceName{std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

std::optional<CopySourceRange> ParseCopySourceRange(std::string_view v) {
  constexpr std::string_view kPrefix = "bytes=";
  if (!v.starts_with(kPrefix)) {
    return std::nullopt;
  }
  v.remove_prefix(kPrefix.size());
  const size_t dash = v.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == v.size()) {
    return std::nullopt;
  }
  auto number = [](std::string_view s, uint64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  CopySourceRange r;
  if (!number(v.substr(0, dash), &r.first) || !number(v.substr(dash + 1), &r.last) ||
      r.last < r.first) {
    return std::nullopt;
  }
  return r;
}

}  // namespace oc::gateway
