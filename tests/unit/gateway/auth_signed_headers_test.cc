// The signing rule (sigv4.h CheckHeadersSigned, docs/protocol.md "Signing"): an x-amz-* or
// x-oc-* header outside SignedHeaders / X-Amz-SignedHeaders makes a signed request
// AccessDenied, whichever way it was signed; and a malformed presigned signature is
// SignatureDoesNotMatch, as S3 answers.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "auth/sigv4.h"
#include "auth_test_util.h"
#include "auth_vectors.h"

namespace oc::gateway::auth {
namespace {

using testing::AwsTime;
using testing::OwnedRequest;

void ExpectStatus(const Result<AuthResult>& r, Code code, Subject subject, std::string_view field) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), code) << r.error();
  EXPECT_EQ(r.error().subject(), subject) << r.error();
  EXPECT_EQ(r.error().field(), field) << r.error();
}

// A PUT signed by header auth with every header it carries (SignInPlace signs them all).
OwnedRequest SignedPut() {
  OwnedRequest req{"PUT",
                   "/bucket/key",
                   {{"Host", "127.0.0.1:9000"},
                    {"Content-Length", "0"},
                    {"x-amz-meta-owner", "alice"},
                    {"x-oc-version", "1"}}};
  testing::SignInPlace(&req, testing::kAwsDate);
  return req;
}

// GET /bucket/key presigned for X-Amz-SignedHeaders=host.
OwnedRequest PresignedGet() {
  OwnedRequest req{"GET", "/bucket/key", {{"Host", "127.0.0.1:9000"}}};
  testing::PresignInPlace(&req, "host");
  return req;
}

class SignedHeadersTest : public ::testing::Test {
 protected:
  Credentials creds_ = testing::AwsCredentials();
  Authenticator auth_{creds_, AuthOptions{}};
};

// Each header the hostile tester added after signing (docs/protocol.md "Signing"), any case.
struct Added {
  std::string_view name;
  std::string_view value;
  std::string_view field;  // lowercase, as reported
};
constexpr Added kAdded[] = {
    {"x-amz-meta-owner2", "mallory", "x-amz-meta-owner2"},
    {"X-Amz-Copy-Source", "/bucket/secret", "x-amz-copy-source"},
    {"x-amz-metadata-directive", "REPLACE", "x-amz-metadata-directive"},
    {"x-amz-decoded-content-length", "5", "x-amz-decoded-content-length"},
    {"x-amz-security-token", "token", "x-amz-security-token"},
    {"X-OC-Delivery", "chunk-major", "x-oc-delivery"},
    {"x-oc-target-address", "ucx:deadbeef", "x-oc-target-address"},
};

TEST_F(SignedHeadersTest, SignedRequestsWithEverySpecialHeaderSignedAreAccepted) {
  Result<AuthResult> r = auth_.Authenticate(SignedPut().View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  ASSERT_TRUE(auth_.Authenticate(PresignedGet().View(), AwsTime()).has_value());
  for (const Added& add : kAdded) {
    SCOPED_TRACE(add.name);
    OwnedRequest req = SignedPut();
    req.Remove("Authorization");
    req.headers.emplace_back(std::string(add.name), std::string(add.value));
    testing::SignInPlace(&req, testing::kAwsDate);  // now signed: allowed
    Result<AuthResult> signed_header = auth_.Authenticate(req.View(), AwsTime());
    EXPECT_TRUE(signed_header.has_value()) << signed_header.error();

    OwnedRequest presigned{"PUT", "/bucket/key", {{"Host", "127.0.0.1:9000"}}};
    presigned.headers.emplace_back(std::string(add.name), std::string(add.value));
    testing::PresignInPlace(&presigned, "host;" + std::string(add.field));
    Result<AuthResult> signed_query = auth_.Authenticate(presigned.View(), AwsTime());
    EXPECT_TRUE(signed_query.has_value()) << signed_query.error();
  }
}

TEST_F(SignedHeadersTest, HeaderAddedAfterHeaderSigningIsAccessDenied) {
  for (const Added& add : kAdded) {
    SCOPED_TRACE(add.name);
    OwnedRequest req = SignedPut();
    req.headers.emplace_back(std::string(add.name), std::string(add.value));
    const Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
    ASSERT_NO_FATAL_FAILURE(
        ExpectStatus(r, Code::kPermissionDenied, Subject::kSignature, add.field));
    EXPECT_NE(r.error().message().find(add.field), std::string_view::npos) << r.error();
  }
}

TEST_F(SignedHeadersTest, HeaderAddedToAPresignedUrlIsAccessDenied) {
  for (const Added& add : kAdded) {
    SCOPED_TRACE(add.name);
    OwnedRequest req = PresignedGet();
    req.headers.emplace_back(std::string(add.name), std::string(add.value));
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kPermissionDenied,
                 Subject::kSignature, add.field);
  }
  // The published AWS presigned URL too.
  OwnedRequest aws{"GET",
                   std::string(testing::kAwsPresignedTarget),
                   {{"Host", std::string(testing::kAwsPresignedHost)},
                    {"x-amz-copy-source", "/examplebucket/other"}}};
  ExpectStatus(auth_.Authenticate(aws.View(), AwsTime()), Code::kPermissionDenied,
               Subject::kSignature, "x-amz-copy-source");
}

TEST_F(SignedHeadersTest, ARepeatOfASignedHeaderIsCoveredAndBreaksTheSignature) {
  // A second x-amz-meta-owner joins the canonical value ("alice,mallory"): not AccessDenied
  // but a signature that no longer matches.
  OwnedRequest req = SignedPut();
  req.headers.emplace_back("X-Amz-Meta-Owner", "mallory");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
               Subject::kSignature, "");
}

TEST_F(SignedHeadersTest, TheSignatureIsCheckedFirst) {
  OwnedRequest req = SignedPut();
  std::string& authorization = req.headers.back().second;
  authorization.back() = authorization.back() == '0' ? '1' : '0';
  req.headers.emplace_back("x-amz-meta-owner2", "mallory");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
               Subject::kSignature, "");
}

TEST_F(SignedHeadersTest, ContentSha256MayBeUnsigned) {
  // Header auth: its value is the canonical request's payload line, signed or not.
  OwnedRequest req{"GET",
                   "/bucket/key",
                   {{"Host", "127.0.0.1:9000"},
                    {"x-amz-date", std::string(testing::kAwsDate)},
                    {"x-amz-content-sha256", std::string(testing::kEmptyHash)}}};
  const std::string sig =
      testing::SignHeaderRequest(req, "host;x-amz-date", testing::kEmptyHash, testing::kAwsDate,
                                 testing::kAwsSecretKey, "us-east-1");
  req.headers.emplace_back(
      "Authorization", testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                                   "host;x-amz-date", sig));
  Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  // Presigned: the header is not read (the query parameter picks the payload mode).
  OwnedRequest presigned = PresignedGet();
  presigned.headers.emplace_back("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
  r = auth_.Authenticate(presigned.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->payload, PayloadMode::kUnsigned);
}

TEST_F(SignedHeadersTest, OtherHeadersMayStayUnsigned) {
  // Not x-amz-* or x-oc-*: what SDKs leave unsigned (botocore: user-agent, expect,
  // x-amzn-trace-id) and what the S3 rule does not cover.
  for (std::string_view name : {"User-Agent", "Expect", "x-amzn-trace-id", "Content-Type", "x-amz",
                                "x-ocx-delivery", "amz-sdk-invocation-id"}) {
    SCOPED_TRACE(name);
    OwnedRequest req = SignedPut();
    req.headers.emplace_back(std::string(name), "v");
    Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
    EXPECT_TRUE(r.has_value()) << r.error();
    OwnedRequest presigned = PresignedGet();
    presigned.headers.emplace_back(std::string(name), "v");
    r = auth_.Authenticate(presigned.View(), AwsTime());
    EXPECT_TRUE(r.has_value()) << r.error();
  }
}

TEST_F(SignedHeadersTest, AnonymousRequestsAreNotChecked) {
  // Nothing was signed; access control decides (public-read buckets).
  OwnedRequest req{"GET",
                   "/bucket/key",
                   {{"Host", "127.0.0.1:9000"}, {"x-amz-meta-a", "1"}, {"x-oc-delivery", "x"}}};
  Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->user, nullptr);
}

TEST(CheckHeadersSigned, NamesTheFirstAndListsEachOnceWithABound) {
  const std::vector<std::string> signed_headers = {"host", "x-amz-date"};
  OwnedRequest req{"GET", "/", {{"Host", "h"}, {"X-Amz-Date", "d"}}};
  EXPECT_TRUE(CheckHeadersSigned(req.View(), signed_headers).ok());
  req.headers.emplace_back("X-OC-Delivery", "a");
  req.headers.emplace_back("x-amz-meta-b", "b");
  req.headers.emplace_back("x-oc-delivery", "c");
  Status s = CheckHeadersSigned(req.View(), signed_headers);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.field(), "x-oc-delivery");
  EXPECT_EQ(s.message(),
            "There were headers present in the request which were not signed: x-amz-meta-b, "
            "x-oc-delivery");
  for (int i = 0; i < 10; ++i) {
    req.headers.emplace_back("x-amz-meta-n" + std::to_string(i), "v");
  }
  s = CheckHeadersSigned(req.View(), signed_headers);
  EXPECT_EQ(s.field(), "x-oc-delivery");
  EXPECT_NE(s.message().find(" and 4 more"), std::string_view::npos) << s.message();
}

// ---- A malformed presigned signature is SignatureDoesNotMatch (403), as S3 answers ----

std::string WithSignature(std::string target, std::string_view signature) {
  const size_t at = target.find("X-Amz-Signature=") + std::string_view("X-Amz-Signature=").size();
  target.replace(at, std::string::npos, signature);
  return target;
}

TEST_F(SignedHeadersTest, MalformedPresignedSignatureIsSignatureDoesNotMatch) {
  const std::string good(testing::kAwsPresignedTarget.substr(
      testing::kAwsPresignedTarget.find("X-Amz-Signature=") + 16));
  std::string upper = good;
  for (char& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  const std::string rows[] = {
      "",                                 // present but empty
      good.substr(0, 63),                 // one short
      good + "0",                         // one long
      upper,                              // uppercase hex
      "zz" + good.substr(2),              // not hex
      "%00" + good.substr(1),             // a NUL byte once decoded
      std::string(4096, 'a'),             // far too long
      "aeeed9bbccd4d02ee5c0109b86d8683",  // half
  };
  for (const std::string& sig : rows) {
    SCOPED_TRACE(sig.substr(0, 80));
    OwnedRequest req{"GET",
                     WithSignature(std::string(testing::kAwsPresignedTarget), sig),
                     {{"Host", std::string(testing::kAwsPresignedHost)}}};
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
                 Subject::kSignature, "X-Amz-Signature");
  }
}

TEST_F(SignedHeadersTest, ExpiredPresignedUrlIsExpiredWhateverItsSignature) {
  OwnedRequest req{"GET",
                   WithSignature(std::string(testing::kAwsPresignedTarget), "not-hex"),
                   {{"Host", std::string(testing::kAwsPresignedHost)}}};
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime() + std::chrono::seconds(86401)),
               Code::kPermissionDenied, Subject::kSignature, "X-Amz-Expires");
}

}  // namespace
}  // namespace oc::gateway::auth
