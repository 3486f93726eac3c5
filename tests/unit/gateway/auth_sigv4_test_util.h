#pragma once
// Helpers shared by the SigV4 verifier tests (auth_sigv4_test.cc, auth_sigv4_errors_test.cc,
// auth_presigned_test.cc, auth_sigv4_steps_test.cc): the SigV4Test fixture (an Authenticator
// over the AWS example credentials), requests built from AWS's published examples, and the
// check that a refusal carries the expected code, subject and field.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "auth/sigv4.h"
#include "auth_test_util.h"
#include "auth_vectors.h"

namespace oc::gateway::auth {

// The published header-auth example `v`, signed as AWS signed it.
inline testing::OwnedRequest FromVector(const testing::HeaderVector& v) {
  testing::OwnedRequest r{std::string(v.method), std::string(v.target), {}};
  for (const auto& [n, val] : v.headers) {
    r.headers.emplace_back(std::string(n), std::string(val));
  }
  r.headers.emplace_back(
      "Authorization", testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                                   v.signed_headers, v.signature));
  return r;
}

// The published presigned-URL example.
inline testing::OwnedRequest AwsPresigned() {
  return testing::OwnedRequest{"GET",
                               std::string(testing::kAwsPresignedTarget),
                               {{"Host", std::string(testing::kAwsPresignedHost)}}};
}

inline void ExpectStatus(const Result<AuthResult>& r, Code code, Subject subject,
                         std::string_view field) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), code) << r.error();
  EXPECT_EQ(r.error().subject(), subject) << r.error();
  EXPECT_EQ(r.error().field(), field) << r.error();
}

class SigV4Test : public ::testing::Test {
 protected:
  Credentials creds_ = testing::AwsCredentials();
  Authenticator auth_{creds_, AuthOptions{}};
};

}  // namespace oc::gateway::auth
