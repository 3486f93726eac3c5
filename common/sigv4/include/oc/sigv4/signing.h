#pragma once
// AWS Signature Version 4: the steps that sign a request, shared by the two ends so that one
// implementation signs and verifies (docs/decisions/sigv4-shared-oc-sigv4.md). The client signs
// with SignRequest; the gateway's verifier (gateway/src/auth/sigv4.h) parses what a request claims
// and recomputes the signature with the same steps. Source of truth: AWS "Signature Version 4
// signing process" (Tasks 1-4) and the S3 API reference "Authenticating Requests (AWS
// Signature Version 4)"; each function below names its step.
// Thread safety: pure functions.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/headers.h"
#include "oc/common/result.h"
#include "oc/sigv4/crypto.h"

namespace oc::sigv4 {

// The one signing algorithm we sign with and accept.
inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
// The last part of every credential scope.
inline constexpr std::string_view kScopeTerminator = "aws4_request";
// The x-amz-content-sha256 value of a request whose body is not signed.
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
// The service S3 requests are signed for.
inline constexpr std::string_view kS3Service = "s3";

// A request as sent or received, views valid for one call.
struct RequestView {
  std::string_view method;  // "GET"
  std::string_view target;  // raw request-target: path ["?" query], still percent-encoded
  // Every header: names in any case, values untrimmed, repeats allowed.
  std::vector<HeaderField> headers;
};

// Credential "<access key>/<yyyymmdd>/<region>/<service>/aws4_request".
struct CredentialScope {
  std::string access_key;
  std::string date;
  std::string region;
  std::string service;
  std::string Scope() const;  // "<date>/<region>/<service>/aws4_request"
};

// "20130524T000000Z": `now` in ISO 8601 basic form, UTC (x-amz-date, X-Amz-Date).
std::string FormatAmzDate(std::chrono::system_clock::time_point now);

// Task 1 pieces. CanonicalUri: the path as received with every byte outside the unreserved
// set and '/' percent-encoded once (existing %XX escapes are normalised to uppercase, not
// encoded again: S3 does not double-encode). CanonicalQuery: pairs decoded, re-encoded with
// UriEncode, sorted by name then value, joined with '&'; `skip_signature` drops
// X-Amz-Signature (presigned). Both return kInvalidArgument / "request-target" on a
// malformed escape.
Result<std::string> CanonicalUri(std::string_view raw_path);
Result<std::string> CanonicalQuery(std::string_view raw_query, bool skip_signature);
// The same from query pairs already decoded (ParsedTarget::query).
std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& decoded,
                           bool skip_signature);
// The canonical headers block for `signed_headers` (lowercase names): each
// "name:value\n", value trimmed, inner runs of spaces folded to one, repeats joined with ','.
// kInvalidArgument / kSignature / `field` when a signed header is absent from req.headers.
Result<std::string> CanonicalHeaders(const RequestView& req,
                                     const std::vector<std::string>& signed_headers,
                                     std::string_view field);
std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             const std::vector<std::string>& signed_headers,
                             std::string_view payload_hash);
// Task 2: "AWS4-HMAC-SHA256\n<amz date>\n<scope>\n<hex sha256(canonical request)>".
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
// Task 3 (uncached; the verifier caches it): kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret,
// date), region), service), "aws4_request").
Sha256Digest DeriveSigningKey(std::string_view secret, std::string_view date,
                              std::string_view region, std::string_view service);
// Task 4: lowercase hex HMAC(signing key, string to sign).
std::string SignatureHex(const Sha256Digest& signing_key, std::string_view string_to_sign);

// Who signs, and for which region.
struct SigningCredentials {
  std::string_view access_key;
  std::string_view secret_key;
  std::string_view region;  // e.g. "us-east-1"
};

// Signs `req` for header auth (Tasks 1-4) for the service "s3". Every header in req.headers
// is signed (names lowercased, sorted, repeats joined), so the caller adds host, x-amz-date
// (= `amz_date`, "20130524T000000Z") and x-amz-content-sha256 (= `payload_hash`: the body's
// hex SHA-256 or kUnsignedPayload) before calling. Returns the Authorization header value,
// "AWS4-HMAC-SHA256 Credential=<key>/<scope>, SignedHeaders=<a;b>, Signature=<hex>", or
// kInvalidArgument / "request-target" when req.target holds a malformed escape.
Result<std::string> SignRequest(const RequestView& req, std::string_view amz_date,
                                std::string_view payload_hash,
                                const SigningCredentials& credentials);

}  // namespace oc::sigv4
