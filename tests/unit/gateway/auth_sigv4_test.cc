// SigV4 header authentication (auth/sigv4.h): AWS's published Authorization examples accepted,
// any change to a signed part refused, the skew window and its configuration, anonymous
// requests, access keys and secrets of several users (also from concurrent callers), and the
// region.
#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "auth_sigv4_test_util.h"
#include "auth_test_util.h"
#include "auth_vectors.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {
namespace {

using namespace std::chrono_literals;
using testing::AwsTime;
using testing::OwnedRequest;

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
  const OwnedRequest presigned = AwsPresigned();
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

}  // namespace
}  // namespace oc::gateway::auth
