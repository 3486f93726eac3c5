#pragma once
// Byte helpers shared by every module: views between text and binary, lowercase hex,
// and fixed-width integer encodings for the wire and disk (big-endian for keys that
// must sort numerically, little-endian where the design says so).
// All functions are pure and thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oc {

using ByteSpan = std::span<const std::byte>;
using MutableByteSpan = std::span<std::byte>;

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::string_view AsText(ByteSpan b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Lowercase hex of `bytes` ("00ff...").
std::string HexEncode(ByteSpan bytes);
// Decodes hex (either case); nullopt on odd length or a non-hex character.
std::optional<std::vector<std::byte>> HexDecode(std::string_view hex);
// Appends the lowercase hex of `bytes` to `out` (no temporary string).
void AppendHex(ByteSpan bytes, std::string& out);
// Decodes exactly 2 * out.size() hex characters (either case) into `out`, allocating
// nothing; false (and `out` unspecified) on a length mismatch or a non-hex character.
bool HexDecodeTo(std::string_view hex, MutableByteSpan out);

inline void PutBigEndian64(uint64_t v, std::byte* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
inline uint64_t GetBigEndian64(const std::byte* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = (v << 8) | static_cast<uint64_t>(in[i]);
  }
  return v;
}
inline void PutBigEndian32(uint32_t v, std::byte* out) {
  for (int i = 3; i >= 0; --i) {
    out[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
inline uint32_t GetBigEndian32(const std::byte* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v = (v << 8) | static_cast<uint32_t>(in[i]);
  }
  return v;
}
inline void PutLittleEndian32(uint32_t v, std::byte* out) {
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
inline void PutLittleEndian64(uint64_t v, std::byte* out) {
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
inline uint64_t GetLittleEndian64(const std::byte* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | static_cast<uint64_t>(in[i]);
  }
  return v;
}
inline uint32_t GetLittleEndian32(const std::byte* in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<uint32_t>(in[i]);
  }
  return v;
}

}  // namespace oc
