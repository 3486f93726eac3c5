// libFuzzer target: arbitrary bytes as a whole raw HTTP/1.1 request, parsed by Beast's request
// parser the way the gateway's session reads one (header first, under a header limit; the
// RequestView built from method_string, target, name_string and value), then verified by
// Authenticator::Authenticate with a fixed credential set and clock (the AWS examples' key,
// 2013-05-24T00:00:00Z). Must not crash, leak or hang. Checked on top:
//  1. Re-signed (the Authorization signature, or a presigned URL's X-Amz-Signature, replaced by
//     the one the SigV4 step functions compute), verification never ends in
//     SignatureDoesNotMatch: the verifier agrees with its own steps, and mutated requests reach
//     everything behind the signature check.
//  2. The signing rule (docs/protocol.md "Signing"): whenever a signed request is accepted,
//     every x-amz-* and x-oc-* header but x-amz-content-sha256 is in the signed-header list
//     (parsed again here; under SigV2 every x-amz-* header and no x-oc-* one); whenever the rule
//     refuses one, the header it names is present and unsigned.
// Seeds in corpus/sigv4_request_fuzz/ are valid signed requests (header, presigned,
// aws-chunked, descriptor) and the hostile variants of docs/protocol.md "Signing".
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "auth/credentials.h"
#include "auth/sigv2.h"
#include "auth/sigv4.h"
#include "oc/common/text.h"
#include "oc/sigv4/signing.h"
#include "oc/sigv4/uri.h"

namespace {

namespace auth = oc::gateway::auth;
namespace sigv4 = oc::sigv4;
namespace beast = boost::beast;
namespace http = beast::http;

// The gateway's default header limit ([gateway] max_header_bytes): larger headers never reach
// the verifier.
constexpr uint32_t kHeaderLimit = 16 << 10;
constexpr uint64_t kBodyLimit = 64 << 10;

const auth::Credentials& Creds() {
  static const auth::Credentials creds =
      auth::Credentials::FromUsers({auth::User{"example", "AKIAIOSFODNN7EXAMPLE",
                                               "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", false}})
          .value();
  return creds;
}

std::chrono::system_clock::time_point Now() {
  using namespace std::chrono;
  return sys_days(year{2013} / May / 24);
}

std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }

// The request the verifier sees, owning its strings so that re-signing can edit it.
struct Request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;

  auth::RequestView View() const {
    return auth::RequestView{method, target, oc::HeaderViews(headers)};
  }
  // The only value of header `name` (any case), or nullptr if absent or repeated.
  std::string* Only(std::string_view name) {
    std::string* found = nullptr;
    for (auto& [n, v] : headers) {
      if (oc::AsciiLower(n) == name) {
        if (found != nullptr) {
          return nullptr;
        }
        found = &v;
      }
    }
    return found;
  }
};

// Parses `in` as Beast does in the session; false when the header block does not parse.
bool Parse(std::string_view in, Request* out) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  while (!in.empty() && !parser.is_done()) {
    beast::error_code ec;
    const size_t used = parser.put(boost::asio::const_buffer(in.data(), in.size()), ec);
    if (ec || used == 0) {
      break;  // a bad or incomplete body does not matter: auth runs on the header
    }
    in.remove_prefix(used);
  }
  if (!parser.is_header_done()) {
    return false;
  }
  const auto& msg = parser.get();
  out->method = Sv(msg.method_string());
  out->target = Sv(msg.target());
  for (const auto& field : msg) {
    out->headers.emplace_back(Sv(field.name_string()), Sv(field.value()));
  }
  return true;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    out.append(out.empty() ? "" : ";").append(n);
  }
  return out;
}

std::string Sign(const sigv4::CredentialScope& scope, std::string_view amz_date,
                 std::string_view canonical) {
  const auth::User* user = Creds().Find(scope.access_key);
  return sigv4::SignatureHex(
      sigv4::DeriveSigningKey(user->secret_key, scope.date, scope.region, "s3"),
      sigv4::StringToSign(amz_date, scope.Scope(), canonical));
}

// Replaces the Authorization header's signature by the right one. False when the request is
// not complete enough to sign (or signs its own Authorization header).
bool ResignHeader(Request* r) {
  std::string* authorization = r->Only("authorization");
  std::string* date = r->Only("x-amz-date");
  if (authorization == nullptr || date == nullptr) {
    return false;
  }
  oc::Result<auth::AuthorizationHeader> parsed = auth::ParseAuthorization(*authorization);
  if (!parsed.has_value() || Creds().Find(parsed->credential.access_key) == nullptr ||
      std::count(parsed->signed_headers.begin(), parsed->signed_headers.end(), "authorization")) {
    return false;
  }
  std::string payload(sigv4::kEmptySha256Hex);
  if (const std::string* sha = r->Only("x-amz-content-sha256")) {
    payload = *sha;
  }
  const size_t q = r->target.find('?');
  oc::Result<std::string> uri = sigv4::CanonicalUri(std::string_view(r->target).substr(0, q));
  oc::Result<std::string> query =
      sigv4::CanonicalQuery(q == std::string::npos ? "" : r->target.substr(q + 1), false);
  oc::Result<std::string> headers =
      sigv4::CanonicalHeaders(r->View(), parsed->signed_headers, "Authorization");
  if (!uri.has_value() || !query.has_value() || !headers.has_value()) {
    return false;
  }
  const std::string canonical =
      sigv4::CanonicalRequest(r->method, *uri, *query, *headers, parsed->signed_headers, payload);
  *authorization = "AWS4-HMAC-SHA256 Credential=" + parsed->credential.access_key + "/" +
                   parsed->credential.Scope() + ",SignedHeaders=" + Joined(parsed->signed_headers) +
                   ",Signature=" + Sign(parsed->credential, *date, canonical);
  return true;
}

// The decoded value of query parameter `name` when it appears exactly once.
const std::string* OnlyParam(const sigv4::ParsedTarget& t, std::string_view name) {
  const std::string* found = nullptr;
  for (const auto& [n, v] : t.query) {
    if (n == name) {
      if (found != nullptr) {
        return nullptr;
      }
      found = &v;
    }
  }
  return found;
}

// Replaces a presigned URL's X-Amz-Signature value (spelled literally in the raw target) by
// the right one. False when the URL is not complete enough to sign.
bool ResignPresigned(Request* r) {
  oc::Result<sigv4::ParsedTarget> t = sigv4::ParseTarget(r->target);
  if (!t.has_value()) {
    return false;
  }
  const std::string* credential = OnlyParam(*t, "X-Amz-Credential");
  const std::string* date = OnlyParam(*t, "X-Amz-Date");
  const std::string* signed_text = OnlyParam(*t, "X-Amz-SignedHeaders");
  if (credential == nullptr || date == nullptr || signed_text == nullptr ||
      OnlyParam(*t, "X-Amz-Signature") == nullptr) {
    return false;
  }
  oc::Result<sigv4::CredentialScope> scope = auth::ParseCredential(*credential, "X-Amz-Credential");
  oc::Result<std::vector<std::string>> names =
      auth::ParseSignedHeaders(*signed_text, "X-Amz-SignedHeaders");
  if (!scope.has_value() || !names.has_value() || Creds().Find(scope->access_key) == nullptr) {
    return false;
  }
  std::string payload = "UNSIGNED-PAYLOAD";
  for (const auto& [n, v] : t->query) {
    if (n == "X-Amz-Content-Sha256") {
      payload = v;
    }
  }
  const size_t q = r->target.find('?');
  const std::string raw_query = r->target.substr(q + 1);
  oc::Result<std::string> uri = sigv4::CanonicalUri(std::string_view(r->target).substr(0, q));
  oc::Result<std::string> query = sigv4::CanonicalQuery(raw_query, /*skip_signature=*/true);
  oc::Result<std::string> headers =
      sigv4::CanonicalHeaders(r->View(), *names, "X-Amz-SignedHeaders");
  if (!uri.has_value() || !query.has_value() || !headers.has_value()) {
    return false;
  }
  // The literal parameter to replace: at the start of the query or after '&'.
  constexpr std::string_view kParam = "X-Amz-Signature=";
  size_t at = q + 1;
  while (r->target.compare(at, kParam.size(), kParam) != 0) {
    at = r->target.find('&', at);
    if (at == std::string::npos) {
      return false;  // spelled with escapes: leave it
    }
    ++at;
  }
  at += kParam.size();
  const size_t end = r->target.find('&', at);
  const std::string canonical =
      sigv4::CanonicalRequest(r->method, *uri, *query, *headers, *names, payload);
  r->target.replace(at, end == std::string::npos ? std::string::npos : end - at,
                    Sign(*scope, *date, canonical));
  return true;
}

// The signed-header list the request claims (Authorization first, else the presigned query).
// Every x-amz-* header of the request: SigV2 signs them all (auth/sigv2.h).
std::vector<std::string> AmzHeaders(Request& r) {
  std::vector<std::string> out;
  for (const auto& [name, value] : r.headers) {
    std::string lower = oc::AsciiLower(name);
    if (lower.starts_with("x-amz-")) {
      out.push_back(std::move(lower));
    }
  }
  return out;
}

std::vector<std::string> ClaimedSignedHeaders(Request& r) {
  if (std::string* authorization = r.Only("authorization")) {
    if (auth::IsSigV2Authorization(*authorization)) {
      return AmzHeaders(r);
    }
    oc::Result<auth::AuthorizationHeader> parsed = auth::ParseAuthorization(*authorization);
    return parsed.has_value() ? parsed->signed_headers : std::vector<std::string>{};
  }
  oc::Result<sigv4::ParsedTarget> t = sigv4::ParseTarget(r.target);
  const bool v4_query =
      t.has_value() && std::any_of(t->query.begin(), t->query.end(), [](const auto& kv) {
        return kv.first == "X-Amz-Algorithm" || kv.first == "X-Amz-Credential" ||
               kv.first == "X-Amz-Signature";
      });
  if (t.has_value() && !v4_query && auth::IsSigV2Query(*t)) {
    return AmzHeaders(r);
  }
  const std::string* list = t.has_value() ? OnlyParam(*t, "X-Amz-SignedHeaders") : nullptr;
  if (list == nullptr) {
    return {};
  }
  oc::Result<std::vector<std::string>> names = auth::ParseSignedHeaders(*list, "");
  return names.has_value() ? *names : std::vector<std::string>{};
}

bool MustBeSigned(const std::string& lower_name) {
  return (lower_name.starts_with("x-amz-") || lower_name.starts_with("x-oc-")) &&
         lower_name != "x-amz-content-sha256";
}

// Property 2 on one verification result.
void CheckSigningRule(Request& r, const oc::Result<auth::AuthResult>& result) {
  const std::vector<std::string> claimed = ClaimedSignedHeaders(r);
  auto is_signed = [&](const std::string& n) {
    return std::find(claimed.begin(), claimed.end(), n) != claimed.end();
  };
  if (result.has_value()) {
    if (result->user == nullptr) {
      return;  // anonymous: nothing was signed
    }
    for (const auto& [name, value] : r.headers) {
      const std::string lower = oc::AsciiLower(name);
      if (MustBeSigned(lower) && !is_signed(lower)) {
        std::abort();  // accepted a signed request with a header outside its signature
      }
    }
    return;
  }
  const oc::Status& s = result.error();
  if (s.code() == oc::Code::kPermissionDenied &&
      s.message().starts_with(auth::kHeadersNotSignedMessage)) {
    const bool present = std::any_of(r.headers.begin(), r.headers.end(), [&](const auto& h) {
      return oc::AsciiLower(h.first) == s.field();
    });
    if (!MustBeSigned(std::string(s.field())) || !present || is_signed(std::string(s.field()))) {
      std::abort();  // refused a header that is signed or not there
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auth::Authenticator authenticator(Creds(), auth::AuthOptions{});
  Request req;
  if (!Parse(std::string_view(reinterpret_cast<const char*>(data), size), &req)) {
    return 0;
  }
  CheckSigningRule(req, authenticator.Authenticate(req.View(), Now()));

  const bool resigned =
      req.Only("authorization") != nullptr ? ResignHeader(&req) : ResignPresigned(&req);
  if (resigned) {
    const oc::Result<auth::AuthResult> r = authenticator.Authenticate(req.View(), Now());
    if (!r.has_value() && r.error().code() == oc::Code::kUnauthenticated &&
        r.error().subject() == oc::Subject::kSignature) {
      std::abort();  // the verifier disagrees with its own signing steps
    }
    CheckSigningRule(req, r);
  }
  return 0;
}
