#pragma once
// Incremental MD5 (OpenSSL EVP) for S3 ETags, computed while bytes stream through a
// writer. One instance per writer; not thread-safe.

#include <array>
#include <cstddef>
#include <memory>

#include "oc/common/bytes.h"

struct evp_md_ctx_st;

namespace oc::storage {

using Md5Digest = std::array<std::byte, 16>;

class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;
  void Update(ByteSpan data);
  // The digest of everything updated so far; the object is spent afterwards.
  Md5Digest Finish();

  static Md5Digest Of(ByteSpan data);

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace oc::storage
