// SigV4 verification: AWS's published examples, each error of the table in sigv4.h, the skew
// and expiry edges, and canonicalisation details.
#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using namespace std::chrono_literals;
using testing::AwsCredentials;
using testing::AwsTime;
using testing::OwnedRequest;

OwnedRequest FromVector(const testing::HeaderVector& v) {
  OwnedRequest r{std::string(v.method), std::string(v.target), {}};
  for (const auto& [n, val] : v.headers) {
    r.headers.emplace_back(std::string(n), std::string(val));
  }
  r.headers.emplace_back(
      "Authorization", testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                                   v.signed_headers, v.signature));
  return r;
}

void ExpectStatus(const Result<AuthResult>& r, Code code, Subject subject, std::string_view field) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), code) << r.error();
  EXPECT_EQ(r.error().subject(), subject) << r.error();
  EXPECT_EQ(r.error().field(), field) << r.error();
}

OwnedRequest AwsPresignedRequest() {
  return OwnedRequest{"GET",
                      std::string(testing::kAwsPresignedTarget),
                      {{"Host", std::string(testing::kAwsPresignedHost)}}};
}

class SigV4Test : public ::testing::Test {
 protected:
  Credentials creds_ = AwsCredentials();
  Authenticator auth_{creds_, AuthOptions{}};
};

TEST_F(SigV4Test, AcceptsEveryPublishedAuthorizationHeaderExample) {
  for (const testing::HeaderVector& v : testing::AwsHeaderVectors()) {
    SCOPED_TRACE(v.name);
    const OwnedRequest req = FromVector(v);
    Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
    ASSERT_TRUE(r.has_value()) << r.error();
    ASSERT_NE(r->user, nullptr);
    EXPECT_EQ(r->user->access_key, testing::kAwsAccessKey);
    EXPECT_EQ(r->payload, PayloadMode::kSigned);
    EXPECT_FALSE(r->presigned);
  }
}

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

TEST_F(SigV4Test, PutExampleBodyMatchesItsSignedHashAndAnotherBodyDoesNot) {
  const OwnedRequest req = FromVector(testing::AwsHeaderVectors()[1]);
  Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->payload_sha256, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_TRUE(CheckPayloadSha256(*r, sigv4::Sha256Of(testing::kAwsPutBody)).ok());
  Status bad = CheckPayloadSha256(*r, sigv4::Sha256Of("Welcome to Amazon S3!"));
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.subject(), Subject::kDigest);
  EXPECT_EQ(bad.field(), "x-amz-content-sha256");
}

TEST_F(SigV4Test, AnyChangeToASignedPartBreaksTheSignature) {
  struct Row {
    std::string_view what;
    void (*edit)(OwnedRequest*);
  };
  const Row rows[] = {
      {"method", [](OwnedRequest* r) { r->method = "HEAD"; }},
      {"path", [](OwnedRequest* r) { r->target = "/test.txt2"; }},
      {"query added", [](OwnedRequest* r) { r->target = "/test.txt?acl"; }},
      {"range", [](OwnedRequest* r) { r->Set("Range", "bytes=0-8"); }},
      {"host", [](OwnedRequest* r) { r->Set("Host", "evil.s3.amazonaws.com"); }},
      {"payload hash",
       [](OwnedRequest* r) { r->Set("x-amz-content-sha256", std::string(64, 'a')); }},
      {"signature", [](OwnedRequest* r) {
         std::string& auth = r->headers.back().second;
         auth.back() = auth.back() == '1' ? '2' : '1';
       }}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
    row.edit(&req);
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
                 Subject::kSignature, "");
  }
}

TEST_F(SigV4Test, UnsignedHeadersMayChange) {
  OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  req.headers.emplace_back("User-Agent", "anything");
  EXPECT_TRUE(auth_.Authenticate(req.View(), AwsTime()).has_value());
}

TEST_F(SigV4Test, SkewWindowIsFifteenMinutesEitherWay) {
  const OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  struct Row {
    std::chrono::seconds offset;
    bool ok;
  };
  for (const Row& row : {Row{0s, true}, Row{900s, true}, Row{-900s, true}, Row{901s, false},
                         Row{-901s, false}, Row{86400s, false}}) {
    SCOPED_TRACE(row.offset.count());
    Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime() + row.offset);
    if (row.ok) {
      EXPECT_TRUE(r.has_value()) << r.error();
    } else {
      ExpectStatus(r, Code::kOutOfRange, Subject::kSignature, "x-amz-date");
    }
  }
}

TEST_F(SigV4Test, ConfiguredSkewIsHonoured) {
  Authenticator strict(creds_, AuthOptions{"us-east-1", 60s});
  const OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  EXPECT_TRUE(strict.Authenticate(req.View(), AwsTime() + 60s).has_value());
  ExpectStatus(strict.Authenticate(req.View(), AwsTime() + 61s), Code::kOutOfRange,
               Subject::kSignature, "x-amz-date");
}

TEST_F(SigV4Test, AnonymousRequestHasNoUser) {
  OwnedRequest req{"GET", "/bucket/key?versionId=1", {{"Host", "localhost"}}};
  Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->user, nullptr);
  EXPECT_EQ(r->payload, PayloadMode::kUnsigned);
}

TEST_F(SigV4Test, UnknownAccessKeyIsInvalidAccessKeyId) {
  OwnedRequest req{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&req, "20130524T000000Z", "NOSUCHKEY", testing::kAwsSecretKey);
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
               Subject::kAccessKey, "");
}

TEST_F(SigV4Test, WrongSecretIsSignatureDoesNotMatch) {
  OwnedRequest req{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&req, "20130524T000000Z", testing::kAwsAccessKey, "not-the-secret");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnauthenticated,
               Subject::kSignature, "");
}

TEST_F(SigV4Test, SigningKeysOfDifferentUsersDoNotMix) {
  // Same date and region for both users: the per-thread cache must key on the secret.
  for (int round = 0; round < 2; ++round) {
    OwnedRequest a{"GET", "/b/k", {{"Host", "localhost"}}};
    testing::SignInPlace(&a, "20130524T000000Z");
    EXPECT_TRUE(auth_.Authenticate(a.View(), AwsTime()).has_value());
    OwnedRequest b{"GET", "/b/k", {{"Host", "localhost"}}};
    testing::SignInPlace(&b, "20130524T000000Z", "OTHERKEY0000000000000",
                         "othersecret0000000000000000000000000000");
    Result<AuthResult> rb = auth_.Authenticate(b.View(), AwsTime());
    ASSERT_TRUE(rb.has_value()) << rb.error();
    EXPECT_EQ(rb->user->name, "other");
    OwnedRequest c{"GET", "/b/k", {{"Host", "localhost"}}};
    testing::SignInPlace(&c, "20130524T000000Z", "OTHERKEY0000000000000", testing::kAwsSecretKey);
    EXPECT_FALSE(auth_.Authenticate(c.View(), AwsTime()).has_value());
  }
}

TEST_F(SigV4Test, ConcurrentCallersShareOneAuthenticator) {
  // Each thread has its own signing-key cache; results must not depend on interleaving.
  OwnedRequest a{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&a, "20130524T000000Z");
  OwnedRequest b{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&b, "20130524T000000Z", "OTHERKEY0000000000000",
                       "othersecret0000000000000000000000000000");
  OwnedRequest bad{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&bad, "20130524T000000Z", "OTHERKEY0000000000000", testing::kAwsSecretKey);
  const OwnedRequest presigned = AwsPresignedRequest();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        Result<AuthResult> ra = auth_.Authenticate(a.View(), AwsTime());
        Result<AuthResult> rb = auth_.Authenticate(b.View(), AwsTime());
        Result<AuthResult> rp = auth_.Authenticate(presigned.View(), AwsTime());
        const bool ok = ra.has_value() && ra->user->name == "example" && rb.has_value() &&
                        rb->user->name == "other" && rp.has_value() &&
                        !auth_.Authenticate(bad.View(), AwsTime()).has_value();
        if (!ok) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(SigV4Test, RegionMustBeTheConfiguredOneUnlessEmpty) {
  OwnedRequest req{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&req, "20130524T000000Z", testing::kAwsAccessKey, testing::kAwsSecretKey,
                       "eu-west-1");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument,
               Subject::kSignature, "Authorization");
  Authenticator any_region(creds_, AuthOptions{"", 15min});
  EXPECT_TRUE(any_region.Authenticate(req.View(), AwsTime()).has_value());
  Authenticator eu(creds_, AuthOptions{"eu-west-1", 15min});
  EXPECT_TRUE(eu.Authenticate(req.View(), AwsTime()).has_value());
}

TEST_F(SigV4Test, DateProblemsAreAccessDenied) {
  struct Row {
    std::string_view what;
    std::string_view date;  // empty: header removed
  };
  for (const Row& row :
       {Row{"missing", ""}, Row{"no Z", "20130524T000000"}, Row{"month 13", "20131324T000000Z"},
        Row{"Feb 30", "20130230T000000Z"}, Row{"hour 24", "20130524T240000Z"},
        Row{"letters", "2013052aT000000Z"}, Row{"RFC 1123", "Fri, 24 May 2013 00:00:00 GMT"}}) {
    SCOPED_TRACE(row.what);
    OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
    if (row.date.empty()) {
      req.Remove("x-amz-date");
    } else {
      req.Set("x-amz-date", std::string(row.date));
    }
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kPermissionDenied,
                 Subject::kSignature, "x-amz-date");
  }
}

TEST_F(SigV4Test, FarDatesAreSkewedNotOverflowed) {
  // Years past 2262 do not fit a nanosecond time point (found by sigv4_fuzz).
  for (std::string_view date : {"99991231T235959Z", "26160113T000000Z", "00010101T000000Z"}) {
    SCOPED_TRACE(date);
    OwnedRequest req{"GET", "/b/k", {{"Host", "localhost"}}};
    testing::SignInPlace(&req, date);
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kOutOfRange, Subject::kSignature,
                 "x-amz-date");
  }
}

TEST_F(SigV4Test, CredentialDateMustBeTheRequestDate) {
  OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  req.Set("x-amz-date", "20130525T000000Z");
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime() + 24h), Code::kInvalidArgument,
               Subject::kSignature, "Authorization");
}

TEST_F(SigV4Test, MalformedAuthorizationHeaders) {
  const std::string cred = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string sh = "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date";
  const std::string sig =
      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  struct Row {
    std::string what;
    std::string value;
  };
  const Row rows[] = {
      {"algorithm only", "AWS4-HMAC-SHA256"},
      {"no signature", "AWS4-HMAC-SHA256 " + cred + ", " + sh},
      {"no credential", "AWS4-HMAC-SHA256 " + sh + ", " + sig},
      {"repeated", "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", " + sig + ", " + sig},
      {"unknown part", "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", " + sig + ", Foo=bar"},
      {"no equals", "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", " + sig + ", junk"},
      {"short signature", "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=abc"},
      {"uppercase signature", "AWS4-HMAC-SHA256 " + cred + ", " + sh +
                                  ", Signature=F0E8BDB87C964420E857BD35B5D6ED310BD44F0170ABA48"
                                  "DD91039C6036BDB41"},
      {"host not signed", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=range;x-amz-date, " + sig},
      {"empty signed header", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;;range, " + sig},
      {"uppercase signed header", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=Host, " + sig},
      {"signed header absent",
       "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;range;x-amz-date;x-amz-meta-a, " + sig},
      {"4-part credential",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3, " + sh + ", " +
           sig},
      {"6-part credential",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request/x, " +
           sh + ", " + sig},
      {"bad terminator",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws5_request, " +
           sh + ", " + sig},
      {"bad credential date",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2013052/us-east-1/s3/aws4_request, " + sh +
           ", " + sig},
      {"empty access key",
       "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, " + sh + ", " + sig},
      {"wrong service",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request, " +
           sh + ", " + sig},
      {"oversize", "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", " + sig + std::string(9000, ' ')},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
    req.Set("Authorization", row.value);
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument,
                 Subject::kSignature, "Authorization");
  }
}

TEST_F(SigV4Test, OtherAlgorithmsAreUnsupported) {
  for (std::string_view value :
       {"AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=", "AWS4-HMAC-SHA512 Credential=x",
        "Bearer token", "", "AWS4-ECDSA-P256-SHA256 Credential=AKIA/20130524/s3/aws4_request"}) {
    SCOPED_TRACE(value);
    OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
    req.Set("Authorization", std::string(value));
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kUnimplemented,
                 Subject::kSignature, "Authorization");
  }
}

TEST_F(SigV4Test, RepeatedAuthorizationHeaderIsMalformed) {
  OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  req.headers.push_back(req.headers.back());
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument,
               Subject::kSignature, "Authorization");
}

TEST_F(SigV4Test, HeaderAndQueryAuthTogetherAreRejected) {
  OwnedRequest req = FromVector(testing::AwsHeaderVectors()[0]);
  req.target = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256";
  ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument, Subject::kNone,
               "Authorization");
}

TEST_F(SigV4Test, PayloadHashValues) {
  struct Row {
    std::string_view value;
    Code code;  // kOk: accepted
    PayloadMode mode;
  };
  const Row rows[] = {
      {"UNSIGNED-PAYLOAD", Code::kOk, PayloadMode::kUnsigned},
      {"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", Code::kOk,
       PayloadMode::kSigned},
      {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", Code::kUnimplemented, PayloadMode::kUnsigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", Code::kUnimplemented, PayloadMode::kUnsigned},
      {"unsigned-payload", Code::kInvalidArgument, PayloadMode::kUnsigned},
      {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85", Code::kInvalidArgument,
       PayloadMode::kUnsigned},
      {"g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Code::kInvalidArgument,
       PayloadMode::kUnsigned},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.value);
    OwnedRequest req{"PUT", "/b/k", {{"Host", "localhost"}}};
    req.Set("x-amz-content-sha256", std::string(row.value));
    testing::SignInPlace(&req, "20130524T000000Z");
    Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
    if (row.code == Code::kOk) {
      ASSERT_TRUE(r.has_value()) << r.error();
      EXPECT_EQ(r->payload, row.mode);
      if (row.mode == PayloadMode::kSigned) {
        EXPECT_EQ(r->payload_sha256, testing::kEmptyHash);  // lowercased
      }
    } else {
      ExpectStatus(r, row.code, Subject::kNone, "x-amz-content-sha256");
    }
  }
}

TEST_F(SigV4Test, MissingPayloadHashHeaderMeansAnEmptyBody) {
  OwnedRequest req{"GET", "/b/k", {{"Host", "localhost"}}};
  testing::SignInPlace(&req, "20130524T000000Z");
  req.Remove("x-amz-content-sha256");
  // Re-sign without the header: the client signed the empty-body hash.
  req.Remove("Authorization");
  const std::string sig =
      testing::SignHeaderRequest(req, "host;x-amz-date", testing::kEmptyHash, testing::kAwsDate,
                                 testing::kAwsSecretKey, "us-east-1");
  req.headers.emplace_back(
      "Authorization", testing::AuthorizationValue(testing::kAwsAccessKey, "20130524", "us-east-1",
                                                   "host;x-amz-date", sig));
  Result<AuthResult> r = auth_.Authenticate(req.View(), AwsTime());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->payload, PayloadMode::kSigned);
  EXPECT_TRUE(CheckPayloadSha256(*r, sigv4::Sha256Of("")).ok());
  EXPECT_FALSE(CheckPayloadSha256(*r, sigv4::Sha256Of("x")).ok());
}

TEST_F(SigV4Test, StreamingNeedsOneDecimalDecodedLength) {
  for (std::string_view value : {"", "12a", "-1", "99999999999999999999", "1 "}) {
    SCOPED_TRACE(value);
    OwnedRequest req{"PUT", "/b/k", {{"Host", "localhost"}}};
    req.Set("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
    if (!value.empty()) {
      req.Set("x-amz-decoded-content-length", std::string(value));
    }
    testing::SignInPlace(&req, "20130524T000000Z");
    ExpectStatus(auth_.Authenticate(req.View(), AwsTime()), Code::kInvalidArgument, Subject::kNone,
                 "x-amz-decoded-content-length");
  }
}

// ---- Presigned URLs ----

OwnedRequest AwsPresigned() {
  return OwnedRequest{"GET",
                      std::string(testing::kAwsPresignedTarget),
                      {{"Host", std::string(testing::kAwsPresignedHost)}}};
}

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
      {"X-Amz-Expires", "0", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "604801", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "-5", Code::kInvalidArgument, "X-Amz-Expires"},
      {"X-Amz-Expires", "1e3", Code::kInvalidArgument, "X-Amz-Expires"},
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

// ---- Canonicalisation ----

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
