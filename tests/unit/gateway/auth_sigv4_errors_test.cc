// SigV4 header authentication refusing what is malformed (auth/sigv4.h, its error table): bad
// dates, Authorization headers and algorithms, repeated or mixed auth, and each
// x-amz-content-sha256 / x-amz-decoded-content-length value, every error naming its field.
#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

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
       {"AWS4-HMAC-SHA512 Credential=x", "Bearer token", "",
        "AWS4-ECDSA-P256-SHA256 Credential=AKIA/20130524/s3/aws4_request"}) {
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

}  // namespace
}  // namespace oc::gateway::auth
