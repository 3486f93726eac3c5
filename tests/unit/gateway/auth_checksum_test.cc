// CRC combination for S3 FULL_OBJECT multipart checksums (auth/checksum.h): every combined
// value is checked against the CRC of the concatenated buffer computed directly by the same
// algorithm's streaming code (zlib, ISA-L, the CRC64NVME table), whose own known answers are
// in auth_chunked_test.cc.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "auth/checksum.h"
#include "oc/common/bytes.h"

namespace oc::gateway::auth {
namespace {

constexpr ChecksumAlgorithm kCrcs[] = {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c,
                                       ChecksumAlgorithm::kCrc64Nvme};

std::string Bytes(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return out;
}

std::string Base64Crc(ChecksumAlgorithm algorithm, std::string_view data) {
  Checksum c(algorithm);
  c.Update(AsBytes(data));
  return c.FinishBase64();
}

// The CRC as a number: the big-endian digest read back.
uint64_t CrcValue(ChecksumAlgorithm algorithm, std::string_view data) {
  Checksum c(algorithm);
  c.Update(AsBytes(data));
  uint64_t v = 0;
  for (char b : c.Finish()) {
    v = (v << 8) | static_cast<uint8_t>(b);
  }
  return v;
}

// Found by s3_headers_fuzz: OpenSSL's base64 decoder took '=' inside the value and bits
// after the digest's last byte.
TEST(ChecksumValue, IsStrictPaddedBase64OfTheDigest) {
  EXPECT_TRUE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "NhCmhg=="));
  EXPECT_TRUE(IsChecksumValue(ChecksumAlgorithm::kCrc64Nvme, "AAAAAAAAAAA="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "Ntes=g=="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "N=Cmhg=="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, " NhCmhg="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "NhCm\ng=="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "NhCmhg-="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "NhCmhg="));
  EXPECT_FALSE(IsChecksumValue(ChecksumAlgorithm::kCrc32, "Nbytes=="));  // bits after the digest
}

TEST(CrcCombine, EqualsTheCrcOfTheConcatenation) {
  // Sizes of B cover 0, single bytes, odd sizes and ones with high length bits (5 MiB + 3:
  // an S3 minimum part plus a little; 2^31 + 5 is exercised below without data).
  const std::string data = Bytes(1, (5 << 20) + 1000);
  struct Split {
    size_t a;
    size_t b;
  };
  for (ChecksumAlgorithm algorithm : kCrcs) {
    for (Split s : {Split{0, 0}, Split{0, 17}, Split{17, 0}, Split{1, 1}, Split{1000, 1},
                    Split{3, 4093}, Split{65536, 65537}, Split{999, (5 << 20) + 1}}) {
      SCOPED_TRACE(std::string(ChecksumName(algorithm)) + " a=" + std::to_string(s.a) +
                   " b=" + std::to_string(s.b));
      const std::string_view a = std::string_view(data).substr(0, s.a);
      const std::string_view b = std::string_view(data).substr(s.a, s.b);
      EXPECT_EQ(CrcCombine(algorithm, CrcValue(algorithm, a), CrcValue(algorithm, b), b.size()),
                CrcValue(algorithm, std::string_view(data).substr(0, s.a + s.b)));
    }
  }
}

// The check string of the CRC catalogue, "123456789", split anywhere.
TEST(CrcCombine, CheckStringSplitAnywhere) {
  const std::string_view check = "123456789";
  for (ChecksumAlgorithm algorithm : kCrcs) {
    const uint64_t whole = CrcValue(algorithm, check);
    for (size_t at = 0; at <= check.size(); ++at) {
      SCOPED_TRACE(std::string(ChecksumName(algorithm)) + " at " + std::to_string(at));
      EXPECT_EQ(CrcCombine(algorithm, CrcValue(algorithm, check.substr(0, at)),
                           CrcValue(algorithm, check.substr(at)), check.size() - at),
                whole);
    }
  }
}

// Combining is associative: ((A,B),C) == (A,(B,C)), also for lengths no buffer here could
// hold (the x^(2^k) table's high entries).
TEST(CrcCombine, AssociativeForLargeLengths) {
  for (ChecksumAlgorithm algorithm : kCrcs) {
    SCOPED_TRACE(std::string(ChecksumName(algorithm)));
    const uint64_t mask = ChecksumDigestBytes(algorithm) == 8 ? ~uint64_t{0} : uint64_t{0xFFFFFFFF};
    const uint64_t a = 0x1234567890ABCDEFull & mask;
    const uint64_t b = 0x0F1E2D3C4B5A6978ull & mask;
    const uint64_t c = 0x5555AAAA3333CCCCull & mask;
    for (uint64_t len_b : {uint64_t{1}, (uint64_t{1} << 31) + 5, (uint64_t{5} << 40) + 3}) {
      for (uint64_t len_c : {uint64_t{7}, (uint64_t{1} << 33) + 1}) {
        EXPECT_EQ(CrcCombine(algorithm, CrcCombine(algorithm, a, b, len_b), c, len_c),
                  CrcCombine(algorithm, a, CrcCombine(algorithm, b, c, len_c), len_b + len_c));
      }
    }
  }
}

TEST(FullObjectChecksum, IsTheCrcOfTheWholeObject) {
  const std::string data = Bytes(2, (10 << 20) + 4321);
  const size_t cuts[] = {0, 5 << 20, 10 << 20, data.size()};  // two 5 MiB parts and a tail
  for (ChecksumAlgorithm algorithm : kCrcs) {
    SCOPED_TRACE(std::string(ChecksumName(algorithm)));
    std::vector<std::string> values;
    std::vector<PartCrc> parts;
    for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
      values.push_back(
          Base64Crc(algorithm, std::string_view(data).substr(cuts[i], cuts[i + 1] - cuts[i])));
    }
    for (size_t i = 0; i < values.size(); ++i) {
      parts.push_back(PartCrc{values[i], cuts[i + 1] - cuts[i]});
    }
    EXPECT_EQ(FullObjectChecksum(algorithm, parts), Base64Crc(algorithm, data));
    // One part: its own CRC.
    EXPECT_EQ(FullObjectChecksum(algorithm, std::span(parts).first(1)), values[0]);
  }
}

TEST(FullObjectChecksum, RefusesWhatCannotBeCombined) {
  const std::string crc32 = Base64Crc(ChecksumAlgorithm::kCrc32, "abc");
  const PartCrc one[] = {PartCrc{crc32, 3}};
  EXPECT_FALSE(FullObjectChecksum(ChecksumAlgorithm::kSha256, one).has_value());
  EXPECT_FALSE(FullObjectChecksum(ChecksumAlgorithm::kSha1, one).has_value());
  EXPECT_FALSE(FullObjectChecksum(ChecksumAlgorithm::kCrc32, std::span<const PartCrc>()));
  // A CRC32 value (4 bytes) among CRC64NVME parts, and text that is not base64.
  EXPECT_FALSE(FullObjectChecksum(ChecksumAlgorithm::kCrc64Nvme, one).has_value());
  const PartCrc garbage[] = {PartCrc{crc32, 3}, PartCrc{"not base64", 3}};
  EXPECT_FALSE(FullObjectChecksum(ChecksumAlgorithm::kCrc32, garbage).has_value());
  EXPECT_TRUE(IsCrc(ChecksumAlgorithm::kCrc64Nvme));
  EXPECT_FALSE(IsCrc(ChecksumAlgorithm::kSha1));
}

}  // namespace
}  // namespace oc::gateway::auth
