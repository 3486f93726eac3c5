// The S3 error table: unique codes, valid statuses, one row per enum value, the Status
// mapping, and golden XML for a 4xx and a 5xx.
#include "s3/s3_errors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "oc/storage/cache_options.h"
#include "oc/storage/no_space.h"
#include "oc/storage/quota.h"
#include "request.h"

namespace oc::gateway {
namespace {

TEST(S3Errors, CodesAreUniqueAndStatusesValid) {
  std::set<std::string_view> codes;
  for (size_t i = 0; i < std::size(kS3ErrorRows); ++i) {
    const S3ErrorRow& row = kS3ErrorRows[i];
    SCOPED_TRACE(row.code);
    EXPECT_TRUE(codes.insert(row.code).second) << "duplicate code";
    EXPECT_EQ(static_cast<size_t>(row.error), i) << "row out of enum order";
    EXPECT_EQ(&ErrorRow(row.error), &row);
    const bool valid = row.http_status == 304 || (row.http_status >= 400 && row.http_status < 600);
    EXPECT_TRUE(valid) << row.http_status;
    EXPECT_FALSE(row.message.empty());
  }
}

TEST(S3Errors, StatusMapsToTheS3Code) {
  struct Row {
    Status status;
    std::string_view code;
  };
  const Row rows[] = {
      {Status::NotFound(Subject::kBucket, "b"), "NoSuchBucket"},
      {Status::NotFound(Subject::kKey, "k"), "NoSuchKey"},
      {Status::NotFound(Subject::kUpload, "u"), "NoSuchUpload"},
      {Status::AlreadyExists(Subject::kBucket, "b"), "BucketAlreadyExists"},
      {Status::FailedPrecondition(Subject::kBucket, "b"), "BucketNotEmpty"},
      {Status::FailedPrecondition(Subject::kPart, "p"), "InvalidPartOrder"},
      {Status(Code::kInvalidArgument, Subject::kPart, "", "p"), "InvalidPart"},
      {Status(Code::kOutOfRange, Subject::kPart, "", "p"), "EntityTooSmall"},
      {Status(Code::kInvalidArgument, Subject::kBucket, "", "b"), "InvalidBucketName"},
      {Status(Code::kInvalidArgument, Subject::kDigest, "", "d"), "BadDigest"},
      {Status(Code::kInvalidArgument, Subject::kDigest, "x-amz-content-sha256", "d"),
       "XAmzContentSHA256Mismatch"},
      {Status(Code::kInvalidArgument, Subject::kEntity, "", "e"), "IncompleteBody"},
      {Status(Code::kInvalidArgument, Subject::kEntity, "aws-chunked", "e"), "InvalidRequest"},
      {Status(Code::kUnauthenticated, Subject::kSignature, "", "s"), "SignatureDoesNotMatch"},
      {Status(Code::kUnauthenticated, Subject::kAccessKey, "", "a"), "InvalidAccessKeyId"},
      {Status(Code::kOutOfRange, Subject::kSignature, "x-amz-date", "t"), "RequestTimeTooSkewed"},
      {Status(Code::kPermissionDenied, Subject::kSignature, "X-Amz-Expires", "x"), "AccessDenied"},
      {Status(Code::kInvalidArgument, Subject::kSignature, "Authorization", "m"),
       "AuthorizationHeaderMalformed"},
      {Status(Code::kInvalidArgument, Subject::kSignature, "X-Amz-Date", "m"),
       "AuthorizationQueryParametersError"},
      {Status(Code::kUnimplemented, Subject::kSignature, "Authorization", "v2"), "InvalidRequest"},
      {Status::InvalidArgument("xml", "bad"), "MalformedXML"},
      {Status::InvalidArgument("max-keys", "bad"), "InvalidArgument"},
      {Status::Unimplemented("x"), "NotImplemented"},
      {Status::IOError("disk"), "InternalError"},
      {Status::Corruption("crc"), "InternalError"},
      {Status::Unavailable("down"), "ServiceUnavailable"},
      {Status::ResourceExhausted("", "rpc connections"), "ServiceUnavailable"},
      {Status::ResourceExhausted("kv.descriptor_threads", "all workers busy"), "SlowDown"},
      // A cache bucket full with eviction behind (docs/decisions/cache-buckets.md).
      {Status::ResourceExhausted(std::string(storage::kCacheFullField), "cache full"), "SlowDown"},
      {storage::NoSpace("No space left on device"), "InsufficientStorage"},
      {storage::QuotaExceeded("Bucket b is over its quota"), "QuotaExceeded"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.status.ToString());
    EXPECT_EQ(ErrorRow(ToS3Error(row.status)).code, row.code);
  }
}

// A full disk or pool is 507 InsufficientStorage, with no Retry-After: waiting does not make
// room, and SDKs retry neither (docs/decisions/full-disk.md); the field is not echoed.
TEST(S3Errors, NoSpaceIsInsufficientStorageWithoutRetryAfter) {
  const Response r = Response::FromStatus(storage::NoSpace("No space left on device"));
  EXPECT_EQ(r.status, 507u);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(ErrorRow(*r.error).code, "InsufficientStorage");
  for (const auto& [name, value] : r.headers) {
    EXPECT_NE(name, "Retry-After");
  }
}

// A bucket quota is 403 QuotaExceeded, as RGW answers; the message names the bucket and the
// limit, and the internal field is not echoed (docs/decisions/bucket-quotas.md).
TEST(S3Errors, QuotaExceededIs403WithItsMessage) {
  const Response r = Response::FromStatus(
      storage::QuotaExceeded("Bucket photos is over its quota: max_bytes is 10"));
  EXPECT_EQ(r.status, 403u);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(ErrorRow(*r.error).code, "QuotaExceeded");
  EXPECT_EQ(r.error_message, "Bucket photos is over its quota: max_bytes is 10");
  EXPECT_TRUE(r.error_field.empty());
}

// A full descriptor executor is 503 SlowDown with Retry-After: what S3 clients back off on.
TEST(S3Errors, SlowDownAsksTheClientToRetryLater) {
  const Response r = Response::FromStatus(
      Status::ResourceExhausted(std::string(kDescriptorExecutorField), "all workers busy"));
  EXPECT_EQ(r.status, 503u);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(ErrorRow(*r.error).code, "SlowDown");
  bool retry_after = false;
  for (const auto& [name, value] : r.headers) {
    if (name == "Retry-After") {
      retry_after = true;
      EXPECT_EQ(value, std::to_string(kSlowDownRetryAfterSeconds));
    }
  }
  EXPECT_TRUE(retry_after);
  EXPECT_TRUE(r.error_field.empty() || ErrorRow(*r.error).http_status >= 500);
}

TEST(S3Errors, Golden4xxNamesTheArgument) {
  ErrorDetails d;
  d.resource = "/bucket/key";
  d.request_id = "0123456789ABCDEF";
  d.message = "Part number must be an integer between 1 and 10000";
  d.argument_name = "partNumber";
  d.argument_value = "0<1";
  EXPECT_EQ(RenderErrorXml(S3Error::kInvalidArgument, d),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<Error><Code>InvalidArgument</Code>"
            "<Message>Part number must be an integer between 1 and 10000</Message>"
            "<ArgumentName>partNumber</ArgumentName><ArgumentValue>0&lt;1</ArgumentValue>"
            "<Resource>/bucket/key</Resource><RequestId>0123456789ABCDEF</RequestId></Error>");
}

TEST(S3Errors, Golden5xxIsGeneric) {
  ErrorDetails d;
  d.resource = "/b";
  d.request_id = "FEDCBA9876543210";
  d.message = "rocksdb: IO error: /data/000012.sst: No space left";
  d.argument_name = "x";
  EXPECT_EQ(RenderErrorXml(S3Error::kInternalError, d),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<Error><Code>InternalError</Code>"
            "<Message>We encountered an internal error. Please try again.</Message>"
            "<Resource>/b</Resource><RequestId>FEDCBA9876543210</RequestId></Error>");
}

}  // namespace
}  // namespace oc::gateway
