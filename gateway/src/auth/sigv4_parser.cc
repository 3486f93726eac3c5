// SigV4 parsing: the Authorization header, the credential scope and the signed-headers list
// (the canonical request they feed is oc_sigv4's, oc/sigv4/signing.h).
#include <algorithm>
#include <optional>

#include "auth/sigv4.h"
#include "oc/common/text.h"

namespace oc::gateway::auth {
namespace {

using sigv4::CredentialScope;
using sigv4::kAlgorithm;
using sigv4::kScopeTerminator;
constexpr size_t kSignatureHexChars = 2 * sigv4::kSha256Bytes;
// Bounds that keep a hostile header from costing more than its own size.
constexpr size_t kMaxScopePartBytes = 128;
constexpr size_t kMaxSignedHeaders = 64;

Status Malformed(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kSignature, std::string(field),
                std::move(message));
}

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A header-name token as SigV4 lists it: lowercase, no separators.
bool IsSignedHeaderName(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

Result<CredentialScope> ParseCredential(std::string_view credential, std::string_view field) {
  std::string_view parts[5];
  size_t n = 0;
  std::string_view rest = credential;
  for (;;) {
    const size_t slash = rest.find('/');
    if (n == 5) {
      return Malformed(field, "credential has more than 5 '/'-separated parts");
    }
    parts[n++] = rest.substr(0, slash);
    if (slash == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(slash + 1);
  }
  if (n != 5) {
    return Malformed(field, "credential must be <key>/<date>/<region>/<service>/aws4_request");
  }
  for (std::string_view p : parts) {
    if (p.empty() || p.size() > kMaxScopePartBytes) {
      return Malformed(field, "credential has an empty or oversize part");
    }
  }
  if (parts[1].size() != 8 || !IsDigits(parts[1])) {
    return Malformed(field, "credential date must be yyyymmdd");
  }
  if (parts[4] != kScopeTerminator) {
    return Malformed(field, "credential must end with aws4_request");
  }
  return CredentialScope{std::string(parts[0]), std::string(parts[1]), std::string(parts[2]),
                         std::string(parts[3])};
}

Result<AuthorizationHeader> ParseAuthorization(std::string_view value) {
  constexpr std::string_view kField = "Authorization";
  if (value.size() > kMaxAuthorizationBytes) {
    return Malformed(kField, "header too long");
  }
  value = Trim(value);
  const size_t space = value.find(' ');
  const std::string_view algorithm = value.substr(0, space);
  if (algorithm != kAlgorithm) {
    return Status(Code::kUnimplemented, Subject::kSignature, std::string(kField),
                  "unsupported authorization type; use AWS4-HMAC-SHA256");
  }
  if (space == std::string_view::npos) {
    return Malformed(kField, "missing Credential, SignedHeaders and Signature");
  }
  std::optional<std::string_view> credential, signed_headers, signature;
  std::string_view rest = value.substr(space + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Malformed(kField, "component without '='");
    }
    const std::string_view name = item.substr(0, eq);
    const std::string_view val = item.substr(eq + 1);
    std::optional<std::string_view>* slot = nullptr;
    if (name == "Credential") {
      slot = &credential;
    } else if (name == "SignedHeaders") {
      slot = &signed_headers;
    } else if (name == "Signature") {
      slot = &signature;
    } else {
      return Malformed(kField, "unknown component");
    }
    if (slot->has_value()) {
      return Malformed(kField, "repeated component");
    }
    *slot = val;
  }
  if (!credential || !signed_headers || !signature) {
    return Malformed(kField, "missing Credential, SignedHeaders or Signature");
  }
  AuthorizationHeader out;
  OC_ASSIGN_OR_RETURN(out.credential, ParseCredential(*credential, kField));
  OC_ASSIGN_OR_RETURN(out.signed_headers, ParseSignedHeaders(*signed_headers, kField));
  if (signature->size() != kSignatureHexChars || !IsLowerHex(*signature)) {
    return Malformed(kField, "signature must be 64 lowercase hex characters");
  }
  out.signature = std::string(*signature);
  return out;
}

Result<std::vector<std::string>> ParseSignedHeaders(std::string_view list, std::string_view field) {
  std::vector<std::string> out;
  std::string_view rest = list;
  for (;;) {
    const size_t semi = rest.find(';');
    const std::string_view name = rest.substr(0, semi);
    if (!IsSignedHeaderName(name)) {
      return Malformed(field, "signed headers must be lowercase names separated by ';'");
    }
    if (out.size() == kMaxSignedHeaders) {
      return Malformed(field, "too many signed headers");
    }
    out.emplace_back(name);
    if (semi == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(semi + 1);
  }
  if (std::find(out.begin(), out.end(), "host") == out.end()) {
    return Malformed(field, "the host header must be signed");
  }
  return out;
}

}  // namespace oc::gateway::auth
