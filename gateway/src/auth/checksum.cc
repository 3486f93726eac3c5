#include "auth/checksum.h"

#include <openssl/evp.h>

#include <array>

#include "oc/common/check.h"
#include "oc/common/text.h"

namespace oc::gateway::auth {
namespace {

// Reflected CRC tables, built at compile time. Polynomials (reflected): CRC32 0xEDB88320
// (ISO-HDLC), CRC32C 0x82F63B78 (Castagnoli), CRC64NVME 0x9A6C9329AC4BC9B5.
template <typename T>
constexpr std::array<T, 256> CrcTable(T poly) {
  std::array<T, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    T crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
    }
    table[i] = crc;
  }
  return table;
}

constexpr auto kCrc32Table = CrcTable<uint32_t>(0xEDB88320u);
constexpr auto kCrc32cTable = CrcTable<uint32_t>(0x82F63B78u);
constexpr auto kCrc64NvmeTable = CrcTable<uint64_t>(0x9A6C9329AC4BC9B5ull);

template <typename T>
T CrcUpdate(const std::array<T, 256>& table, T crc, ByteSpan data) {
  for (std::byte b : data) {
    crc = table[(crc ^ static_cast<uint8_t>(b)) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

std::string Base64(const unsigned char* data, size_t n) {
  std::string out(4 * ((n + 2) / 3), '\0');
  const int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
  out.resize(static_cast<size_t>(written));
  return out;
}

void FreeMd(evp_md_ctx_st* ctx) { EVP_MD_CTX_free(ctx); }

struct Name {
  std::string_view header;
  ChecksumAlgorithm algorithm;
};
constexpr Name kNames[] = {{"x-amz-checksum-crc32", ChecksumAlgorithm::kCrc32},
                           {"x-amz-checksum-crc32c", ChecksumAlgorithm::kCrc32c},
                           {"x-amz-checksum-crc64nvme", ChecksumAlgorithm::kCrc64Nvme},
                           {"x-amz-checksum-sha1", ChecksumAlgorithm::kSha1},
                           {"x-amz-checksum-sha256", ChecksumAlgorithm::kSha256}};

}  // namespace

std::optional<ChecksumAlgorithm> ChecksumFromHeaderName(std::string_view name) {
  for (const Name& n : kNames) {
    if (EqualsIgnoreCase(name, n.header)) {
      return n.algorithm;
    }
  }
  return std::nullopt;
}

std::string_view ChecksumHeaderName(ChecksumAlgorithm algorithm) {
  for (const Name& n : kNames) {
    if (n.algorithm == algorithm) {
      return n.header;
    }
  }
  return "";
}

Checksum::Checksum(ChecksumAlgorithm algorithm) : algorithm_(algorithm), sha1_(nullptr, &FreeMd) {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c:
      crc_ = 0xFFFFFFFFu;
      break;
    case ChecksumAlgorithm::kCrc64Nvme:
      crc_ = ~uint64_t{0};
      break;
    case ChecksumAlgorithm::kSha1:
      sha1_.reset(EVP_MD_CTX_new());
      OC_CHECK(sha1_ != nullptr && EVP_DigestInit_ex(sha1_.get(), EVP_sha1(), nullptr) == 1);
      break;
    case ChecksumAlgorithm::kSha256:
      break;
  }
}

void Checksum::Update(ByteSpan data) {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
      crc_ = CrcUpdate<uint32_t>(kCrc32Table, static_cast<uint32_t>(crc_), data);
      break;
    case ChecksumAlgorithm::kCrc32c:
      crc_ = CrcUpdate<uint32_t>(kCrc32cTable, static_cast<uint32_t>(crc_), data);
      break;
    case ChecksumAlgorithm::kCrc64Nvme:
      crc_ = CrcUpdate<uint64_t>(kCrc64NvmeTable, crc_, data);
      break;
    case ChecksumAlgorithm::kSha1:
      if (!data.empty()) {
        OC_CHECK(EVP_DigestUpdate(sha1_.get(), data.data(), data.size()) == 1);
      }
      break;
    case ChecksumAlgorithm::kSha256:
      sha256_.Update(data);
      break;
  }
}

std::string Checksum::FinishBase64() {
  unsigned char out[32];
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c: {
      const uint32_t v = ~static_cast<uint32_t>(crc_);
      PutBigEndian32(v, reinterpret_cast<std::byte*>(out));
      return Base64(out, 4);
    }
    case ChecksumAlgorithm::kCrc64Nvme:
      PutBigEndian64(~crc_, reinterpret_cast<std::byte*>(out));
      return Base64(out, 8);
    case ChecksumAlgorithm::kSha1: {
      unsigned int len = 0;
      OC_CHECK(EVP_DigestFinal_ex(sha1_.get(), out, &len) == 1 && len == 20);
      return Base64(out, 20);
    }
    case ChecksumAlgorithm::kSha256: {
      const sigv4::Sha256Digest d = sha256_.Finish();
      return Base64(reinterpret_cast<const unsigned char*>(d.data()), d.size());
    }
  }
  return "";
}

}  // namespace oc::gateway::auth
