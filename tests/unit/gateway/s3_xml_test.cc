// The XML writer's escaping and the strict parser of the three request bodies.
#include "s3/s3_xml.h"

#include <gtest/gtest.h>

namespace oc::gateway {
namespace {

TEST(S3Xml, EscapesText) {
  std::string out;
  AppendXmlEscaped("a<b>&\"c'\x01\td", &out);
  EXPECT_EQ(out, "a&lt;b&gt;&amp;&quot;c&apos;&#x1;&#x9;d");
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
