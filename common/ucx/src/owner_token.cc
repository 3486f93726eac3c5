#include "oc/ucx/owner_token.h"

#include <openssl/sha.h>

#include <cstring>
#include <string_view>

namespace oc::ucx {

static_assert(kOwnerTokenBytes == SHA256_DIGEST_LENGTH);

OwnerToken MakeOwnerToken(const OwnerSecret& secret) {
  static constexpr std::string_view kDomain = "objectcache data-plane target owner v2";
  std::array<unsigned char, kDomain.size() + kOwnerSecretBytes> in{};
  std::memcpy(in.data(), kDomain.data(), kDomain.size());
  std::memcpy(in.data() + kDomain.size(), secret.data(), secret.size());
  OwnerToken token;
  SHA256(in.data(), in.size(), reinterpret_cast<unsigned char*>(token.data()));
  return token;
}

}  // namespace oc::ucx
