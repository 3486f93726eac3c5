// SigV2 verification (sigv2.h): the string to sign, HMAC-SHA1, the time checks.
#include "auth/sigv2.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "oc/common/text.h"

namespace oc::gateway::auth {
namespace {

using Seconds = std::chrono::sys_seconds;

// The query parameters a SigV2 resource includes (the S3 guide's sub-resources and response
// overrides, as botocore's HmacV1Auth lists them), plus "objectcache": no SigV2 client signs
// it, so a descriptor request cannot be authorised by a SigV2 signature whose resource does
// not name it (the descriptor POST body is not signed under SigV2).
constexpr std::array<std::string_view, 37> kSignedSubresources = {
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "objectcache",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
    "encryption",
};
// A SigV2 signature is the base64 of a 20-byte HMAC-SHA1.
constexpr size_t kSignatureBase64Chars = 28;

Status Malformed(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kSignature, std::string(field),
                std::move(message));
}

Status AccessDenied(std::string_view field, std::string message) {
  return Status(Code::kPermissionDenied, Subject::kSignature, std::string(field),
                std::move(message));
}

std::optional<std::string_view> OneHeader(const RequestView& req, std::string_view name) {
  for (const auto& [n, v] : req.headers) {
    if (EqualsIgnoreCase(n, name)) {
      return v;
    }
  }
  return std::nullopt;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Date header values: IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110) or its RFC 1123
// form with "+0000" (the S3 guide's examples), which SigV2 clients send in Date and x-amz-date,
// or ISO 8601 basic ("19941106T084937Z").
std::optional<Seconds> ParseDate(std::string_view s) {
  s = Trim(s);
  auto digits = [&](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > s.size()) {
      return std::nullopt;
    }
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') {
        return std::nullopt;
      }
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  std::optional<int> year, month, day, hh, mm, ss;
  if (s.size() == 16 && s[8] == 'T' && s[15] == 'Z') {
    year = digits(0, 4);
    month = digits(4, 2);
    day = digits(6, 2);
    hh = digits(9, 2);
    mm = digits(11, 2);
    ss = digits(13, 2);
  } else if (s.size() >= 29 && s[3] == ',' &&
             ((s.size() == 29 && s.substr(25) == " GMT") ||
              (s.size() == 31 && s.substr(25) == " +0000"))) {
    constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const size_t m = kMonths.find(s.substr(8, 3));
    if (m == std::string_view::npos || m % 3 != 0) {
      return std::nullopt;
    }
    month = static_cast<int>(m / 3 + 1);
    day = digits(5, 2);
    year = digits(12, 4);
    hh = digits(17, 2);
    mm = digits(20, 2);
    ss = digits(23, 2);
  } else {
    return std::nullopt;
  }
  if (!year || !month || !day || !hh || !mm || !ss || *hh > 23 || *mm > 59 || *ss > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year{*year},
                                        std::chrono::month{static_cast<unsigned>(*month)},
                                        std::chrono::day{static_cast<unsigned>(*day)}};
  if (!ymd.ok()) {
    return std::nullopt;
  }
  return std::chrono::sys_days(ymd) + std::chrono::hours(*hh) + std::chrono::minutes(*mm) +
         std::chrono::seconds(*ss);
}

// Every x-amz-* header name (lowercase): all of them are signed under SigV2.
std::vector<std::string> AmzHeaderNames(const RequestView& req) {
  std::vector<std::string> names;
  for (const auto& [n, v] : req.headers) {
    std::string lower = AsciiLower(n);
    if (lower.starts_with("x-amz-")) {
      names.push_back(std::move(lower));
    }
  }
  return names;
}

Result<AuthResult> Verify(const RequestView& req, std::string_view access_key,
                          std::string_view signature, std::string_view date_line,
                          std::string_view signature_field, const Credentials& creds,
                          const AuthOptions& options) {
  const User* user = creds.Find(access_key);
  if (user == nullptr) {
    return Status(Code::kUnauthenticated, Subject::kAccessKey, "",
                  "the access key id does not exist in our records");
  }
  const std::string sts = SigV2StringToSign(req, date_line, options.virtual_host_domain);
  // A bucket's resource is "/bucket/" in the S3 guide's examples, and botocore signs it so for
  // path-style bucket requests it sends as "/bucket": either form is the bucket.
  auto matches = [&](const std::string& s) {
    return sigv4::ConstantTimeEquals(SigV2Signature(user->secret_key, s), signature);
  };
  if (signature.size() != kSignatureBase64Chars ||
      (!matches(sts) &&
       !matches(SigV2StringToSign(req, date_line, options.virtual_host_domain, true)))) {
    std::string message = "signature does not match; string to sign: ";
    for (char c : sts) {
      message.push_back(c == '\n' ? '|' : c);
    }
    return Status(Code::kUnauthenticated, Subject::kSignature, std::string(signature_field),
                  std::move(message));
  }
  OC_RETURN_IF_ERROR(CheckHeadersSigned(req, AmzHeaderNames(req)));
  AuthResult result;
  result.user = user;
  result.payload = PayloadMode::kUnsigned;
  return result;
}

}  // namespace

bool IsSigV2Authorization(std::string_view authorization) {
  return Trim(authorization).starts_with("AWS ");
}

bool IsSigV2Query(const sigv4::ParsedTarget& target) {
  return std::any_of(target.query.begin(), target.query.end(), [](const auto& kv) {
    return kv.first == "AWSAccessKeyId" || kv.first == "Signature";
  });
}

std::string SigV2Signature(std::string_view secret, std::string_view string_to_sign) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha1(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(string_to_sign.data()), string_to_sign.size(), mac,
       &len);
  std::string out(4 * ((len + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), mac, static_cast<int>(len));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string SigV2StringToSign(const RequestView& req, std::string_view date,
                              std::string_view virtual_host_domain, bool bucket_slash) {
  std::string sts;
  sts.append(req.method).push_back('\n');
  sts.append(Trim(OneHeader(req, "content-md5").value_or(""))).push_back('\n');
  sts.append(Trim(OneHeader(req, "content-type").value_or(""))).push_back('\n');
  sts.append(date).push_back('\n');

  // CanonicalizedAmzHeaders: sorted by name, repeated headers' values joined with ','.
  std::vector<std::pair<std::string, std::string>> amz;
  for (const auto& [n, v] : req.headers) {
    std::string lower = AsciiLower(n);
    if (!lower.starts_with("x-amz-")) {
      continue;
    }
    auto it = std::find_if(amz.begin(), amz.end(), [&](const auto& p) { return p.first == lower; });
    if (it == amz.end()) {
      amz.emplace_back(std::move(lower), std::string(Trim(v)));
    } else {
      it->second.append(",").append(Trim(v));
    }
  }
  std::sort(amz.begin(), amz.end());
  for (const auto& [n, v] : amz) {
    sts.append(n).append(":").append(v).push_back('\n');
  }

  // CanonicalizedResource: "/bucket" of a virtual-host request, the path as sent, then the
  // signed sub-resources in name order.
  const std::string_view target = req.target;
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  if (!virtual_host_domain.empty()) {
    std::string_view host = OneHeader(req, "host").value_or("");
    if (const size_t colon = host.rfind(':');
        colon != std::string_view::npos && host.find(']') == std::string_view::npos) {
      host = host.substr(0, colon);
    }
    if (host.size() > virtual_host_domain.size() + 1 && host.ends_with(virtual_host_domain) &&
        host[host.size() - virtual_host_domain.size() - 1] == '.') {
      sts.append("/").append(host.substr(0, host.size() - virtual_host_domain.size() - 1));
    }
  }
  sts.append(path);
  // "/bucket" of a path-style bucket request as "/bucket/" (Verify tries both).
  if (bucket_slash && path.size() > 1 && path.find('/', 1) == std::string_view::npos) {
    sts.push_back('/');
  }
  std::vector<std::string> params;
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    if (std::find(kSignedSubresources.begin(), kSignedSubresources.end(), name) ==
        kSignedSubresources.end()) {
      continue;
    }
    std::string param(name);
    if (eq != std::string_view::npos) {
      param.append("=").append(PercentDecode(item.substr(eq + 1)));
    }
    params.push_back(std::move(param));
  }
  std::stable_sort(params.begin(), params.end(), [](const std::string& a, const std::string& b) {
    return std::string_view(a).substr(0, a.find('=')) < std::string_view(b).substr(0, b.find('='));
  });
  for (size_t i = 0; i < params.size(); ++i) {
    sts.push_back(i == 0 ? '?' : '&');
    sts.append(params[i]);
  }
  return sts;
}

Result<AuthResult> AuthenticateSigV2Header(const RequestView& req,
                                           const sigv4::ParsedTarget& /*target*/,
                                           std::string_view authorization, const Credentials& creds,
                                           const AuthOptions& options, Seconds now) {
  constexpr std::string_view kField = "Authorization";
  if (authorization.size() > kMaxAuthorizationBytes) {
    return Malformed(kField, "header too long");
  }
  const std::string_view credential = Trim(Trim(authorization).substr(4));
  const size_t colon = credential.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == credential.size()) {
    return Malformed(kField,
                     "AWS authorization header is invalid; expected AWS AccessKeyId:Signature");
  }
  // The time: x-amz-date when sent (the Date line is then empty), else Date.
  const std::optional<std::string_view> amz_date = OneHeader(req, "x-amz-date");
  const std::optional<std::string_view> date = OneHeader(req, "date");
  const std::optional<std::string_view> when_text = amz_date ? amz_date : date;
  if (!when_text) {
    return AccessDenied("Date", "AWS authentication requires a valid Date or x-amz-date header");
  }
  const std::optional<Seconds> when = ParseDate(*when_text);
  if (!when) {
    return AccessDenied(amz_date ? "x-amz-date" : "Date",
                        "AWS authentication requires a valid Date or x-amz-date header");
  }
  if (*when > now + options.max_skew || *when < now - options.max_skew) {
    return Status(Code::kOutOfRange, Subject::kSignature, amz_date ? "x-amz-date" : "Date",
                  "the difference between the request time and the server's time is too large");
  }
  return Verify(req, credential.substr(0, colon), credential.substr(colon + 1),
                amz_date ? std::string_view() : Trim(*date), "", creds, options);
}

Result<AuthResult> AuthenticateSigV2Query(const RequestView& req, const sigv4::ParsedTarget& target,
                                          const Credentials& creds, const AuthOptions& options,
                                          Seconds now) {
  const std::string* access_key = nullptr;
  const std::string* signature = nullptr;
  const std::string* expires_text = nullptr;
  for (const auto& [n, v] : target.query) {
    const std::string** slot = n == "AWSAccessKeyId" ? &access_key
                               : n == "Signature"    ? &signature
                               : n == "Expires"      ? &expires_text
                                                     : nullptr;
    if (slot == nullptr) {
      continue;
    }
    if (*slot != nullptr) {
      return Malformed(n, "repeated query parameter");
    }
    *slot = &v;
  }
  for (const auto& [name, value] :
       {std::pair{"AWSAccessKeyId", access_key}, std::pair{"Signature", signature},
        std::pair{"Expires", expires_text}}) {
    if (value == nullptr) {
      return Malformed(name, "missing query parameter");
    }
  }
  const std::string_view e = *expires_text;
  if (e.empty() || e.size() > 12 ||
      !std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return AccessDenied("Expires", "Expires must be a time in seconds since the epoch");
  }
  int64_t expires = 0;
  for (char c : e) {
    expires = expires * 10 + (c - '0');
  }
  const int64_t now_s = now.time_since_epoch().count();
  if (now_s > expires) {
    return AccessDenied("Expires", "request has expired");
  }
  if (expires - now_s > kMaxPresignedExpiresSeconds) {
    return AccessDenied("Expires", "Expires is more than 604800 seconds (7 days) ahead");
  }
  return Verify(req, *access_key, *signature, e, "Signature", creds, options);
}

}  // namespace oc::gateway::auth
