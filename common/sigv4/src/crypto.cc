#include "oc/sigv4/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <utility>

#include "oc/common/check.h"

namespace oc::sigv4 {
namespace {

constexpr size_t kSha256BlockBytes = 64;

// OpenSSL 3 looks EVP_sha256() up in its provider tables on every init; fetching it once
// and HMAC-ing by hand (two digests) cuts the per-request cost of SigV4 several-fold
// against the one-shot HMAC(), which builds and frees an EVP_MAC context per call.
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    OC_CHECK(fetched != nullptr);
    return fetched;
  }();
  return md;
}

// One hasher per thread for the one-shot helpers: no context allocation per call.
Sha256& ThreadHasher() {
  thread_local Sha256 hasher;
  return hasher;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  OC_CHECK(ctx_ != nullptr);
  Reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(ctx_);
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Sha256::Reset() { OC_CHECK(EVP_DigestInit_ex(ctx_, Sha256Md(), nullptr) == 1); }

void Sha256::Update(ByteSpan data) {
  if (!data.empty()) {
    OC_CHECK(EVP_DigestUpdate(ctx_, data.data(), data.size()) == 1);
  }
}

Sha256Digest Sha256::Finish() {
  Sha256Digest out;
  unsigned int len = 0;
  OC_CHECK(EVP_DigestFinal_ex(ctx_, reinterpret_cast<unsigned char*>(out.data()), &len) == 1);
  OC_CHECK(len == kSha256Bytes);
  return out;
}

Sha256Digest Sha256Of(ByteSpan data) {
  Sha256& h = ThreadHasher();
  h.Reset();
  h.Update(data);
  return h.Finish();
}

std::string Sha256Hex(std::string_view data) { return DigestHex(Sha256Of(data)); }

// RFC 2104: HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), K' the key padded to a block
// (hashed first if longer than a block).
Sha256Digest HmacSha256(ByteSpan key, std::string_view data) {
  std::array<std::byte, kSha256BlockBytes> block{};
  if (key.size() > kSha256BlockBytes) {
    const Sha256Digest hashed = Sha256Of(key);
    std::copy(hashed.begin(), hashed.end(), block.begin());
  } else {
    std::copy(key.begin(), key.end(), block.begin());
  }
  std::array<std::byte, kSha256BlockBytes> pad;
  for (size_t i = 0; i < kSha256BlockBytes; ++i) {
    pad[i] = block[i] ^ std::byte{0x36};
  }
  Sha256& h = ThreadHasher();
  h.Reset();
  h.Update(ByteSpan(pad));
  h.Update(data);
  const Sha256Digest inner = h.Finish();
  for (size_t i = 0; i < kSha256BlockBytes; ++i) {
    pad[i] = block[i] ^ std::byte{0x5c};
  }
  h.Reset();
  h.Update(ByteSpan(pad));
  h.Update(ByteSpan(inner));
  return h.Finish();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace oc::sigv4
