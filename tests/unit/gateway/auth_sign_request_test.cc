// One SigV4 implementation signs and verifies (docs/decisions/sigv4-shared-oc-sigv4.md):
// SignRequest (oc_sigv4, what the client signs with) reproduces every AWS-published header
// signature, and what it signs the gateway's verifier accepts, while any edit of a signed part is
// refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auth/sigv4.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/common/headers.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using testing::AwsTime;

const sigv4::SigningCredentials kAws{testing::kAwsAccessKey, testing::kAwsSecretKey, "us-east-1"};

std::vector<HeaderField> Fields(
    const std::vector<std::pair<std::string_view, std::string_view>>& headers) {
  std::vector<HeaderField> out;
  for (const auto& [n, v] : headers) {
    out.emplace_back(n, v);
  }
  return out;
}

std::string_view PayloadHash(const std::vector<HeaderField>& headers) {
  return FindHeader(headers, "x-amz-content-sha256").value_or(sigv4::kUnsignedPayload);
}

TEST(SignRequest, ReproducesEveryAwsHeaderSignature) {
  for (const testing::HeaderVector& v : testing::AwsHeaderVectors()) {
    SCOPED_TRACE(v.name);
    const RequestView req{v.method, v.target, Fields(v.headers)};
    Result<std::string> a =
        sigv4::SignRequest(req, testing::kAwsDate, PayloadHash(req.headers), kAws);
    ASSERT_TRUE(a.has_value()) << a.error();
    EXPECT_EQ(*a, testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                              v.signed_headers, v.signature));
  }
  // The seed signature of the aws-chunked example.
  const RequestView chunked{"PUT", testing::kAwsChunkedTarget,
                            Fields(testing::AwsChunkedHeaders())};
  Result<std::string> a =
      sigv4::SignRequest(chunked, testing::kAwsDate, PayloadHash(chunked.headers), kAws);
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(*a, testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                            testing::kAwsChunkedSignedHeaders,
                                            testing::kAwsSeedSignature));
}

TEST(SignRequest, WhatItSignsTheVerifierAccepts) {
  const Credentials creds = testing::AwsCredentials();
  const Authenticator verifier(creds, AuthOptions{});
  // Mixed-case names, a repeated header, an encoded key, a query and x-oc-* headers.
  testing::OwnedRequest req{"GET",
                            "/bucket/a%20b/%E2%82%AC?objectcache&probe",
                            {{"Host", "127.0.0.1:9000"},
                             {"X-Amz-Date", std::string(testing::kAwsDate)},
                             {"x-amz-content-sha256", std::string(sigv4::kUnsignedPayload)},
                             {"X-OC-Num-Layers", "4"},
                             {"x-oc-chunk-names", "a"},
                             {"x-oc-chunk-names", "b"}}};
  Result<std::string> authorization =
      sigv4::SignRequest(req.View(), testing::kAwsDate, sigv4::kUnsignedPayload, kAws);
  ASSERT_TRUE(authorization.has_value()) << authorization.error();
  req.headers.emplace_back("Authorization", *authorization);
  Result<AuthResult> ok = verifier.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->user->access_key, testing::kAwsAccessKey);
  EXPECT_EQ(ok->payload, PayloadMode::kUnsigned);

  struct Edit {
    std::string_view what;
    std::string name;
    std::string value;
  };
  for (const Edit& edit :
       {Edit{"header value", "x-oc-chunk-names", "c"}, Edit{"host", "Host", "127.0.0.1:9001"}}) {
    SCOPED_TRACE(edit.what);
    testing::OwnedRequest tampered = req;
    for (auto& [n, v] : tampered.headers) {
      if (n == edit.name) {
        v = edit.value;
        break;
      }
    }
    Result<AuthResult> bad = verifier.Authenticate(tampered.View(), AwsTime());
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code(), Code::kUnauthenticated) << bad.error();
    EXPECT_EQ(bad.error().subject(), Subject::kSignature) << bad.error();
  }
  testing::OwnedRequest other_key = req;
  other_key.target = "/bucket/a%20b/other?objectcache&probe";
  EXPECT_FALSE(verifier.Authenticate(other_key.View(), AwsTime()).has_value());
}

}  // namespace
}  // namespace oc::gateway::auth
