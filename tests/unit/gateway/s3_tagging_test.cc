// S3 object tagging's parsing and limits (gateway/src/s3/s3_tagging.h): the x-amz-tagging
// header in query form, the <Tagging> body, S3's limits (10 tags, keys 1..128 and values
// 0..256 characters, unique keys) counted in Unicode characters, and the GetObjectTagging XML.

#include "s3/s3_tagging.h"

#include <gtest/gtest.h>

#include <string>

namespace oc::gateway {
namespace {

std::string Repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += s;
  }
  return out;
}

TEST(S3Tagging, HeaderIsDecodedAsAQueryString) {
  struct Row {
    std::string_view header;
    TagSet want;
  };
  for (const Row& row : {
           Row{"", {}},
           Row{"a=1", {{"a", "1"}}},
           Row{"a=1&b=two+words&c=%2B%26%3D", {{"a", "1"}, {"b", "two words"}, {"c", "+&="}}},
           Row{"empty=&novalue", {{"empty", ""}, {"novalue", ""}}},
           Row{"k%C3%A9y=v%C3%A4lue&&", {{"k\xC3\xA9y", "v\xC3\xA4lue"}}},
       }) {
    SCOPED_TRACE(row.header);
    Result<TagSet> tags = ParseTaggingHeader(row.header);
    ASSERT_TRUE(tags.has_value()) << tags.error();
    EXPECT_EQ(*tags, row.want);
  }
}

TEST(S3Tagging, LimitsAreS3sCountedInCharacters) {
  const std::string e_acute = "\xC3\xA9";  // one character, two bytes
  struct Row {
    std::string_view what;
    TagSet tags;
    bool ok;
  };
  TagSet ten;
  TagSet eleven;
  for (int i = 0; i < 11; ++i) {
    (i < 10 ? ten : eleven).emplace_back("k" + std::to_string(i), "v");
  }
  eleven.insert(eleven.begin(), ten.begin(), ten.end());
  for (const Row& row : {
           Row{"ten tags", ten, true},
           Row{"eleven tags", eleven, false},
           Row{"key of 128 two-byte characters", {{Repeat(e_acute, 128), "v"}}, true},
           Row{"key of 129 characters", {{Repeat("k", 129), "v"}}, false},
           Row{"empty key", {{"", "v"}}, false},
           Row{"value of 256 two-byte characters", {{"k", Repeat(e_acute, 256)}}, true},
           Row{"value of 257 characters", {{"k", Repeat("v", 257)}}, false},
           Row{"empty value", {{"k", ""}}, true},
           Row{"repeated key", {{"k", "1"}, {"k", "2"}}, false},
           Row{"not UTF-8", {{"k\xFF", "v"}}, false},
           // Found by s3_tagging_fuzz: GetObjectTagging could not write them back as XML.
           Row{"control character in a key", {{"c\x01", "v"}}, false},
           Row{"tab in a value", {{"k", "a\tb"}}, false},
           Row{"DEL in a value", {{"k", "\x7f"}}, false},
       }) {
    SCOPED_TRACE(row.what);
    Status s = CheckTags(row.tags, "Tagging");
    EXPECT_EQ(s.ok(), row.ok) << s;
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Code::kInvalidArgument);
      EXPECT_EQ(s.field(), "Tagging");
    }
  }
  Result<TagSet> header = ParseTaggingHeader("a=1&a=2");
  ASSERT_FALSE(header.has_value());
  EXPECT_EQ(header.error().field(), "x-amz-tagging");
  EXPECT_FALSE(ParseTaggingHeader("a=%zz").has_value());
  EXPECT_FALSE(ParseTaggingHeader("a=b&c%01=d").has_value());
  EXPECT_FALSE(ParseTaggingHeader(Repeat("k=v&", 11)).has_value());
}

TEST(S3Tagging, BodyRoundTripsAndMalformedBodiesAreMalformedXml) {
  const TagSet tags = {{"project", "kv <cache> & more"}, {"empty", ""}};
  const std::string xml = TaggingXml(tags);
  EXPECT_NE(xml.find("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag>"
                     "<Key>project</Key><Value>kv &lt;cache&gt; &amp; more</Value></Tag>"),
            std::string::npos)
      << xml;
  Result<TagSet> back = ParseTaggingXml(xml);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, tags);
  Result<TagSet> none = ParseTaggingXml("<Tagging><TagSet/></Tagging>");
  ASSERT_TRUE(none.has_value()) << none.error();
  EXPECT_TRUE(none->empty());
  for (std::string_view body : {"", "<Tagging>", "<Other><TagSet/></Other>", "<Tagging/>",
                                "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
                                "<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
                                "<Tagging><TagSet><Other/></TagSet></Tagging>"}) {
    SCOPED_TRACE(body);
    Result<TagSet> r = ParseTaggingXml(body);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), kTaggingXmlField);
  }
  // Well-formed, over a limit: InvalidTag, not MalformedXML.
  Result<TagSet> dup = ParseTaggingXml(
      "<Tagging><TagSet><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value>"
      "</Tag></TagSet></Tagging>");
  ASSERT_FALSE(dup.has_value());
  EXPECT_EQ(dup.error().field(), "Tagging");
  std::string eleven = "<Tagging><TagSet>";
  for (int i = 0; i < 11; ++i) {
    eleven += "<Tag><Key>k" + std::to_string(i) + "</Key><Value>v</Value></Tag>";
  }
  eleven += "</TagSet></Tagging>";
  Result<TagSet> many = ParseTaggingXml(eleven);
  ASSERT_FALSE(many.has_value());
  EXPECT_EQ(many.error().field(), "Tagging");
}

}  // namespace
}  // namespace oc::gateway
