#include "oc/sigv4/uri.h"

#include <optional>

#include "oc/common/text.h"

namespace oc::sigv4 {
namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

std::string UriEncode(std::string_view in, bool encode_slash) {
  std::string out;
  out.reserve(in.size() + in.size() / 4);
  size_t i = 0;
  while (i < in.size()) {
    // Copy the longest run that needs no encoding in one append.
    size_t run = i;
    while (run < in.size()) {
      const auto c = static_cast<unsigned char>(in[run]);
      if (!IsUnreserved(c) && !(c == '/' && !encode_slash)) {
        break;
      }
      ++run;
    }
    out.append(in.data() + i, run - i);
    if (run == in.size()) {
      break;
    }
    const auto c = static_cast<unsigned char>(in[run]);
    const char escaped[3] = {'%', kUpperHex[c >> 4], kUpperHex[c & 0xf]};
    out.append(escaped, 3);
    i = run + 1;
  }
  return out;
}

Result<ParsedTarget> ParseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return Status::InvalidArgument("request-target", "must start with '/'");
  }
  ParsedTarget out;
  const size_t q = target.find('?');
  out.raw_path = target.substr(0, q);
  out.raw_query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  std::optional<std::string> path = PercentDecode(out.raw_path);
  if (!path) {
    return Status::InvalidArgument("request-target", "malformed percent-encoding in path");
  }
  out.path = std::move(*path);
  std::string_view rest = out.raw_query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) {
      continue;  // "a&&b" or a trailing '&'
    }
    const size_t eq = pair.find('=');
    std::optional<std::string> name = PercentDecode(pair.substr(0, eq));
    std::optional<std::string> value =
        PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name || !value) {
      return Status::InvalidArgument("request-target", "malformed percent-encoding in query");
    }
    out.query.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

}  // namespace oc::sigv4
