#include "s3/s3_errors.h"

#include "oc/common/check.h"
#include "oc/storage/cache_options.h"
#include "oc/storage/no_space.h"
#include "oc/storage/quota.h"
#include "s3/s3_xml.h"

namespace oc::gateway {

const S3ErrorRow& ErrorRow(S3Error error) {
  const auto index = static_cast<size_t>(error);
  OC_CHECK(index < std::size(kS3ErrorRows));
  return kS3ErrorRows[index];
}

S3Error ToS3Error(const Status& status) {
  const Subject subject = status.subject();
  switch (status.code()) {
    case Code::kOk:
      return S3Error::kInternalError;  // not an error: a caller bug, answered generically
    case Code::kNotFound:
      switch (subject) {
        case Subject::kBucket:
          return S3Error::kNoSuchBucket;
        case Subject::kUpload:
          return S3Error::kNoSuchUpload;
        case Subject::kPart:
          return S3Error::kInvalidPart;
        case Subject::kAccessKey:
          return S3Error::kInvalidAccessKeyId;
        default:
          return S3Error::kNoSuchKey;
      }
    case Code::kAlreadyExists:
      return subject == Subject::kBucket ? S3Error::kBucketAlreadyExists : S3Error::kInvalidRequest;
    case Code::kFailedPrecondition:
      switch (subject) {
        case Subject::kBucket:
          return S3Error::kBucketNotEmpty;
        case Subject::kPart:
          return S3Error::kInvalidPartOrder;
        default:
          return S3Error::kPreconditionFailed;
      }
    case Code::kInvalidArgument:
      switch (subject) {
        case Subject::kBucket:
          return S3Error::kInvalidBucketName;
        case Subject::kKey:
          return S3Error::kKeyTooLongError;
        case Subject::kDigest:
          return status.field() == "x-amz-content-sha256" ? S3Error::kXAmzContentSHA256Mismatch
                                                          : S3Error::kBadDigest;
        case Subject::kEntity:
          return status.field() == "aws-chunked" ? S3Error::kInvalidRequest
                                                 : S3Error::kIncompleteBody;
        case Subject::kPart:
          return S3Error::kInvalidPart;
        case Subject::kUpload:
          return S3Error::kInvalidRequest;  // the request does not fit the upload (checksums)
        case Subject::kSignature:
          return status.field() == "Authorization" ? S3Error::kAuthorizationHeaderMalformed
                                                   : S3Error::kAuthorizationQueryParametersError;
        case Subject::kAccessKey:
          return S3Error::kInvalidAccessKeyId;
        case Subject::kRange:
          return S3Error::kInvalidRange;
        default:
          return status.field() == "xml" ? S3Error::kMalformedXML : S3Error::kInvalidArgument;
      }
    case Code::kOutOfRange:
      switch (subject) {
        case Subject::kSignature:
          return S3Error::kRequestTimeTooSkewed;
        case Subject::kPart:
          // GetObject?partNumber past the part count; otherwise a part under the minimum.
          return status.field() == "partNumber" ? S3Error::kInvalidPartNumber
                                                : S3Error::kEntityTooSmall;
        case Subject::kEntity:
          return S3Error::kEntityTooLarge;
        default:
          return S3Error::kInvalidRange;
      }
    case Code::kPermissionDenied:
      return S3Error::kAccessDenied;
    case Code::kUnauthenticated:
      switch (subject) {
        case Subject::kSignature:
          return S3Error::kSignatureDoesNotMatch;
        case Subject::kAccessKey:
          return S3Error::kInvalidAccessKeyId;
        default:
          return S3Error::kAccessDenied;
      }
    case Code::kResourceExhausted:
      if (subject == Subject::kEntity) {
        return S3Error::kEntityTooLarge;
      }
      // A bucket quota (docs/decisions/bucket-quotas.md): a limit the operator set, 403 as in
      // RGW; checked before the disk, which is not the client's to free.
      if (storage::IsQuotaExceeded(status)) {
        return S3Error::kQuotaExceeded;
      }
      // The disk or pool is full: not load, so not SlowDown/503, which SDKs retry blindly
      // (docs/decisions/full-disk.md).
      if (storage::IsNoSpace(status)) {
        return S3Error::kInsufficientStorage;
      }
      // Every worker of the descriptor executor is busy (oc/storage/kv.h), or a cache bucket
      // is full and eviction did not make room in time (oc/storage/cache_options.h): the
      // request was refused before anything was stored, and S3 clients back off and retry on
      // SlowDown.
      return status.field() == kDescriptorExecutorField ||
                     status.field() == storage::kCacheFullField
                 ? S3Error::kSlowDown
                 : S3Error::kServiceUnavailable;
    case Code::kUnavailable:
      return S3Error::kServiceUnavailable;
    case Code::kUnimplemented:
      return subject == Subject::kSignature ? S3Error::kInvalidRequest : S3Error::kNotImplemented;
    case Code::kCancelled:
      return S3Error::kRequestTimeout;
    case Code::kCorruption:
    case Code::kIOError:
    case Code::kInternal:
      return S3Error::kInternalError;
  }
  return S3Error::kInternalError;
}

std::string RenderErrorXml(S3Error error, const ErrorDetails& details) {
  const S3ErrorRow& row = ErrorRow(error);
  const bool server_fault = row.http_status >= 500;
  XmlWriter xml;
  xml.Open("Error");
  xml.Element("Code", row.code);
  // 5xx messages are the table's, except SlowDown's, which says which bound refused the
  // request (Response::FromStatus).
  const bool own_message = !server_fault || error == S3Error::kSlowDown;
  xml.Element("Message", (own_message && !details.message.empty()) ? details.message : row.message);
  if (!server_fault && !details.argument_name.empty()) {
    xml.Element("ArgumentName", details.argument_name);
    xml.Element("ArgumentValue", details.argument_value);
  }
  xml.Element("Resource", details.resource);
  xml.Element("RequestId", details.request_id);
  xml.Close("Error");
  return std::move(xml).Finish();
}

}  // namespace oc::gateway
