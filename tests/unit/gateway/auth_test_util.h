#pragma once
// Helpers shared by the auth_*_test.cc files: the AWS example clock and credentials, and a
// signer built from the SigV4 step functions (whose output the AWS vectors pin down).

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credentials.h"
#include "auth/sigv4.h"
#include "auth_vectors.h"
#include "oc/common/headers.h"
#include "oc/common/text.h"
#include "oc/sigv4/signing.h"

namespace oc::gateway::auth::testing {

// 2013-05-24T00:00:00Z, the time of every AWS example.
inline std::chrono::system_clock::time_point AwsTime() {
  using namespace std::chrono;
  return sys_days(year{2013} / May / 24);
}

inline Credentials AwsCredentials() {
  Result<Credentials> c = Credentials::FromUsers(
      {User{"example", std::string(kAwsAccessKey), std::string(kAwsSecretKey), false},
       User{"other", "OTHERKEY0000000000000", "othersecret0000000000000000000000000000", true}});
  return std::move(c).value();
}

// A request that owns its strings, so tests can edit it and take a RequestView.
struct OwnedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;

  RequestView View() const { return RequestView{method, target, HeaderViews(headers)}; }
  void Set(std::string_view name, std::string value) {
    for (auto& [n, v] : headers) {
      if (n == name) {
        v = std::move(value);
        return;
      }
    }
    headers.emplace_back(std::string(name), std::move(value));
  }
  void Remove(std::string_view name) {
    std::erase_if(headers, [&](const auto& h) { return h.first == name; });
  }
};

inline std::vector<std::string> SplitSigned(std::string_view list) {
  std::vector<std::string> out;
  while (true) {
    const size_t semi = list.find(';');
    out.emplace_back(list.substr(0, semi));
    if (semi == std::string_view::npos) {
      return out;
    }
    list.remove_prefix(semi + 1);
  }
}

// The signature of `req` (header auth) computed with the step functions.
inline std::string SignHeaderRequest(const OwnedRequest& req, std::string_view signed_headers,
                                     std::string_view payload_hash, std::string_view amz_date,
                                     std::string_view secret, std::string_view region) {
  const RequestView view = req.View();
  const std::string_view target = view.target;
  const size_t q = target.find('?');
  const std::vector<std::string> names = SplitSigned(signed_headers);
  const std::string canonical = sigv4::CanonicalRequest(
      view.method, sigv4::CanonicalUri(target.substr(0, q)).value(),
      sigv4::CanonicalQuery(q == std::string_view::npos ? "" : target.substr(q + 1), false).value(),
      sigv4::CanonicalHeaders(view, names, "Authorization").value(), names, payload_hash);
  const std::string date(amz_date.substr(0, 8));
  const std::string scope = date + "/" + std::string(region) + "/s3/aws4_request";
  return sigv4::SignatureHex(sigv4::DeriveSigningKey(secret, date, region, "s3"),
                             sigv4::StringToSign(amz_date, scope, canonical));
}

inline std::string AuthorizationValue(std::string_view access_key, std::string_view date,
                                      std::string_view region, std::string_view signed_headers,
                                      std::string_view signature) {
  return "AWS4-HMAC-SHA256 Credential=" + std::string(access_key) + "/" + std::string(date) + "/" +
         std::string(region) + "/s3/aws4_request, SignedHeaders=" + std::string(signed_headers) +
         ", Signature=" + std::string(signature);
}

// Signs `req` in place for header auth: sets x-amz-date, x-amz-content-sha256 (if absent) and
// Authorization, signing every header present plus host.
inline void SignInPlace(OwnedRequest* req, std::string_view amz_date,
                        std::string_view access_key = kAwsAccessKey,
                        std::string_view secret = kAwsSecretKey,
                        std::string_view region = "us-east-1") {
  req->Remove("Authorization");
  req->Set("x-amz-date", std::string(amz_date));
  bool has_sha = false;
  std::string payload_hash;
  for (const auto& [n, v] : req->headers) {
    if (n == "x-amz-content-sha256") {
      has_sha = true;
      payload_hash = v;
    }
  }
  if (!has_sha) {
    payload_hash = std::string(kEmptyHash);
    req->Set("x-amz-content-sha256", payload_hash);
  }
  std::vector<std::string> names;
  for (const auto& [n, v] : req->headers) {
    names.push_back(AsciiLower(n));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string signed_headers;
  for (const std::string& n : names) {
    signed_headers += (signed_headers.empty() ? "" : ";") + n;
  }
  const std::string sig =
      SignHeaderRequest(*req, signed_headers, payload_hash, amz_date, secret, region);
  req->headers.emplace_back("Authorization", AuthorizationValue(access_key, amz_date.substr(0, 8),
                                                                region, signed_headers, sig));
}

// Presigns `req` (method, path in req->target, headers) in place: appends the X-Amz-* query
// parameters for `signed_headers` ("host;x-amz-meta-a") and the signature computed with the
// step functions, valid for `expires` seconds from `amz_date`.
inline void PresignInPlace(OwnedRequest* req, std::string_view signed_headers,
                           std::string_view amz_date = kAwsDate,
                           std::string_view expires = "86400") {
  const std::string date(amz_date.substr(0, 8));
  const std::string scope = date + "/us-east-1/s3/aws4_request";
  std::string encoded_signed(signed_headers);
  for (size_t at = encoded_signed.find(';'); at != std::string::npos;
       at = encoded_signed.find(';', at)) {
    encoded_signed.replace(at, 1, "%3B");
  }
  const std::string query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + std::string(kAwsAccessKey) + "%2F" +
      date + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + std::string(amz_date) +
      "&X-Amz-Expires=" + std::string(expires) + "&X-Amz-SignedHeaders=" + encoded_signed;
  const size_t q = req->target.find('?');
  const std::string path = req->target.substr(0, q);
  const std::string old_query = q == std::string::npos ? "" : req->target.substr(q + 1);
  req->target = path + "?" + (old_query.empty() ? "" : old_query + "&") + query;
  const std::vector<std::string> names = SplitSigned(signed_headers);
  const std::string canonical = sigv4::CanonicalRequest(
      req->method, sigv4::CanonicalUri(path).value(),
      sigv4::CanonicalQuery(req->target.substr(req->target.find('?') + 1), false).value(),
      sigv4::CanonicalHeaders(req->View(), names, "X-Amz-SignedHeaders").value(), names,
      "UNSIGNED-PAYLOAD");
  req->target +=
      "&X-Amz-Signature=" +
      sigv4::SignatureHex(sigv4::DeriveSigningKey(kAwsSecretKey, date, "us-east-1", "s3"),
                          sigv4::StringToSign(amz_date, scope, canonical));
}

}  // namespace oc::gateway::auth::testing
