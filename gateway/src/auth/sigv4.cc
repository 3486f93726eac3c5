// SigV4 verification: Authorization header and presigned URLs, the signing-key cache and the
// time checks. The signature itself is recomputed with oc_sigv4's steps (oc/sigv4/signing.h).
#include "auth/sigv4.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "auth/checksum.h"
#include "auth/sigv2.h"
#include "oc/common/text.h"
#include "oc/sigv4/uri.h"

namespace oc::gateway::auth {
namespace {

using sigv4::CredentialScope;
using sigv4::kAlgorithm;
using sigv4::kUnsignedPayload;
using sigv4::ParsedTarget;
using sigv4::Sha256Digest;
constexpr std::string_view kService = sigv4::kS3Service;
constexpr std::string_view kStreamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
constexpr std::string_view kUnsignedTrailerPayload = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
constexpr std::string_view kSignedTrailerPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
// x-amz-* and x-oc-* request headers must be signed (CheckHeadersSigned); this one is
// exempt (see sigv4.h).
constexpr std::string_view kContentSha256Header = "x-amz-content-sha256";
// Unsigned header names listed in the AccessDenied message; the rest are counted.
constexpr size_t kMaxUnsignedNamesListed = 8;
// Signing keys cached per I/O thread; a handful of users sign with one date at a time, so the
// cache is simply dropped when it reaches this size.
constexpr size_t kMaxCachedSigningKeys = 256;

using Clock = std::chrono::system_clock;
// Request times in whole seconds: a 4-digit year converts without overflow (nanosecond
// time points end in 2262), and SigV4 timestamps have second resolution anyway.
using Seconds = std::chrono::sys_seconds;

Status Malformed(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kSignature, std::string(field),
                std::move(message));
}

Status AccessDenied(std::string_view field, std::string message) {
  return Status(Code::kPermissionDenied, Subject::kSignature, std::string(field),
                std::move(message));
}

// The values of header `name` (any case); `count` says how many times it appeared.
struct HeaderLookup {
  std::string_view value;
  size_t count = 0;
};
HeaderLookup FindHeader(const RequestView& req, std::string_view name) {
  HeaderLookup out;
  for (const auto& [n, v] : req.headers) {
    if (EqualsIgnoreCase(n, name)) {
      if (out.count == 0) {
        out.value = v;
      }
      ++out.count;
    }
  }
  return out;
}

int Digits(std::string_view s, size_t pos, size_t n) {
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// "20130524T000000Z" (ISO 8601 basic, UTC) to a time point; nullopt if malformed.
std::optional<Seconds> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') {
    return std::nullopt;
  }
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (s[i] < '0' || s[i] > '9')) {
      return std::nullopt;
    }
  }
  const std::chrono::year_month_day ymd{std::chrono::year{Digits(s, 0, 4)},
                                        std::chrono::month{static_cast<unsigned>(Digits(s, 4, 2))},
                                        std::chrono::day{static_cast<unsigned>(Digits(s, 6, 2))}};
  const int hh = Digits(s, 9, 2);
  const int mm = Digits(s, 11, 2);
  const int ss = Digits(s, 13, 2);
  if (!ymd.ok() || hh > 23 || mm > 59 || ss > 59) {
    return std::nullopt;
  }
  return std::chrono::sys_days(ymd) + std::chrono::hours(hh) + std::chrono::minutes(mm) +
         std::chrono::seconds(ss);
}

// Classifies an x-amz-content-sha256 value (header, or query for presigned URLs).
Status ClassifyPayload(std::string_view value, const AuthOptions& options, AuthResult* out) {
  constexpr std::string_view kField = "x-amz-content-sha256";
  if (value == kUnsignedPayload) {
    out->payload = PayloadMode::kUnsigned;
    return Status::Ok();
  }
  if (value == kStreamingPayload) {
    out->payload = PayloadMode::kStreamingSigned;
    return Status::Ok();
  }
  if (value == kUnsignedTrailerPayload && options.accept_unsigned_trailer) {
    out->payload = PayloadMode::kStreamingUnsignedTrailer;
    return Status::Ok();
  }
  if (value == kSignedTrailerPayload && options.accept_unsigned_trailer) {
    out->payload = PayloadMode::kStreamingSignedTrailer;
    return Status::Ok();
  }
  if (value.starts_with("STREAMING-")) {
    return Status(Code::kUnimplemented, Subject::kNone, std::string(kField),
                  "streaming mode not supported: " + std::string(value));
  }
  if (value.size() != 2 * sigv4::kSha256Bytes) {
    return Status::InvalidArgument(std::string(kField),
                                   "must be UNSIGNED-PAYLOAD, "
                                   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD or a SHA-256 in hex");
  }
  if (!std::all_of(value.begin(), value.end(), [](char c) { return HexDigit(c) >= 0; })) {
    return Status::InvalidArgument(std::string(kField), "not a SHA-256 in hex");
  }
  std::string lower = AsciiLower(value);
  out->payload = PayloadMode::kSigned;
  out->payload_sha256 = std::move(lower);
  return Status::Ok();
}

// Checks the scope against the configured region, the service and the request date.
Status CheckScope(const CredentialScope& scope, std::string_view amz_date,
                  const AuthOptions& options, std::string_view field) {
  if (scope.date != amz_date.substr(0, 8)) {
    return Malformed(field, "credential date is not the date of the request timestamp");
  }
  if (!options.region.empty() && scope.region != options.region) {
    return Malformed(
        field, "the region '" + scope.region + "' is wrong; expecting '" + options.region + "'");
  }
  if (scope.service != kService) {
    return Malformed(field, "the service must be 's3'");
  }
  return Status::Ok();
}

// Thread-local signing key cache (see Authenticator).
Sha256Digest CachedSigningKey(std::string_view secret, std::string_view date,
                              std::string_view region) {
  thread_local std::unordered_map<std::string, Sha256Digest> cache;
  std::string key;
  key.reserve(secret.size() + date.size() + region.size() + 2);
  key.append(secret).append("\n").append(date).append("\n").append(region);
  if (auto it = cache.find(key); it != cache.end()) {
    return it->second;
  }
  if (cache.size() >= kMaxCachedSigningKeys) {
    cache.clear();
  }
  const Sha256Digest signing_key = sigv4::DeriveSigningKey(secret, date, region, kService);
  cache.emplace(std::move(key), signing_key);
  return signing_key;
}

Status SignatureMismatch(std::string_view field, std::string_view string_to_sign) {
  std::string message = "signature does not match; string to sign: ";
  for (char c : string_to_sign) {
    message.push_back(c == '\n' ? '|' : c);
  }
  return Status(Code::kUnauthenticated, Subject::kSignature, std::string(field),
                std::move(message));
}

Status UnknownAccessKey() {
  return Status(Code::kUnauthenticated, Subject::kAccessKey, "",
                "the access key id does not exist in our records");
}

// The query parameter `name` of a presigned URL, which must appear exactly once.
Result<std::string_view> QueryParam(const ParsedTarget& target, std::string_view name) {
  const std::string* found = nullptr;
  for (const auto& [n, v] : target.query) {
    if (n == name) {
      if (found != nullptr) {
        return Malformed(name, "repeated query parameter");
      }
      found = &v;
    }
  }
  if (found == nullptr) {
    return Malformed(name, "missing query parameter");
  }
  return std::string_view(*found);
}

Result<AuthResult> AuthenticateHeader(const RequestView& req, const ParsedTarget& target,
                                      std::string_view authorization, const Credentials& creds,
                                      const AuthOptions& options, Seconds now) {
  OC_ASSIGN_OR_RETURN(AuthorizationHeader auth, ParseAuthorization(authorization));

  const HeaderLookup date_header = FindHeader(req, "x-amz-date");
  if (date_header.count != 1) {
    return AccessDenied("x-amz-date", "AWS authentication requires one valid x-amz-date header");
  }
  const std::optional<Seconds> when = ParseAmzDate(date_header.value);
  if (!when) {
    return AccessDenied("x-amz-date", "x-amz-date must be yyyymmddThhmmssZ");
  }
  OC_RETURN_IF_ERROR(CheckScope(auth.credential, date_header.value, options, "Authorization"));
  if (*when > now + options.max_skew || *when < now - options.max_skew) {
    return Status(Code::kOutOfRange, Subject::kSignature, "x-amz-date",
                  "the difference between the request time and the server's time is too large");
  }
  const User* user = creds.Find(auth.credential.access_key);
  if (user == nullptr) {
    return UnknownAccessKey();
  }

  AuthResult result;
  result.user = user;
  const HeaderLookup content_sha = FindHeader(req, "x-amz-content-sha256");
  if (content_sha.count > 1) {
    return Status::InvalidArgument("x-amz-content-sha256", "repeated header");
  }
  // A generic SigV4 client may omit the header: it then signed the hash of its body, which
  // for a body-less request is the empty hash; the body check at the end enforces it.
  const std::string_view payload_hash =
      content_sha.count == 1 ? content_sha.value : sigv4::kEmptySha256Hex;
  OC_RETURN_IF_ERROR(ClassifyPayload(payload_hash, options, &result));
  if (IsAwsChunked(result.payload)) {
    const HeaderLookup decoded = FindHeader(req, "x-amz-decoded-content-length");
    const std::string_view v = decoded.value;
    if (decoded.count != 1 || v.empty() || v.size() > 19 ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Status::InvalidArgument("x-amz-decoded-content-length",
                                     "streaming uploads need one decimal "
                                     "x-amz-decoded-content-length");
    }
    result.decoded_content_length = 0;
    for (char c : v) {
      result.decoded_content_length = result.decoded_content_length * 10 + uint64_t(c - '0');
    }
  }
  if (result.payload == PayloadMode::kStreamingUnsignedTrailer ||
      result.payload == PayloadMode::kStreamingSignedTrailer) {
    // One checksum trailer, named up front so the decoder knows what to compute.
    const HeaderLookup trailer = FindHeader(req, "x-amz-trailer");
    const std::optional<ChecksumAlgorithm> algorithm =
        trailer.count == 1 ? ChecksumFromHeaderName(Trim(trailer.value)) : std::nullopt;
    if (!algorithm) {
      return Status::InvalidArgument("x-amz-trailer",
                                     "trailer streaming uploads need one x-amz-trailer naming "
                                     "an x-amz-checksum-* header");
    }
    result.trailer = std::string(ChecksumHeaderName(*algorithm));
  }

  // S3 signs the path encoded once: re-encode what ParseTarget decoded.
  const std::string uri = sigv4::UriEncode(target.path, /*encode_slash=*/false);
  const std::string query = sigv4::CanonicalQuery(target.query, /*skip_signature=*/false);
  OC_ASSIGN_OR_RETURN(std::string headers,
                      sigv4::CanonicalHeaders(req, auth.signed_headers, "Authorization"));
  const std::string canonical =
      sigv4::CanonicalRequest(req.method, uri, query, headers, auth.signed_headers, payload_hash);
  const std::string scope = auth.credential.Scope();
  const std::string sts = sigv4::StringToSign(date_header.value, scope, canonical);
  const Sha256Digest key =
      CachedSigningKey(user->secret_key, auth.credential.date, auth.credential.region);
  if (!sigv4::ConstantTimeEquals(sigv4::SignatureHex(key, sts), auth.signature)) {
    return SignatureMismatch("", sts);
  }
  OC_RETURN_IF_ERROR(CheckHeadersSigned(req, auth.signed_headers));
  if (IsSignedStreaming(result.payload)) {
    result.streaming =
        StreamingSigner{key, std::string(date_header.value), scope, std::move(auth.signature)};
  }
  return result;
}

Result<AuthResult> AuthenticatePresigned(const RequestView& req, const ParsedTarget& target,
                                         const Credentials& creds, const AuthOptions& options,
                                         Seconds now) {
  OC_ASSIGN_OR_RETURN(std::string_view algorithm, QueryParam(target, "X-Amz-Algorithm"));
  if (algorithm != kAlgorithm) {
    return Status(Code::kUnimplemented, Subject::kSignature, "X-Amz-Algorithm",
                  "unsupported algorithm; use AWS4-HMAC-SHA256");
  }
  OC_ASSIGN_OR_RETURN(std::string_view credential_text, QueryParam(target, "X-Amz-Credential"));
  OC_ASSIGN_OR_RETURN(std::string_view amz_date, QueryParam(target, "X-Amz-Date"));
  OC_ASSIGN_OR_RETURN(std::string_view expires_text, QueryParam(target, "X-Amz-Expires"));
  OC_ASSIGN_OR_RETURN(std::string_view signed_text, QueryParam(target, "X-Amz-SignedHeaders"));
  OC_ASSIGN_OR_RETURN(std::string_view signature, QueryParam(target, "X-Amz-Signature"));

  if (credential_text.size() > kMaxAuthorizationBytes) {
    return Malformed("X-Amz-Credential", "too long");
  }
  OC_ASSIGN_OR_RETURN(CredentialScope credential,
                      ParseCredential(credential_text, "X-Amz-Credential"));
  const std::optional<Seconds> when = ParseAmzDate(amz_date);
  if (!when) {
    return Malformed("X-Amz-Date", "X-Amz-Date must be yyyymmddThhmmssZ");
  }
  OC_RETURN_IF_ERROR(CheckScope(credential, amz_date, options, "X-Amz-Credential"));
  // S3 answers a value that is not a number, a negative one, or one over 604800 (7 days) with
  // 400 AuthorizationQueryParametersError ("X-Amz-Expires should be a number", "... must be
  // non-negative", "... must be less than a week (in seconds)"); 0 is a valid number whose URL
  // has expired when it arrives (403 AccessDenied below). S3 API reference, "Authenticating
  // Requests: Using Query Parameters (AWS Signature Version 4)": X-Amz-Expires is 1..604800.
  const bool negative = expires_text.starts_with('-');
  const std::string_view expires_digits = negative ? expires_text.substr(1) : expires_text;
  if (expires_digits.empty() || !std::all_of(expires_digits.begin(), expires_digits.end(),
                                             [](char c) { return c >= '0' && c <= '9'; })) {
    return Malformed("X-Amz-Expires", "X-Amz-Expires should be a number");
  }
  if (negative) {
    return Malformed("X-Amz-Expires", "X-Amz-Expires must be non-negative");
  }
  int64_t expires = 0;
  for (char c : expires_digits.substr(0, 8)) {
    expires = expires * 10 + (c - '0');
  }
  if (expires_digits.size() > 8 || expires > kMaxPresignedExpiresSeconds) {
    return Malformed("X-Amz-Expires",
                     "X-Amz-Expires must be less than a week (in seconds); that is, at most "
                     "604800 seconds");
  }
  if (expires == 0) {
    return AccessDenied("X-Amz-Expires", "request has expired");
  }
  if (signed_text.size() > kMaxAuthorizationBytes) {
    return Malformed("X-Amz-SignedHeaders", "too long");
  }
  OC_ASSIGN_OR_RETURN(std::vector<std::string> signed_headers,
                      ParseSignedHeaders(signed_text, "X-Amz-SignedHeaders"));
  // A signature of the wrong length, in uppercase or not hex at all is simply not the
  // signature: S3 answers SignatureDoesNotMatch (403), not a parameter error (400), and
  // clients retry the two differently. ConstantTimeEquals below refuses it after the time
  // checks, so an expired URL is reported as expired whatever its signature looks like.
  if (now < *when - options.max_skew) {
    return AccessDenied("X-Amz-Date", "request is not valid yet");
  }
  if (now > *when + std::chrono::seconds(expires)) {
    return AccessDenied("X-Amz-Expires", "request has expired");
  }
  const User* user = creds.Find(credential.access_key);
  if (user == nullptr) {
    return UnknownAccessKey();
  }

  AuthResult result;
  result.user = user;
  result.presigned = true;
  // S3 presigned URLs sign UNSIGNED-PAYLOAD unless the URL carries X-Amz-Content-Sha256.
  std::string_view payload_hash = kUnsignedPayload;
  for (const auto& [n, v] : target.query) {
    if (n == "X-Amz-Content-Sha256") {
      payload_hash = v;
    }
  }
  OC_RETURN_IF_ERROR(ClassifyPayload(payload_hash, options, &result));
  if (IsAwsChunked(result.payload)) {
    return Status::InvalidArgument("X-Amz-Content-Sha256",
                                   "presigned URLs cannot sign a streaming payload");
  }

  const std::string uri = sigv4::UriEncode(target.path, /*encode_slash=*/false);
  const std::string query = sigv4::CanonicalQuery(target.query, /*skip_signature=*/true);
  OC_ASSIGN_OR_RETURN(std::string headers,
                      sigv4::CanonicalHeaders(req, signed_headers, "X-Amz-SignedHeaders"));
  const std::string canonical =
      sigv4::CanonicalRequest(req.method, uri, query, headers, signed_headers, payload_hash);
  const std::string sts = sigv4::StringToSign(amz_date, credential.Scope(), canonical);
  const Sha256Digest key = CachedSigningKey(user->secret_key, credential.date, credential.region);
  if (!sigv4::ConstantTimeEquals(sigv4::SignatureHex(key, sts), signature)) {
    return SignatureMismatch("X-Amz-Signature", sts);
  }
  OC_RETURN_IF_ERROR(CheckHeadersSigned(req, signed_headers));
  return result;
}

}  // namespace

Status CheckHeadersSigned(const RequestView& req, const std::vector<std::string>& signed_headers) {
  std::vector<std::string> unsigned_names;
  for (const auto& [name, value] : req.headers) {
    std::string lower = AsciiLower(name);
    if (!(lower.starts_with("x-amz-") || lower.starts_with("x-oc-")) ||
        lower == kContentSha256Header ||
        std::find(signed_headers.begin(), signed_headers.end(), lower) != signed_headers.end()) {
      continue;
    }
    unsigned_names.push_back(std::move(lower));
  }
  if (unsigned_names.empty()) {
    return Status::Ok();
  }
  std::string first = unsigned_names.front();  // the field: the first one received
  std::sort(unsigned_names.begin(), unsigned_names.end());
  unsigned_names.erase(std::unique(unsigned_names.begin(), unsigned_names.end()),
                       unsigned_names.end());
  std::string message = std::string(kHeadersNotSignedMessage) + ": ";
  for (size_t i = 0; i < unsigned_names.size() && i < kMaxUnsignedNamesListed; ++i) {
    message.append(i == 0 ? "" : ", ").append(unsigned_names[i]);
  }
  if (unsigned_names.size() > kMaxUnsignedNamesListed) {
    message.append(" and ")
        .append(std::to_string(unsigned_names.size() - kMaxUnsignedNamesListed))
        .append(" more");
  }
  return AccessDenied(first, std::move(message));
}

Authenticator::Authenticator(const Credentials& creds, AuthOptions options)
    : creds_(creds), options_(std::move(options)) {}

Result<AuthResult> Authenticator::Authenticate(const RequestView& req,
                                               Clock::time_point now) const {
  OC_ASSIGN_OR_RETURN(ParsedTarget target, sigv4::ParseTarget(req.target));
  const HeaderLookup authorization = FindHeader(req, "authorization");
  // Any of the SigV4 query parameters makes it a presigned request, so a URL missing one of
  // them is an AuthorizationQueryParametersError, never an anonymous request.
  const bool presigned = std::any_of(target.query.begin(), target.query.end(), [](const auto& kv) {
    return kv.first == "X-Amz-Algorithm" || kv.first == "X-Amz-Credential" ||
           kv.first == "X-Amz-Signature";
  });
  const bool sigv2_query = !presigned && IsSigV2Query(target);
  if (authorization.count > 0 && (presigned || sigv2_query)) {
    return Status::InvalidArgument("Authorization", "only one auth mechanism allowed");
  }
  if (authorization.count > 1) {
    return Malformed("Authorization", "repeated Authorization header");
  }
  if (authorization.count == 1 && IsSigV2Authorization(authorization.value)) {
    return AuthenticateSigV2Header(req, target, authorization.value, creds_, options_,
                                   std::chrono::floor<std::chrono::seconds>(now));
  }
  if (authorization.count == 1) {
    return AuthenticateHeader(req, target, authorization.value, creds_, options_,
                              std::chrono::floor<std::chrono::seconds>(now));
  }
  if (presigned) {
    return AuthenticatePresigned(req, target, creds_, options_,
                                 std::chrono::floor<std::chrono::seconds>(now));
  }
  // A SigV2 presigned URL (aws-cli v1's `s3 presign`, boto3's generate_presigned_url unless
  // configured for s3v4).
  if (sigv2_query) {
    return AuthenticateSigV2Query(req, target, creds_, options_,
                                  std::chrono::floor<std::chrono::seconds>(now));
  }
  return AuthResult{};  // anonymous
}

Status CheckPayloadSha256(const AuthResult& auth, const Sha256Digest& actual) {
  if (auth.payload != PayloadMode::kSigned) {
    return Status::Ok();
  }
  if (!sigv4::ConstantTimeEquals(sigv4::DigestHex(actual), auth.payload_sha256)) {
    return Status(Code::kInvalidArgument, Subject::kDigest, "x-amz-content-sha256",
                  "the provided x-amz-content-sha256 does not match what was computed");
  }
  return Status::Ok();
}

}  // namespace oc::gateway::auth
