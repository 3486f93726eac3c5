// What a connection needs before its first call (wire.h): the "host:port" of an endpoint and
// the constant-time comparison of the handshake's shared secret.
#include <algorithm>

#include <fmt/core.h>

#include "rpc/wire.h"

namespace oc::storage::rpc {

Result<HostPort> ParseHostPort(std::string_view text, std::string_view field) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::InvalidArgument(std::string(field), fmt::format("'{}' is not host:port", text));
  }
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return Status::InvalidArgument(std::string(field),
                                     fmt::format("'{}' is not [address]:port", text));
    }
    host = host.substr(1, host.size() - 2);
  }
  uint64_t port = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      return Status::InvalidArgument(std::string(field), fmt::format("'{}' has a bad port", text));
    }
    port = port * 10 + static_cast<uint64_t>(c - '0');
  }
  if (port > 65535) {
    return Status::InvalidArgument(std::string(field), fmt::format("'{}' has a bad port", text));
  }
  return HostPort{std::string(host), static_cast<uint16_t>(port)};
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of the longer input is visited and differences are OR-ed together, so the
  // time depends on the lengths only (which a shared secret's length does not hide anyway).
  const size_t n = std::max(a.size(), b.size());
  uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff |= static_cast<uint8_t>(x ^ y);
  }
  return diff == 0;
}

}  // namespace oc::storage::rpc
