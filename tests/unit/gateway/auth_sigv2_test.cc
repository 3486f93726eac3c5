// SigV2 (auth/sigv2.h): the string to sign and signature against the S3 Developer Guide's
// examples ("Signing and Authenticating REST Requests", bucket johnsmith, the example key
// pair), and Authenticate's time, expiry, resource and signing-rule checks.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "auth/sigv2.h"
#include "auth/sigv4.h"
#include "auth_test_util.h"

namespace oc::gateway::auth {
namespace {

using testing::AwsCredentials;
using testing::OwnedRequest;

TEST(SigV2, GuideExamplesStringToSignAndSignature) {
  struct Row {
    std::string_view what;
    OwnedRequest req;
    std::string_view date;
    std::string_view domain;
    std::string_view string_to_sign;
    std::string_view signature;
  };
  const Row rows[] = {
      {"Object GET, virtual host",
       {"GET", "/photos/puppy.jpg", {{"Host", "johnsmith.s3.amazonaws.com"}}},
       "Tue, 27 Mar 2007 19:36:42 +0000",
       "s3.amazonaws.com",
       "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg",
       "bWq2s1WEIj+Ydj0vQ697zp+IXMU="},
      {"Object PUT, path style",
       {"PUT",
        "/johnsmith/photos/puppy.jpg",
        {{"Content-Type", "image/jpeg"}, {"Content-Length", "94328"}, {"Host", "s3:9000"}}},
       "Tue, 27 Mar 2007 21:15:45 +0000",
       "",
       "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/johnsmith/photos/puppy.jpg",
       "MyyxeRY7whkBe+bq8fHCL/2kKUg="},
      {"Query string, Expires as the date",
       {"GET",
        "/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=x&Expires=1175139620",
        {{"Host", "johnsmith.s3.amazonaws.com"}}},
       "1175139620",
       "s3.amazonaws.com",
       "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
       "NpgCjnDzrM+WFzoENXmpNDUsSn8="},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    const std::string sts = SigV2StringToSign(row.req.View(), row.date, row.domain);
    EXPECT_EQ(sts, row.string_to_sign);
    EXPECT_EQ(SigV2Signature(testing::kAwsSecretKey, sts), row.signature);
  }
}

TEST(SigV2, AmzHeadersAndSubresourcesAreCanonicalised) {
  OwnedRequest req{"PUT",
                   "/b/k?uploadId=a%2Fb&partNumber=2&prefix=ignored&acl",
                   {{"X-Amz-Meta-B", " two "},
                    {"x-amz-meta-a", "one"},
                    {"X-AMZ-META-B", "three"},
                    {"Content-MD5", "md5"},
                    {"Host", "h"}}};
  EXPECT_EQ(SigV2StringToSign(req.View(), "D", ""),
            "PUT\nmd5\n\nD\nx-amz-meta-a:one\nx-amz-meta-b:two,three\n"
            "/b/k?acl&partNumber=2&uploadId=a/b");
}

class SigV2Auth : public ::testing::Test {
 protected:
  // 2026-11-22T01:00:00Z
  static std::chrono::system_clock::time_point Now() {
    using namespace std::chrono;
    return sys_days(year{2026} / November / 22) + hours(1);
  }
  static constexpr std::string_view kDate = "Sun, 22 Nov 2026 01:00:00 GMT";

  OwnedRequest HeaderSigned(std::string method, std::string target,
                            std::vector<std::pair<std::string, std::string>> headers) {
    OwnedRequest req{std::move(method), std::move(target), std::move(headers)};
    bool amz_date = false;
    std::string date;
    for (const auto& [n, v] : req.headers) {
      amz_date |= EqualsIgnoreCase(n, "x-amz-date");
      if (EqualsIgnoreCase(n, "date")) {
        date = v;
      }
    }
    const std::string sts = SigV2StringToSign(req.View(), amz_date ? "" : date, "");
    req.headers.emplace_back("Authorization", "AWS " + std::string(testing::kAwsAccessKey) + ":" +
                                                  SigV2Signature(testing::kAwsSecretKey, sts));
    return req;
  }

  OwnedRequest QuerySigned(std::string method, std::string path, int64_t expires) {
    OwnedRequest req{std::move(method), path, {{"Host", "127.0.0.1:9000"}}};
    const std::string sts = SigV2StringToSign(req.View(), std::to_string(expires), "");
    std::string sig = SigV2Signature(testing::kAwsSecretKey, sts);
    std::string encoded;
    for (char c : sig) {
      encoded += c == '+' ? "%2B" : c == '/' ? "%2F" : c == '=' ? "%3D" : std::string(1, c);
    }
    req.target = path + "?AWSAccessKeyId=" + std::string(testing::kAwsAccessKey) +
                 "&Signature=" + encoded + "&Expires=" + std::to_string(expires);
    return req;
  }

  static int64_t NowSeconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(Now().time_since_epoch()).count();
  }

  const Credentials creds_ = AwsCredentials();
  const Authenticator auth_{creds_, AuthOptions{}};
};

TEST_F(SigV2Auth, HeaderWithDateOrAmzDateAuthenticates) {
  for (const auto& headers : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"Host", "h"}, {"Date", std::string(kDate)}},
           {{"Host", "h"}, {"x-amz-date", std::string(kDate)}},
           {{"Host", "h"},
            {"Date", "Mon, 01 Jan 2001 00:00:00 GMT"},
            {"x-amz-date", std::string(kDate)}},  // x-amz-date wins, the Date line is empty
           {{"Host", "h"}, {"x-amz-date", "20261122T010000Z"}, {"x-amz-meta-k", "v"}}}) {
    OwnedRequest req = HeaderSigned("PUT", "/bucket/key", headers);
    Result<AuthResult> r = auth_.Authenticate(req.View(), Now());
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_NE(r->user, nullptr);
    EXPECT_EQ(r->payload, PayloadMode::kUnsigned);
  }
}

// botocore signs a path-style bucket request sent as "/bucket" with the resource "/bucket/"
// (the S3 guide's form of a bucket): both forms verify, and only for the bucket itself.
TEST_F(SigV2Auth, BucketResourceWithOrWithoutTheSlash) {
  OwnedRequest req{"PUT", "/bucket", {{"Host", "h"}, {"Date", std::string(kDate)}}};
  const std::string slash = SigV2StringToSign(req.View(), kDate, "", /*bucket_slash=*/true);
  EXPECT_TRUE(slash.ends_with("\n/bucket/")) << slash;
  req.headers.emplace_back("Authorization", "AWS " + std::string(testing::kAwsAccessKey) + ":" +
                                                SigV2Signature(testing::kAwsSecretKey, slash));
  EXPECT_TRUE(auth_.Authenticate(req.View(), Now()).has_value());
  // An object's resource has no such second form.
  OwnedRequest key{"PUT", "/bucket/key", {{"Host", "h"}, {"Date", std::string(kDate)}}};
  EXPECT_EQ(SigV2StringToSign(key.View(), kDate, "", true),
            SigV2StringToSign(key.View(), kDate, ""));
  key.headers.emplace_back(
      "Authorization",
      "AWS " + std::string(testing::kAwsAccessKey) + ":" +
          SigV2Signature(testing::kAwsSecretKey, SigV2StringToSign(key.View(), kDate, "") + "/"));
  EXPECT_FALSE(auth_.Authenticate(key.View(), Now()).has_value());
}

TEST_F(SigV2Auth, HeaderErrors) {
  OwnedRequest good =
      HeaderSigned("GET", "/bucket/key", {{"Host", "h"}, {"Date", std::string(kDate)}});
  // Another key, another method: the signature covers the resource and the verb.
  OwnedRequest other_key = good;
  other_key.target = "/bucket/other";
  OwnedRequest other_method = good;
  other_method.method = "DELETE";
  for (const OwnedRequest* req : {&other_key, &other_method}) {
    Result<AuthResult> r = auth_.Authenticate(req->View(), Now());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kUnauthenticated) << r.error();
    EXPECT_EQ(r.error().subject(), Subject::kSignature);
  }
  Result<AuthResult> skewed = auth_.Authenticate(good.View(), Now() + std::chrono::minutes(16));
  ASSERT_FALSE(skewed.has_value());
  EXPECT_EQ(skewed.error().code(), Code::kOutOfRange);  // RequestTimeTooSkewed
  OwnedRequest no_date = good;
  no_date.Remove("Date");
  Result<AuthResult> undated = auth_.Authenticate(no_date.View(), Now());
  ASSERT_FALSE(undated.has_value());
  EXPECT_EQ(undated.error().code(), Code::kPermissionDenied);
  OwnedRequest unknown = good;
  unknown.Set("Authorization", "AWS NOSUCHKEY:" + std::string(28, 'A'));
  Result<AuthResult> nokey = auth_.Authenticate(unknown.View(), Now());
  ASSERT_FALSE(nokey.has_value());
  EXPECT_EQ(nokey.error().subject(), Subject::kAccessKey);
  OwnedRequest malformed = good;
  malformed.Set("Authorization", "AWS nocolon");
  Result<AuthResult> bad = auth_.Authenticate(malformed.View(), Now());
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.error().field(), "Authorization");
  // SigV2 signs no x-oc-* header: one makes the request AccessDenied (the signing rule).
  OwnedRequest oc = HeaderSigned(
      "GET", "/bucket/key", {{"Host", "h"}, {"Date", std::string(kDate)}, {"x-oc-layout", "x"}});
  Result<AuthResult> refused = auth_.Authenticate(oc.View(), Now());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kPermissionDenied);
  EXPECT_EQ(refused.error().field(), "x-oc-layout");
}

TEST_F(SigV2Auth, QueryStringExpiresAndResource) {
  const int64_t now = NowSeconds();
  OwnedRequest url = QuerySigned("GET", "/bucket/key", now + 3600);
  Result<AuthResult> ok = auth_.Authenticate(url.View(), Now());
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_NE(ok->user, nullptr);
  // Expired, or further ahead than 7 days: AccessDenied naming Expires.
  for (const OwnedRequest& req : {QuerySigned("GET", "/bucket/key", now - 1),
                                  QuerySigned("GET", "/bucket/key", now + 604801)}) {
    Result<AuthResult> r = auth_.Authenticate(req.View(), Now());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kPermissionDenied) << r.error();
    EXPECT_EQ(r.error().field(), "Expires");
  }
  // Used for another method or key: the signature does not match.
  OwnedRequest put = url;
  put.method = "PUT";
  OwnedRequest other = url;
  other.target.replace(other.target.find("key"), 3, "kex");
  for (const OwnedRequest* req : {&put, &other}) {
    Result<AuthResult> r = auth_.Authenticate(req->View(), Now());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kUnauthenticated) << r.error();
  }
  // A missing parameter is malformed, never anonymous.
  OwnedRequest partial{"GET", "/bucket/key?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=x", {}};
  Result<AuthResult> r = auth_.Authenticate(partial.View(), Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().field(), "Expires");
}

}  // namespace
}  // namespace oc::gateway::auth
