// The storage RPC wire format: header checks, field codecs round-tripping, and every
// malformed input refused with a Status (never a crash or an allocation from a bad length).

#include <gtest/gtest.h>

#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

using Header = std::array<std::byte, kHeaderBytes>;

Header MakeHeader(const FrameHeader& h) {
  Header raw;
  EncodeHeader(h, raw);
  return raw;
}

ObjectMeta SampleMeta() {
  ObjectMeta m;
  m.size = 123456789;
  m.etag = "0123456789abcdef0123456789abcdef-3";
  m.content_type = "application/x-kv";
  m.user_meta = {{"model", "llama"}, {"empty", ""}, {"ünï", "cødé"}};
  m.headers = {{"cache-control", "no-cache"}};
  m.mtime_unix_ms = -5;  // signed values survive the u64 encoding
  m.parts_count = 3;
  m.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 32, 1 << 20};
  return m;
}

PutOptions SampleOptions() {
  PutOptions o;
  o.content_type = "text/plain";
  o.user_meta = {{"a", "1"}};
  o.headers = {{"content-language", "en"}};
  o.extent_bytes = 65536;
  o.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, 4, 4096};
  o.expected_size = 16384;
  std::array<std::byte, 16> md5{};
  md5[0] = std::byte{0xd4};
  md5[15] = std::byte{0x7e};
  o.content_md5 = md5;
  o.upload_checksum_header = "x-amz-checksum-crc64nvme";
  o.upload_checksum_type = ChecksumType::kFullObject;
  o.part_checksum_header = "x-amz-checksum-crc32c";
  return o;
}

void ExpectMetaEq(const ObjectMeta& a, const ObjectMeta& b) {
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.etag, b.etag);
  EXPECT_EQ(a.content_type, b.content_type);
  EXPECT_EQ(a.user_meta, b.user_meta);
  EXPECT_EQ(a.headers, b.headers);
  EXPECT_EQ(a.mtime_unix_ms, b.mtime_unix_ms);
  EXPECT_EQ(a.parts_count, b.parts_count);
  ASSERT_EQ(a.chunk.has_value(), b.chunk.has_value());
  if (a.chunk.has_value()) {
    EXPECT_EQ(a.chunk->layout, b.chunk->layout);
    EXPECT_EQ(a.chunk->num_layers, b.chunk->num_layers);
    EXPECT_EQ(a.chunk->layer_bytes, b.chunk->layer_bytes);
  }
}

// Encodes `fields` as a frame and returns just its body.
template <typename... Fields>
std::vector<std::byte> BodyOf(const Fields&... fields) {
  std::vector<std::byte> frame;
  EncodeFrame(&frame, Op::kHead, 0, 1, fields...);
  return std::vector<std::byte>(frame.begin() + kHeaderBytes, frame.end());
}

TEST(RpcWire, HeaderRoundTripsAndIsLittleEndian) {
  const FrameHeader h{kVersion, Op::kGet, kFlagReply, 0x0102030405060708ull, 4096};
  const Header raw = MakeHeader(h);
  EXPECT_EQ(raw[0], std::byte{'O'});
  EXPECT_EQ(raw[3], std::byte{'1'});
  EXPECT_EQ(raw[5], std::byte{24});
  EXPECT_EQ(raw[8], std::byte{0x08});   // request id, least significant byte first
  EXPECT_EQ(raw[17], std::byte{0x10});  // 4096 = 0x1000
  FrameHeader back;
  ASSERT_TRUE(DecodeHeader(raw, kMaxFrameBodyBytes, &back).ok());
  EXPECT_EQ(back.op, Op::kGet);
  EXPECT_EQ(back.flags, kFlagReply);
  EXPECT_EQ(back.request_id, h.request_id);
  EXPECT_EQ(back.body_length, 4096u);
}

TEST(RpcWire, BadHeadersAreRefusedNamingTheField) {
  struct Row {
    std::string_view name;
    size_t byte;
    uint8_t value;
    Code code;
    std::string_view field;
  };
  for (const Row& row : {Row{"magic", 0, 'X', Code::kInvalidArgument, "magic"},
                         Row{"version", 4, kVersion + 1, Code::kUnimplemented, "version"},
                         Row{"version before 2", 4, 1, Code::kUnimplemented, "version"},
                         Row{"op zero", 5, 0, Code::kUnimplemented, "op"},
                         Row{"op unknown", 5, 200, Code::kUnimplemented, "op"},
                         // Reserved: the former ReadSlices and SliceData (wire.h).
                         Row{"op 40 (was ReadSlices)", 5, 40, Code::kUnimplemented, "op"},
                         Row{"op 41 (was SliceData)", 5, 41, Code::kUnimplemented, "op"},
                         Row{"flags", 6, 0x80, Code::kInvalidArgument, "flags"},
                         Row{"length", 23, 1, Code::kResourceExhausted, "body_length"}}) {
    SCOPED_TRACE(row.name);
    Header raw = MakeHeader(FrameHeader{kVersion, Op::kHead, 0, 77, 10});
    raw[row.byte] = static_cast<std::byte>(row.value);
    FrameHeader h;
    const Status st = DecodeHeader(raw, kMaxFrameBodyBytes, &h);
    EXPECT_EQ(st.code(), row.code) << st;
    EXPECT_EQ(st.field(), row.field);
    EXPECT_EQ(h.request_id, 77u);  // still known, so the error reply can name the call
  }
}

TEST(RpcWire, BodyLengthIsCheckedAgainstTheCallersLimit) {
  const Header raw = MakeHeader(FrameHeader{kVersion, Op::kData, 0, 1, 1001});
  FrameHeader h;
  EXPECT_EQ(DecodeHeader(raw, 1000, &h).code(), Code::kResourceExhausted);
  EXPECT_TRUE(DecodeHeader(raw, 1001, &h).ok());
  // A limit above the hard ceiling does not lift it.
  const Header huge = MakeHeader(FrameHeader{kVersion, Op::kData, 0, 1, kMaxFrameBodyBytes + 1});
  EXPECT_EQ(DecodeHeader(huge, ~0ull, &h).code(), Code::kResourceExhausted);
}

TEST(RpcWire, EveryKnownOpHasANameAndUnknownOnesDoNot) {
  int known = 0;
  for (int v = 0; v < 256; ++v) {
    if (IsKnownOp(static_cast<uint8_t>(v))) {
      ++known;
      EXPECT_NE(OpName(static_cast<Op>(v)), "unknown");
    }
  }
  EXPECT_EQ(known, 36);  // 33, and DeleteIf, SetBucketLifecycle, GetBucketLifecycle (issue 31)
  EXPECT_FALSE(IsKnownOp(0));
  EXPECT_FALSE(IsKnownOp(255));
}

TEST(RpcWire, DescriptorCallTypesRoundTripAndBadValuesAreRefused) {
  KvGetReport report;
  report.plan = KvPlan{5, 3, descriptor::ServeMode::kLayerwise, 3 * 4 * 100, "req-1"};
  report.timings = KvTimings{1, 2, 3, 4};
  report.layers_notified = 4;
  report.writes = 9;
  report.assigned_rate_gbps = 12.5;
  KvProbeResult probe{2, {10, 10, std::nullopt}};
  KvPutReport put{3, 1200, 5, 6, 7, "req-2", {true, false, true}};
  std::vector<std::byte> body;
  WireWriter w(&body);
  Encode(w, report);
  Encode(w, probe);
  Encode(w, put);
  KvGetReport report2;
  KvProbeResult probe2;
  KvPutReport put2;
  ASSERT_TRUE(DecodeBody(body, &report2, &probe2, &put2).ok());
  EXPECT_EQ(report2.plan.matched, 3u);
  EXPECT_EQ(report2.plan.mode, descriptor::ServeMode::kLayerwise);
  EXPECT_EQ(report2.plan.request_id, "req-1");
  EXPECT_EQ(report2.timings.transfer_us, 3u);
  EXPECT_EQ(report2.writes, 9u);
  EXPECT_DOUBLE_EQ(report2.assigned_rate_gbps, 12.5);
  EXPECT_EQ(probe2.sizes, probe.sizes);
  EXPECT_EQ(put2.request_id, "req-2");
  EXPECT_EQ(put2.bytes, 1200u);
  EXPECT_EQ(put2.existed, put.existed);
  {  // Create-if-absent's per-chunk answers are one per chunk or none.
    KvPutReport bad{2, 800, 0, 0, 0, "req-3", {true, false, true}};
    std::vector<std::byte> b;
    WireWriter bw(&b);
    Encode(bw, bad);
    KvPutReport out;
    EXPECT_EQ(DecodeBody(b, &out).field(), "report.existed");
    bad.existed.clear();
    b.clear();
    WireWriter cw(&b);
    Encode(cw, bad);
    ASSERT_TRUE(DecodeBody(b, &out).ok());
    EXPECT_TRUE(out.existed.empty());
  }
  // More matched than requested, an unknown mode, more matched than sizes.
  for (const auto& [plan, field] :
       {std::pair{KvPlan{2, 3, descriptor::ServeMode::kChunkwise, 0, ""}, "plan.matched"},
        std::pair{KvPlan{2, 1, static_cast<descriptor::ServeMode>(7), 0, ""}, "plan.mode"}}) {
    std::vector<std::byte> b;
    WireWriter pw(&b);
    Encode(pw, plan);
    KvPlan out;
    EXPECT_EQ(DecodeBody(b, &out).field(), field);
  }
  std::vector<std::byte> b;
  WireWriter pw(&b);
  Encode(pw, KvProbeResult{3, {1, 1}});
  KvProbeResult out;
  EXPECT_EQ(DecodeBody(b, &out).field(), "probe.matched");
  // The request of a descriptor call is validated with its descriptor.
  std::vector<std::byte> req;
  WireWriter rw(&req);
  Encode(rw, std::string_view("bucket"));
  Encode(rw, std::string_view("x-oc-version: 1\nx-oc-num-layers: 2\n"));
  Encode(rw, std::string_view("principal"));
  EXPECT_EQ(ValidateBody(Op::kKvGetLayers, 0, req).subject(), Subject::kDescriptor);
  // Where a bucket's data plane listens.
  std::vector<std::byte> info;
  WireWriter iw(&info);
  Encode(iw, DataPlaneInfo{"127.0.0.1:4000", true});
  DataPlaneInfo decoded;
  ASSERT_TRUE(DecodeBody(info, &decoded).ok());
  EXPECT_EQ(decoded.address, "127.0.0.1:4000");
  EXPECT_TRUE(decoded.shared_memory);
  EXPECT_TRUE(ValidateBody(Op::kKvDataPlane, rpc::kFlagReply, info).ok());
  // A server's identity (ServerInfo); a truncated one is refused.
  std::vector<std::byte> id;
  WireWriter idw(&id);
  Encode(idw, StoreIdentity{"rados", "0b5e-fsid", "pool-a", "ns"});
  StoreIdentity identity;
  ASSERT_TRUE(DecodeBody(id, &identity).ok());
  EXPECT_EQ(identity.backend, "rados");
  EXPECT_EQ(identity.fsid, "0b5e-fsid");
  EXPECT_EQ(identity.pool, "pool-a");
  EXPECT_EQ(identity.rados_namespace, "ns");
  EXPECT_TRUE(ValidateBody(Op::kServerInfo, rpc::kFlagReply, id).ok());
  EXPECT_TRUE(ValidateBody(Op::kServerInfo, 0, {}).ok());
  EXPECT_FALSE(
      ValidateBody(Op::kServerInfo, rpc::kFlagReply, ByteSpan(id).first(id.size() - 1)).ok());
}

TEST(RpcWire, FieldsRoundTrip) {
  const ObjectKey key{"bucket-1", "dir/ключ ☃ with spaces & symbols?"};
  const ByteRange range = ByteRange::Suffix(42);
  const PutOptions options = SampleOptions();
  const ObjectMeta meta = SampleMeta();
  const Status status(Code::kFailedPrecondition, Subject::kPart, "partNumber", "bad order");
  ListResult list;
  list.objects = {{"a", meta}, {"b", ObjectMeta{}}};
  list.common_prefixes = {"p/", "q/"};
  list.truncated = true;
  list.next_start_after = "q/";
  const std::vector<std::string> names = {"x", "", "y"};

  const std::vector<std::byte> body = BodyOf(key, range, options, meta, status, list, names,
                                             std::optional<PutOptions>(), uint32_t{7});
  ObjectKey key2;
  ByteRange range2;
  PutOptions options2;
  ObjectMeta meta2;
  Status status2;
  ListResult list2;
  std::vector<std::string> names2;
  std::optional<PutOptions> none = PutOptions{};
  uint32_t seven = 0;
  ASSERT_TRUE(
      DecodeBody(body, &key2, &range2, &options2, &meta2, &status2, &list2, &names2, &none, &seven)
          .ok());
  EXPECT_EQ(key2.bucket, key.bucket);
  EXPECT_EQ(key2.name, key.name);
  EXPECT_TRUE(range2.suffix);
  EXPECT_EQ(range2.length, 42u);
  EXPECT_EQ(options2.content_type, options.content_type);
  EXPECT_EQ(options2.user_meta, options.user_meta);
  EXPECT_EQ(options2.upload_checksum_header, options.upload_checksum_header);
  EXPECT_EQ(options2.upload_checksum_type, ChecksumType::kFullObject);
  EXPECT_EQ(options2.part_checksum_header, options.part_checksum_header);
  EXPECT_EQ(options2.headers, options.headers);
  EXPECT_EQ(options2.extent_bytes, options.extent_bytes);
  EXPECT_EQ(options2.expected_size, options.expected_size);
  EXPECT_EQ(options2.content_md5, options.content_md5);
  ASSERT_TRUE(options2.chunk.has_value());
  EXPECT_EQ(options2.chunk->num_layers, 4u);
  ExpectMetaEq(meta2, meta);
  EXPECT_EQ(status2.ToString(), status.ToString());
  ASSERT_EQ(list2.objects.size(), 2u);
  EXPECT_EQ(list2.objects[0].name, "a");
  ExpectMetaEq(list2.objects[0].meta, meta);
  EXPECT_EQ(list2.common_prefixes, list.common_prefixes);
  EXPECT_TRUE(list2.truncated);
  EXPECT_EQ(list2.next_start_after, "q/");
  EXPECT_EQ(names2, names);
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(seven, 7u);
}

TEST(RpcWire, MultipartAndStatsTypesRoundTrip) {
  ListPartsResult parts;
  parts.parts = {{1, 5u << 20, "aa", 10, {"x-amz-checksum-sha1", "c2hh"}}, {2, 7, "bb", 11}};
  parts.truncated = true;
  parts.next_part_number_marker = 2;
  parts.checksum_header = "x-amz-checksum-sha1";
  parts.checksum_type = ChecksumType::kFullObject;
  ListUploadsResult uploads;
  uploads.uploads = {{"k", "id-1", 99}};
  uploads.common_prefixes = {"c/"};
  uploads.next_key_marker = "k";
  uploads.next_upload_id_marker = "id-1";
  StoreStats stats;
  stats.figures = {{"a", 1}, {"b", ~0ull}};
  const std::vector<std::optional<ObjectMeta>> metas = {SampleMeta(), std::nullopt};
  const std::vector<CompletedPart> done = {{1, "e1"},
                                           {3, "e3", {"x-amz-checksum-crc32", "AA=="}, 5u << 30}};
  CompleteOptions complete;
  complete.conditions.if_match = "etag";
  complete.checksum = {"x-amz-checksum-crc32", "AAAAAA==-2"};

  const auto body = BodyOf(parts, uploads, stats, metas, done, complete);
  ListPartsResult parts2;
  ListUploadsResult uploads2;
  StoreStats stats2;
  std::vector<std::optional<ObjectMeta>> metas2;
  std::vector<CompletedPart> done2;
  CompleteOptions complete2;
  ASSERT_TRUE(DecodeBody(body, &parts2, &uploads2, &stats2, &metas2, &done2, &complete2).ok());
  ASSERT_EQ(parts2.parts.size(), 2u);
  EXPECT_EQ(parts2.parts[0].checksum, parts.parts[0].checksum);
  EXPECT_TRUE(parts2.parts[1].checksum.empty());
  EXPECT_EQ(parts2.checksum_header, "x-amz-checksum-sha1");
  EXPECT_EQ(parts2.checksum_type, ChecksumType::kFullObject);
  ASSERT_EQ(done2.size(), 2u);
  EXPECT_FALSE(done2[0].size.has_value());
  EXPECT_EQ(done2[1].size, 5u << 30);
  EXPECT_EQ(done2[1].checksum, done[1].checksum);
  EXPECT_EQ(complete2.conditions.if_match, complete.conditions.if_match);
  EXPECT_FALSE(complete2.conditions.if_none_match);
  EXPECT_EQ(complete2.checksum, complete.checksum);
  EXPECT_EQ(parts2.parts[0].size, 5u << 20);
  EXPECT_EQ(parts2.parts[1].etag, "bb");
  EXPECT_EQ(parts2.next_part_number_marker, 2u);
  ASSERT_EQ(uploads2.uploads.size(), 1u);
  EXPECT_EQ(uploads2.uploads[0].upload_id, "id-1");
  EXPECT_EQ(uploads2.next_upload_id_marker, "id-1");
  EXPECT_EQ(stats2.figures, stats.figures);
  ASSERT_EQ(metas2.size(), 2u);
  ASSERT_TRUE(metas2[0].has_value());
  ExpectMetaEq(*metas2[0], SampleMeta());
  EXPECT_FALSE(metas2[1].has_value());
  ASSERT_EQ(done2.size(), 2u);
  EXPECT_EQ(done2[1].part_number, 3u);
  EXPECT_EQ(done2[1].checksum, done[1].checksum);
}

TEST(RpcWire, EveryTruncationOfABodyIsAnError) {
  const auto body = BodyOf(ObjectKey{"b", "k"}, SampleOptions());
  ObjectKey key;
  PutOptions options;
  ASSERT_TRUE(DecodeBody(body, &key, &options).ok());
  for (size_t n = 0; n < body.size(); ++n) {
    SCOPED_TRACE(n);
    const Status st = DecodeBody(ByteSpan(body.data(), n), &key, &options);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
  }
  // And trailing bytes are refused too.
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_EQ(DecodeBody(longer, &key, &options).code(), Code::kInvalidArgument);
}

TEST(RpcWire, LengthsAndCountsFromTheWireAreCheckedBeforeUse) {
  struct Row {
    std::string_view name;
    std::vector<uint8_t> bytes;
  };
  // A string claiming 4 GiB; a vector claiming 2^32-1 elements in a 4-byte body; a bool
  // that is not 0/1; a Status with code 0 (OK cannot travel as an error) and code 99.
  for (const Row& row : {Row{"string length", {0xff, 0xff, 0xff, 0xff, 'a'}},
                         Row{"vector count", {0xff, 0xff, 0xff, 0xff}}, Row{"bool", {2}},
                         Row{"status ok", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
                         Row{"status code", {99, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}) {
    SCOPED_TRACE(row.name);
    const ByteSpan body(reinterpret_cast<const std::byte*>(row.bytes.data()), row.bytes.size());
    Status st;
    if (row.name == "string length") {
      std::string s;
      st = DecodeBody(body, &s);
    } else if (row.name == "vector count") {
      std::vector<std::string> v;
      st = DecodeBody(body, &v);
    } else if (row.name == "bool") {
      std::optional<PutOptions> o;
      st = DecodeBody(body, &o);
    } else {
      Status decoded;
      st = DecodeBody(body, &decoded);
    }
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << st;
  }
}

TEST(RpcWire, UnknownStoredLayoutIsRefused) {
  PutOptions options;
  options.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, 2, 64};
  std::vector<std::byte> body = BodyOf(options);
  // content_type (4), user_meta count (4), headers count (4), extent_bytes (8), present (1)
  constexpr size_t kLayoutAt = 21;
  ASSERT_EQ(body[kLayoutAt], std::byte{1});
  body[kLayoutAt] = std::byte{9};
  PutOptions back;
  const Status st = DecodeBody(body, &back);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.field(), "chunk.layout");
}

TEST(RpcWire, ValidateBodyAcceptsWhatEncodersProduceForEveryOp) {
  struct Row {
    Op op;
    uint16_t flags;
    std::vector<std::byte> body;
  };
  const ObjectKey key{"b", "k"};
  const std::vector<Row> rows = {
      {Op::kHello, 0, BodyOf(std::string("secret"))},
      {Op::kHello, kFlagReply, {}},
      {Op::kError, kFlagReply, BodyOf(Status::Internal("x"))},
      {Op::kCreateBucket, 0, BodyOf(std::string("b"), std::string("o"))},
      {Op::kHeadBucket, kFlagReply, BodyOf(BucketInfo{"b", "o", 1})},
      {Op::kListBuckets, kFlagReply, BodyOf(std::vector<BucketInfo>{{"b", "o", 1}})},
      {Op::kPutBegin, 0, BodyOf(key, SampleOptions())},
      {Op::kCommit, kFlagReply, BodyOf(SampleMeta())},
      {Op::kGet, 0, BodyOf(key, ByteRange{5, 10, false})},
      {Op::kGet, kFlagReply, BodyOf(GetReply{SampleMeta(), 5, 10})},
      {Op::kCopy, 0,
       BodyOf(key, key, std::optional<PutOptions>(SampleOptions()), WriteConditions{true, "e"})},
      {Op::kList, 0, BodyOf(std::string("b"), ListOptions{"p", "/", "a", 10})},
      {Op::kHeadMany, 0, BodyOf(std::string("b"), std::vector<std::string>{"a", "b"})},
      {Op::kUploadPartBegin, 0, BodyOf(key, std::string("id"), uint32_t{2}, PutOptions{})},
      {Op::kCompleteUpload, 0,
       BodyOf(key, std::string("id"), std::vector<CompletedPart>{{1, "e"}}, CompleteOptions{})},
      {Op::kListParts, 0, BodyOf(key, std::string("id"), uint32_t{0}, uint32_t{1000})},
      {Op::kListUploads, 0, BodyOf(std::string("b"), ListUploadsOptions{})},
      {Op::kPutHeader, 0, BodyOf(std::string("x-amz-checksum-crc32"), std::string("DUoRhQ=="))},
      {Op::kStats, kFlagReply, BodyOf(StoreStats{{{"x", 1}}})},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(OpName(row.op));
    EXPECT_TRUE(ValidateBody(row.op, row.flags, row.body).ok());
    if (!row.body.empty()) {
      EXPECT_FALSE(
          ValidateBody(row.op, row.flags, ByteSpan(row.body).first(row.body.size() - 1)).ok());
    }
  }
}

// A checksum type the wire does not know fails the whole body with the field named (found by
// rpc_frame_fuzz: the decoder returned false without recording it, so the body was accepted
// with the type left at its default).
TEST(RpcWire, UnknownChecksumTypeIsRefused) {
  ListPartsResult parts;
  parts.checksum_type = ChecksumType::kFullObject;
  std::vector<std::byte> body = BodyOf(parts);
  ASSERT_EQ(body.back(), std::byte{1});  // the type is the last byte
  body.back() = std::byte{99};
  ListPartsResult back;
  const Status st = DecodeBody(body, &back);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.field(), "checksum_type");
}

TEST(RpcWire, HostPortParsing) {
  struct Row {
    std::string_view text;
    bool ok;
    std::string_view host;
    uint16_t port;
  };
  for (const Row& row :
       {Row{"127.0.0.1:9100", true, "127.0.0.1", 9100}, Row{"localhost:0", true, "localhost", 0},
        Row{"[::1]:65535", true, "::1", 65535}, Row{"host", false, "", 0}, Row{":80", false, "", 0},
        Row{"h:", false, "", 0}, Row{"h:65536", false, "", 0}, Row{"h:9x", false, "", 0},
        Row{"[::1:80", false, "", 0}, Row{"h:99999999999999999999", false, "", 0}}) {
    SCOPED_TRACE(row.text);
    Result<HostPort> hp = ParseHostPort(row.text, "listen");
    ASSERT_EQ(hp.has_value(), row.ok);
    if (row.ok) {
      EXPECT_EQ(hp->host, row.host);
      EXPECT_EQ(hp->port, row.port);
    } else {
      EXPECT_EQ(hp.error().field(), "listen");
    }
  }
}

TEST(RpcWire, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secret2"));
  EXPECT_FALSE(ConstantTimeEquals("secret", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
}

}  // namespace
}  // namespace oc::storage::rpc
