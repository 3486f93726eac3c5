#include "records/md5.h"

#include <openssl/evp.h>

#include "oc/common/check.h"

namespace oc::storage {

Md5::Md5() : ctx_(EVP_MD_CTX_new()) {
  OC_CHECK(ctx_ != nullptr);
  OC_CHECK(EVP_DigestInit_ex(ctx_, EVP_md5(), nullptr) == 1);
}

Md5::~Md5() { EVP_MD_CTX_free(ctx_); }

void Md5::Update(ByteSpan data) {
  if (!data.empty()) {
    OC_CHECK(EVP_DigestUpdate(ctx_, data.data(), data.size()) == 1);
  }
}

Md5Digest Md5::Finish() {
  Md5Digest out{};
  unsigned int len = 0;
  OC_CHECK(EVP_DigestFinal_ex(ctx_, reinterpret_cast<unsigned char*>(out.data()), &len) == 1);
  OC_CHECK(len == out.size());
  return out;
}

Md5Digest Md5::Of(ByteSpan data) {
  Md5 md5;
  md5.Update(data);
  return md5.Finish();
}

}  // namespace oc::storage
