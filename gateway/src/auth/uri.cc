#include "auth/uri.h"

namespace oc::gateway::auth {
namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

std::string UriEncode(std::string_view in, bool encode_slash) {
  std::string out;
  out.reserve(in.size() + in.size() / 4);
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (c == '/' && !encode_slash)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kUpperHex[c >> 4]);
      out.push_back(kUpperHex[c & 0xf]);
    }
  }
  return out;
}

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) {  // needs two more characters
      return std::nullopt;
    }
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>((hi << 4) | lo));
    i += 2;
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

}  // namespace oc::gateway::auth
