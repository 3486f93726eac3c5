#pragma once
// S3 additional checksums (x-amz-checksum-<algorithm>): CRC32, CRC32C, CRC64NVME, SHA1 and
// SHA256 over the object bytes, rendered as S3 sends them (base64 of the big-endian digest).
// Used by AwsChunkedDecoder to verify the trailer of STREAMING-UNSIGNED-PAYLOAD-TRAILER
// uploads, and by the gateway for x-amz-checksum-* request headers, the checksums it stores
// with objects and the "checksum of checksums" of multipart uploads.
// Source: Amazon S3 User Guide, "Checking object integrity" (algorithms, encoding, and
// "Using part-level checksums for multipart uploads").
// Implementations (docs/decisions/s3-checksums-verified-on-upload.md): CRC32 is zlib's, CRC32C
// ISA-L's (crc32_iscsi, hardware-accelerated), SHA1 and SHA256 OpenSSL's; CRC64NVME, which Debian
// 12 has in no C library, is a slice-by-8 table. CRC combination (FULL_OBJECT multipart checksums)
// is zlib's crc32_combine for CRC32 and one GF(2) combine, generic over the reflected polynomial,
// for CRC32C and CRC64NVME, which neither ISA-L 2.30 nor zlib offers
// (docs/decisions/s3-checksums-full-object.md).
// Thread safety: a Checksum object is used by one thread at a time; the functions are pure.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
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
// "CRC32" (any case) -> kCrc32, ...: the values of x-amz-checksum-algorithm and
// x-amz-sdk-checksum-algorithm; nullopt for any other.
std::optional<ChecksumAlgorithm> ChecksumFromName(std::string_view name);
// The uppercase name: "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256". The XML elements are
// "Checksum" + this name (ChecksumCRC32).
std::string_view ChecksumName(ChecksumAlgorithm algorithm);
// Digest size in bytes: 4, 4, 8, 20, 32.
size_t ChecksumDigestBytes(ChecksumAlgorithm algorithm);
// True when `value` is the base64 of exactly ChecksumDigestBytes(algorithm) bytes.
bool IsChecksumValue(ChecksumAlgorithm algorithm, std::string_view value);

class Checksum {
 public:
  explicit Checksum(ChecksumAlgorithm algorithm);
  void Update(ByteSpan data);
  // The digest (CRCs big-endian). REQUIRES: called once, and not with FinishBase64.
  std::string Finish();
  // Base64 of Finish().
  std::string FinishBase64();
  ChecksumAlgorithm algorithm() const { return algorithm_; }

 private:
  ChecksumAlgorithm algorithm_;
  uint64_t crc_ = 0;
  sigv4::Sha256 sha256_;
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> sha1_;
};

// S3's checksum of a multipart upload completed from parts with checksums of `algorithm`:
// base64 of the algorithm over the concatenated part digests, then "-" and the part count.
// `part_values` are the parts' base64 values in part order. nullopt if one is not
// IsChecksumValue or there are none.
std::optional<std::string> CompositeChecksum(ChecksumAlgorithm algorithm,
                                             std::span<const std::string> part_values);

// True for the CRCs (CRC32, CRC32C, CRC64NVME): the algorithms whose values combine, and so
// the only ones S3 allows for FULL_OBJECT multipart checksums.
bool IsCrc(ChecksumAlgorithm algorithm);

// The CRC of A||B from the finished CRCs of A and of B and B's length in bytes (zlib's
// crc32_combine, for any of the three CRCs): crc(A||B) = crc(A) * x^(8*size_b) + crc(B)
// modulo the polynomial, the initial and final inversions cancelling. Values are the CRCs as
// numbers (the big-endian digest read back). REQUIRES: IsCrc(algorithm).
uint64_t CrcCombine(ChecksumAlgorithm algorithm, uint64_t crc_a, uint64_t crc_b, uint64_t size_b);

// One part of a FULL_OBJECT multipart upload: its checksum as stored (base64) and its size.
struct PartCrc {
  std::string_view value;
  uint64_t size = 0;
};

// S3's FULL_OBJECT checksum of a multipart upload (S3 User Guide, "Checking object
// integrity", full object checksums): the CRC of the parts' concatenation in order, combined
// from each part's CRC and size without reading a byte, as base64 with no "-N". nullopt if the
// algorithm is not IsCrc, a value is not IsChecksumValue, or there are no parts.
std::optional<std::string> FullObjectChecksum(ChecksumAlgorithm algorithm,
                                              std::span<const PartCrc> parts);

}  // namespace oc::gateway::auth
