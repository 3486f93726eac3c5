// Tasks 2-4 of the SigV4 signing process (string to sign, signing key, signature) and
// SignRequest, which runs all four for a client's request.
#include "oc/sigv4/signing.h"

#include <time.h>

#include <algorithm>

#include "oc/common/text.h"

namespace oc::sigv4 {
namespace {

constexpr size_t kSignatureHexChars = 2 * kSha256Bytes;

}  // namespace

std::string CredentialScope::Scope() const {
  std::string out;
  out.reserve(date.size() + region.size() + service.size() + kScopeTerminator.size() + 3);
  out.append(date).append("/").append(region).append("/").append(service).append("/");
  out.append(kScopeTerminator);
  return out;
}

std::string FormatAmzDate(std::chrono::system_clock::time_point now) {
  const time_t t = std::chrono::system_clock::to_time_t(now);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string out;
  out.reserve(kAlgorithm.size() + amz_date.size() + scope.size() + kSignatureHexChars + 3);
  out.append(kAlgorithm).push_back('\n');
  out.append(amz_date).push_back('\n');
  out.append(scope).push_back('\n');
  out.append(Sha256Hex(canonical_request));
  return out;
}

Sha256Digest DeriveSigningKey(std::string_view secret, std::string_view date,
                              std::string_view region, std::string_view service) {
  std::string k_secret = "AWS4";
  k_secret.append(secret);
  const Sha256Digest k_date = HmacSha256(std::string_view(k_secret), date);
  const Sha256Digest k_region = HmacSha256(ByteSpan(k_date), region);
  const Sha256Digest k_service = HmacSha256(ByteSpan(k_region), service);
  return HmacSha256(ByteSpan(k_service), kScopeTerminator);
}

std::string SignatureHex(const Sha256Digest& signing_key, std::string_view string_to_sign) {
  return DigestHex(HmacSha256(ByteSpan(signing_key), string_to_sign));
}

Result<std::string> SignRequest(const RequestView& req, std::string_view amz_date,
                                std::string_view payload_hash,
                                const SigningCredentials& credentials) {
  std::vector<std::string> signed_headers;
  signed_headers.reserve(req.headers.size());
  for (const HeaderField& h : req.headers) {
    signed_headers.push_back(AsciiLower(h.name));
  }
  std::sort(signed_headers.begin(), signed_headers.end());
  signed_headers.erase(std::unique(signed_headers.begin(), signed_headers.end()),
                       signed_headers.end());
  const size_t q = req.target.find('?');
  const std::string_view raw_path = req.target.substr(0, q);
  const std::string_view raw_query =
      q == std::string_view::npos ? std::string_view() : req.target.substr(q + 1);
  OC_ASSIGN_OR_RETURN(std::string uri, CanonicalUri(raw_path));
  OC_ASSIGN_OR_RETURN(std::string query, CanonicalQuery(raw_query, /*skip_signature=*/false));
  OC_ASSIGN_OR_RETURN(std::string headers, CanonicalHeaders(req, signed_headers, "headers"));
  const std::string canonical =
      CanonicalRequest(req.method, uri, query, headers, signed_headers, payload_hash);
  const CredentialScope scope{std::string(credentials.access_key),
                              std::string(amz_date.substr(0, 8)), std::string(credentials.region),
                              std::string(kS3Service)};
  const std::string scope_text = scope.Scope();
  const std::string signature =
      SignatureHex(DeriveSigningKey(credentials.secret_key, scope.date, scope.region, kS3Service),
                   StringToSign(amz_date, scope_text, canonical));
  std::string out;
  out.append(kAlgorithm).append(" Credential=").append(credentials.access_key);
  out.append("/").append(scope_text).append(", SignedHeaders=");
  for (size_t i = 0; i < signed_headers.size(); ++i) {
    out.append(i == 0 ? "" : ";").append(signed_headers[i]);
  }
  out.append(", Signature=").append(signature);
  return out;
}

}  // namespace oc::sigv4
