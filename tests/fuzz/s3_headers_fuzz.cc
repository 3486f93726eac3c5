// Fuzzes the request headers the gateway parses beside the body: byte 0 chooses the parser,
// the rest is its input (gateway/src/s3/s3_headers.h, s3_copy_source.h, auth/checksum.h).
//   0: conditional headers: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since,
//      the object's ETag and an 8-byte mtime, '\n'-separated ("-" for an absent header)
//   1: x-amz-copy-source             2: x-amz-copy-source-range
//   3: an x-amz-checksum-* header, "name\nvalue" (and the name as x-amz-checksum-algorithm)
// (The Range header has its own target, http_range_fuzz.) Properties beyond no crash:
//   - conditions follow RFC 7232's precedence: a failed If-Match is 412 whatever follows, a
//     copy source never answers 304 and differs from the plain evaluation only there, a date
//     that parses survives formatting and parsing again, a quoted ETag matches itself;
//   - a copy source that parses names a bucket without '/' and a non-empty key, and
//     re-encoded it parses back to both; a refusal is 501 only for a versionId other than null;
//   - a copy-source range has first <= last and parses back from its canonical text;
//   - a checksum header that names an algorithm names it back, and a value it accepts is the
//     base64 of exactly that algorithm's digest.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "auth/checksum.h"
#include "oc/common/check.h"
#include "oc/common/text.h"
#include "oc/sigv4/uri.h"
#include "s3/s3_copy_source.h"
#include "s3/s3_headers.h"

namespace {

namespace gw = oc::gateway;

std::vector<std::string_view> Lines(std::string_view in, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const size_t nl = in.find('\n');
    if (nl == std::string_view::npos) {
      break;
    }
    out.push_back(in.substr(0, nl));
    in.remove_prefix(nl + 1);
  }
  out.push_back(in);
  out.resize(n);
  return out;
}

std::optional<std::string_view> Header(std::string_view v) {
  return v == "-" ? std::nullopt : std::optional<std::string_view>(v);
}

void Dates(std::string_view text) {
  const std::optional<int64_t> t = gw::ParseHttpDate(text);
  // Four-digit years only: a normalised date past 9999 has no IMF-fixdate.
  if (t && *t >= 0 && *t <= 253402300799) {
    OC_CHECK(gw::ParseHttpDate(gw::FormatHttpDate(*t * 1000)) == t);
  }
}

void Conditions(std::string_view in) {
  int64_t mtime = 0;
  if (in.size() >= 8) {
    std::memcpy(&mtime, in.data(), 8);
    in.remove_prefix(8);
    mtime %= int64_t{1} << 50;  // within the dates the store writes
  }
  const std::vector<std::string_view> f = Lines(in, 5);
  gw::Conditions c;
  c.if_match = Header(f[0]);
  c.if_none_match = Header(f[1]);
  c.if_modified_since = Header(f[2]);
  c.if_unmodified_since = Header(f[3]);
  const std::string_view etag = f[4];
  const gw::ConditionOutcome plain = gw::EvaluateConditions(c, etag, mtime);
  const gw::ConditionOutcome copy = gw::EvaluateConditions(c, etag, mtime, true);
  OC_CHECK(copy != gw::ConditionOutcome::kNotModified);
  OC_CHECK(copy == plain || (plain == gw::ConditionOutcome::kNotModified &&
                             copy == gw::ConditionOutcome::kPreconditionFailed));
  if (c.if_match && !gw::EtagListMatches(*c.if_match, etag)) {
    OC_CHECK(plain == gw::ConditionOutcome::kPreconditionFailed);
  }
  if (etag.find_first_of("\",") == std::string_view::npos && oc::Trim(etag).size() == etag.size()) {
    OC_CHECK(gw::EtagListMatches(gw::QuoteEtag(etag), etag));
    OC_CHECK(gw::EtagListMatches("W/" + gw::QuoteEtag(etag), etag));
  }
  for (size_t i = 0; i < 4; ++i) {
    Dates(f[i]);
  }
}

void CopySource(std::string_view in) {
  const oc::Result<gw::CopySourceName> name = gw::ParseCopySourceHeader(in);
  const size_t version = in.find("?versionId=");
  if (!name.has_value()) {
    OC_CHECK(name.error().field() == "x-amz-copy-source");
    const bool other_version =
        version != std::string_view::npos && in.substr(version + 11) != "null";
    OC_CHECK((name.error().code() == oc::Code::kUnimplemented) == other_version);
    OC_CHECK(other_version || name.error().code() == oc::Code::kInvalidArgument);
    return;
  }
  OC_CHECK(!name->bucket.empty() && name->bucket.find('/') == std::string::npos);
  OC_CHECK(!name->key.empty());
  const std::string encoded = oc::sigv4::UriEncode(name->bucket, true) + "/" +
                              oc::sigv4::UriEncode(name->key, /*encode_slash=*/false);
  for (const std::string& again : {encoded, "/" + encoded + "?versionId=null"}) {
    const oc::Result<gw::CopySourceName> back = gw::ParseCopySourceHeader(again);
    OC_CHECK(back.has_value() && back->bucket == name->bucket && back->key == name->key);
  }
}

void CopySourceRange(std::string_view in) {
  const std::optional<gw::CopySourceRange> r = gw::ParseCopySourceRange(in);
  if (!r) {
    return;
  }
  OC_CHECK(r->first <= r->last);
  const std::string canonical = "bytes=" + std::to_string(r->first) + "-" + std::to_string(r->last);
  const std::optional<gw::CopySourceRange> back = gw::ParseCopySourceRange(canonical);
  OC_CHECK(back && back->first == r->first && back->last == r->last);
}

void ChecksumHeader(std::string_view in) {
  namespace auth = gw::auth;
  const std::vector<std::string_view> f = Lines(in, 2);
  if (const std::optional<auth::ChecksumAlgorithm> a = auth::ChecksumFromHeaderName(f[0])) {
    OC_CHECK(oc::EqualsIgnoreCase(auth::ChecksumHeaderName(*a), f[0]));
    if (auth::IsChecksumValue(*a, f[1])) {
      const std::optional<std::string> digest = gw::Base64Decode(f[1]);
      OC_CHECK(digest && digest->size() == auth::ChecksumDigestBytes(*a));
      OC_CHECK(gw::Base64Encode(*digest) == f[1]);
      const std::string value(f[1]);
      const std::optional<std::string> composite =
          auth::CompositeChecksum(*a, std::span<const std::string>(&value, 1));
      OC_CHECK(composite && composite->ends_with("-1"));
    }
  }
  if (const std::optional<auth::ChecksumAlgorithm> a = auth::ChecksumFromName(f[0])) {
    OC_CHECK(oc::EqualsIgnoreCase(auth::ChecksumName(*a), f[0]));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      Conditions(in);
      break;
    case 1:
      CopySource(in);
      break;
    case 2:
      CopySourceRange(in);
      break;
    default:
      ChecksumHeader(in);
      break;
  }
  return 0;
}
