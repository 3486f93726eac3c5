#include "oc/descriptor/data_plane_wire.h"

#include <cstring>

#include <fmt/core.h>

namespace oc::descriptor {
namespace {

// True if `header` is `size` bytes long and starts with `magic` and this version.
bool HasFrame(ByteSpan header, size_t size, const std::array<std::byte, 4>& magic) {
  return header.size() == size && std::memcmp(header.data(), magic.data(), magic.size()) == 0 &&
         static_cast<uint8_t>(header[4]) == kDataPlaneWireVersion;
}

// Magic and version at the start of an encoded message; the reserved bytes stay 0.
template <size_t N>
void PutFrame(std::array<std::byte, N>& out, const std::array<std::byte, 4>& magic) {
  std::memcpy(out.data(), magic.data(), magic.size());
  out[4] = static_cast<std::byte>(kDataPlaneWireVersion);
}

}  // namespace

std::array<std::byte, kNotificationBytes> EncodeNotification(const Notification& n) {
  std::array<std::byte, kNotificationBytes> out{};
  PutFrame(out, kNotificationMagic);
  out[5] = static_cast<std::byte>(n.kind);
  out[6] = static_cast<std::byte>(n.code);
  out[7] = std::byte{0};
  PutLittleEndian64(n.request_key, out.data() + 8);
  PutLittleEndian32(n.layer, out.data() + 16);
  PutLittleEndian32(n.message_bytes, out.data() + 20);
  return out;
}

Result<Notification> DecodeNotification(ByteSpan header) {
  if (header.size() != kNotificationBytes) {
    return Status::Corruption(fmt::format("data-plane header of {} bytes", header.size()));
  }
  if (std::memcmp(header.data(), kNotificationMagic.data(), kNotificationMagic.size()) != 0) {
    return Status::Corruption("data-plane header: bad magic");
  }
  if (static_cast<uint8_t>(header[4]) != kDataPlaneWireVersion) {
    return Status::Corruption("data-plane header: unknown version");
  }
  Notification n;
  const auto kind = static_cast<uint8_t>(header[5]);
  if (kind < static_cast<uint8_t>(NotificationKind::kLayerReady) ||
      kind > static_cast<uint8_t>(NotificationKind::kError)) {
    return Status::Corruption("data-plane header: unknown kind");
  }
  n.kind = static_cast<NotificationKind>(kind);
  const auto code = static_cast<uint8_t>(header[6]);
  if (code > static_cast<uint8_t>(Code::kInternal) ||
      (n.kind == NotificationKind::kError) != (code != 0)) {
    return Status::Corruption("data-plane header: bad status code");
  }
  n.code = static_cast<Code>(code);
  n.request_key = GetLittleEndian64(header.data() + 8);
  n.layer = GetLittleEndian32(header.data() + 16);
  n.message_bytes = GetLittleEndian32(header.data() + 20);
  if (n.message_bytes > kMaxErrorMessageBytes ||
      (n.kind != NotificationKind::kError && n.message_bytes != 0)) {
    return Status::Corruption("data-plane header: bad message length");
  }
  return n;
}

std::array<std::byte, kDataHeaderBytes> EncodeDataHeader(const DataHeader& h) {
  std::array<std::byte, kDataHeaderBytes> out{};
  PutFrame(out, kDataMagic);
  PutLittleEndian64(h.request_key, out.data() + 8);
  PutLittleEndian64(h.offset, out.data() + 16);
  return out;
}

Result<DataHeader> DecodeDataHeader(ByteSpan header) {
  if (!HasFrame(header, kDataHeaderBytes, kDataMagic)) {
    return Status::Corruption("data-plane data header: bad size, magic or version");
  }
  return DataHeader{GetLittleEndian64(header.data() + 8), GetLittleEndian64(header.data() + 16)};
}

std::array<std::byte, kHelloBytes> EncodeHello(const HelloSecret& secret) {
  std::array<std::byte, kHelloBytes> out{};
  PutFrame(out, kHelloMagic);
  std::memcpy(out.data() + 8, secret.data(), secret.size());
  return out;
}

Result<HelloSecret> DecodeHello(ByteSpan header) {
  if (!HasFrame(header, kHelloBytes, kHelloMagic)) {
    return Status::Corruption("data-plane hello: bad size, magic or version");
  }
  HelloSecret secret;
  std::memcpy(secret.data(), header.data() + 8, secret.size());
  return secret;
}

std::array<std::byte, kWelcomeBytes> EncodeWelcome(const ConnectionId& id) {
  std::array<std::byte, kWelcomeBytes> out{};
  PutFrame(out, kWelcomeMagic);
  std::memcpy(out.data() + 8, id.data(), id.size());
  return out;
}

Result<ConnectionId> DecodeWelcome(ByteSpan header) {
  if (!HasFrame(header, kWelcomeBytes, kWelcomeMagic)) {
    return Status::Corruption("data-plane welcome: bad size, magic or version");
  }
  ConnectionId id;
  std::memcpy(id.data(), header.data() + 8, id.size());
  return id;
}

}  // namespace oc::descriptor
