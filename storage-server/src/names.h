#pragma once
// Validation of bucket names and object keys, before any I/O. Pure, thread-safe.

#include <string_view>

#include "oc/common/status.h"

namespace oc::storage {

// S3's bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules):
// 3-63 characters of lowercase letters, digits, dots and hyphens; begins and ends with a
// letter or digit; no two adjacent dots; not formatted as an IPv4 address; not starting
// with "xn--" or "sthree-", not ending with "-s3alias" or "--ol-s3".
// kInvalidArgument/kBucket (field "bucket") otherwise.
Status ValidateBucketName(std::string_view bucket);

// An object key: 1..kMaxKeyBytes bytes, no NUL byte (NUL separates key and upload id in
// the uploads index, and S3's XML listings cannot carry it).
// kInvalidArgument/kKey (field "key") otherwise.
Status ValidateObjectKey(std::string_view key);

}  // namespace oc::storage
