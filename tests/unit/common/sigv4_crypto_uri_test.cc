// oc_sigv4: the URI helpers, the crypto wrappers, and SignRequest against AWS's published
// GET Object example (the signer and verifier are cross-checked on every AWS vector in
// tests/unit/gateway/auth_sign_request_test.cc).
#include "oc/sigv4/uri.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "oc/common/text.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::sigv4 {
namespace {

TEST(Uri, EncodesAllButUnreservedWithUppercaseHex) {
  EXPECT_EQ(UriEncode("AZaz09-._~", true), "AZaz09-._~");
  EXPECT_EQ(UriEncode("a b/c+d*e", true), "a%20b%2Fc%2Bd%2Ae");
  EXPECT_EQ(UriEncode("a b/c+d*e", false), "a%20b/c%2Bd%2Ae");
  EXPECT_EQ(UriEncode("\xe2\x82\xac", true), "%E2%82%AC");
  EXPECT_EQ(UriEncode(std::string("\0\xff", 2), true), "%00%FF");
}

TEST(Uri, RoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) {
    all.push_back(static_cast<char>(c));
  }
  EXPECT_EQ(PercentDecode(UriEncode(all, true)), all);
  EXPECT_EQ(PercentDecode(UriEncode(all, false)), all);
}

TEST(Uri, ParsesTargets) {
  Result<ParsedTarget> t = ParseTarget("/my%20bucket/a%2Fb/c?list-type=2&prefix=a%2Fb&&delimiter");
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t->raw_path, "/my%20bucket/a%2Fb/c");
  EXPECT_EQ(t->raw_query, "list-type=2&prefix=a%2Fb&&delimiter");
  EXPECT_EQ(t->path, "/my bucket/a/b/c");
  ASSERT_EQ(t->query.size(), 3u);
  EXPECT_EQ(t->query[0], (std::pair<std::string, std::string>{"list-type", "2"}));
  EXPECT_EQ(t->query[1], (std::pair<std::string, std::string>{"prefix", "a/b"}));
  EXPECT_EQ(t->query[2], (std::pair<std::string, std::string>{"delimiter", ""}));

  Result<ParsedTarget> bare = ParseTarget("/");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->path, "/");
  EXPECT_TRUE(bare->query.empty());

  for (std::string_view bad : {"", "bucket/key", "http://host/x", "/a%zz", "/a?b=%"}) {
    SCOPED_TRACE(bad);
    Result<ParsedTarget> r = ParseTarget(bad);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), "request-target");
  }
}

TEST(Crypto, Sha256KnownAnswersAndIncrementalUpdates) {
  EXPECT_EQ(Sha256Hex(""), kEmptySha256Hex);
  // FIPS 180-2 appendix B.1.
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("");
  h.Update("bc");
  EXPECT_EQ(DigestHex(h.Finish()), Sha256Hex("abc"));
  h.Reset();
  h.Update("abc");
  EXPECT_EQ(DigestHex(h.Finish()), Sha256Hex("abc"));
  Sha256 moved = std::move(h);
  moved.Reset();
  EXPECT_EQ(DigestHex(moved.Finish()), kEmptySha256Hex);
}

TEST(Crypto, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(DigestHex(HmacSha256(std::string_view("Jefe"), "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Crypto, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
}

// Amazon S3 API Reference, "Signature Calculations for the Authorization Header: Transferring
// Payload in a Single Chunk (AWS Signature Version 4)", example "GET Object".
TEST(SignRequest, ReproducesTheAwsGetObjectExample) {
  constexpr std::string_view kEmpty = kEmptySha256Hex;
  const RequestView req{"GET",
                        "/test.txt",
                        {{"Host", "examplebucket.s3.amazonaws.com"},
                         {"Range", "bytes=0-9"},
                         {"x-amz-content-sha256", kEmpty},
                         {"x-amz-date", "20130524T000000Z"}}};
  Result<std::string> authorization = SignRequest(
      req, "20130524T000000Z", kEmpty,
      {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"});
  ASSERT_TRUE(authorization.has_value()) << authorization.error();
  EXPECT_EQ(*authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SignRequest, RefusesAMalformedTarget) {
  const RequestView req{"GET", "/a%zz", {{"host", "h"}}};
  Result<std::string> r = SignRequest(req, "20130524T000000Z", kUnsignedPayload, {"k", "s", "r"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().field(), "request-target");
}

TEST(SignRequest, FormatsAmzDateInUtc) {
  using namespace std::chrono;
  EXPECT_EQ(FormatAmzDate(sys_days(year{2013} / May / 24) + hours(1) + minutes(2) + seconds(3)),
            "20130524T010203Z");
}

}  // namespace
}  // namespace oc::sigv4
