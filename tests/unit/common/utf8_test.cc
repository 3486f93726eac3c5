// UTF-8 validation and decoding (common/include/oc/common/utf8.h): RFC 3629's table of
// well-formed sequences, including the forms S3 keys must not hold (overlong, encoded
// surrogates, past U+10FFFF, truncated, stray continuation bytes).
#include "oc/common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace oc {
namespace {

TEST(Utf8, AcceptsWellFormedSequences) {
  struct Row {
    std::string text;
    uint32_t first_code_point;
    uint32_t first_length;
  };
  for (const Row& row : {
           Row{std::string("\0", 1), 0x0, 1}, Row{"a", 0x61, 1}, Row{"\x7F", 0x7F, 1},
           Row{"\xC2\x80", 0x80, 2},                                  // smallest 2-byte
           Row{"\xC3\xA9t\xC3\xA9", 0xE9, 2},                         // "été"
           Row{"\xDF\xBF", 0x7FF, 2}, Row{"\xE0\xA0\x80", 0x800, 3},  // smallest 3-byte
           Row{"\xE2\x82\xAC", 0x20AC, 3},                            // euro sign
           Row{"\xED\x9F\xBF", 0xD7FF, 3},                            // just below the surrogates
           Row{"\xEE\x80\x80", 0xE000, 3},                            // just above them
           Row{"\xEF\xBF\xBF", 0xFFFF, 3},  // a noncharacter, but well-formed UTF-8
           Row{"\xF0\x90\x80\x80", 0x10000, 4}, Row{"\xF0\x9F\x98\x80", 0x1F600, 4},
           Row{"\xF4\x8F\xBF\xBF", 0x10FFFF, 4},  // the last code point
       }) {
    SCOPED_TRACE(row.text);
    EXPECT_TRUE(IsValidUtf8(row.text));
    std::optional<Utf8Char> c = DecodeUtf8(row.text);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->code_point, row.first_code_point);
    EXPECT_EQ(c->length, row.first_length);
  }
  EXPECT_TRUE(IsValidUtf8(""));
}

TEST(Utf8, RefusesMalformedSequences) {
  for (const std::string& text : {
           std::string("\x80"),                      // a continuation byte alone
           std::string("a\xBF"),                     // ...after ASCII
           std::string("\xC0\x80"),                  // overlong NUL (modified UTF-8)
           std::string("\xC0\xAF"),                  // overlong '/'
           std::string("\xC1\xBF"),                  // overlong 0x7F
           std::string("\xE0\x80\xAF"),              // overlong '/' in 3 bytes
           std::string("\xE0\x9F\xBF"),              // overlong 0x7FF
           std::string("\xF0\x80\x80\xAF"),          // overlong '/' in 4 bytes
           std::string("\xF0\x8F\xBF\xBF"),          // overlong 0xFFFF
           std::string("\xED\xA0\x80"),              // U+D800, the first surrogate
           std::string("\xED\xAD\xBF"),              // U+DB7F
           std::string("\xED\xB0\x80"),              // U+DC00
           std::string("\xED\xBF\xBF"),              // U+DFFF, the last surrogate
           std::string("\xED\xA0\xBD\xED\xB8\x80"),  // a surrogate pair (CESU-8)
           std::string("\xF4\x90\x80\x80"),          // U+110000
           std::string("\xF5\x80\x80\x80"),          // lead bytes F5..FF never occur
           std::string("\xF8\x88\x80\x80\x80"),      // 5-byte form
           std::string("\xFE"),
           std::string("\xFF"),
           std::string("\xC3"),                // truncated 2-byte
           std::string("\xE2\x82"),            // truncated 3-byte
           std::string("\xF0\x9F\x98"),        // truncated 4-byte
           std::string("\xE2\x28\xA1"),        // bad continuation
           std::string("ok\xC3\xA9then\xFF"),  // valid, then a bad byte at the end
       }) {
    SCOPED_TRACE(::testing::PrintToString(text));
    EXPECT_FALSE(IsValidUtf8(text));
  }
  EXPECT_FALSE(DecodeUtf8("").has_value());
  EXPECT_FALSE(DecodeUtf8("\xED\xA0\x80").has_value());
}

TEST(Utf8, EveryScalarValueRoundTrips) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      continue;
    }
    std::string s;
    AppendUtf8(cp, &s);
    std::optional<Utf8Char> c = DecodeUtf8(s);
    ASSERT_TRUE(c.has_value()) << cp;
    ASSERT_EQ(c->code_point, cp);
    ASSERT_EQ(c->length, s.size());
    ASSERT_TRUE(IsValidUtf8(s)) << cp;
  }
}

// Every two-byte string: valid exactly when it is two ASCII bytes or the shortest encoding of
// U+0080..U+07FF (lead C2..DF, then a continuation byte).
TEST(Utf8, EveryTwoByteStringIsClassifiedByTheTable) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string s{static_cast<char>(a), static_cast<char>(b)};
      const bool expected =
          (a < 0x80 && b < 0x80) || (a >= 0xC2 && a <= 0xDF && b >= 0x80 && b <= 0xBF);
      ASSERT_EQ(IsValidUtf8(s), expected) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace oc
