// Dates, ETag lists, base64 and the conditional-request precedence (RFC 7232 section 6).
#include "s3/s3_headers.h"

#include <gtest/gtest.h>

namespace oc::gateway {
namespace {

constexpr int64_t kMtimeMs = 784111777000;  // Sun, 06 Nov 1994 08:49:37 GMT

TEST(S3Headers, FormatsAndParsesDates) {
  EXPECT_EQ(FormatHttpDate(kMtimeMs), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(FormatIso8601(kMtimeMs + 250), "1994-11-06T08:49:37.250Z");
  for (std::string_view d : {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                             "Sun Nov  6 08:49:37 1994"}) {
    SCOPED_TRACE(d);
    EXPECT_EQ(ParseHttpDate(d), kMtimeMs / 1000);
  }
  for (std::string_view d : {"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC",
                             "Sun, 36 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT"}) {
    SCOPED_TRACE(d);
    EXPECT_FALSE(ParseHttpDate(d).has_value());
  }
}

TEST(S3Headers, MatchesEtagLists) {
  EXPECT_TRUE(EtagListMatches("\"abc\"", "abc"));
  EXPECT_TRUE(EtagListMatches("abc", "abc"));
  EXPECT_TRUE(EtagListMatches("*", "abc"));
  EXPECT_TRUE(EtagListMatches("\"x\", W/\"abc\"", "abc"));
  EXPECT_FALSE(EtagListMatches("\"abcd\"", "abc"));
  EXPECT_FALSE(EtagListMatches("", "abc"));
}

TEST(S3Headers, ConditionalPrecedence) {
  const std::string_view kEtag = "abc";
  const std::string_view kBefore = "Sat, 05 Nov 1994 08:49:37 GMT";
  const std::string_view kSame = "Sun, 06 Nov 1994 08:49:37 GMT";
  const std::string_view kAfter = "Mon, 07 Nov 1994 08:49:37 GMT";
  using O = ConditionOutcome;
  struct Row {
    const char* name;
    Conditions c;
    O get;
    O copy;
  };
  const Row rows[] = {
      {"none", {}, O::kProceed, O::kProceed},
      {"if-match hit", {.if_match = "\"abc\""}, O::kProceed, O::kProceed},
      {"if-match miss", {.if_match = "\"zzz\""}, O::kPreconditionFailed, O::kPreconditionFailed},
      {"if-match hit beats unmodified-since miss",
       {.if_match = "\"abc\"", .if_unmodified_since = kBefore},
       O::kProceed,
       O::kProceed},
      {"unmodified-since miss",
       {.if_unmodified_since = kBefore},
       O::kPreconditionFailed,
       O::kPreconditionFailed},
      {"unmodified-since same second", {.if_unmodified_since = kSame}, O::kProceed, O::kProceed},
      {"none-match hit", {.if_none_match = "\"abc\""}, O::kNotModified, O::kPreconditionFailed},
      {"none-match star", {.if_none_match = "*"}, O::kNotModified, O::kPreconditionFailed},
      {"none-match miss beats modified-since not-modified",
       {.if_none_match = "\"zzz\"", .if_modified_since = kAfter},
       O::kProceed,
       O::kProceed},
      {"modified-since after",
       {.if_modified_since = kAfter},
       O::kNotModified,
       O::kPreconditionFailed},
      {"modified-since same",
       {.if_modified_since = kSame},
       O::kNotModified,
       O::kPreconditionFailed},
      {"modified-since before", {.if_modified_since = kBefore}, O::kProceed, O::kProceed},
      {"modified-since garbage ignored",
       {.if_modified_since = "garbage"},
       O::kProceed,
       O::kProceed},
      {"if-match miss beats none-match",
       {.if_match = "\"zzz\"", .if_none_match = "\"abc\""},
       O::kPreconditionFailed,
       O::kPreconditionFailed},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(EvaluateConditions(row.c, kEtag, kMtimeMs + 400), row.get);
    EXPECT_EQ(EvaluateConditions(row.c, kEtag, kMtimeMs + 400, /*copy_source=*/true), row.copy);
  }
}

TEST(S3Headers, Base64) {
  EXPECT_EQ(Base64Decode("AAECAw=="), std::string("\x00\x01\x02\x03", 4));
  EXPECT_EQ(Base64Decode("YWJj"), "abc");
  EXPECT_EQ(Base64Decode("YWI="), "ab");
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  for (std::string_view bad : {"YWJ", "YW=j", "Y===", "YWJj!", "=AAA"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(Base64Decode(bad).has_value());
  }
}

}  // namespace
}  // namespace oc::gateway
