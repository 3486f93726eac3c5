// The XML writer's escaping and the strict parser of the three request bodies.
#include "s3/s3_xml.h"

#include <gtest/gtest.h>

#include "oc/common/utf8.h"
#include "s3/s3_errors.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// XML 1.0 section 2.2, Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
// [#x10000-#x10FFFF].
bool IsXmlChar(uint32_t cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

// Well-formed XML 1.0 text: UTF-8 throughout, every character a Char, and '<' never raw.
// (References and entities are checked by parsing the document.)
::testing::AssertionResult IsWellFormedXmlText(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    std::optional<Utf8Char> c = DecodeUtf8(text.substr(i));
    if (!c) {
      return ::testing::AssertionFailure() << "not UTF-8 at byte " << i;
    }
    if (!IsXmlChar(c->code_point)) {
      return ::testing::AssertionFailure() << "U+" << std::hex << c->code_point << " at " << i;
    }
    i += c->length;
  }
  return ::testing::AssertionSuccess();
}

TEST(S3Xml, EscapesText) {
  std::string out;
  AppendXmlEscaped("a<b>&\"c'\x01\td", &out);
  EXPECT_EQ(out, "a&lt;b&gt;&amp;&quot;c&apos;\xEF\xBF\xBD&#x9;d");
  XmlWriter xml;
  xml.OpenRoot("R");
  xml.Element("Key", "x&y");
  xml.Element("Size", uint64_t{42});
  xml.Flag("IsTruncated", false);
  xml.Close("R");
  EXPECT_EQ(std::move(xml).Finish(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<R xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Key>x&amp;y</Key>"
            "<Size>42</Size><IsTruncated>false</IsTruncated></R>");
}

// Every byte value, alone: the result is character data XML 1.0 can carry, and a parser reads
// back the byte itself (0x20..0x7F, tab, LF, CR) or U+FFFD (other C0 controls, and bytes
// 0x80..0xFF, which alone are not UTF-8).
TEST(S3Xml, EscapingEveryByteGivesWellFormedXml) {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    SCOPED_TRACE(b);
    const std::string in(1, static_cast<char>(b));
    all += in;
    std::string out;
    AppendXmlEscaped(in, &out);
    EXPECT_TRUE(IsWellFormedXmlText(out)) << out;
    EXPECT_EQ(out.find('<'), std::string::npos);
    Result<XmlNode> doc = ParseXml("<a>" + out + "</a>");
    ASSERT_TRUE(doc.has_value()) << doc.error();
    const bool kept = (b >= 0x20 && b < 0x80) || b == '\t' || b == '\n' || b == '\r';
    EXPECT_EQ(doc->text, kept ? in : std::string(kReplacement));
  }
  std::string out;
  AppendXmlEscaped(all, &out);
  EXPECT_TRUE(IsWellFormedXmlText(out));
  EXPECT_TRUE(ParseXml("<a>" + out + "</a>").has_value());
}

TEST(S3Xml, EscapingKeepsUtf8AndReplacesWhatXmlCannotCarry) {
  struct Row {
    std::string in;
    std::string out;
  };
  const std::string r(kReplacement);
  for (const Row& row : {
           Row{"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"},
           Row{"\xEF\xBF\xBD", r},                  // U+FFFD itself
           Row{"\xEF\xBF\xBE", r},                  // U+FFFE: not a Char
           Row{"\xEF\xBF\xBF", r},                  // U+FFFF: not a Char
           Row{"\xED\xA0\x80", r + r + r},          // an encoded surrogate: three bad bytes
           Row{"\xC0\x80", r + r},                  // overlong NUL
           Row{"\xF4\x90\x80\x80", r + r + r + r},  // past U+10FFFF
           Row{"a\xE2\x82", "a" + r + r},           // truncated at the end
           Row{std::string("k\0y", 3), "k" + r + "y"},
           Row{"\x1B[31m", r + "[31m"},  // a terminal escape
           Row{"\r\n\t", "&#xD;&#xA;&#x9;"},
       }) {
    SCOPED_TRACE(::testing::PrintToString(row.in));
    std::string out;
    AppendXmlEscaped(row.in, &out);
    EXPECT_EQ(out, row.out);
  }
}

// The error body names whatever the request held (resource, argument value, message): it
// stays well-formed for every byte.
TEST(S3Xml, ErrorBodyIsWellFormedWhateverTheRequestHeld) {
  std::string hostile;
  for (int b = 0; b < 256; ++b) {
    hostile.push_back(static_cast<char>(b));
  }
  const std::string resource = "/bucket/" + hostile;
  const std::string message = "bad " + hostile;
  const std::string name = "x-amz-" + hostile;
  ErrorDetails details;
  details.resource = resource;
  details.request_id = "0123456789ABCDEF";
  details.message = message;
  details.argument_name = name;
  details.argument_value = hostile;
  const std::string body = RenderErrorXml(S3Error::kInvalidArgument, details);
  EXPECT_TRUE(IsWellFormedXmlText(body));
  Result<XmlNode> doc = ParseXml(body);
  ASSERT_TRUE(doc.has_value()) << doc.error();
  ASSERT_NE(doc->Child("ArgumentValue"), nullptr);
  EXPECT_TRUE(IsValidUtf8(doc->Child("ArgumentValue")->text));
}

TEST(S3Xml, RefusesDocumentsThatAreNotUtf8) {
  for (std::string_view doc : {
           "<Delete><Object><Key>\xFF</Key></Object></Delete>",
           "<Delete><Object><Key>\xED\xA0\x80</Key></Object></Delete>",
           "<Delete><Object><Key>\xC0\xAF</Key></Object></Delete>",
       }) {
    SCOPED_TRACE(::testing::PrintToString(doc));
    Result<XmlDeleteRequest> d = ParseDeleteObjects(doc);
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().field(), "xml");
  }
}

TEST(S3Xml, ParsesCompleteMultipartUpload) {
  Result<std::vector<XmlPart>> parts = ParseCompleteMultipartUpload(
      "<?xml version=\"1.0\"?>\n<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/"
      "2006-03-01/\"><Part><ETag>\"abc\"</ETag><PartNumber>1</PartNumber></Part>"
      "<Part><PartNumber> 2 </PartNumber><ETag>&quot;def&quot;</ETag><ChecksumCRC32>x"
      "</ChecksumCRC32></Part><!-- comment --></CompleteMultipartUpload>");
  ASSERT_TRUE(parts.has_value()) << parts.error();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].part_number, 1u);
  EXPECT_EQ((*parts)[0].etag, "abc");
  EXPECT_EQ((*parts)[1].part_number, 2u);
  EXPECT_EQ((*parts)[1].etag, "def");
  // The part's checksum element, for the completion's checksum of checksums.
  EXPECT_EQ((*parts)[0].checksum_algorithm, "");
  EXPECT_EQ((*parts)[1].checksum_algorithm, "CRC32");
  EXPECT_EQ((*parts)[1].checksum, "x");
  Result<std::vector<XmlPart>> two = ParseCompleteMultipartUpload(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>a</ETag>"
      "<ChecksumCRC32>x</ChecksumCRC32><ChecksumSHA1>y</ChecksumSHA1></Part>"
      "</CompleteMultipartUpload>");
  ASSERT_FALSE(two.has_value());
  EXPECT_EQ(two.error().field(), "xml");
}

TEST(S3Xml, ParsesDeleteObjects) {
  Result<XmlDeleteRequest> d = ParseDeleteObjects(
      "<Delete><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object>"
      "<Object><Key><![CDATA[c<d]]></Key><VersionId>null</VersionId></Object>"
      "<Object><Key>&#x20AC;&#65;</Key></Object></Delete>");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_TRUE(d->quiet);
  ASSERT_EQ(d->keys.size(), 3u);
  EXPECT_EQ(d->keys[0], "a&b");
  EXPECT_EQ(d->keys[1], "c<d");
  EXPECT_EQ(d->keys[2],
            "\xE2\x82\xAC"
            "A");
  Result<std::string> loc = ParseCreateBucketConfiguration(
      "<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
      "</CreateBucketConfiguration>");
  ASSERT_TRUE(loc.has_value());
  EXPECT_EQ(*loc, "eu-west-1");
}

TEST(S3Xml, RefusesMalformedDocuments) {
  for (std::string_view doc : {
           "",
           "<Delete>",
           "<Delete></Remove>",
           "<Delete><Object><Key>a</Key></Object></Delete>trailing",
           "<Delete><Object><Key>a</Key></Object></Delete><Delete/>",
           "<!DOCTYPE x [<!ENTITY a \"b\">]><Delete/>",
           "<Delete>&unknown;</Delete>",
           "<Delete>&#0;</Delete>",
           "<Delete>&#xD800;</Delete>",
           "<Delete a=b/>",
           "<Delete><?pi x?></Delete>",
           "<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>",
           "<Delete></Delete>",
           "<Delete><Object></Object></Delete>",
           "<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part>"
           "</CompleteMultipartUpload>",
       }) {
    SCOPED_TRACE(doc);
    Result<XmlDeleteRequest> d = ParseDeleteObjects(doc);
    EXPECT_FALSE(d.has_value());
    if (!d.has_value()) {
      EXPECT_EQ(d.error().field(), "xml");
    }
  }
}

TEST(S3Xml, BoundsDepthAndNodes) {
  std::string deep;
  for (int i = 0; i < 100; ++i) {
    deep += "<a>";
  }
  EXPECT_FALSE(ParseXml(deep).has_value());
  std::string wide = "<Delete>";
  for (uint32_t i = 0; i <= kMaxXmlNodes; ++i) {
    wide += "<x/>";
  }
  wide += "</Delete>";
  EXPECT_FALSE(ParseXml(wide).has_value());
  std::string many = "<Delete>";
  for (size_t i = 0; i <= kMaxDeleteKeys; ++i) {
    many += "<Object><Key>k</Key></Object>";
  }
  many += "</Delete>";
  EXPECT_FALSE(ParseDeleteObjects(many).has_value());
}

}  // namespace
}  // namespace oc::gateway
