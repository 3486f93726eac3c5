#include "s3/http_range.h"

#include <algorithm>
#include <charconv>

namespace oc::gateway {
namespace {

// Digits only, no sign, no spaces, no overflow.
std::optional<uint64_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 20) {
    return std::nullopt;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<HttpRange> ParseRangeHeader(std::string_view header) {
  constexpr std::string_view kUnit = "bytes=";
  if (!header.starts_with(kUnit)) {
    return std::nullopt;
  }
  const std::string_view spec = header.substr(kUnit.size());
  if (spec.find(',') != std::string_view::npos) {
    return std::nullopt;  // several ranges: served whole, as S3 does
  }
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view a = spec.substr(0, dash);
  const std::string_view b = spec.substr(dash + 1);
  HttpRange range;
  if (a.empty()) {
    std::optional<uint64_t> n = Number(b);
    if (!n) {
      return std::nullopt;
    }
    range.suffix = *n;
    return range;
  }
  std::optional<uint64_t> first = Number(a);
  if (!first) {
    return std::nullopt;
  }
  range.first = *first;
  if (!b.empty()) {
    std::optional<uint64_t> last = Number(b);
    if (!last || *last < *first) {
      return std::nullopt;
    }
    range.last = *last;
  }
  return range;
}

ResolvedRange ResolveRange(const HttpRange& range, uint64_t size) {
  if (size == 0) {
    return {};
  }
  if (range.suffix) {
    if (*range.suffix == 0) {
      return {};
    }
    const uint64_t n = std::min(*range.suffix, size);
    return {true, size - n, n};
  }
  if (range.first >= size) {
    return {};
  }
  const uint64_t last = std::min(range.last.value_or(size - 1), size - 1);
  return {true, range.first, last - range.first + 1};
}

}  // namespace oc::gateway
