#pragma once
// S3 header semantics that need no HTTP library: HTTP and ISO 8601 dates, quoted ETags, and
// the conditional-request precedence of RFC 7232 section 6 as S3 applies it:
//   1. If-Match present and false            -> 412
//   2. else If-Unmodified-Since present, false -> 412   (ignored when If-Match is present)
//   3. If-None-Match present and matches      -> 304 for GET/HEAD (412 for copy sources)
//   4. else If-Modified-Since, not modified    -> 304   (ignored when If-None-Match is present)
// Dates are compared at one-second granularity (HTTP dates have no fraction). An
// unparseable date header is ignored (RFC 7232 3.3/3.4).
// Pure functions (but the clock and random source of CurrentHttpDate and NextRequestId);
// thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oc::gateway {

// "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate).
std::string FormatHttpDate(int64_t unix_ms);
// "2009-10-12T17:50:30.000Z" (S3's XML timestamps).
std::string FormatIso8601(int64_t unix_ms);
// Unix seconds from an IMF-fixdate, RFC 850 or asctime date; nullopt otherwise.
std::optional<int64_t> ParseHttpDate(std::string_view text);

// The Date header for now, formatted once per second per calling thread; the reference stays
// valid until this thread's next call.
const std::string& CurrentHttpDate();
// A fresh request id: 16 uppercase hex characters, like S3's x-amz-request-id.
std::string NextRequestId();

// "\"<etag>\"" as S3 sends it in the ETag header and XML.
std::string QuoteEtag(std::string_view etag);

// True if `etag` (unquoted) matches an If-Match / If-None-Match list: "*" or a
// comma-separated list of quoted (optionally W/) or bare entity tags.
bool EtagListMatches(std::string_view header, std::string_view etag);

struct Conditions {
  std::optional<std::string_view> if_match;
  std::optional<std::string_view> if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> if_unmodified_since;
};

enum class ConditionOutcome { kProceed, kNotModified, kPreconditionFailed };

// The outcome for an object with `etag` modified at `mtime_unix_ms`. `copy_source` turns
// 304 into 412 (x-amz-copy-source-if-* semantics).
ConditionOutcome EvaluateConditions(const Conditions& conditions, std::string_view etag,
                                    int64_t mtime_unix_ms, bool copy_source = false);

}  // namespace oc::gateway

namespace oc::gateway {

// Base64 (RFC 4648, padded) decoding; nullopt on any other character or bad padding.
std::optional<std::string> Base64Decode(std::string_view text);
// Base64 encoding, padded.
std::string Base64Encode(std::string_view bytes);

}  // namespace oc::gateway
