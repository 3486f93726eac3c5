#include "oc/common/bytes.h"

#include "oc/common/text.h"

namespace oc {

std::string HexEncode(ByteSpan bytes) {
  std::string out;
  AppendHex(bytes, out);
  return out;
}

void AppendHex(ByteSpan bytes, std::string& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t start = out.size();
  out.resize(start + bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    out[start + 2 * i] = kDigits[b >> 4];
    out[start + 2 * i + 1] = kDigits[b & 0xf];
  }
}

bool HexDecodeTo(std::string_view hex, MutableByteSpan out) {
  if (hex.size() != out.size() * 2) {
    return false;
  }
  int bad = 0;  // OR of every digit value: negative iff any character was not hex
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexDigit(hex[2 * i]);
    const int lo = HexDigit(hex[2 * i + 1]);
    bad |= hi | lo;
    out[i] = static_cast<std::byte>(((hi & 0xf) << 4) | (lo & 0xf));
  }
  return bad >= 0;
}

std::optional<std::vector<std::byte>> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return std::nullopt;
  }
  std::vector<std::byte> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexDigit(hex[2 * i]);
    const int lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    out[i] = static_cast<std::byte>((hi << 4) | lo);
  }
  return out;
}

}  // namespace oc
