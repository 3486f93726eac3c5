#pragma once
// URI helpers for S3 and SigV4: RFC 3986 percent-encoding as SigV4's UriEncode() defines it,
// strict percent-decoding, and splitting a raw HTTP request-target into a decoded path and
// decoded query parameters. The gateway's router uses these too (one copy of this code).
// Thread safety: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/result.h"

namespace oc::gateway::auth {

// SigV4 UriEncode: every byte except the unreserved set A-Z a-z 0-9 - . _ ~ becomes %XX with
// uppercase hex; '/' is kept as is when encode_slash is false (object key paths).
std::string UriEncode(std::string_view in, bool encode_slash);

// Decodes %XX escapes (either hex case). '+' stays '+' (RFC 3986; SigV4 clients encode a
// space as %20). nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view in);

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

}  // namespace oc::gateway::auth
