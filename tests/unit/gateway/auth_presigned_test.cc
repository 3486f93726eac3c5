// SigV4 presigned URLs (auth/sigv4.h): AWS's published example accepted, the validity window's
// edges, the binding to path, method and host, each query parameter's errors, and an expiry of
// a week.
#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "auth_sigv4_test_util.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using namespace std::chrono_literals;
using testing::AwsTime;
using testing::OwnedRequest;

TEST_F(SigV4Test, AcceptsThePublishedPresignedUrl) {
  Result<AuthResult> r = auth_.Authenticate(AwsPresigned().View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_TRUE(r->presigned);
  EXPECT_EQ(r->payload, PayloadMode::kUnsigned);
  ASSERT_NE(r->user, nullptr);
  EXPECT_EQ(r->user->name, "example");
}

TEST_F(SigV4Test, PresignedValidityWindowEdges) {
  struct Row {
    std::chrono::seconds offset;
    Code code;
    std::string_view field;
  };
  const Row rows[] = {
      {0s, Code::kOk, ""},
      {86400s, Code::kOk, ""},  // the last valid second: X-Amz-Date + X-Amz-Expires
      {86401s, Code::kPermissionDenied, "X-Amz-Expires"},
      {-900s, Code::kOk, ""},  // a client clock up to the skew window ahead
      {-901s, Code::kPermissionDenied, "X-Amz-Date"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.offset.count());
    Result<AuthResult> r = auth_.Authenticate(AwsPresigned().View(), AwsTime() + row.offset);
    if (row.code == Code::kOk) {
      EXPECT_TRUE(r.has_value()) << r.error();
    } else {
      ExpectStatus(r, row.code, Subject::kSignature, row.field);
    }
  }
}

TEST_F(SigV4Test, PresignedUrlIsBoundToPathMethodAndHost) {
  struct Row {
    std::string_view what;
    void (*edit)(OwnedRequest*);
  };
  const Row rows[] = {
      {"path", [](OwnedRequest* r) { r->target.replace(0, 9, "/test.txu"); }},
      {"method", [](OwnedRequest* r) { r->method = "PUT"; }},
      {"host", [](OwnedRequest* r) { r->Set("Host", "other.s3.amazonaws.com"); }},
      {"extra query", [](OwnedRequest* r) { r->target += "&response-content-type=x"; }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    OwnedRequest req = AwsPresigned();
    row.edit(&req);
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
                 Subject::kSignature, "X-Amz-Signature");
  }
}

std::string ReplaceParam(std::string target, std::string_view name, std::string_view value) {
  const size_t at = target.find(std::string(name) + "=");
  const size_t end = target.find('&', at);
  std::string replacement = value.empty() ? "" : std::string(name) + "=" + std::string(value);
  target.replace(at, end == std::string::npos ? std::string::npos : end - at, replacement);
  return target;
}

TEST_F(SigV4Test, PresignedParameterErrors) {
  struct Row {
    std::string_view param;
    std::string_view value;  // empty: parameter removed
    Code code;
    std::string_view field;
  };
  const Row rows[] = {
      {"X-Amz-Credential", "", Code::kInvalidArgument, "X-Amz-Credential"},
      {"X-Amz-Date", "", Code::kInvalidArgument, "X-Amz-Date"},
      {"X-Amz-Expires", "", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-SignedHeaders", "", Code::kInvalidArgument, "X-Amz-SignedHeaders"},
      {"X-Amz-Signature", "", Code::kInvalidArgument, "X-Amz-Signature"},
      {"X-Amz-Algorithm", "AWS4-HMAC-SHA1", Code::kUnimplemented, "X-Amz-Algorithm"},
      // Not a number, negative or over 604800: AuthorizationQueryParametersError, as S3
      // answers (issue 29); 0 has expired on arrival: AccessDenied.
      {"X-Amz-Expires", "0", Code::kPermissionDenied, "X-Amz-Expires"},
      {"X-Amz-Expires", "604801", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "-5", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "1e3", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "-", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "99999999999", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Date", "20130524", Code::kInvalidArgument, "X-Amz-Date"},
      {"X-Amz-Date", "20130525T000000Z", Code::kInvalidArgument, "X-Amz-Credential"},
      {"X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE%2F20130524%2Feu-west-1%2Fs3%2Faws4_request",
       Code::kInvalidArgument, "X-Amz-Credential"},
      {"X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE", Code::kInvalidArgument, "X-Amz-Credential"},
      {"X-Amz-SignedHeaders", "range", Code::kInvalidArgument, "X-Amz-SignedHeaders"},
      {"X-Amz-SignedHeaders", "host%3Bx-amz-meta-a", Code::kInvalidArgument, "X-Amz-SignedHeaders"},
      // Not the signature, so SignatureDoesNotMatch (auth_signed_headers_test.cc has more).
      {"X-Amz-Signature", "AEEED9BBCCD4D02EE5C0109B86D86835F995330DA4C265957D157751F604D404",
       Code::kUnauthenticated, "X-Amz-Signature"},
      {"X-Amz-Credential", "NOSUCHKEY%2F20130524%2Fus-east-1%2Fs3%2Faws4_request",
       Code::kUnauthenticated, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.param) + "=" + std::string(row.value));
    OwnedRequest req = AwsPresigned();
    req.target = ReplaceParam(req.target, row.param, row.value);
    Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.code) << r.error();
    EXPECT_EQ(r.error().field(), row.field) << r.error();
  }
}

TEST_F(SigV4Test, PartialPresignedUrlIsNotAnonymous) {
  OwnedRequest req = AwsPresigned();
  req.target = ReplaceParam(req.target, "X-Amz-Algorithm", "");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument,
               Subject::kSignature, "X-Amz-Algorithm");
  OwnedRequest only_signature{"GET", "/b/k?X-Amz-Signature=00", {{"Host", "h"}}};
  ExpectStatus(auth_.Authenticate(only_signature.View(), AwsTime()), Code::kInvalidArgument,
               Subject::kSignature, "X-Amz-Algorithm");
}

TEST_F(SigV4Test, RepeatedPresignedParameterIsAnError) {
  OwnedRequest req = AwsPresigned();
  req.target += "&X-Amz-Expires=10";
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument,
               Subject::kSignature, "X-Amz-Expires");
}

TEST_F(SigV4Test, PresignedExpiryOfAWeekIsAccepted) {
  // Sign GET /b/k for 604800 s with the step functions, then check the edges of the week.
  const std::string query_base =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256"
      "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host";
  OwnedRequest req{"GET", "/b/k?" + query_base, {{"Host", "localhost:9000"}}};
  const std::string canonical =
      sigv4::CanonicalRequest("GET", "/b/k", sigv4::CanonicalQuery(query_base, false).value(),
                              "host:localhost:9000\n", {"host"}, "UNSIGNED-PAYLOAD");
  const std::string sig = sigv4::SignatureHex(
      sigv4::DeriveSigningKey(testing::kAwsSecretKey, "20130524", "us-east-1", "s3"),
      sigv4::StringToSign(testing::kAwsDate, testing::kAwsScope, canonical));
  req.target += "&X-Amz-Signature=" + sig;
  EXPECT_TRUE(auth_.Authenticate(req.View(), AwsTime() + 604800s).has_value());
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime() + 604801s), Code::kPermissionDenied,
               Subject::kSignature, "X-Amz-Expires");
}

}  // namespace
}  // namespace oc::gateway::auth
