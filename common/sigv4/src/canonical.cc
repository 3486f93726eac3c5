// Task 1 of the SigV4 signing process: the canonical request and its pieces.
#include <algorithm>
#include <optional>

#include "oc/common/text.h"
#include "oc/sigv4/signing.h"
#include "oc/sigv4/uri.h"

namespace oc::sigv4 {

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
        const size_t space = v.find_first_of(kHttpWhitespace);
        out.append(v.substr(0, space));
        if (space == std::string_view::npos) {
          break;
        }
        out.push_back(' ');
        v = Trim(v.substr(space));
      }
    }
    if (!found) {
      return Status(Code::kInvalidArgument, Subject::kSignature, std::string(field),
                    "signed header '" + name + "' is not in the request");
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

}  // namespace oc::sigv4
