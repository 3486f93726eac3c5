// Writes the seed corpus of rpc_frame_fuzz (tests/fuzz/corpus/rpc_frame_fuzz/) with the wire
// codecs themselves, so every well-formed seed decodes with the current message encodings
// and frame version (a seed that no longer decodes stops the fuzzer at the header or the
// first field and exercises nothing past it). The malformed seeds (a bad version, huge
// counts, truncations, reserved and unknown ops) are built by hand around real frames.
//
//   rpc_seeds <dir>          writes every seed into <dir>
//   rpc_seeds --check <dir>  exits 1 naming each seed in <dir> that is missing or differs
//
// ctest runs --check against the corpus (fuzz.rpc_seeds_current), so a codec change that
// leaves the seeds stale fails until they are rewritten: `rpc_seeds tests/fuzz/corpus/
// rpc_frame_fuzz` from the source root. Other files in the directory (crashes found by the
// fuzzer) are left alone.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oc/common/result.h"
#include "oc/storage/kv.h"
#include "oc/storage/types.h"
#include "rpc/wire.h"

namespace {

namespace rpc = oc::storage::rpc;
namespace st = oc::storage;
using Frames = std::vector<std::byte>;

constexpr uint64_t kRequestId = 0x1122334455667788;

template <typename... Fields>
Frames Frame(rpc::Op op, bool reply, const Fields&... fields) {
  Frames out;
  rpc::EncodeFrame(&out, op, reply ? rpc::kFlagReply : 0, kRequestId, fields...);
  return out;
}

Frames Then(Frames a, const Frames& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A frame of raw body bytes (kData, or a body the codecs would not write).
Frames RawFrame(rpc::Op op, bool reply, std::string_view body, uint8_t version = rpc::kVersion,
                uint64_t body_length = ~0ull) {
  Frames out(rpc::kHeaderBytes);
  rpc::FrameHeader h{version, op, static_cast<uint16_t>(reply ? rpc::kFlagReply : 0), kRequestId,
                     body_length == ~0ull ? body.size() : body_length};
  rpc::EncodeHeader(h, std::span<std::byte, rpc::kHeaderBytes>(out.data(), rpc::kHeaderBytes));
  for (char c : body) {
    out.push_back(static_cast<std::byte>(c));
  }
  return out;
}

st::ObjectMeta FullMeta() {
  st::ObjectMeta m;
  m.size = 5;
  m.etag = "5d41402abc4b2a76b9719d911017c592";
  m.content_type = "text/plain";
  m.user_meta = {{"m", "v"}};
  m.headers = {{"cache-control", "no-cache"}, {"x-amz-checksum-crc32", "NhCmhg=="}};
  m.mtime_unix_ms = 1700000000000;
  m.parts_count = 2;
  m.chunk = st::ChunkShape{oc::descriptor::StoredLayout::k2LTD, 2, 4};
  m.tags = {{"t", "1"}};
  return m;
}

st::PutOptions FullPutOptions() {
  st::PutOptions o;
  o.content_type = "text/plain";
  o.user_meta = {{"m", "v"}};
  o.headers = {{"x-amz-checksum-sha256", "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="}};
  o.extent_bytes = 4096;
  o.chunk = st::ChunkShape{oc::descriptor::StoredLayout::kL2TD, 1, 8};
  o.expected_size = 5;
  o.content_md5 = std::array<std::byte, 16>{std::byte{0x5d}, std::byte{0x41}};
  o.if_none_match = true;
  o.if_match = "\"5d41402abc4b2a76b9719d911017c592\"";
  o.tags = st::Tags{{"t", "1"}};
  o.upload_checksum_header = "x-amz-checksum-crc32";
  o.upload_checksum_type = st::ChecksumType::kFullObject;
  o.part_checksum_header = "x-amz-checksum-crc32";
  return o;
}

const std::string kGetText =
    "x-oc-version: 1\nx-oc-num-layers: 1\nx-oc-chunk-tokens: 1\nx-oc-layer-bytes: 4\n"
    "x-oc-layout: kv_2ltd\nx-oc-delivery: chunk-major\nx-oc-chunk-names: a%40b,c\n";
const std::string kTargetText =
    "x-oc-version: 1\nx-oc-num-layers: 1\nx-oc-chunk-tokens: 1\nx-oc-layer-bytes: 8\n"
    "x-oc-chunk-names: a\nx-oc-target-connection: 00112233445566778899aabbccddeeff\n"
    "x-oc-target-rkey: 0000000000000000\nx-oc-target-address: 4096\nx-oc-target-length: 8\n";
const std::string kProbeText =
    "x-oc-version: 1\nx-oc-key-prefix: m/\nx-oc-num-layers: 2\nx-oc-chunk-tokens: 16\n"
    "x-oc-layer-bytes: 4096\nx-oc-chunk-hashes: "
    "00112233445566778899aabbccddeeff,8394a5b6c7d8e9fa0b1c2d3e4f607182\nx-oc-request-id: seed-1\n";
const std::string kPutText =
    "x-oc-version: 1\nx-oc-key-prefix: m/\nx-oc-num-layers: 2\nx-oc-chunk-tokens: 16\n"
    "x-oc-layer-bytes: 4\nx-oc-layout: kv_l2td\n"
    "x-oc-chunk-hashes: 00112233445566778899aabbccddeeff\nx-oc-if-none-match: *\n";

std::map<std::string, Frames> Seeds() {
  using rpc::Op;
  const st::ObjectKey key{"bkt", "k"};
  const std::string upload = "0123456789abcdef0123456789abcdef";
  std::map<std::string, Frames> s;

  // Connection and buckets.
  s["hello"] = Frame(Op::kHello, false, std::string("secret"));
  s["hello_reply"] = Frame(Op::kHello, true);
  s["create_bucket"] = Frame(Op::kCreateBucket, false, std::string("bkt"), std::string("owner"));
  s["error_reply"] = Frame(Op::kError, true,
                           oc::Status(oc::Code::kNotFound, oc::Subject::kKey, "", "no such key"));
  s["list_buckets_reply"] =
      Frame(Op::kListBuckets, true, std::vector<st::BucketInfo>{{"bkt", "owner", 1700000000000}});
  s["server_info_reply"] =
      Frame(Op::kServerInfo, true, st::StoreIdentity{"rados", "fsid-1", "pool", "ns"});
  st::StoreStats stats;
  stats.figures = {{"objects", 7}};
  s["stats_reply"] = Frame(Op::kStats, true, stats);

  // Objects.
  const Frames begin = Frame(Op::kPutBegin, false, key, FullPutOptions());
  s["put_stream"] =
      Then(Then(begin, RawFrame(Op::kData, false, "hello")), Frame(Op::kCommit, false));
  s["put_header_stream"] =
      Then(Then(Then(begin, RawFrame(Op::kData, false, "hello")),
                Frame(Op::kPutHeader, false, std::string("x-amz-checksum-crc32"),
                      std::string("NhCmhg=="))),
           Frame(Op::kCommit, false));
  s["put_abort"] = Then(
      Then(Frame(Op::kPutBegin, false, key, st::PutOptions{}), RawFrame(Op::kData, false, "hi")),
      Frame(Op::kAbort, false));
  s["commit_reply"] = Frame(Op::kCommit, true, FullMeta());
  s["head_reply"] = Frame(Op::kHead, true, FullMeta());
  s["get"] = Frame(Op::kGet, false, key, st::ByteRange::All());
  s["get_suffix"] = Frame(Op::kGet, false, key, st::ByteRange::Suffix(10));
  s["get_part"] = Frame(Op::kGet, false, key, st::ByteRange::Part(2));
  s["get_reply_stream"] = Then(Frame(Op::kGet, true, rpc::GetReply{FullMeta(), 0, 5}),
                               RawFrame(Op::kData, true, "hello"));
  s["head_many"] =
      Frame(Op::kHeadMany, false, std::string("bkt"), std::vector<std::string>{"a", "b", ""});
  s["head_many_reply"] = Frame(
      Op::kHeadMany, true, std::vector<std::optional<st::ObjectMeta>>{FullMeta(), std::nullopt});
  s["list"] = Frame(Op::kList, false, std::string("bkt"), st::ListOptions{"p/", "/", "", 1000});
  st::ListResult listed;
  listed.objects = {{"p/a", FullMeta()}};
  listed.common_prefixes = {"p/d/"};
  listed.truncated = true;
  listed.next_start_after = "p/d/";
  s["list_reply"] = Frame(Op::kList, true, listed);
  st::WriteConditions conditions;
  conditions.if_match = "\"5d41402abc4b2a76b9719d911017c592\"";
  s["copy"] = Frame(Op::kCopy, false, st::ObjectKey{"a", "k"}, st::ObjectKey{"b", "k2"},
                    std::optional<st::PutOptions>(FullPutOptions()), conditions);
  s["copy_unconditional"] =
      Frame(Op::kCopy, false, st::ObjectKey{"a", "k"}, st::ObjectKey{"b", "k2"},
            std::optional<st::PutOptions>(), st::WriteConditions{});
  s["put_tags"] = Frame(Op::kPutTags, false, key, st::Tags{{"a", "1"}, {"b", ""}});

  // Multipart.
  s["create_upload"] = Frame(Op::kCreateUpload, false, key, FullPutOptions());
  s["upload_part_stream"] =
      Then(Then(Frame(Op::kUploadPartBegin, false, key, upload, uint32_t{2}, FullPutOptions()),
                RawFrame(Op::kData, false, "part")),
           Frame(Op::kCommit, false));
  st::CompleteOptions complete;
  complete.conditions.if_none_match = true;
  complete.checksum = {"x-amz-checksum-crc32", "AAAAAA==-2"};
  s["complete"] =
      Frame(Op::kCompleteUpload, false, key, upload,
            std::vector<st::CompletedPart>{{1, "e1", {"x-amz-checksum-crc32", "AAAAAQ=="}, 5 << 20},
                                           {2, "e2", {}, std::nullopt}},
            complete);
  st::ListPartsResult parts;
  parts.parts = {{1, 5 << 20, "e", 1700000000000, {"x-amz-checksum-crc32", "AAAAAQ=="}},
                 {2, 10, "f", 1700000000001, {}}};
  parts.next_part_number_marker = 2;
  parts.checksum_header = "x-amz-checksum-crc32";
  parts.checksum_type = st::ChecksumType::kFullObject;
  s["list_parts_reply"] = Frame(Op::kListParts, true, parts);
  st::ListUploadsResult uploads;
  uploads.uploads = {{"k", upload, 1700000000000}};
  uploads.next_key_marker = "k";
  s["list_uploads_reply"] = Frame(Op::kListUploads, true, uploads);

  // Descriptor calls.
  s["kv_probe"] = Frame(Op::kKvProbe, false, std::string("bkt"), kProbeText, std::string());
  s["kv_probe_reply"] =
      Frame(Op::kKvProbe, true, st::KvProbeResult{1, {uint64_t{8192}, std::nullopt}});
  s["kv_get_layers"] = Frame(Op::kKvGetLayers, false, std::string("bkt"), kGetText, std::string());
  s["kv_get_layers_target"] =
      Frame(Op::kKvGetLayers, false, std::string("bkt"), kTargetText, std::string("AKIDEXAMPLE"));
  st::KvPlan plan{2, 1, oc::descriptor::ServeMode::kLayerwise, 8, "r1"};
  st::KvGetReport report;
  report.plan = plan;
  report.timings = {1, 2, 3, 6};
  report.layers_notified = 2;
  report.writes = 2;
  report.assigned_rate_gbps = 12.5;
  std::string data1 = std::string(8, '\0') + "\x01\x02\x03\x04";
  s["kv_plan_data_ready_report"] =
      Then(Then(Then(Frame(Op::kKvPlan, true, plan), RawFrame(Op::kKvData, true, data1)),
                Frame(Op::kKvLayerReady, true, uint32_t{0})),
           Frame(Op::kKvGetLayers, true, report));
  s["kv_plan_bad_matched"] =
      Frame(Op::kKvPlan, true, st::KvPlan{1, 2, oc::descriptor::ServeMode::kChunkwise, 0, ""});
  s["kv_put_chunks"] =
      Then(Then(Frame(Op::kKvPutChunks, false, std::string("bkt"), kPutText, std::string()),
                RawFrame(Op::kData, false, std::string("\0\1\2\3\4\5\6\7", 8))),
           Frame(Op::kCommit, false));
  st::KvPutReport put_report{2, 16384, 10, 20, 40, "p1", {true, false}};
  s["kv_put_report"] = Frame(Op::kKvPutChunks, true, put_report);
  s["kv_data_plane"] = Then(Frame(Op::kKvDataPlane, false, std::string("bkt")),
                            Frame(Op::kKvDataPlane, true, st::DataPlaneInfo{"127.0.0.1:1", true}));

  // Malformed: each stops a reader at a different check.
  s["bad_version"] = RawFrame(Op::kGet, false, "", static_cast<uint8_t>(rpc::kVersion - 1));
  s["huge_count"] = RawFrame(Op::kListBuckets, true, "\xff\xff\xff\xff");
  s["huge_string"] = RawFrame(Op::kHello, false,
                              std::string("\xf0\xff\xff\xff"
                                          "abc",
                                          7));
  s["oversize"] = RawFrame(Op::kData, false, "", rpc::kVersion, 1ull << 40);
  const Frames create = s["create_bucket"];
  s["truncated_body"] = Frames(create.begin(), create.end() - 6);
  s["truncated_header"] = Frames(create.begin(), create.begin() + 11);
  s["unknown_op"] = RawFrame(static_cast<Op>(99), false, "");
  s["reserved_op_40"] = RawFrame(static_cast<Op>(40), false, std::string("\3\0\0\0bkt", 7));
  s["reserved_op_41"] = RawFrame(static_cast<Op>(41), true, std::string("\0\0\0\0abcd", 8));
  return s;
}

// The seeds built to be refused; every other seed must decode whole.
bool Malformed(const std::string& name) {
  for (const char* m : {"bad_version", "huge_count", "huge_string", "oversize", "truncated_body",
                        "truncated_header", "unknown_op", "reserved_op_40", "reserved_op_41",
                        "kv_plan_bad_matched"}) {
    if (name == m) {
      return true;
    }
  }
  return false;
}

// OK when every frame of `f` has a valid header and a body its receiver decodes.
oc::Status DecodesWhole(const Frames& f) {
  oc::ByteSpan in(f.data(), f.size());
  while (!in.empty()) {
    if (in.size() < rpc::kHeaderBytes) {
      return oc::Status::InvalidArgument("frame", "truncated header");
    }
    rpc::FrameHeader h;
    OC_RETURN_IF_ERROR(
        rpc::DecodeHeader(in.first<rpc::kHeaderBytes>(), rpc::kMaxFrameBodyBytes, &h));
    in = in.subspan(rpc::kHeaderBytes);
    if (h.body_length > in.size()) {
      return oc::Status::InvalidArgument("frame", "truncated body");
    }
    OC_RETURN_IF_ERROR(rpc::ValidateBody(h.op, h.flags, in.first(h.body_length)));
    in = in.subspan(h.body_length);
  }
  return oc::Status::Ok();
}

std::string Text(const Frames& f) {
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: rpc_seeds [--check] <corpus dir>\n");
    return 2;
  }
  const std::string dir = argv[argc - 1];
  int stale = 0;
  for (const auto& [name, frames] : Seeds()) {
    const std::string path = dir + "/" + name;
    if (const oc::Status st = DecodesWhole(frames); st.ok() == Malformed(name)) {
      std::fprintf(stderr, "seed %s %s: %s\n", name.c_str(),
                   st.ok() ? "decodes but should be refused" : "does not decode",
                   st.ToString().c_str());
      return 1;
    }
    if (check) {
      std::ifstream in(path, std::ios::binary);
      const std::string have((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "missing seed %s\n", path.c_str());
        ++stale;
      } else if (have != Text(frames)) {
        std::fprintf(stderr, "stale seed %s\n", path.c_str());
        ++stale;
      }
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << Text(frames);
    if (!out.good()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  if (stale > 0) {
    std::fprintf(stderr,
                 "%d rpc_frame_fuzz seed(s) do not match the codecs: rewrite them with "
                 "rpc_seeds tests/fuzz/corpus/rpc_frame_fuzz\n",
                 stale);
    return 1;
  }
  return 0;
}
