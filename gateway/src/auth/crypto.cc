#include "auth/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <utility>

#include "oc/common/check.h"

namespace oc::gateway::auth {

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

void Sha256::Reset() { OC_CHECK(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1); }

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
  Sha256Digest out;
  unsigned int len = 0;
  OC_CHECK(EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()),
                      &len, EVP_sha256(), nullptr) == 1);
  return out;
}

std::string Sha256Hex(std::string_view data) { return DigestHex(Sha256Of(data)); }

Sha256Digest HmacSha256(ByteSpan key, std::string_view data) {
  Sha256Digest out;
  unsigned int len = 0;
  const unsigned char* result =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(),
           reinterpret_cast<unsigned char*>(out.data()), &len);
  OC_CHECK(result != nullptr && len == kSha256Bytes);
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace oc::gateway::auth
