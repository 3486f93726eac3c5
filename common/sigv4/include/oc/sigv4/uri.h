#pragma once
// URI helpers for S3 and SigV4: RFC 3986 percent-encoding as SigV4's UriEncode() defines it,
// and splitting a raw HTTP request-target into a decoded path and decoded query parameters
// (percent-decoding itself is oc::PercentDecode, oc/common/text.h). The signer, the verifier
// and the gateway's router all use these (one copy of this code).
// Thread safety: pure functions.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/result.h"

namespace oc::sigv4 {

// SigV4 UriEncode: every byte except the unreserved set A-Z a-z 0-9 - . _ ~ becomes %XX with
// uppercase hex; '/' is kept as is when encode_slash is false (object key paths).
std::string UriEncode(std::string_view in, bool encode_slash);

// A request-target split at the first '?'. `raw_path` and `raw_query` are views into the
// target as received; `path` is percent-decoded; `query` holds each name=value pair
// percent-decoded, in the order received ("a&b=" gives {"a",""}, {"b",""}).
struct ParsedTarget {
  std::string_view raw_path;
  std::string_view raw_query;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
};

// kInvalidArgument (field "request-target") when the target does not start with '/', or a
// path or query escape is malformed.
Result<ParsedTarget> ParseTarget(std::string_view target);

}  // namespace oc::sigv4
