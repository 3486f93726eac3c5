#pragma once
// The copy-source headers of CopyObject and UploadPartCopy as text, before any store or access
// check (handlers/handler_util.cc and handlers/multipart_handlers.cc apply them):
// x-amz-copy-source, "[/]bucket/key" percent-encoded with "?versionId=null" accepted, and
// x-amz-copy-source-range, exactly "bytes=first-last" with first <= last (S3 takes no other
// form). Thread safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "oc/common/result.h"

namespace oc::gateway {

struct CopySourceName {
  std::string bucket;  // non-empty, no '/'
  std::string key;     // non-empty, decoded (not yet checked as an object key)
};

// kUnimplemented naming x-amz-copy-source for a versionId other than "null"; kInvalidArgument
// naming it for a malformed %-escape or a value that does not name both a bucket and a key.
Result<CopySourceName> ParseCopySourceHeader(std::string_view header);

struct CopySourceRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive, >= first
};

// nullopt unless `header` is exactly "bytes=<first>-<last>" (decimal, no sign or space) with
// first <= last.
std::optional<CopySourceRange> ParseCopySourceRange(std::string_view header);

}  // namespace oc::gateway
