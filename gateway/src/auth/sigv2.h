#pragma once
// AWS Signature Version 2 verification (what aws-cli v1's `s3 presign` and older S3 clients
// send), called by Authenticator::Authenticate (sigv4.h) for an `Authorization: AWS key:sig`
// header or a query string with AWSAccessKeyId, Signature and Expires.
// Source of truth: Amazon S3 Developer Guide, "Signing and Authenticating REST Requests"
// (Signature Version 2): Signature = Base64(HMAC-SHA1(secret, StringToSign)),
//   StringToSign = Verb LF Content-MD5 LF Content-Type LF Date LF CanonicalizedAmzHeaders
//                  CanonicalizedResource
// where Date is the Date header ("" when x-amz-date is sent) or, in a query string, Expires;
// CanonicalizedAmzHeaders are the x-amz-* headers, lowercase, sorted, repeated ones joined with
// ',', each "name:value" LF; CanonicalizedResource is "/bucket" for a virtual-host request,
// then the path as sent, then the sub-resource and response-override query parameters, sorted,
// decoded, as "?name[=value]&...".
//
// The checks are SigV4's (sigv4.h): the signature covers the method and the resource, so a
// URL signed for GET cannot PUT or name another key; a header-signed request must carry a Date
// or x-amz-date within AuthOptions::max_skew (RequestTimeTooSkewed, 403); a query-signed one is
// refused once Expires has passed, or when Expires is more than kMaxPresignedExpiresSeconds
// ahead (AccessDenied, 403). SigV2 signs every x-amz-* header but no x-oc-* header, so an
// x-oc-* header makes the request AccessDenied (CheckHeadersSigned, the signing rule). The body
// is not signed (PayloadMode::kUnsigned); Content-MD5, when sent, is signed and checked by the
// store.
// Errors: as sigv4.h's table, with the fields "Authorization", "Signature", "Expires",
// "AWSAccessKeyId", "Date".
// Thread safety: pure functions.

#include <chrono>
#include <string_view>

#include "auth/sigv4.h"
#include "oc/sigv4/uri.h"

namespace oc::gateway::auth {

// True for an Authorization header value of the SigV2 form ("AWS " + ...).
bool IsSigV2Authorization(std::string_view authorization);
// True when the query carries AWSAccessKeyId or Signature (then Expires is required too).
bool IsSigV2Query(const sigv4::ParsedTarget& target);

Result<AuthResult> AuthenticateSigV2Header(const RequestView& req,
                                           const sigv4::ParsedTarget& target,
                                           std::string_view authorization, const Credentials& creds,
                                           const AuthOptions& options,
                                           std::chrono::sys_seconds now);
Result<AuthResult> AuthenticateSigV2Query(const RequestView& req, const sigv4::ParsedTarget& target,
                                          const Credentials& creds, const AuthOptions& options,
                                          std::chrono::sys_seconds now);

// The SigV2 string to sign of `req` (exposed for tests). `date` is the Date line's value;
// `bucket_slash` writes the resource of a path-style bucket request ("/bucket") as "/bucket/".
std::string SigV2StringToSign(const RequestView& req, std::string_view date,
                              std::string_view virtual_host_domain, bool bucket_slash = false);
// Base64(HMAC-SHA1(secret, string_to_sign)).
std::string SigV2Signature(std::string_view secret, std::string_view string_to_sign);

}  // namespace oc::gateway::auth
