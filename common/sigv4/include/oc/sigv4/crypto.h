#pragma once
// SHA-256, HMAC-SHA256 and constant-time comparison over OpenSSL (kept out of this header),
// for SigV4 signing and verification and for the gateway's payload checks
// (x-amz-content-sha256, aws-chunked). Hex encoding is oc::HexEncode (oc/common/bytes.h).
// Part of oc_sigv4, which the gateway's verifier and the client both link.
// Thread safety: the free functions are pure; a Sha256 object is used by one thread at a time.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "oc/common/bytes.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace oc::sigv4 {

inline constexpr size_t kSha256Bytes = 32;
using Sha256Digest = std::array<std::byte, kSha256Bytes>;

// Lowercase hex SHA-256 of the empty string: the hashed payload of a body-less request
// and the fixed line of every aws-chunked chunk string-to-sign.
inline constexpr std::string_view kEmptySha256Hex =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Incremental SHA-256 (EVP). Update any number of times, then Finish once; Reset makes it
// reusable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;

  void Update(ByteSpan data);
  void Update(std::string_view data) { Update(AsBytes(data)); }
  // Returns the digest of everything updated since construction or Reset.
  // REQUIRES: not called twice without a Reset in between.
  Sha256Digest Finish();
  void Reset();

 private:
  evp_md_ctx_st* ctx_ = nullptr;
};

Sha256Digest Sha256Of(ByteSpan data);
inline Sha256Digest Sha256Of(std::string_view data) { return Sha256Of(AsBytes(data)); }
// Lowercase hex of SHA-256(data).
std::string Sha256Hex(std::string_view data);

Sha256Digest HmacSha256(ByteSpan key, std::string_view data);
inline Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  return HmacSha256(AsBytes(key), data);
}

inline std::string DigestHex(const Sha256Digest& d) { return HexEncode(ByteSpan(d)); }

// True when a and b are equal; the time taken depends only on the lengths, so a client
// cannot learn a correct signature prefix by timing (CRYPTO_memcmp).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace oc::sigv4
