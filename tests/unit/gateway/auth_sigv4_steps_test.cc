// The SigV4 steps of oc_sigv4 that the verifier builds on, against AWS's published values:
// canonical request and string to sign, signing key, canonical URI, query and headers, and
// parsing the Authorization header.
#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auth_sigv4_test_util.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using testing::OwnedRequest;

TEST_F(SigV4Test, BuildsThePublishedCanonicalRequestAndStringToSign) {
  const testing::HeaderVector v = testing::AwsHeaderVectors()[0];
  const OwnedRequest req = FromVector(v);
  const std::vector<std::string> names = testing::SplitSigned(v.signed_headers);
  Result<std::string> headers = sigv4::CanonicalHeaders(req.View(), names, "Authorization");
  ASSERT_TRUE(headers.has_value()) << headers.error();
  const std::string canonical = sigv4::CanonicalRequest(
      "GET", sigv4::CanonicalUri("/test.txt").value(), sigv4::CanonicalQuery("", false).value(),
      *headers, names, testing::kEmptyHash);
  EXPECT_EQ(canonical, v.canonical_request);
  EXPECT_EQ(sigv4::StringToSign(testing::kAwsDate, testing::kAwsScope, canonical),
            testing::kAwsGetStringToSign);
}

// AWS General Reference, "Examples of how to derive a signing key for Signature Version 4"
// (secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, 20120215, us-east-1, iam).
TEST(SigV4Steps, DerivesThePublishedSigningKey) {
  EXPECT_EQ(sigv4::DigestHex(sigv4::DeriveSigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                                     "20120215", "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST(SigV4Steps, CanonicalUriEncodesOnceAndNormalisesEscapes) {
  struct Row {
    std::string_view raw;
    std::string_view canonical;
  };
  for (const Row& row :
       {Row{"", "/"}, Row{"/", "/"}, Row{"/test.txt", "/test.txt"},
        Row{"/test%24file.text", "/test%24file.text"}, Row{"/test$file.text", "/test%24file.text"},
        Row{"/a%7eb", "/a~b"}, Row{"/a%7Eb", "/a~b"}, Row{"/%e2%82%ac", "/%E2%82%AC"},
        Row{"/a+b", "/a%2Bb"}, Row{"/a%20b/c", "/a%20b/c"}, Row{"/a%2Fb", "/a/b"},
        Row{"/a//b/./../c", "/a//b/./../c"}, Row{"/%25", "/%25"}}) {
    SCOPED_TRACE(row.raw);
    Result<std::string> c = sigv4::CanonicalUri(row.raw);
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(*c, row.canonical);
  }
  for (std::string_view bad : {"/%", "/%4", "/%G1", "/%%"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(sigv4::CanonicalUri(bad).has_value());
  }
}

TEST(SigV4Steps, CanonicalQuerySortsByNameThenValueWithRfc3986Encoding) {
  struct Row {
    std::string_view raw;
    bool skip_signature;
    std::string_view canonical;
  };
  for (const Row& row :
       {Row{"", false, ""}, Row{"max-keys=2&prefix=J", false, "max-keys=2&prefix=J"},
        Row{"prefix=J&max-keys=2", false, "max-keys=2&prefix=J"},
        Row{"lifecycle", false, "lifecycle="}, Row{"a=2&a=1&A=3", false, "A=3&a=1&a=2"},
        Row{"a=x%2fy", false, "a=x%2Fy"}, Row{"a=x/y", false, "a=x%2Fy"},
        Row{"a=b+c", false, "a=b%2Bc"}, Row{"a=%7e", false, "a=~"}, Row{"&&a=1&", false, "a=1"},
        Row{"a=b=c", false, "a=b%3Dc"}, Row{"X-Amz-Signature=abc&b=1", true, "b=1"},
        Row{"X-Amz-Signature=abc&b=1", false, "X-Amz-Signature=abc&b=1"}}) {
    SCOPED_TRACE(row.raw);
    Result<std::string> c = sigv4::CanonicalQuery(row.raw, row.skip_signature);
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(*c, row.canonical);
  }
  EXPECT_FALSE(sigv4::CanonicalQuery("a=%zz", false).has_value());
}

TEST(SigV4Steps, CanonicalHeadersTrimFoldAndJoinRepeats) {
  RequestView req{"GET",
                  "/",
                  {{"Host", "h"},
                   {"X-Amz-Meta-A", "  a   b \t c  "},
                   {"x-amz-meta-b", "1"},
                   {"X-AMZ-META-B", " 2 "}}};
  Result<std::string> c =
      sigv4::CanonicalHeaders(req, {"host", "x-amz-meta-a", "x-amz-meta-b"}, "f");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(*c, "host:h\nx-amz-meta-a:a b c\nx-amz-meta-b:1,2\n");
  Result<std::string> missing = sigv4::CanonicalHeaders(req, {"host", "range"}, "f");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().field(), "f");
}

TEST(SigV4Steps, ParseAuthorizationAcceptsSpacingVariants) {
  for (std::string_view value :
       {"AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,"
        "Signature=0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 "
        "Signature=0000000000000000000000000000000000000000000000000000000000000000"
        ",  SignedHeaders=host ,Credential=AK/20130524/us-east-1/s3/aws4_request  "}) {
    SCOPED_TRACE(value);
    Result<AuthorizationHeader> a = ParseAuthorization(value);
    ASSERT_TRUE(a.has_value()) << a.error();
    EXPECT_EQ(a->credential.access_key, "AK");
    EXPECT_EQ(a->credential.Scope(), "20130524/us-east-1/s3/aws4_request");
    EXPECT_EQ(a->signed_headers, std::vector<std::string>{"host"});
  }
}

}  // namespace
}  // namespace oc::gateway::auth
