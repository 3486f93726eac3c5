#include "oc/common/bytes.h"

#include <gtest/gtest.h>

namespace oc {
namespace {

TEST(Hex, RoundTripsAndRejectsBadInput) {
  const std::string text("\x00\x01\xab\xff", 4);
  EXPECT_EQ(HexEncode(AsBytes(text)), "0001abff");
  auto decoded = HexDecode("0001ABff");
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(AsText(*decoded), text);
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_FALSE(HexDecode("zz").has_value());
}

TEST(Endian, BigEndianSortsNumerically) {
  std::byte a[8];
  std::byte b[8];
  PutBigEndian64(255, a);
  PutBigEndian64(256, b);
  EXPECT_LT(std::memcmp(a, b, 8), 0);
  EXPECT_EQ(GetBigEndian64(b), 256u);
  PutLittleEndian32(0x01020304, a);
  EXPECT_EQ(static_cast<int>(a[0]), 4);
  EXPECT_EQ(GetLittleEndian32(a), 0x01020304u);
}

}  // namespace
}  // namespace oc
