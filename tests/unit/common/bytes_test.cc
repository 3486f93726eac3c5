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

TEST(Hex, AppendsAndDecodesIntoFixedBuffers) {
  const std::string text("\x00\x01\xab\xff", 4);
  std::string out = "key/";
  AppendHex(AsBytes(text), out);
  EXPECT_EQ(out, "key/0001abff");
  std::byte buf[4];
  ASSERT_TRUE(HexDecodeTo("0001ABff", buf));
  EXPECT_EQ(AsText(buf), text);
  EXPECT_FALSE(HexDecodeTo("0001abf", buf));     // short
  EXPECT_FALSE(HexDecodeTo("0001abff00", buf));  // long
  EXPECT_FALSE(HexDecodeTo("0001abfg", buf));    // not hex
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
