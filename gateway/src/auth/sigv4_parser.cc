// SigV4 parsing and canonicalisation: the Authorization header, the credential scope, and
// Task 1 (canonical request) of the AWS signing process.
#include <algorithm>
#include <optional>

#include "auth/sigv4.h"
#include "auth/uri.h"

namespace oc::gateway::auth {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kTerminator = "aws4_request";
constexpr size_t kSignatureHexChars = 64;
// Bounds that keep a hostile header from costing more than its own size.
constexpr size_t kMaxScopePartBytes = 128;
constexpr size_t kMaxSignedHeaders = 64;

Status Malformed(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kSignature, std::string(field),
                std::move(message));
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && IsSpace(s.back())) {
    s.remove_suffix(1);
  }
  return s;
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

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           const auto lx = static_cast<char>((x >= 'A' && x <= 'Z') ? x - 'A' + 'a' : x);
           const auto ly = static_cast<char>((y >= 'A' && y <= 'Z') ? y - 'A' + 'a' : y);
           return lx == ly;
         });
}

}  // namespace

std::string CredentialScope::Scope() const {
  std::string out;
  out.reserve(date.size() + region.size() + service.size() + kTerminator.size() + 3);
  out.append(date).append("/").append(region).append("/").append(service).append("/");
  out.append(kTerminator);
  return out;
}

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
  if (parts[4] != kTerminator) {
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

Result<std::string> CanonicalUri(std::string_view raw_path) {
  if (raw_path.empty()) {
    return std::string("/");
  }
  std::optional<std::string> decoded = PercentDecode(raw_path);
  if (!decoded) {
    return Status::InvalidArgument("request-target", "malformed percent-encoding in path");
  }
  // S3 signs the path encoded once: decode what was received, encode it the canonical way.
  return UriEncode(*decoded, /*encode_slash=*/false);
}

Result<std::string> CanonicalQuery(std::string_view raw_query, bool skip_signature) {
  OC_ASSIGN_OR_RETURN(ParsedTarget parsed, ParseTarget("/?" + std::string(raw_query)));
  return CanonicalQuery(parsed.query, skip_signature);
}

std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& decoded,
                           bool skip_signature) {
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(decoded.size());
  for (const auto& [name, value] : decoded) {
    if (skip_signature && name == "X-Amz-Signature") {
      continue;
    }
    pairs.emplace_back(UriEncode(name, true), UriEncode(value, true));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) {
      out.push_back('&');
    }
    out.append(name).append("=").append(value);
  }
  return out;
}

Result<std::string> CanonicalHeaders(const RequestView& req,
                                     const std::vector<std::string>& signed_headers,
                                     std::string_view field) {
  std::string out;
  for (const std::string& name : signed_headers) {
    out.append(name).push_back(':');
    bool found = false;
    for (const auto& [hname, hvalue] : req.headers) {
      if (!EqualsIgnoreCase(hname, name)) {
        continue;
      }
      if (found) {
        out.push_back(',');
      }
      found = true;
      // Trim, and fold each run of spaces or tabs inside the value into one space.
      std::string_view v = Trim(hvalue);
      while (!v.empty()) {
        const size_t space = v.find_first_of(" \t");
        out.append(v.substr(0, space));
        if (space == std::string_view::npos) {
          break;
        }
        out.push_back(' ');
        v = Trim(v.substr(space));
      }
    }
    if (!found) {
      return Malformed(field, "signed header '" + name + "' is not in the request");
    }
    out.push_back('\n');
  }
  return out;
}

std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             const std::vector<std::string>& signed_headers,
                             std::string_view payload_hash) {
  std::string out;
  out.reserve(method.size() + canonical_uri.size() + canonical_query.size() +
              canonical_headers.size() + payload_hash.size() + 64);
  out.append(method).push_back('\n');
  out.append(canonical_uri).push_back('\n');
  out.append(canonical_query).push_back('\n');
  out.append(canonical_headers).push_back('\n');
  for (size_t i = 0; i < signed_headers.size(); ++i) {
    if (i > 0) {
      out.push_back(';');
    }
    out.append(signed_headers[i]);
  }
  out.push_back('\n');
  out.append(payload_hash);
  return out;
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

}  // namespace oc::gateway::auth
