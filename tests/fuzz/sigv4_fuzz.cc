// libFuzzer target: arbitrary bytes as an HTTP request (line 1 method, line 2 target, then
// "name:value" header lines) through Authenticator::Authenticate with a fixed credential set
// and clock. Must not crash, leak or hang. Property checked on top: when the request carries a
// parsable Authorization header for a known user, re-signing it with the SigV4 step functions
// must never end in SignatureDoesNotMatch (the verifier and the steps agree on every input).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credentials.h"
#include "auth/sigv4.h"
#include "oc/common/text.h"
#include "oc/sigv4/signing.h"
#include "oc/sigv4/uri.h"

namespace {

using oc::gateway::auth::Authenticator;
using oc::gateway::auth::AuthOptions;
using oc::gateway::auth::Credentials;
using oc::gateway::auth::RequestView;
using oc::gateway::auth::User;
namespace auth = oc::gateway::auth;
namespace sigv4 = oc::sigv4;

const Credentials& Creds() {
  static const Credentials creds =
      Credentials::FromUsers({User{"example", "AKIAIOSFODNN7EXAMPLE",
                                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", false}})
          .value();
  return creds;
}

std::chrono::system_clock::time_point Now() {
  using namespace std::chrono;
  return sys_days(year{2013} / May / 24);
}

struct Request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  RequestView View() const { return RequestView{method, target, oc::HeaderViews(headers)}; }
};

Request Split(std::string_view in) {
  Request r;
  auto next_line = [&in]() {
    const size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    return line;
  };
  r.method = next_line();
  r.target = next_line();
  while (!in.empty()) {
    const std::string_view line = next_line();
    const size_t colon = line.find(':');
    r.headers.emplace_back(
        std::string(line.substr(0, colon)),
        colon == std::string_view::npos ? "" : std::string(line.substr(colon + 1)));
  }
  return r;
}

// Replaces the signature of the (single) Authorization header by the correct one, if the
// request is complete enough to compute it. Returns false when it is not.
bool Resign(Request* r) {
  std::pair<std::string, std::string>* authz = nullptr;
  std::string_view date, payload = sigv4::kEmptySha256Hex;
  for (auto& h : r->headers) {
    if (oc::EqualsIgnoreCase(h.first, "authorization")) {
      authz = &h;
    } else if (oc::EqualsIgnoreCase(h.first, "x-amz-date")) {
      date = h.second;
    } else if (oc::EqualsIgnoreCase(h.first, "x-amz-content-sha256")) {
      payload = h.second;
    }
  }
  if (authz == nullptr || date.size() < 8) {
    return false;
  }
  oc::Result<auth::AuthorizationHeader> parsed = auth::ParseAuthorization(authz->second);
  if (!parsed.has_value()) {
    return false;
  }
  const User* user = Creds().Find(parsed->credential.access_key);
  if (user == nullptr) {
    return false;
  }
  const std::string_view target = r->target;
  const size_t q = target.find('?');
  oc::Result<std::string> uri = sigv4::CanonicalUri(target.substr(0, q));
  oc::Result<std::string> query =
      sigv4::CanonicalQuery(q == std::string_view::npos ? "" : target.substr(q + 1), false);
  const RequestView view = r->View();
  oc::Result<std::string> headers =
      sigv4::CanonicalHeaders(view, parsed->signed_headers, "Authorization");
  if (!uri.has_value() || !query.has_value() || !headers.has_value()) {
    return false;
  }
  const std::string canonical =
      sigv4::CanonicalRequest(r->method, *uri, *query, *headers, parsed->signed_headers, payload);
  const std::string sig =
      sigv4::SignatureHex(sigv4::DeriveSigningKey(user->secret_key, parsed->credential.date,
                                                  parsed->credential.region, "s3"),
                          sigv4::StringToSign(date, parsed->credential.Scope(), canonical));
  std::string signed_list;
  for (const std::string& h : parsed->signed_headers) {
    signed_list += (signed_list.empty() ? "" : ";") + h;
  }
  authz->second = "AWS4-HMAC-SHA256 Credential=" + parsed->credential.access_key + "/" +
                  parsed->credential.Scope() + ",SignedHeaders=" + signed_list +
                  ",Signature=" + sig;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Authenticator authenticator(Creds(), AuthOptions{});
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  Request req = Split(in);
  (void)authenticator.Authenticate(req.View(), Now());
  (void)sigv4::ParseTarget(req.target);
  (void)auth::ParseAuthorization(in);

  if (Resign(&req)) {
    oc::Result<auth::AuthResult> r = authenticator.Authenticate(req.View(), Now());
    if (!r.has_value() && r.error().code() == oc::Code::kUnauthenticated &&
        r.error().subject() == oc::Subject::kSignature) {
      std::abort();  // the verifier disagrees with its own signing steps
    }
  }
  return 0;
}
