// Writes the seed corpora of the fuzz targets whose inputs the project's own encoders write
// (tests/fuzz/corpus/<target>/seed_*): store_records_fuzz (the record codec and the RADOS
// registry and names), s3_tagging_fuzz (TaggingXml, the header form), s3_lifecycle_fuzz
// (LifecycleXml, a refused versioning rule), s3_headers_fuzz (HTTP dates, quoted ETags, base64
// checksums of real digests), client_answers_fuzz (the gateway's error XML, a ListObjectsV2
// page written with its XmlWriter, EncodeResponse, the probe body) and rkey_check_fuzz (keys
// in UCX 1.13's packed layout, built here: UCX's own packing depends on the machine's
// transports). Each input starts with the selector byte its target reads (s3_lifecycle_fuzz
// has none: its input is the body).
// A few hand-made edge cases sit beside them. Every record seed decodes, so a codec change
// that leaves them stale fails.
//
//   fuzz_seeds <corpus root>          writes every seed
//   fuzz_seeds --check <corpus root>  exits 1 naming each seed that is missing or differs
//
// ctest runs --check (fuzz.seeds_current); rewrite with `fuzz_seeds tests/fuzz/corpus` from
// the source root. Other files in the directories (merged coverage, crashes) are left alone.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "auth/checksum.h"
#include "oc/common/bytes.h"
#include "oc/descriptor/codec.h"
#include "oc/sigv4/uri.h"
#include "rados/rados_keys.h"
#include "records/meta_codec.h"
#include "s3/s3_errors.h"
#include "s3/s3_headers.h"
#include "s3/s3_lifecycle.h"
#include "s3/s3_tagging.h"
#include "s3/s3_xml.h"

namespace {

namespace st = oc::storage;
namespace gw = oc::gateway;
using Seeds = std::map<std::string, std::string>;  // "<target>/seed_<name>" -> bytes

std::string Sel(int selector, std::string_view body) {
  return std::string(1, static_cast<char>(selector)) + std::string(body);
}

std::string U64(uint64_t v) {
  std::byte b[8];
  oc::PutLittleEndian64(v, b);
  return std::string(reinterpret_cast<const char*>(b), 8);
}

void Records(Seeds* s) {
  const std::string t = "store_records_fuzz/seed_";
  st::ObjectRecord o;
  o.meta.size = 10;
  o.meta.etag = "5d41402abc4b2a76b9719d911017c592-2";
  o.meta.content_type = "text/plain";
  o.meta.user_meta = {{"m", "v"}};
  o.meta.headers = {{"x-amz-checksum-crc32", "AAAAAA==-2"}};
  o.meta.mtime_unix_ms = 1700000000000;
  o.meta.parts_count = 2;
  o.meta.chunk = st::ChunkShape{oc::descriptor::StoredLayout::k2LTD, 2, 4};
  o.segments = {{1, 6, 4096, st::kSegmentExtentHash, 0}, {2, 4, 4096, 0, 0}};
  (*s)[t + "object_rocks"] = Sel(0, st::EncodeObjectRecord(o));
  o.segments[0].writer = 0x1122334455667788;
  o.segments[1].writer = 0x1122334455667788;
  (*s)[t + "object_rados"] = Sel(0, st::EncodeObjectRecord(o));
  o.completed_upload_id = "0123456789abcdef0123456789abcdef";
  o.meta.tags = {{"a", "1"}, {"b", ""}};
  (*s)[t + "object_rados_extended"] = Sel(0, st::EncodeObjectRecord(o));
  o.segments = {{3, 10, 4096, 0, 0}};
  (*s)[t + "object_extended"] = Sel(0, st::EncodeObjectRecord(o));
  (*s)[t + "object_empty"] = Sel(0, st::EncodeObjectRecord(st::ObjectRecord{}));
  (*s)[t + "bucket"] = Sel(1, st::EncodeBucketRecord({"owner", 1700000000000}));
  st::UploadRecord u;
  u.content_type = "application/octet-stream";
  u.user_meta = {{"m", "v"}};
  u.headers = {{"cache-control", "no-cache"}};
  u.extent_bytes = 1 << 20;
  u.chunk = st::ChunkShape{oc::descriptor::StoredLayout::kL2TD, 1, 8};
  u.initiated_unix_ms = 1700000000000;
  (*s)[t + "upload"] = Sel(2, st::EncodeUploadRecord(u));
  u.tags = {{"t", "1"}};
  u.checksum_header = "x-amz-checksum-crc32c";
  u.checksum_type = st::ChecksumType::kFullObject;
  (*s)[t + "upload_extended"] = Sel(2, st::EncodeUploadRecord(u));
  st::PartRecord p;
  p.segment = {7, 5 << 20, 1 << 20, 0, 0};
  p.md5[0] = std::byte{0x5d};
  p.mtime_unix_ms = 1700000000001;
  (*s)[t + "part"] = Sel(3, st::EncodePartRecord(p));
  p.segment.writer = 0x99;
  p.checksum = {"x-amz-checksum-sha256", "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="};
  (*s)[t + "part_rados_checksum"] = Sel(3, st::EncodePartRecord(p));
  (*s)[t + "registry"] =
      Sel(4, st::rados::EncodeRadosBucketRecord({"owner", 1700000000000, 0xabcdef, 16}));
  (*s)[t + "upload_key"] = Sel(5, st::rados::UploadOmapKey(std::string("a\x01"
                                                                       "b",
                                                                       3),
                                                           "0123abcd"));
  (*s)[t + "part_key"] = Sel(5, st::rados::PartOmapKey("0123abcd", 42));
  (*s)[t + "gc_key"] = Sel(5, st::rados::GcOmapKey(1700000000000, p.segment));
  (*s)[t + "data_oid"] = Sel(5, st::rados::DataOid(0xabcdef, p.segment, 3));
  (*s)[t + "index_oid"] = Sel(5, st::rados::IndexOid(0xabcdef, 15));
  // Edge cases: an unknown extension field, a huge count, a truncation.
  (*s)[t + "object_unknown_field"] =
      Sel(0, std::string(1, '\x03') + st::EncodeObjectRecord(st::ObjectRecord{}).substr(1) +
                 std::string("\x01\x00\x00\x00\x09\x01\x00\x00\x00z", 10));
  (*s)[t + "huge_count"] = Sel(2, std::string("\x01\x00\x00\x00\x00\xff\xff\xff\xff", 9));
  const std::string bucket = st::EncodeBucketRecord({"owner", 1});
  (*s)[t + "truncated"] = Sel(1, bucket.substr(0, bucket.size() - 3));
}

void Tagging(Seeds* s) {
  const std::string t = "s3_tagging_fuzz/seed_";
  const gw::TagSet tags = {{"project", "blue"}, {"k&<>", "v w"}, {"\xc3\xa9t\xc3\xa9", ""}};
  (*s)[t + "xml"] = Sel(0, gw::TaggingXml(tags));
  (*s)[t + "xml_empty"] = Sel(0, gw::TaggingXml({}));
  std::string header;
  for (const auto& [k, v] : tags) {
    header += (header.empty() ? "" : "&") + oc::sigv4::UriEncode(k, true) + "=" +
              oc::sigv4::UriEncode(v, true);
  }
  (*s)[t + "header"] = Sel(1, header);
  (*s)[t + "header_plus_no_value"] = Sel(1, "a+b=c+d&e&&f=");
  (*s)[t + "header_bad_escape"] = Sel(1, "a=%4");
  (*s)[t + "xml_no_tagset"] = Sel(0, "<Tagging><Tag><Key>a</Key><Value/></Tag></Tagging>");
}

void Lifecycle(Seeds* s) {
  const std::string t = "s3_lifecycle_fuzz/seed_";
  gw::LifecycleConfiguration c;
  gw::LifecycleRule r;
  r.id = "legacy";
  r.enabled = true;
  r.form = gw::LifecycleFilterForm::kRulePrefix;
  r.prefix = "logs/";
  r.expiration_days = 3;
  c.rules.push_back(r);
  r = {};
  r.id = "and";
  r.form = gw::LifecycleFilterForm::kAnd;
  r.prefix = "a/";
  r.tags = {{"k", "v"}};
  r.size_greater_than = 10;
  r.size_less_than = 1000;
  r.expiration_date_ms = 1796083200000;  // 2026-12-01T00:00:00Z
  c.rules.push_back(r);
  r = {};
  r.id = "mpu";
  r.enabled = true;
  r.form = gw::LifecycleFilterForm::kPrefix;
  r.prefix = "up/";
  r.abort_days = 7;
  c.rules.push_back(r);
  r = {};
  r.id = "tag";
  r.enabled = true;
  r.form = gw::LifecycleFilterForm::kTag;
  r.tags = {{"t", "1"}};
  r.expiration_days = 1;
  c.rules.push_back(r);
  (*s)[t + "rules"] = gw::LifecycleXml(c);
  (*s)[t + "noncurrent"] =
      "<LifecycleConfiguration><Rule><Filter/><Status>Enabled</Status>"
      "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
      "</NoncurrentVersionExpiration></Rule></LifecycleConfiguration>";
  (*s)[t + "size_filter"] =
      "<LifecycleConfiguration><Rule><ID>s</ID><Filter><ObjectSizeLessThan>5"
      "</ObjectSizeLessThan></Filter><Status>Enabled</Status><Expiration><Days>2</Days>"
      "</Expiration></Rule></LifecycleConfiguration>";
}

void Headers(Seeds* s) {
  const std::string t = "s3_headers_fuzz/seed_";
  const std::string etag = "5d41402abc4b2a76b9719d911017c592";
  const std::string date = gw::FormatHttpDate(1700000000000);
  (*s)[t + "conditions"] =
      Sel(0, U64(1700000000000) + gw::QuoteEtag(etag) + "\n-\n" + date + "\n-\n" + etag);
  (*s)[t + "conditions_list"] =
      Sel(0, U64(1700000000000) + "-\n\"x\", W/" + gw::QuoteEtag(etag) +
                 "\n-\nSunday, 06-Nov-94 08:49:37 GMT\nSun Nov  6 08:49:37 1994\n" + etag);
  (*s)[t + "conditions_star"] = Sel(0, U64(0) + "*\n*\n-\n-\n" + etag);
  (*s)[t + "copy_source"] =
      Sel(1, "/" + oc::sigv4::UriEncode("bkt", true) + "/" +
                 oc::sigv4::UriEncode("dir/k y\xc3\xa9", false) + "?versionId=null");
  (*s)[t + "copy_source_version"] = Sel(1, "bkt/key?versionId=3HL4kqtJlcpXroDTDmJ");
  (*s)[t + "copy_source_bad"] = Sel(1, "bkt%2");
  (*s)[t + "copy_source_range"] = Sel(2, "bytes=0-5242879");
  (*s)[t + "copy_source_range_bad"] = Sel(2, "bytes=9-1");
  for (gw::auth::ChecksumAlgorithm a :
       {gw::auth::ChecksumAlgorithm::kCrc32, gw::auth::ChecksumAlgorithm::kCrc32c,
        gw::auth::ChecksumAlgorithm::kCrc64Nvme, gw::auth::ChecksumAlgorithm::kSha1,
        gw::auth::ChecksumAlgorithm::kSha256}) {
    gw::auth::Checksum c(a);
    c.Update(oc::AsBytes("hello"));
    (*s)[t + "checksum_" + std::string(gw::auth::ChecksumName(a))] =
        Sel(3, std::string(gw::auth::ChecksumHeaderName(a)) + "\n" + c.FinishBase64());
  }
  (*s)[t + "checksum_algorithm"] = Sel(3, "crc64nvme");
}

void Answers(Seeds* s) {
  const std::string t = "client_answers_fuzz/seed_";
  gw::ErrorDetails d;
  d.resource = "/bkt/k";
  d.request_id = "0123456789ABCDEF";
  d.argument_name = "x-oc-num-layers";
  d.argument_value = "0";
  (*s)[t + "error_400"] =
      Sel(0, std::string("\x90\x01", 2) + gw::RenderErrorXml(gw::S3Error::kInvalidArgument, d));
  (*s)[t + "error_404"] =
      Sel(0, std::string("\x28\x01", 2) + gw::RenderErrorXml(gw::S3Error::kNoSuchBucket, {}));
  gw::XmlWriter xml;
  xml.OpenRoot("ListBucketResult");
  xml.Element("Name", "bkt");
  xml.Element("Prefix", "");
  xml.Element("KeyCount", uint64_t{2});
  xml.Flag("IsTruncated", true);
  xml.Element("NextContinuationToken", oc::HexEncode(oc::AsBytes("p/d/")));
  xml.Open("Contents");
  xml.Element("Key", "p/a&b<c>");
  xml.Element("LastModified", gw::FormatIso8601(1700000000000));
  xml.Element("ETag", gw::QuoteEtag("5d41402abc4b2a76b9719d911017c592"));
  xml.Element("Size", uint64_t{5});
  xml.Close("Contents");
  xml.Open("CommonPrefixes");
  xml.Element("Prefix", "p/d/");
  xml.Close("CommonPrefixes");
  xml.Close("ListBucketResult");
  (*s)[t + "list_page"] = Sel(1, std::move(xml).Finish());
  (*s)[t + "list_unclosed"] = Sel(1, "<ListBucketResult><Contents><Key>a</Key>");
  (*s)[t + "probe"] = Sel(2, std::string("\x03", 1) + "2\n4096\n4096\n-\n");
  (*s)[t + "probe_too_many"] = Sel(2, std::string("\x01", 1) + "1\n1\n2\n");
  oc::descriptor::ResponseSummary r;
  r.matched_chunks = 3;
  r.mode = oc::descriptor::ServeMode::kLayerwise;
  r.request_id = "r-1";
  r.gateway_us = 10;
  r.storage_us = 20;
  r.transfer_us = 30;
  std::string headers;
  for (const auto& [n, v] : oc::descriptor::EncodeResponse(r)) {
    headers += n + ": " + v + "\n";
  }
  (*s)[t + "response_headers"] = Sel(3, headers);
}

// Keys in UCX 1.13's packed layout: u64 md map, memory type, one length-prefixed entry per
// map bit. The input starts with the endpoint's (md index, component) pairs and the target.
void Rkeys(Seeds* s) {
  const std::string t = "rkey_check_fuzz/seed_";
  const std::string target = U64(1 << 20) + U64(4096);
  // md 0 self, 1 tcp, 2 cma, 3 sysv, 4 ib, 5 posix (refused); md 9 on no lane.
  const std::string lanes = std::string("\x05\x00\x01\x01\x02\x02\x03\x03\x04\x04\x05", 11);
  auto key = [](uint64_t map, std::initializer_list<std::string> entries) {
    std::string k = U64(map) + std::string(1, '\0');
    for (const std::string& e : entries) {
      k += std::string(1, static_cast<char>(e.size())) + e;
    }
    return k;
  };
  (*s)[t + "self_tcp_cma"] = lanes + target + key(0b111, {"", "", ""});
  (*s)[t + "ib"] = lanes + target + key(0b10001, {"", std::string(8, 'k')});
  (*s)[t + "dropped_and_trailer"] = lanes + target + key(0x201, {"", "xx"}) + "trailer";
  (*s)[t + "sysv_missing"] =
      lanes + target + key(0b1000, {std::string("\xff\xff\xff\x7f", 4) + U64(0)});
  (*s)[t + "posix_refused"] = std::string("\x01\x05\x05", 3) + target + key(0x20, {"abcd"});
  (*s)[t + "wrong_size"] = lanes + target + key(0b10000, {"1234"});
  (*s)[t + "truncated"] = lanes + target + key(0b11, {""});
  (*s)[t + "not_host"] = lanes + target + U64(1) + std::string("\x01\x00", 2);
}

bool Decodes(const std::string& name, const std::string& bytes) {
  if (!name.starts_with("store_records_fuzz/seed_") || name.find("huge") != std::string::npos ||
      name.find("truncated") != std::string::npos || bytes[0] == 5) {
    return true;
  }
  const std::string_view b = std::string_view(bytes).substr(1);
  switch (bytes[0]) {
    case 0:
      return st::DecodeObjectRecord(b).has_value();
    case 1:
      return st::DecodeBucketRecord(b).has_value();
    case 2:
      return st::DecodeUploadRecord(b).has_value();
    case 3:
      return st::DecodePartRecord(b).has_value();
    default:
      return st::rados::DecodeRadosBucketRecord(b).has_value();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: fuzz_seeds [--check] <corpus root>\n");
    return 2;
  }
  Seeds seeds;
  Records(&seeds);
  Tagging(&seeds);
  Lifecycle(&seeds);
  Headers(&seeds);
  Answers(&seeds);
  Rkeys(&seeds);
  int stale = 0;
  for (const auto& [name, bytes] : seeds) {
    if (!Decodes(name, bytes)) {
      std::fprintf(stderr, "seed %s does not decode\n", name.c_str());
      return 1;
    }
    const std::string path = std::string(argv[argc - 1]) + "/" + name;
    if (check) {
      std::ifstream in(path, std::ios::binary);
      const std::string have((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (!in.is_open() || have != bytes) {
        std::fprintf(stderr, "%s seed %s\n", in.is_open() ? "stale" : "missing", path.c_str());
        ++stale;
      }
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.good()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  if (stale > 0) {
    std::fprintf(stderr,
                 "%d fuzz seed(s) do not match the encoders: rewrite them with "
                 "fuzz_seeds tests/fuzz/corpus\n",
                 stale);
    return 1;
  }
  return 0;
}
