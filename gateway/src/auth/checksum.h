#pragma once
// S3 additional checksums (x-amz-checksum-<algorithm>): CRC32, CRC32C, CRC64NVME, SHA1 and
// SHA256 over the object bytes, rendered as S3 sends them (base64 of the big-endian digest).
// Used by AwsChunkedDecoder to verify the trailer of STREAMING-UNSIGNED-PAYLOAD-TRAILER
// uploads; the gateway may use it for x-amz-checksum-* request headers too.
// Source: Amazon S3 User Guide, "Checking object integrity" (algorithms and encoding).
// Thread safety: a Checksum object is used by one thread at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "oc/common/bytes.h"
#include "oc/sigv4/crypto.h"

namespace oc::gateway::auth {

enum class ChecksumAlgorithm { kCrc32, kCrc32c, kCrc64Nvme, kSha1, kSha256 };

// "x-amz-checksum-crc32" (any case) -> kCrc32, ...; nullopt for any other header name.
std::optional<ChecksumAlgorithm> ChecksumFromHeaderName(std::string_view name);
// The lowercase header name: "x-amz-checksum-crc32", ...
std::string_view ChecksumHeaderName(ChecksumAlgorithm algorithm);

class Checksum {
 public:
  explicit Checksum(ChecksumAlgorithm algorithm);
  void Update(ByteSpan data);
  // Base64 of the digest (CRCs big-endian). REQUIRES: called once.
  std::string FinishBase64();
  ChecksumAlgorithm algorithm() const { return algorithm_; }

 private:
  ChecksumAlgorithm algorithm_;
  uint64_t crc_ = 0;
  sigv4::Sha256 sha256_;
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> sha1_;
};

}  // namespace oc::gateway::auth
