// oc/common/text.h and oc/common/headers.h: the one Trim, case folding, hex digit and
// percent-decoding every module uses, and the header view.
#include "oc/common/text.h"

#include <gtest/gtest.h>

#include <string>

#include "oc/common/headers.h"

namespace oc {
namespace {

TEST(Text, TrimsOnlyTheGivenWhitespaceFromBothEnds) {
  struct Row {
    std::string_view in;
    std::string_view whitespace;
    std::string_view out;
  };
  for (const Row& row : {Row{"", kHttpWhitespace, ""}, Row{" \t ", kHttpWhitespace, ""},
                         Row{" a b\t", kHttpWhitespace, "a b"}, Row{"a", kHttpWhitespace, "a"},
                         Row{"\r\n a \n", kHttpWhitespace, "\r\n a \n"},
                         Row{"\r\n a \n", kXmlWhitespace, "a"}, Row{"\t a ", " ", "\t a"}}) {
    SCOPED_TRACE(row.in);
    EXPECT_EQ(Trim(row.in, row.whitespace), row.out);
  }
  EXPECT_EQ(Trim("  x  "), "x");  // HTTP OWS by default
  const std::string_view s = " kept ";
  EXPECT_EQ(Trim(s).data(), s.data() + 1);  // a view into the input
}

TEST(Text, FoldsAsciiCaseOnly) {
  EXPECT_EQ(AsciiLower('A'), 'a');
  EXPECT_EQ(AsciiLower('z'), 'z');
  EXPECT_EQ(AsciiLower('@'), '@');
  EXPECT_EQ(AsciiLower('['), '[');
  EXPECT_EQ(AsciiLower("X-Amz-Date\xC3\x89"), "x-amz-date\xC3\x89");  // bytes >= 0x80 kept
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("host", "hosts"));
  EXPECT_FALSE(EqualsIgnoreCase("a@", "a`"));  // '@' and '`' are not a case pair
  EXPECT_FALSE(EqualsIgnoreCase("\xC3\x89", "\xC3\xA9"));
}

TEST(Text, HexDigitValuesEitherCase) {
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    int want = -1;
    if (ch >= '0' && ch <= '9') {
      want = ch - '0';
    } else if (ch >= 'a' && ch <= 'f') {
      want = ch - 'a' + 10;
    } else if (ch >= 'A' && ch <= 'F') {
      want = ch - 'A' + 10;
    }
    EXPECT_EQ(HexDigit(ch), want) << c;
  }
  static_assert(HexDigit('f') == 15 && HexDigit('g') == -1);
}

TEST(Text, PercentDecodesStrictly) {
  EXPECT_EQ(PercentDecode("a%20b%2fc+d"), "a b/c+d");  // '+' is not a space (RFC 3986)
  EXPECT_EQ(PercentDecode("%E2%82%ac"), "\xe2\x82\xac");
  EXPECT_EQ(PercentDecode(""), "");
  for (std::string_view bad : {"%", "%2", "a%g0", "%0g", "%%41"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(PercentDecode(bad).has_value());
  }
}

TEST(Text, PercentDecodeAppendReportsTheFirstBadEscape) {
  struct Row {
    std::string_view in;
    size_t bad;
    std::string_view decoded;  // what was appended
  };
  for (const Row& row : {Row{"ab%41", kPercentDecodeOk, "abA"}, Row{"a%4", 1, "a"},
                         Row{"%41x%zz%41", 4, "Ax"}, Row{"%", 0, ""}}) {
    SCOPED_TRACE(row.in);
    std::string out = "<";
    EXPECT_EQ(PercentDecodeAppend(row.in, out), row.bad);
    EXPECT_EQ(out, "<" + std::string(row.decoded));
  }
}

TEST(Headers, ViewsOwnedHeadersAndFindsIgnoringCase) {
  const HeaderList owned = {{"host", "h"}, {"X-Amz-Date", "d1"}, {"x-amz-date", "d2"}};
  const std::vector<HeaderField> views = HeaderViews(owned);
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[1].name.data(), owned[1].first.data());  // views, not copies
  EXPECT_EQ(FindHeader(views, "x-amz-date"), "d1");        // the first one
  EXPECT_EQ(FindHeader(views, "HOST"), "h");
  EXPECT_EQ(FindHeader(views, "range"), std::nullopt);
}

}  // namespace
}  // namespace oc
