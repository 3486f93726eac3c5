#include "auth/checksum.h"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstring>

#include "oc/common/check.h"
#include "oc/common/text.h"

namespace oc::gateway::auth {
namespace {

static_assert(std::endian::native == std::endian::little, "slice-by-8 reads little-endian words");

// CRC-64/NVME (reflected polynomial 0x9A6C9329AC4BC9B5), slice-by-8: table k advances a byte
// through k further zero bytes, so eight bytes fold in with one lookup each.
constexpr uint64_t kCrc64NvmePoly = 0x9A6C9329AC4BC9B5ull;
using Crc64Tables = std::array<std::array<uint64_t, 256>, 8>;

constexpr Crc64Tables MakeCrc64Tables() {
  Crc64Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint64_t crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ kCrc64NvmePoly : crc >> 1;
    }
    t[0][i] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) {
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
  }
  return t;
}
constexpr Crc64Tables kCrc64Nvme = MakeCrc64Tables();

uint64_t Crc64NvmeUpdate(uint64_t crc, ByteSpan data) {
  const std::byte* p = data.data();
  size_t n = data.size();
  while (n >= 8) {
    uint64_t word = 0;
    std::memcpy(&word, p, 8);
    crc ^= word;
    crc = kCrc64Nvme[7][crc & 0xff] ^ kCrc64Nvme[6][(crc >> 8) & 0xff] ^
          kCrc64Nvme[5][(crc >> 16) & 0xff] ^ kCrc64Nvme[4][(crc >> 24) & 0xff] ^
          kCrc64Nvme[3][(crc >> 32) & 0xff] ^ kCrc64Nvme[2][(crc >> 40) & 0xff] ^
          kCrc64Nvme[1][(crc >> 48) & 0xff] ^ kCrc64Nvme[0][crc >> 56];
    p += 8;
    n -= 8;
  }
  for (; n > 0; --n, ++p) {
    crc = kCrc64Nvme[0][(crc ^ static_cast<uint8_t>(*p)) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

// CRC combination in GF(2)[x] modulo a reflected CRC polynomial of `width` bits (zlib's
// crc32.c multmodp/x2nmodp, made generic): in a value, bit width-1 is the coefficient of x^0
// and bit 0 that of x^(width-1), as in the CRC register.
struct CrcPolynomial {
  uint64_t reflected;
  int width;
};
constexpr CrcPolynomial kCrc32cPoly{0x82F63B78u, 32};  // Castagnoli, reflected
constexpr CrcPolynomial kCrc64Poly{kCrc64NvmePoly, 64};

// a * b mod P.
constexpr uint64_t MultModP(const CrcPolynomial& p, uint64_t a, uint64_t b) {
  uint64_t product = 0;
  for (uint64_t m = uint64_t{1} << (p.width - 1); m != 0; m >>= 1) {
    if (a & m) {
      product ^= b;
    }
    b = (b & 1) ? (b >> 1) ^ p.reflected : b >> 1;  // b * x
  }
  return product;
}

// x^(2^k) mod P for k = 0..66: a length of up to 2^64 - 1 bytes is up to 2^67 bits.
constexpr size_t kX2nEntries = 67;
using X2nTable = std::array<uint64_t, kX2nEntries>;

constexpr X2nTable MakeX2nTable(const CrcPolynomial& p) {
  X2nTable t{};
  t[0] = uint64_t{1} << (p.width - 2);  // x^1
  for (size_t k = 1; k < kX2nEntries; ++k) {
    t[k] = MultModP(p, t[k - 1], t[k - 1]);
  }
  return t;
}
constexpr X2nTable kCrc32cX2n = MakeX2nTable(kCrc32cPoly);
constexpr X2nTable kCrc64X2n = MakeX2nTable(kCrc64Poly);

// crc(A||B) = crc(A) * x^(8 * size_b) + crc(B) mod P.
uint64_t CombineModP(const CrcPolynomial& p, const X2nTable& x2n, uint64_t crc_a, uint64_t crc_b,
                     uint64_t size_b) {
  uint64_t power = uint64_t{1} << (p.width - 1);  // x^0
  for (size_t k = 3; size_b != 0; size_b >>= 1, ++k) {
    if (size_b & 1) {
      power = MultModP(p, x2n[k], power);
    }
  }
  return MultModP(p, power, crc_a) ^ crc_b;
}

// ISA-L takes an int length: feed it in slices that fit.
uint32_t Crc32cUpdate(uint32_t crc, ByteSpan data) {
  constexpr size_t kSlice = size_t{1} << 30;
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kSlice);
    // crc32_iscsi neither reads through a const pointer nor writes: the cast is safe.
    crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data())),
                      static_cast<int>(n), crc);
    data = data.subspan(n);
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

// Strict base64 (padded, no whitespace); nullopt otherwise.
std::optional<std::string> Unbase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > 4096) {
    return std::nullopt;
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  const size_t pad = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
  if (n < 0 || static_cast<size_t>(n) < pad) {
    return std::nullopt;
  }
  out.resize(static_cast<size_t>(n) - pad);
  // EVP_DecodeBlock alone takes more ('=' inside the text, whitespace around it, non-zero
  // bits after the last byte): only the one encoding of the bytes is base64 here.
  std::string again(text.size() + 1, '\0');
  const int m = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(again.data()),
                                reinterpret_cast<const unsigned char*>(out.data()),
                                static_cast<int>(out.size()));
  if (m < 0 || std::string_view(again.data(), static_cast<size_t>(m)) != text) {
    return std::nullopt;
  }
  return out;
}

void FreeMd(evp_md_ctx_st* ctx) { EVP_MD_CTX_free(ctx); }

struct Name {
  std::string_view header;
  std::string_view name;
  ChecksumAlgorithm algorithm;
  size_t digest_bytes;
};
constexpr Name kNames[] = {
    {"x-amz-checksum-crc32", "CRC32", ChecksumAlgorithm::kCrc32, 4},
    {"x-amz-checksum-crc32c", "CRC32C", ChecksumAlgorithm::kCrc32c, 4},
    {"x-amz-checksum-crc64nvme", "CRC64NVME", ChecksumAlgorithm::kCrc64Nvme, 8},
    {"x-amz-checksum-sha1", "SHA1", ChecksumAlgorithm::kSha1, 20},
    {"x-amz-checksum-sha256", "SHA256", ChecksumAlgorithm::kSha256, 32}};

const Name& RowOf(ChecksumAlgorithm algorithm) {
  for (const Name& n : kNames) {
    if (n.algorithm == algorithm) {
      return n;
    }
  }
  OC_CHECK(false);
  return kNames[0];
}

}  // namespace

std::optional<ChecksumAlgorithm> ChecksumFromHeaderName(std::string_view name) {
  for (const Name& n : kNames) {
    if (EqualsIgnoreCase(name, n.header)) {
      return n.algorithm;
    }
  }
  return std::nullopt;
}

std::string_view ChecksumHeaderName(ChecksumAlgorithm algorithm) { return RowOf(algorithm).header; }

std::optional<ChecksumAlgorithm> ChecksumFromName(std::string_view name) {
  for (const Name& n : kNames) {
    if (EqualsIgnoreCase(name, n.name)) {
      return n.algorithm;
    }
  }
  return std::nullopt;
}

std::string_view ChecksumName(ChecksumAlgorithm algorithm) { return RowOf(algorithm).name; }

size_t ChecksumDigestBytes(ChecksumAlgorithm algorithm) { return RowOf(algorithm).digest_bytes; }

bool IsChecksumValue(ChecksumAlgorithm algorithm, std::string_view value) {
  std::optional<std::string> raw = Unbase64(value);
  return raw && raw->size() == ChecksumDigestBytes(algorithm);
}

Checksum::Checksum(ChecksumAlgorithm algorithm) : algorithm_(algorithm), sha1_(nullptr, &FreeMd) {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
      crc_ = crc32_z(0, nullptr, 0);  // zlib keeps the finished value: it inverts inside
      break;
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
      crc_ = crc32_z(static_cast<uLong>(crc_), reinterpret_cast<const Bytef*>(data.data()),
                     data.size());
      break;
    case ChecksumAlgorithm::kCrc32c:
      crc_ = Crc32cUpdate(static_cast<uint32_t>(crc_), data);
      break;
    case ChecksumAlgorithm::kCrc64Nvme:
      crc_ = Crc64NvmeUpdate(crc_, data);
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

std::string Checksum::Finish() {
  std::byte out[32];
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
      PutBigEndian32(static_cast<uint32_t>(crc_), out);
      return std::string(reinterpret_cast<const char*>(out), 4);
    case ChecksumAlgorithm::kCrc32c:
      PutBigEndian32(~static_cast<uint32_t>(crc_), out);
      return std::string(reinterpret_cast<const char*>(out), 4);
    case ChecksumAlgorithm::kCrc64Nvme:
      PutBigEndian64(~crc_, out);
      return std::string(reinterpret_cast<const char*>(out), 8);
    case ChecksumAlgorithm::kSha1: {
      unsigned int len = 0;
      OC_CHECK(EVP_DigestFinal_ex(sha1_.get(), reinterpret_cast<unsigned char*>(out), &len) == 1 &&
               len == 20);
      return std::string(reinterpret_cast<const char*>(out), 20);
    }
    case ChecksumAlgorithm::kSha256: {
      const sigv4::Sha256Digest d = sha256_.Finish();
      return std::string(reinterpret_cast<const char*>(d.data()), d.size());
    }
  }
  return "";
}

std::string Checksum::FinishBase64() {
  const std::string raw = Finish();
  return Base64(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

std::optional<std::string> CompositeChecksum(ChecksumAlgorithm algorithm,
                                             std::span<const std::string> part_values) {
  if (part_values.empty()) {
    return std::nullopt;
  }
  Checksum composite(algorithm);
  for (const std::string& value : part_values) {
    std::optional<std::string> raw = Unbase64(value);
    if (!raw || raw->size() != ChecksumDigestBytes(algorithm)) {
      return std::nullopt;
    }
    composite.Update(AsBytes(*raw));
  }
  return composite.FinishBase64() + "-" + std::to_string(part_values.size());
}

bool IsCrc(ChecksumAlgorithm algorithm) {
  return algorithm == ChecksumAlgorithm::kCrc32 || algorithm == ChecksumAlgorithm::kCrc32c ||
         algorithm == ChecksumAlgorithm::kCrc64Nvme;
}

uint64_t CrcCombine(ChecksumAlgorithm algorithm, uint64_t crc_a, uint64_t crc_b, uint64_t size_b) {
  switch (algorithm) {
    case ChecksumAlgorithm::kCrc32:
      // z_off_t is 64 bits on the platforms we build for; object sizes stay far below 2^63.
      static_assert(sizeof(z_off_t) == 8);
      return crc32_combine(static_cast<uLong>(crc_a), static_cast<uLong>(crc_b),
                           static_cast<z_off_t>(size_b));
    case ChecksumAlgorithm::kCrc32c:
      return CombineModP(kCrc32cPoly, kCrc32cX2n, crc_a, crc_b, size_b);
    case ChecksumAlgorithm::kCrc64Nvme:
      return CombineModP(kCrc64Poly, kCrc64X2n, crc_a, crc_b, size_b);
    case ChecksumAlgorithm::kSha1:
    case ChecksumAlgorithm::kSha256:
      break;
  }
  OC_CHECK(false);
  return 0;
}

std::optional<std::string> FullObjectChecksum(ChecksumAlgorithm algorithm,
                                              std::span<const PartCrc> parts) {
  if (!IsCrc(algorithm) || parts.empty()) {
    return std::nullopt;
  }
  const size_t digest_bytes = ChecksumDigestBytes(algorithm);
  uint64_t crc = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::optional<std::string> raw = Unbase64(parts[i].value);
    if (!raw || raw->size() != digest_bytes) {
      return std::nullopt;
    }
    uint64_t part_crc = 0;
    for (char c : *raw) {
      part_crc = (part_crc << 8) | static_cast<uint8_t>(c);
    }
    crc = i == 0 ? part_crc : CrcCombine(algorithm, crc, part_crc, parts[i].size);
  }
  std::byte out[8];
  if (digest_bytes == 8) {
    PutBigEndian64(crc, out);
  } else {
    PutBigEndian32(static_cast<uint32_t>(crc), out);
  }
  return Base64(reinterpret_cast<const unsigned char*>(out), digest_bytes);
}

}  // namespace oc::gateway::auth
