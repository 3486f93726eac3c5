#pragma once
// AWS Signature Version 4 verification for the S3 gateway, as pure functions over a view of
// the request as received (no Beast types: the gateway adapts its request into
// sigv4::RequestView). The signing steps themselves (canonical request, string to sign,
// signing key) are oc_sigv4's (oc/sigv4/signing.h), the same code the client signs with;
// this file parses what a request claims and checks it.
// Covers the Authorization header (payload hash, UNSIGNED-PAYLOAD, or
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD) and presigned URLs (X-Amz-* query parameters);
// Authenticate hands Signature Version 2 (header and query string) to sigv2.h.
// Source of truth: AWS "Signature Version 4 signing process" and the S3 API reference
// "Authenticating Requests (AWS Signature Version 4)"; each step below names its part.
//
// Region: a request must be signed for AuthOptions::region (Default "us-east-1") and the
// service "s3"; an empty region accepts whatever region the client signed with.
// Timestamps: x-amz-date (header auth) or X-Amz-Date (presigned) in ISO 8601 basic form
// ("20130524T000000Z"); the Date header is not used. Header-signed requests must be within
// AuthOptions::max_skew (Default 15 minutes) of the server clock either way; presigned URLs
// are valid from X-Amz-Date - max_skew to X-Amz-Date + X-Amz-Expires (<= 604800 s).
//
// ERRORS (the gateway's ToS3Error maps them; no other Status comes out of this module):
//   S3 error code                      HTTP  Code               Subject     field
//   SignatureDoesNotMatch               403  kUnauthenticated   kSignature  "" / "X-Amz-Signature"
//     (also a presigned X-Amz-Signature of the wrong length or not lowercase hex, as S3)
//   InvalidAccessKeyId                  403  kUnauthenticated   kAccessKey  ""
//   RequestTimeTooSkewed                403  kOutOfRange        kSignature  "x-amz-date"
//   AccessDenied (expired or not yet    403  kPermissionDenied  kSignature  "X-Amz-Expires" /
//     valid presigned URL, X-Amz-Expires                                    "X-Amz-Date" /
//     0 included; missing or unparsable                                     "x-amz-date"
//     x-amz-date header)
//   AccessDenied (an x-amz-* or x-oc-*  403  kPermissionDenied  kSignature  the first such
//     header the signature does not                                         header (lowercase)
//     cover: CheckHeadersSigned)
//   AuthorizationHeaderMalformed        400  kInvalidArgument   kSignature  "Authorization"
//   AuthorizationQueryParametersError   400  kInvalidArgument   kSignature  "X-Amz-<Param>"
//     (also X-Amz-Expires not a number, negative, or over 604800, as S3)
//     (rule: kInvalidArgument+kSignature is AuthorizationHeaderMalformed when field is
//      "Authorization", else AuthorizationQueryParametersError)
//   InvalidRequest ("Please use          400  kUnimplemented     kSignature  "Authorization" /
//     AWS4-HMAC-SHA256": an algorithm                                        "X-Amz-Algorithm"
//     neither SigV4 nor SigV2)
//   InvalidArgument (bad                 400  kInvalidArgument   kNone       "x-amz-content-sha256"
//     x-amz-content-sha256 value, bad or                                     /"x-amz-decoded-
//     missing x-amz-decoded-content-                                          content-length"
//     length, both header and query                                          /"Authorization"
//     auth present, missing or unknown                                       /"x-amz-trailer"
//     x-amz-trailer)
//   NotImplemented (trailer modes not    501  kUnimplemented     kNone       "x-amz-content-sha256"
//     accepted)
//   XAmzContentSHA256Mismatch           400  kInvalidArgument   kDigest     "x-amz-content-sha256"
//     (CheckPayloadSha256, at body end; the gateway's own Content-MD5 BadDigest should use
//      another field, e.g. "Content-MD5")
// aws_chunked.h lists the errors of the chunk decoder.
//
// Thread safety: Authenticator::Authenticate may be called concurrently from any thread.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credentials.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth {

using sigv4::RequestView;  // the request as received, views valid for one call

// What x-amz-content-sha256 (or a presigned URL) says about the body.
enum class PayloadMode {
  kSigned,           // a hex SHA-256: the gateway hashes the body and calls CheckPayloadSha256
  kUnsigned,         // UNSIGNED-PAYLOAD, presigned URLs, and anonymous requests
  kStreamingSigned,  // STREAMING-AWS4-HMAC-SHA256-PAYLOAD: decode with AwsChunkedDecoder
  // STREAMING-UNSIGNED-PAYLOAD-TRAILER: decode with AwsChunkedDecoder, which checks the
  // x-amz-checksum-* trailer. Only when AuthOptions::accept_unsigned_trailer is set.
  kStreamingUnsignedTrailer,
  // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: signed chunks as kStreamingSigned, then the
  // x-amz-checksum-* trailer and its x-amz-trailer-signature, all checked by
  // AwsChunkedDecoder. Only when AuthOptions::accept_unsigned_trailer is set (the caller
  // handles a trailer checksum either way).
  kStreamingSignedTrailer,
};

// True for the modes whose body is aws-chunked (decode with AwsChunkedDecoder(AuthResult)).
inline bool IsAwsChunked(PayloadMode mode) {
  return mode == PayloadMode::kStreamingSigned || mode == PayloadMode::kStreamingUnsignedTrailer ||
         mode == PayloadMode::kStreamingSignedTrailer;
}

// True for the aws-chunked modes whose chunks carry signatures.
inline bool IsSignedStreaming(PayloadMode mode) {
  return mode == PayloadMode::kStreamingSigned || mode == PayloadMode::kStreamingSignedTrailer;
}

// What the aws-chunked decoder needs to verify the chunk signature chain.
struct StreamingSigner {
  sigv4::Sha256Digest signing_key{};  // kSigning of the request's scope
  std::string amz_date;               // "20130524T000000Z", the request's x-amz-date
  std::string scope;                  // "20130524/us-east-1/s3/aws4_request"
  std::string seed_signature;         // the Authorization header's signature, lowercase hex
};

struct AuthResult {
  // The authenticated user (owned by the Credentials), or nullptr for an anonymous request:
  // no Authorization header and no X-Amz-Algorithm query parameter.
  const User* user = nullptr;
  PayloadMode payload = PayloadMode::kUnsigned;
  bool presigned = false;
  std::string payload_sha256;  // lowercase hex, when payload == kSigned
  // When IsAwsChunked(payload): x-amz-decoded-content-length; when IsSignedStreaming, the
  // chain seed; with a trailer (kStreamingUnsignedTrailer, kStreamingSignedTrailer), the
  // checksum header named by x-amz-trailer.
  StreamingSigner streaming;
  uint64_t decoded_content_length = 0;
  std::string trailer;  // e.g. "x-amz-checksum-crc32" (lowercase)
};

struct AuthOptions {
  // The region clients must sign for; empty accepts any region. Default: "us-east-1"
  std::string region = "us-east-1";
  // Largest accepted distance between a request's timestamp and the server clock.
  // Default: 15 minutes (S3's RequestTimeTooSkewed window)
  std::chrono::seconds max_skew = std::chrono::minutes(15);
  // Accept STREAMING-UNSIGNED-PAYLOAD-TRAILER and STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  // (else NotImplemented). The caller must then
  // decode such bodies with AwsChunkedDecoder(AuthResult) (see IsAwsChunked), never store
  // them raw. Default: false
  bool accept_unsigned_trailer = false;
  // The virtual-host domain (GatewayOptions::virtual_host_domain): a SigV2 signature covers
  // the bucket of a virtual-host request as part of its resource (sigv2.h).
  // Default: "" (path style only)
  std::string virtual_host_domain;
};

// Longest presigned URL lifetime S3 accepts (7 days).
inline constexpr int64_t kMaxPresignedExpiresSeconds = 604800;
// Largest Authorization header / query credential accepted before parsing.
inline constexpr size_t kMaxAuthorizationBytes = 8192;

// The signing rule (docs/protocol.md, "Signing"): in an authenticated request every header
// named x-amz-* or x-oc-* (any case) must be listed in SignedHeaders (X-Amz-SignedHeaders for
// a presigned URL), so that whoever replays or relays a signed request cannot add one that
// changes what it does (user metadata, x-amz-copy-source turning a PUT into a copy, a
// descriptor's delivery or data-plane target). The one exception is x-amz-content-sha256,
// which S3 also accepts unsigned: under header auth its value is the canonical request's
// payload-hash line, so it is covered anyway, and under a presigned URL it is ignored (the
// payload mode comes from the X-Amz-Content-Sha256 query parameter) and read by nothing else.
// Anonymous requests are not checked: nothing was signed. Authenticate applies this rule
// after the signature matches; it is exposed for tests.
// Returns OK, or kPermissionDenied / kSignature / <first unsigned header, lowercase> with
// every unsigned name in the message (AccessDenied, as S3's HeadersNotSigned).
Status CheckHeadersSigned(const RequestView& req, const std::vector<std::string>& signed_headers);
// How CheckHeadersSigned's message starts (S3's own wording); the unsigned names follow.
inline constexpr std::string_view kHeadersNotSignedMessage =
    "There were headers present in the request which were not signed";

// Verifies requests against a Credentials set. Derived signing keys are cached per
// (secret, date, region) in a small per-thread cache (no lock on the request path), so a
// key costs four HMACs once a day per I/O thread.
class Authenticator {
 public:
  // REQUIRES: `creds` outlives this object.
  Authenticator(const Credentials& creds, AuthOptions options);

  // Authenticates `req` at server time `now`. Returns the user (nullptr if anonymous) and how
  // the body must be checked; errors as listed at the top of this file. A signed request
  // also passes CheckHeadersSigned, so no header outside its signature can steer it.
  Result<AuthResult> Authenticate(const RequestView& req,
                                  std::chrono::system_clock::time_point now) const;

  const AuthOptions& options() const { return options_; }

 private:
  const Credentials& creds_;
  const AuthOptions options_;
};

// XAmzContentSHA256Mismatch check at body end: OK when `auth.payload` is not kSigned or
// `actual` (SHA-256 of the body received) equals auth.payload_sha256; else kInvalidArgument /
// kDigest / "x-amz-content-sha256".
Status CheckPayloadSha256(const AuthResult& auth, const sigv4::Sha256Digest& actual);

// ---- Parsing what a request claims (the signing steps are in oc/sigv4/signing.h). ----

// Credential "<access key>/<yyyymmdd>/<region>/<service>/aws4_request".
// kInvalidArgument / kSignature / `field` on a malformed credential.
Result<sigv4::CredentialScope> ParseCredential(std::string_view credential, std::string_view field);

// "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=a;b, Signature=hex" (any order, optional
// spaces after the commas). kUnimplemented / kSignature for another algorithm;
// kInvalidArgument / kSignature / "Authorization" when malformed.
struct AuthorizationHeader {
  sigv4::CredentialScope credential;
  std::vector<std::string> signed_headers;  // lowercase, as listed (must be sorted, unique)
  std::string signature;                    // 64 lowercase hex chars
};
Result<AuthorizationHeader> ParseAuthorization(std::string_view value);
// "host;range;x-amz-date": lowercase names separated by ';', which must include "host".
// kInvalidArgument / kSignature / `field` otherwise.
Result<std::vector<std::string>> ParseSignedHeaders(std::string_view list, std::string_view field);

}  // namespace oc::gateway::auth
