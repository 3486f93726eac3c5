// S3 bucket lifecycle configurations (gateway/src/s3/s3_lifecycle.h): parsing of every filter
// form and action served, S3's validation (ID length and uniqueness, rule count, Days > 0, Date
// at midnight UTC, exactly one of Prefix/Filter, Status, an action per rule, sizes), the
// refused versioning elements naming themselves, the body botocore sends and the answer it
// reads back, generated rule IDs, the render/parse round trip, the rule matcher, due times
// rounded up to a lifecycle day and the x-amz-expiration value.

#include "s3/s3_lifecycle.h"

#include <gtest/gtest.h>

#include <string>

namespace oc::gateway {
namespace {

constexpr int64_t kDay = 86400000;

std::string Doc(std::string_view rules) {
  return "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" +
         std::string(rules) + "</LifecycleConfiguration>";
}
std::string Rule(std::string_view inner) { return "<Rule>" + std::string(inner) + "</Rule>"; }
constexpr std::string_view kExpire1 =
    "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration>";

// The refusal of `body`: its kind and the element it names.
std::pair<LifecycleErrorKind, std::string> Refusal(const std::string& body) {
  Result<LifecycleConfiguration> c = ParseLifecycleXml(body);
  EXPECT_FALSE(c.has_value()) << body;
  if (c.has_value()) {
    return {LifecycleErrorKind::kInvalidArgument, "<parsed>"};
  }
  EXPECT_EQ(c.error().code(), Code::kInvalidArgument);
  return {ClassifyLifecycleError(c.error()), std::string(c.error().field())};
}

TEST(S3Lifecycle, ParsesEveryFilterFormAndAction) {
  const std::string body = Doc(
      Rule("<ID>legacy</ID><Prefix>logs/</Prefix><Status>Enabled</Status>"
           "<Expiration><Days>3</Days></Expiration>") +
      Rule("<ID>tag</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
           "<Status>Disabled</Status><Expiration><Date>2026-12-01T00:00:00Z</Date></Expiration>") +
      Rule("<ID>and</ID><Filter><And><Prefix>a/</Prefix><Tag><Key>x</Key><Value></Value></Tag>"
           "<ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
           "<ObjectSizeLessThan>100</ObjectSizeLessThan></And></Filter>"
           "<Status>Enabled</Status><Expiration><Days>2</Days></Expiration>") +
      Rule("<ID>mpu</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status>"
           "<AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation>"
           "</AbortIncompleteMultipartUpload>") +
      Rule("<ID>all</ID><Filter/><Status>Enabled</Status>"
           "<Expiration><Days>30</Days></Expiration>") +
      Rule("<ID>big</ID><Filter><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></Filter>" +
           std::string(kExpire1)));
  Result<LifecycleConfiguration> c = ParseLifecycleXml(body);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_EQ(c->rules.size(), 6u);
  const LifecycleRule& legacy = c->rules[0];
  EXPECT_EQ(legacy.form, LifecycleFilterForm::kRulePrefix);
  EXPECT_EQ(legacy.prefix, "logs/");
  EXPECT_TRUE(legacy.enabled);
  EXPECT_EQ(legacy.expiration_days, 3u);
  const LifecycleRule& tag = c->rules[1];
  EXPECT_EQ(tag.form, LifecycleFilterForm::kTag);
  EXPECT_FALSE(tag.enabled);
  EXPECT_EQ(tag.tags, (TagSet{{"k", "v"}}));
  EXPECT_EQ(tag.expiration_date_ms, int64_t{1796083200000});
  const LifecycleRule& both = c->rules[2];
  EXPECT_EQ(both.form, LifecycleFilterForm::kAnd);
  EXPECT_EQ(both.prefix, "a/");
  EXPECT_EQ(both.tags, (TagSet{{"x", ""}}));
  EXPECT_EQ(both.size_greater_than, 10u);
  EXPECT_EQ(both.size_less_than, 100u);
  EXPECT_EQ(c->rules[3].abort_days, 7u);
  EXPECT_EQ(c->rules[3].prefix, "up/");
  EXPECT_EQ(c->rules[4].form, LifecycleFilterForm::kEmpty);
  EXPECT_EQ(c->rules[5].form, LifecycleFilterForm::kSizeGreater);

  // What Get answers parses back to the same configuration.
  Result<LifecycleConfiguration> again = ParseLifecycleXml(LifecycleXml(*c));
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(*again, *c);
}

// The body botocore 1.43 serializes for put_bucket_lifecycle_configuration (its rest-xml
// serializer, recorded): the And filter, the rule-level Prefix, a timestamp Date, an upload
// rule and an empty Filter written "<Filter />".
constexpr std::string_view kBotocoreBody =
    "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Rule><ID>r1</ID>"
    "<Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
    "<ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>100"
    "</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration><Days>2</Days>"
    "</Expiration></Rule><Rule><ID>r2</ID><Prefix>p/</Prefix><Status>Enabled</Status>"
    "<Expiration><Date>2026-12-01T00:00:00Z</Date></Expiration></Rule><Rule><ID>r3</ID><Filter>"
    "<Prefix>up/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload>"
    "<DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule><Rule>"
    "<ID>r4</ID><Filter /><Status>Disabled</Status><Expiration><Days>5</Days></Expiration>"
    "</Rule></LifecycleConfiguration>";

TEST(S3Lifecycle, ParsesWhatBotocoreSends) {
  Result<LifecycleConfiguration> c = ParseLifecycleXml(kBotocoreBody);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_EQ(c->rules.size(), 4u);
  EXPECT_EQ(c->rules[0].form, LifecycleFilterForm::kAnd);
  EXPECT_EQ(c->rules[0].size_less_than, 100u);
  EXPECT_EQ(c->rules[1].form, LifecycleFilterForm::kRulePrefix);
  EXPECT_EQ(c->rules[1].expiration_date_ms, int64_t{1796083200000});
  EXPECT_EQ(c->rules[2].abort_days, 1u);
  EXPECT_EQ(c->rules[3].form, LifecycleFilterForm::kEmpty);
  EXPECT_FALSE(c->rules[3].enabled);
  // What Get answers; botocore 1.43's rest-xml parser reads it back to the rules it sent
  // (checked by hand when this was recorded). Only the Date gains milliseconds and the empty
  // Filter is written open and closed.
  std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + std::string(kBotocoreBody);
  const auto swap = [&expected](std::string_view from, std::string_view to) {
    expected.replace(expected.find(from), from.size(), to);
  };
  swap("<Filter />", "<Filter></Filter>");
  swap("T00:00:00Z", "T00:00:00.000Z");
  EXPECT_EQ(LifecycleXml(*c), expected);
}

TEST(S3Lifecycle, RefusesAsS3Does) {
  using K = LifecycleErrorKind;
  const std::string days = "<Expiration><Days>1</Days></Expiration>";
  EXPECT_EQ(Refusal("not xml"), std::make_pair(K::kMalformedXML, std::string("xml")));
  EXPECT_EQ(Refusal(Doc("")).first, K::kMalformedXML);
  EXPECT_EQ(
      Refusal(Doc(Rule("<ID>" + std::string(256, 'i') + "</ID><Filter/>" + std::string(kExpire1)))),
      std::make_pair(K::kInvalidArgument, std::string("ID")));
  EXPECT_TRUE(ParseLifecycleXml(Doc(Rule("<ID>" + std::string(255, 'i') + "</ID><Filter/>" +
                                         std::string(kExpire1))))
                  .has_value());
  const std::string two_same = Rule("<ID>a</ID><Filter/>" + std::string(kExpire1));
  EXPECT_EQ(Refusal(Doc(two_same + two_same)).second, "ID");
  std::string many;
  for (int i = 0; i < 1001; ++i) {
    many += Rule("<ID>r" + std::to_string(i) + "</ID><Filter/>" + std::string(kExpire1));
  }
  EXPECT_EQ(Refusal(Doc(many)).first, K::kMalformedXML);
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/><Status>Enabled</Status><Expiration><Days>0</Days>"
                             "</Expiration>"))),
            std::make_pair(K::kInvalidArgument, std::string("Days")));
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/><Status>Enabled</Status><Expiration><Days>-1</Days>"
                             "</Expiration>")))
                .first,
            K::kMalformedXML);
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/><Status>Enabled</Status><Expiration>"
                             "<Date>2026-12-01T10:00:00Z</Date></Expiration>"))),
            std::make_pair(K::kInvalidArgument, std::string("Date")));
  // Both Prefix and Filter, or neither.
  EXPECT_EQ(Refusal(Doc(Rule("<Prefix/><Filter/>" + std::string(kExpire1)))).first,
            K::kMalformedXML);
  EXPECT_EQ(Refusal(Doc(Rule(std::string(kExpire1)))).first, K::kMalformedXML);
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/><Status>On</Status>" + days))).first, K::kMalformedXML);
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/>" + days))).first, K::kMalformedXML);  // no Status
  EXPECT_EQ(Refusal(Doc(Rule("<Filter/><Status>Enabled</Status>"))),
            std::make_pair(K::kInvalidRequest, std::string("Rule")));
  EXPECT_EQ(Refusal(Doc(Rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
                             "<Status>Enabled</Status><AbortIncompleteMultipartUpload>"
                             "<DaysAfterInitiation>1</DaysAfterInitiation>"
                             "</AbortIncompleteMultipartUpload>")))
                .first,
            K::kInvalidRequest);
  EXPECT_EQ(Refusal(Doc(Rule("<Filter><And><ObjectSizeGreaterThan>9</ObjectSizeGreaterThan>"
                             "<ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter>" +
                             std::string(kExpire1))))
                .second,
            "ObjectSizeLessThan");
  EXPECT_EQ(
      Refusal(Doc(Rule("<Filter><And><Prefix>a</Prefix></And></Filter>" + std::string(kExpire1))))
          .first,
      K::kMalformedXML);  // And of one predicate
  EXPECT_EQ(Refusal(Doc(Rule("<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value/></Tag>"
                             "</Filter>" +
                             std::string(kExpire1))))
                .first,
            K::kMalformedXML);  // two predicates without And
  EXPECT_EQ(Refusal(Doc(Rule("<Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k"
                             "</Key><Value>2</Value></Tag></And></Filter>" +
                             std::string(kExpire1))))
                .second,
            "Tag");
}

TEST(S3Lifecycle, RefusesVersioningElementsNamingThem) {
  const auto refusal = [](std::string_view action) {
    return Refusal(Doc(Rule("<Filter/><Status>Enabled</Status>" + std::string(action))));
  };
  using K = LifecycleErrorKind;
  EXPECT_EQ(refusal("<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
                    "</NoncurrentVersionExpiration>"),
            std::make_pair(K::kInvalidArgument, std::string("NoncurrentVersionExpiration")));
  EXPECT_EQ(refusal("<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays>"
                    "<StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>")
                .second,
            "NoncurrentVersionTransition");
  EXPECT_EQ(refusal("<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>"
                    "</Expiration>"),
            std::make_pair(K::kInvalidArgument, std::string("ExpiredObjectDeleteMarker")));
  EXPECT_EQ(refusal("<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass>"
                    "</Transition>")
                .second,
            "Transition");
}

TEST(S3Lifecycle, MatchesPrefixTagsAndStrictSizes) {
  LifecycleRule rule;
  rule.prefix = "a/";
  rule.tags = {{"t", "1"}};
  rule.size_greater_than = 10;
  rule.size_less_than = 20;
  const TagSet tagged = {{"o", "x"}, {"t", "1"}};
  EXPECT_TRUE(RuleMatchesObject(rule, "a/k", 11, tagged));
  EXPECT_FALSE(RuleMatchesObject(rule, "b/k", 11, tagged));
  EXPECT_FALSE(RuleMatchesObject(rule, "a/k", 11, {{"t", "2"}}));
  EXPECT_FALSE(RuleMatchesObject(rule, "a/k", 10, tagged));  // strictly greater
  EXPECT_FALSE(RuleMatchesObject(rule, "a/k", 20, tagged));  // strictly less
  EXPECT_TRUE(RuleMatchesObject(rule, "a/k", 19, tagged));
  EXPECT_FALSE(RuleMatchesUpload(rule, "a/k"));  // a rule with tags never selects uploads
  rule.tags.clear();
  EXPECT_TRUE(RuleMatchesUpload(rule, "a/k"));
  EXPECT_FALSE(RuleMatchesUpload(rule, "b/k"));
}

TEST(S3Lifecycle, DueTimesRoundUpToTheNextLifecycleDay) {
  // S3's example: created 2014-01-15 10:30 UTC, Days 3 -> 2014-01-19 00:00 UTC.
  const int64_t created = 1389781800000;                       // 2014-01-15T10:30:00Z
  EXPECT_EQ(LifecycleDueMs(created, 3, kDay), 1390089600000);  // 2014-01-19T00:00:00Z
  EXPECT_EQ(LifecycleDueMs(1389744000000, 3, kDay), 1389744000000 + 3 * kDay);  // at midnight
  // A 2 s lifecycle day: 1.5 s + 1 day = 3.5 s -> 4 s.
  EXPECT_EQ(LifecycleDueMs(1500, 1, 2000), 4000);

  LifecycleConfiguration c;
  Result<LifecycleConfiguration> parsed = ParseLifecycleXml(
      Doc(Rule("<ID>short</ID><Filter><Prefix>a</Prefix></Filter><Status>Enabled</Status>"
               "<Expiration><Days>1</Days></Expiration>") +
          Rule("<ID>long</ID><Filter/><Status>Enabled</Status><Expiration><Days>5</Days>"
               "</Expiration>") +
          Rule("<ID>off</ID><Filter/><Status>Disabled</Status><Expiration><Days>1</Days>"
               "</Expiration>") +
          Rule("<ID>mpu</ID><Filter/><Status>Enabled</Status><AbortIncompleteMultipartUpload>"
               "<DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>")));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  c = *parsed;
  EXPECT_EQ(ObjectExpiry(c, "ak", 1, {}, created, kDay),
            (LifecycleExpiry{1389916800000, "short"}));  // 2014-01-17
  EXPECT_EQ(ObjectExpiry(c, "bk", 1, {}, created, kDay),
            (LifecycleExpiry{created - 37800000 + 6 * kDay, "long"}));
  EXPECT_EQ(UploadAbortDue(c, "x", created, kDay),
            (LifecycleExpiry{created - 37800000 + 3 * kDay, "mpu"}));
  c.rules[1].enabled = false;
  EXPECT_EQ(ObjectExpiry(c, "bk", 1, {}, created, kDay), std::nullopt);
}

TEST(S3Lifecycle, FillsMissingIdsWithoutCollisions) {
  Result<LifecycleConfiguration> c =
      ParseLifecycleXml(Doc(Rule("<Prefix>a</Prefix>" + std::string(kExpire1)) +
                            Rule("<ID>id1</ID><Prefix>b</Prefix>" + std::string(kExpire1)) +
                            Rule("<Prefix>c</Prefix>" + std::string(kExpire1))));
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  int n = 0;
  // Offers "id1" (taken) first, then "id2", "id3".
  FillMissingRuleIds(&*c, [&n] { return "id" + std::to_string(++n); });
  EXPECT_EQ(c->rules[0].id, "id2");
  EXPECT_EQ(c->rules[1].id, "id1");
  EXPECT_EQ(c->rules[2].id, "id3");
  Result<LifecycleConfiguration> again = ParseLifecycleXml(LifecycleXml(*c));
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(*again, *c);
}

TEST(S3Lifecycle, ExpirationHeaderAsS3WritesIt) {
  EXPECT_EQ(ExpirationHeader({1356220800000, "picture-deletion-rule"}),
            "expiry-date=\"Sun, 23 Dec 2012 00:00:00 GMT\", rule-id=\"picture-deletion-rule\"");
  // An ID cannot end the quoted string or the header line.
  EXPECT_EQ(ExpirationHeader({0, "a\"b\\c\r\nX-Evil: 1"}),
            "expiry-date=\"Thu, 01 Jan 1970 00:00:00 GMT\", rule-id=\"a\\\"b\\\\c??X-Evil: 1\"");
}

TEST(S3Lifecycle, ParsesIso8601InUtcOnly) {
  EXPECT_EQ(ParseIso8601Utc("2026-12-01T00:00:00Z"), int64_t{1796083200000});
  EXPECT_EQ(ParseIso8601Utc("2026-12-01T00:00:00.000Z"), int64_t{1796083200000});
  EXPECT_EQ(ParseIso8601Utc("2026-12-01T00:00:00+00:00"), int64_t{1796083200000});
  EXPECT_EQ(ParseIso8601Utc("2026-12-01T00:00:00+01:00"), std::nullopt);
  EXPECT_EQ(ParseIso8601Utc("2026-02-30T00:00:00Z"), std::nullopt);
  EXPECT_EQ(ParseIso8601Utc("2026-12-01"), std::nullopt);
}

}  // namespace
}  // namespace oc::gateway
