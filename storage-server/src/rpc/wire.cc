#include "rpc/wire.h"

#include <algorithm>

#include <fmt/core.h>

#include "oc/descriptor/codec.h"
#include "oc/descriptor/limits.h"

namespace oc::storage::rpc {
namespace {

// Smallest encodings of vector elements, for WireReader::Count: a count claiming more
// elements than the remaining bytes could hold is refused before any reserve().
constexpr size_t kMinStringBytes = 4;
constexpr size_t kMinPairBytes = 2 * kMinStringBytes;
constexpr size_t kMinBucketInfoBytes = 2 * kMinStringBytes + 8;
constexpr size_t kMinObjectMetaBytes = 8 + 4 + 4 + 4 + 4 + 8 + 4 + 1;
constexpr size_t kMinListEntryBytes = kMinStringBytes + kMinObjectMetaBytes;
constexpr size_t kMinCompletedPartBytes = 4 + kMinStringBytes;
constexpr size_t kMinPartInfoBytes = 4 + 8 + kMinStringBytes + 8;
constexpr size_t kMinUploadInfoBytes = 2 * kMinStringBytes + 8;
constexpr size_t kMinFigureBytes = kMinStringBytes + 8;

constexpr uint8_t kMaxCode = static_cast<uint8_t>(Code::kInternal);
constexpr uint8_t kMaxSubject = static_cast<uint8_t>(Subject::kEntity);

void EncodePairs(WireWriter& w, const std::vector<std::pair<std::string, std::string>>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const auto& [name, value] : v) {
    w.Str(name);
    w.Str(value);
  }
}

bool DecodePairs(WireReader& r, std::vector<std::pair<std::string, std::string>>* v) {
  uint32_t n = 0;
  if (!r.Count(&n, kMinPairBytes)) {
    return false;
  }
  v->clear();
  v->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::pair<std::string, std::string> p;
    if (!r.Str(&p.first) || !r.Str(&p.second)) {
      return false;
    }
    v->push_back(std::move(p));
  }
  return true;
}

void EncodeChunk(WireWriter& w, const std::optional<ChunkShape>& c) {
  w.U8(c.has_value() ? 1 : 0);
  if (c.has_value()) {
    w.U8(static_cast<uint8_t>(c->layout));
    w.U32(c->num_layers);
    w.U64(c->layer_bytes);
  }
}

bool DecodeChunk(WireReader& r, std::optional<ChunkShape>* c) {
  bool present = false;
  if (!r.Bool(&present)) {
    return false;
  }
  if (!present) {
    c->reset();
    return true;
  }
  uint8_t layout = 0;
  ChunkShape shape;
  if (!r.U8(&layout) || !r.U32(&shape.num_layers) || !r.U64(&shape.layer_bytes)) {
    return false;
  }
  if (layout != static_cast<uint8_t>(descriptor::StoredLayout::kL2TD) &&
      layout != static_cast<uint8_t>(descriptor::StoredLayout::k2LTD)) {
    return r.Fail("chunk.layout", "unknown stored layout");
  }
  shape.layout = static_cast<descriptor::StoredLayout>(layout);
  *c = shape;
  return true;
}

template <typename T, typename F>
bool DecodeVector(WireReader& r, std::vector<T>* v, size_t min_bytes, F decode_one) {
  uint32_t n = 0;
  if (!r.Count(&n, min_bytes)) {
    return false;
  }
  v->clear();
  v->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    T e{};
    if (!decode_one(r, &e)) {
      return false;
    }
    v->push_back(std::move(e));
  }
  return true;
}

bool DecodeStrings(WireReader& r, std::vector<std::string>* v) {
  return DecodeVector(r, v, kMinStringBytes,
                      [](WireReader& rr, std::string* s) { return rr.Str(s); });
}

void EncodeStrings(WireWriter& w, const std::vector<std::string>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const std::string& s : v) {
    w.Str(s);
  }
}

}  // namespace

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kHello:
      return "Hello";
    case Op::kError:
      return "Error";
    case Op::kCreateBucket:
      return "CreateBucket";
    case Op::kDeleteBucket:
      return "DeleteBucket";
    case Op::kHeadBucket:
      return "HeadBucket";
    case Op::kListBuckets:
      return "ListBuckets";
    case Op::kPutBegin:
      return "PutBegin";
    case Op::kData:
      return "Data";
    case Op::kCommit:
      return "Commit";
    case Op::kAbort:
      return "Abort";
    case Op::kGet:
      return "Get";
    case Op::kHead:
      return "Head";
    case Op::kDelete:
      return "Delete";
    case Op::kCopy:
      return "Copy";
    case Op::kList:
      return "List";
    case Op::kHeadMany:
      return "HeadMany";
    case Op::kCreateUpload:
      return "CreateMultipartUpload";
    case Op::kUploadPartBegin:
      return "UploadPart";
    case Op::kCompleteUpload:
      return "CompleteMultipartUpload";
    case Op::kAbortUpload:
      return "AbortMultipartUpload";
    case Op::kListParts:
      return "ListParts";
    case Op::kListUploads:
      return "ListMultipartUploads";
    case Op::kStats:
      return "Stats";
    case Op::kKvProbe:
      return "KvProbe";
    case Op::kKvGetLayers:
      return "KvGetLayers";
    case Op::kKvPlan:
      return "KvPlan";
    case Op::kKvData:
      return "KvData";
    case Op::kKvLayerReady:
      return "KvLayerReady";
    case Op::kKvPutChunks:
      return "KvPutChunks";
    case Op::kKvDataPlane:
      return "KvDataPlane";
  }
  return "unknown";
}

bool IsKnownOp(uint8_t value) { return OpName(static_cast<Op>(value)) != "unknown"; }

void EncodeHeader(const FrameHeader& h, std::span<std::byte, kHeaderBytes> out) {
  PutLittleEndian32(kMagic, out.data());
  out[4] = static_cast<std::byte>(h.version);
  out[5] = static_cast<std::byte>(h.op);
  out[6] = static_cast<std::byte>(h.flags & 0xff);
  out[7] = static_cast<std::byte>(h.flags >> 8);
  PutLittleEndian64(h.request_id, out.data() + 8);
  PutLittleEndian64(h.body_length, out.data() + 16);
}

Status DecodeHeader(std::span<const std::byte, kHeaderBytes> in, uint64_t max_body_bytes,
                    FrameHeader* h) {
  // The request id first, so whatever is wrong the error reply can still name the call.
  h->request_id = GetLittleEndian64(in.data() + 8);
  if (GetLittleEndian32(in.data()) != kMagic) {
    return Status::InvalidArgument("magic", "not an ObjectCache RPC frame");
  }
  h->version = static_cast<uint8_t>(in[4]);
  if (h->version != kVersion) {
    return Status(
        Code::kUnimplemented, Subject::kNone, "version",
        fmt::format("protocol version {} is not supported (this is {})", h->version, kVersion));
  }
  const uint8_t op = static_cast<uint8_t>(in[5]);
  if (!IsKnownOp(op)) {
    return Status(Code::kUnimplemented, Subject::kNone, "op", fmt::format("unknown op {}", op));
  }
  h->op = static_cast<Op>(op);
  h->flags =
      static_cast<uint16_t>(static_cast<uint16_t>(in[6]) | (static_cast<uint16_t>(in[7]) << 8));
  if ((h->flags & ~kKnownFlags) != 0) {
    return Status::InvalidArgument("flags", fmt::format("unknown flags {:#x}", h->flags));
  }
  h->body_length = GetLittleEndian64(in.data() + 16);
  const uint64_t limit = std::min(max_body_bytes, kMaxFrameBodyBytes);
  if (h->body_length > limit) {
    return Status::ResourceExhausted(
        "body_length",
        fmt::format("frame body of {} bytes exceeds the limit of {}", h->body_length, limit));
  }
  return Status::Ok();
}

// --- WireWriter ---

void WireWriter::U16(uint16_t v) {
  U8(static_cast<uint8_t>(v & 0xff));
  U8(static_cast<uint8_t>(v >> 8));
}

void WireWriter::U32(uint32_t v) {
  std::byte b[4];
  PutLittleEndian32(v, b);
  out_->insert(out_->end(), b, b + 4);
}

void WireWriter::U64(uint64_t v) {
  std::byte b[8];
  PutLittleEndian64(v, b);
  out_->insert(out_->end(), b, b + 8);
}

void WireWriter::Bytes(ByteSpan bytes) {
  U32(static_cast<uint32_t>(bytes.size()));
  Raw(bytes);
}

// --- WireReader ---

bool WireReader::Fail(std::string_view field, std::string_view what) {
  if (status_.ok()) {
    status_ = Status::InvalidArgument(std::string(field), std::string(what));
  }
  return false;
}

bool WireReader::Need(size_t n, std::string_view field) {
  if (!status_.ok()) {
    return false;
  }
  if (n > remaining()) {
    return Fail(field, fmt::format("truncated: needs {} bytes, {} left", n, remaining()));
  }
  return true;
}

bool WireReader::U8(uint8_t* v) {
  if (!Need(1, "u8")) {
    return false;
  }
  *v = static_cast<uint8_t>(data_[pos_]);
  pos_ += 1;
  return true;
}

bool WireReader::U16(uint16_t* v) {
  if (!Need(2, "u16")) {
    return false;
  }
  *v = static_cast<uint16_t>(static_cast<uint16_t>(data_[pos_]) |
                             (static_cast<uint16_t>(data_[pos_ + 1]) << 8));
  pos_ += 2;
  return true;
}

bool WireReader::U32(uint32_t* v) {
  if (!Need(4, "u32")) {
    return false;
  }
  *v = GetLittleEndian32(data_.data() + pos_);
  pos_ += 4;
  return true;
}

bool WireReader::U64(uint64_t* v) {
  if (!Need(8, "u64")) {
    return false;
  }
  *v = GetLittleEndian64(data_.data() + pos_);
  pos_ += 8;
  return true;
}

bool WireReader::I64(int64_t* v) {
  uint64_t u = 0;
  if (!U64(&u)) {
    return false;
  }
  *v = static_cast<int64_t>(u);
  return true;
}

bool WireReader::Bool(bool* v) {
  uint8_t b = 0;
  if (!U8(&b)) {
    return false;
  }
  if (b > 1) {
    return Fail("bool", "flag byte is not 0 or 1");
  }
  *v = b == 1;
  return true;
}

bool WireReader::Str(std::string* s) {
  uint32_t n = 0;
  ByteSpan bytes;
  if (!U32(&n) || !Take(n, &bytes)) {
    return false;
  }
  s->assign(AsText(bytes));
  return true;
}

bool WireReader::Count(uint32_t* count, size_t min_element_bytes) {
  if (!U32(count)) {
    return false;
  }
  if (static_cast<uint64_t>(*count) * min_element_bytes > remaining()) {
    return Fail("count", fmt::format("{} elements cannot fit in {} bytes", *count, remaining()));
  }
  return true;
}

bool WireReader::Take(size_t n, ByteSpan* out) {
  if (!Need(n, "bytes")) {
    return false;
  }
  *out = data_.subspan(pos_, n);
  pos_ += n;
  return true;
}

Status WireReader::Finish() {
  if (status_.ok() && remaining() != 0) {
    Fail("body", fmt::format("{} trailing bytes", remaining()));
  }
  return status_;
}

// --- Field codecs ---

void Encode(WireWriter& w, uint8_t v) { w.U8(v); }
void Encode(WireWriter& w, uint32_t v) { w.U32(v); }
void Encode(WireWriter& w, uint64_t v) { w.U64(v); }
void Encode(WireWriter& w, std::string_view v) { w.Str(v); }
void Encode(WireWriter& w, const std::string& v) { w.Str(v); }

bool Decode(WireReader& r, uint8_t* v) { return r.U8(v); }
bool Decode(WireReader& r, uint32_t* v) { return r.U32(v); }
bool Decode(WireReader& r, uint64_t* v) { return r.U64(v); }
bool Decode(WireReader& r, std::string* v) { return r.Str(v); }

void Encode(WireWriter& w, const Status& v) {
  w.U8(static_cast<uint8_t>(v.code()));
  w.U8(static_cast<uint8_t>(v.subject()));
  w.Str(v.field());
  w.Str(v.message());
}

bool Decode(WireReader& r, Status* v) {
  uint8_t code = 0;
  uint8_t subject = 0;
  std::string field;
  std::string message;
  if (!r.U8(&code) || !r.U8(&subject) || !r.Str(&field) || !r.Str(&message)) {
    return false;
  }
  if (code == 0 || code > kMaxCode) {
    return r.Fail("status.code", "not an error code");
  }
  if (subject > kMaxSubject) {
    return r.Fail("status.subject", "unknown subject");
  }
  *v = Status(static_cast<Code>(code), static_cast<Subject>(subject), std::move(field),
              std::move(message));
  return true;
}

void Encode(WireWriter& w, const ObjectKey& v) {
  w.Str(v.bucket);
  w.Str(v.name);
}

bool Decode(WireReader& r, ObjectKey* v) { return r.Str(&v->bucket) && r.Str(&v->name); }

void Encode(WireWriter& w, const ByteRange& v) {
  w.U64(v.offset);
  w.U64(v.length);
  w.U8(v.suffix ? 1 : 0);
}

bool Decode(WireReader& r, ByteRange* v) {
  return r.U64(&v->offset) && r.U64(&v->length) && r.Bool(&v->suffix);
}

void Encode(WireWriter& w, const BucketInfo& v) {
  w.Str(v.name);
  w.Str(v.owner);
  w.U64(static_cast<uint64_t>(v.created_unix_ms));
}

bool Decode(WireReader& r, BucketInfo* v) {
  return r.Str(&v->name) && r.Str(&v->owner) && r.I64(&v->created_unix_ms);
}

void Encode(WireWriter& w, const ObjectMeta& v) {
  w.U64(v.size);
  w.Str(v.etag);
  w.Str(v.content_type);
  EncodePairs(w, v.user_meta);
  EncodePairs(w, v.headers);
  w.U64(static_cast<uint64_t>(v.mtime_unix_ms));
  w.U32(v.parts_count);
  EncodeChunk(w, v.chunk);
}

bool Decode(WireReader& r, ObjectMeta* v) {
  return r.U64(&v->size) && r.Str(&v->etag) && r.Str(&v->content_type) &&
         DecodePairs(r, &v->user_meta) && DecodePairs(r, &v->headers) && r.I64(&v->mtime_unix_ms) &&
         r.U32(&v->parts_count) && DecodeChunk(r, &v->chunk);
}

void Encode(WireWriter& w, const PutOptions& v) {
  w.Str(v.content_type);
  EncodePairs(w, v.user_meta);
  EncodePairs(w, v.headers);
  w.U64(v.extent_bytes);
  EncodeChunk(w, v.chunk);
  w.U8(v.expected_size.has_value() ? 1 : 0);
  if (v.expected_size.has_value()) {
    w.U64(*v.expected_size);
  }
  w.U8(v.content_md5.has_value() ? 1 : 0);
  if (v.content_md5.has_value()) {
    w.Raw(*v.content_md5);
  }
}

bool Decode(WireReader& r, PutOptions* v) {
  if (!r.Str(&v->content_type) || !DecodePairs(r, &v->user_meta) || !DecodePairs(r, &v->headers) ||
      !r.U64(&v->extent_bytes) || !DecodeChunk(r, &v->chunk)) {
    return false;
  }
  bool has_size = false;
  if (!r.Bool(&has_size)) {
    return false;
  }
  v->expected_size.reset();
  if (has_size) {
    uint64_t size = 0;
    if (!r.U64(&size)) {
      return false;
    }
    v->expected_size = size;
  }
  bool has_md5 = false;
  if (!r.Bool(&has_md5)) {
    return false;
  }
  v->content_md5.reset();
  if (has_md5) {
    ByteSpan md5;
    if (!r.Take(16, &md5)) {
      return false;
    }
    std::array<std::byte, 16> digest;
    std::copy(md5.begin(), md5.end(), digest.begin());
    v->content_md5 = digest;
  }
  return true;
}

void Encode(WireWriter& w, const std::optional<PutOptions>& v) {
  w.U8(v.has_value() ? 1 : 0);
  if (v.has_value()) {
    Encode(w, *v);
  }
}

bool Decode(WireReader& r, std::optional<PutOptions>* v) {
  bool present = false;
  if (!r.Bool(&present)) {
    return false;
  }
  if (!present) {
    v->reset();
    return true;
  }
  PutOptions o;
  if (!Decode(r, &o)) {
    return false;
  }
  *v = std::move(o);
  return true;
}

void Encode(WireWriter& w, const ListOptions& v) {
  w.Str(v.prefix);
  w.Str(v.delimiter);
  w.Str(v.start_after);
  w.U32(v.max_keys);
}

bool Decode(WireReader& r, ListOptions* v) {
  return r.Str(&v->prefix) && r.Str(&v->delimiter) && r.Str(&v->start_after) && r.U32(&v->max_keys);
}

void Encode(WireWriter& w, const ListResult& v) {
  w.U32(static_cast<uint32_t>(v.objects.size()));
  for (const ListEntry& e : v.objects) {
    w.Str(e.name);
    Encode(w, e.meta);
  }
  EncodeStrings(w, v.common_prefixes);
  w.U8(v.truncated ? 1 : 0);
  w.Str(v.next_start_after);
}

bool Decode(WireReader& r, ListResult* v) {
  return DecodeVector(r, &v->objects, kMinListEntryBytes,
                      [](WireReader& rr, ListEntry* e) {
                        return rr.Str(&e->name) && Decode(rr, &e->meta);
                      }) &&
         DecodeStrings(r, &v->common_prefixes) && r.Bool(&v->truncated) &&
         r.Str(&v->next_start_after);
}

void Encode(WireWriter& w, const CompletedPart& v) {
  w.U32(v.part_number);
  w.Str(v.etag);
}

bool Decode(WireReader& r, CompletedPart* v) { return r.U32(&v->part_number) && r.Str(&v->etag); }

void Encode(WireWriter& w, const ListPartsResult& v) {
  w.U32(static_cast<uint32_t>(v.parts.size()));
  for (const PartInfo& p : v.parts) {
    w.U32(p.part_number);
    w.U64(p.size);
    w.Str(p.etag);
    w.U64(static_cast<uint64_t>(p.mtime_unix_ms));
  }
  w.U8(v.truncated ? 1 : 0);
  w.U32(v.next_part_number_marker);
}

bool Decode(WireReader& r, ListPartsResult* v) {
  return DecodeVector(r, &v->parts, kMinPartInfoBytes,
                      [](WireReader& rr, PartInfo* p) {
                        return rr.U32(&p->part_number) && rr.U64(&p->size) && rr.Str(&p->etag) &&
                               rr.I64(&p->mtime_unix_ms);
                      }) &&
         r.Bool(&v->truncated) && r.U32(&v->next_part_number_marker);
}

void Encode(WireWriter& w, const ListUploadsOptions& v) {
  w.Str(v.prefix);
  w.Str(v.delimiter);
  w.Str(v.key_marker);
  w.Str(v.upload_id_marker);
  w.U32(v.max_uploads);
}

bool Decode(WireReader& r, ListUploadsOptions* v) {
  return r.Str(&v->prefix) && r.Str(&v->delimiter) && r.Str(&v->key_marker) &&
         r.Str(&v->upload_id_marker) && r.U32(&v->max_uploads);
}

void Encode(WireWriter& w, const ListUploadsResult& v) {
  w.U32(static_cast<uint32_t>(v.uploads.size()));
  for (const UploadInfo& u : v.uploads) {
    w.Str(u.key);
    w.Str(u.upload_id);
    w.U64(static_cast<uint64_t>(u.initiated_unix_ms));
  }
  EncodeStrings(w, v.common_prefixes);
  w.U8(v.truncated ? 1 : 0);
  w.Str(v.next_key_marker);
  w.Str(v.next_upload_id_marker);
}

bool Decode(WireReader& r, ListUploadsResult* v) {
  return DecodeVector(r, &v->uploads, kMinUploadInfoBytes,
                      [](WireReader& rr, UploadInfo* u) {
                        return rr.Str(&u->key) && rr.Str(&u->upload_id) &&
                               rr.I64(&u->initiated_unix_ms);
                      }) &&
         DecodeStrings(r, &v->common_prefixes) && r.Bool(&v->truncated) &&
         r.Str(&v->next_key_marker) && r.Str(&v->next_upload_id_marker);
}

void Encode(WireWriter& w, const GetReply& v) {
  Encode(w, v.meta);
  w.U64(v.offset);
  w.U64(v.length);
}

bool Decode(WireReader& r, GetReply* v) {
  return Decode(r, &v->meta) && r.U64(&v->offset) && r.U64(&v->length);
}

void Encode(WireWriter& w, const StoreStats& v) {
  w.U32(static_cast<uint32_t>(v.figures.size()));
  for (const auto& [name, value] : v.figures) {
    w.Str(name);
    w.U64(value);
  }
}

bool Decode(WireReader& r, StoreStats* v) {
  return DecodeVector(r, &v->figures, kMinFigureBytes,
                      [](WireReader& rr, std::pair<std::string, uint64_t>* f) {
                        return rr.Str(&f->first) && rr.U64(&f->second);
                      });
}

bool Decode(WireReader& r, std::vector<BucketInfo>* v) {
  return DecodeVector(r, v, kMinBucketInfoBytes,
                      [](WireReader& rr, BucketInfo* b) { return Decode(rr, b); });
}

bool Decode(WireReader& r, std::vector<CompletedPart>* v) {
  return DecodeVector(r, v, kMinCompletedPartBytes,
                      [](WireReader& rr, CompletedPart* p) { return Decode(rr, p); });
}

bool Decode(WireReader& r, std::vector<std::string>* v) { return DecodeStrings(r, v); }

// --- Descriptor calls ---

descriptor::Limits WireDescriptorLimits() {
  descriptor::Limits limits;
  limits.max_body_bytes = kMaxKvRequestBodyBytes;
  return limits;
}

Result<descriptor::Descriptor> DecodeDescriptorText(std::string_view text) {
  const descriptor::Limits limits = WireDescriptorLimits();
  OC_ASSIGN_OR_RETURN(descriptor::Descriptor d, descriptor::DecodeBody(text, limits));
  OC_RETURN_IF_ERROR(descriptor::Validate(d, limits));
  return d;
}

void Encode(WireWriter& w, const KvPlan& v) {
  w.U64(v.num_chunks);
  w.U64(v.matched);
  w.U8(static_cast<uint8_t>(v.mode));
  w.U64(v.payload_bytes);
  w.Str(v.request_id);
}

bool Decode(WireReader& r, KvPlan* v) {
  uint8_t mode = 0;
  if (!(r.U64(&v->num_chunks) && r.U64(&v->matched) && r.U8(&mode) && r.U64(&v->payload_bytes) &&
        r.Str(&v->request_id))) {
    return false;
  }
  if (v->matched > v->num_chunks) {
    return r.Fail("plan.matched", "more chunks matched than requested");
  }
  if (mode != static_cast<uint8_t>(descriptor::ServeMode::kChunkwise) &&
      mode != static_cast<uint8_t>(descriptor::ServeMode::kLayerwise)) {
    return r.Fail("plan.mode", "unknown serve mode");
  }
  v->mode = static_cast<descriptor::ServeMode>(mode);
  return true;
}

// Largest assigned rate on the wire, bit/s (a million Gbps). Below 2^53, so the rate
// survives the trip through a double exactly and a decoded report re-encodes to its bytes.
constexpr uint64_t kMaxWireRateBps = 1'000'000'000'000'000;

void Encode(WireWriter& w, const KvGetReport& v) {
  Encode(w, v.plan);
  w.U64(v.timings.plan_us);
  w.U64(v.timings.read_us);
  w.U64(v.timings.transfer_us);
  w.U64(v.timings.total_us);
  w.U32(v.layers_notified);
  w.U64(v.writes);
  // The rate in bit/s, rounded: a plain integer on the wire, no float encoding.
  const double gbps = std::min(v.assigned_rate_gbps, kMaxWireRateBps / 1e9);
  w.U64(gbps > 0 ? static_cast<uint64_t>(gbps * 1e9 + 0.5) : 0);
}

bool Decode(WireReader& r, KvGetReport* v) {
  uint64_t rate_bps = 0;
  if (!(Decode(r, &v->plan) && r.U64(&v->timings.plan_us) && r.U64(&v->timings.read_us) &&
        r.U64(&v->timings.transfer_us) && r.U64(&v->timings.total_us) &&
        r.U32(&v->layers_notified) && r.U64(&v->writes) && r.U64(&rate_bps))) {
    return false;
  }
  if (rate_bps > kMaxWireRateBps) {
    return r.Fail("report.assigned_rate", "rate above 10^15 bit/s");
  }
  v->assigned_rate_gbps = static_cast<double>(rate_bps) / 1e9;
  return true;
}

void Encode(WireWriter& w, const DataPlaneInfo& v) {
  w.Str(v.address);
  w.U8(v.shared_memory ? 1 : 0);
}

bool Decode(WireReader& r, DataPlaneInfo* v) {
  return r.Str(&v->address) && r.Bool(&v->shared_memory);
}

void Encode(WireWriter& w, const KvProbeResult& v) {
  w.U64(v.matched);
  w.U32(static_cast<uint32_t>(v.sizes.size()));
  for (const std::optional<uint64_t>& size : v.sizes) {
    w.U8(size.has_value() ? 1 : 0);
    if (size.has_value()) {
      w.U64(*size);
    }
  }
}

bool Decode(WireReader& r, KvProbeResult* v) {
  if (!r.U64(&v->matched)) {
    return false;
  }
  if (!DecodeVector(r, &v->sizes, 1, [](WireReader& rr, std::optional<uint64_t>* size) {
        bool present = false;
        uint64_t value = 0;
        if (!rr.Bool(&present) || (present && !rr.U64(&value))) {
          return false;
        }
        *size = present ? std::optional<uint64_t>(value) : std::nullopt;
        return true;
      })) {
    return false;
  }
  if (v->matched > v->sizes.size()) {
    return r.Fail("probe.matched", "more chunks matched than sizes given");
  }
  return true;
}

void Encode(WireWriter& w, const KvPutReport& v) {
  w.U64(v.chunks);
  w.U64(v.bytes);
  w.U64(v.receive_us);
  w.U64(v.commit_wait_us);
  w.U64(v.total_us);
  w.Str(v.request_id);
}

bool Decode(WireReader& r, KvPutReport* v) {
  return r.U64(&v->chunks) && r.U64(&v->bytes) && r.U64(&v->receive_us) &&
         r.U64(&v->commit_wait_us) && r.U64(&v->total_us) && r.Str(&v->request_id);
}

void Encode(WireWriter& w, const std::optional<ObjectMeta>& v) {
  w.U8(v.has_value() ? 1 : 0);
  if (v.has_value()) {
    Encode(w, *v);
  }
}

bool Decode(WireReader& r, std::vector<std::optional<ObjectMeta>>* v) {
  return DecodeVector(r, v, 1, [](WireReader& rr, std::optional<ObjectMeta>* m) {
    bool present = false;
    if (!rr.Bool(&present)) {
      return false;
    }
    if (!present) {
      m->reset();
      return true;
    }
    ObjectMeta meta;
    if (!Decode(rr, &meta)) {
      return false;
    }
    *m = std::move(meta);
    return true;
  });
}

Status ValidateBody(Op op, uint16_t flags, ByteSpan body) {
  const bool reply = (flags & kFlagReply) != 0;
  std::string s1;
  std::string s2;
  ObjectKey key;
  ObjectKey key2;
  uint32_t u1 = 0;
  uint32_t u2 = 0;
  switch (op) {
    case Op::kHello:
      return reply ? DecodeBody(body) : DecodeBody(body, &s1);
    case Op::kError: {
      Status st;
      return DecodeBody(body, &st);
    }
    case Op::kCreateBucket:
      return reply ? DecodeBody(body) : DecodeBody(body, &s1, &s2);
    case Op::kDeleteBucket:
      return reply ? DecodeBody(body) : DecodeBody(body, &s1);
    case Op::kHeadBucket: {
      BucketInfo info;
      return reply ? DecodeBody(body, &info) : DecodeBody(body, &s1);
    }
    case Op::kListBuckets: {
      std::vector<BucketInfo> buckets;
      return reply ? DecodeBody(body, &buckets) : DecodeBody(body);
    }
    case Op::kPutBegin: {
      PutOptions options;
      return reply ? DecodeBody(body) : DecodeBody(body, &key, &options);
    }
    case Op::kData:
      return Status::Ok();
    case Op::kCommit: {
      ObjectMeta meta;
      return reply ? DecodeBody(body, &meta) : DecodeBody(body);
    }
    case Op::kAbort:
      return DecodeBody(body);
    case Op::kGet: {
      GetReply get;
      ByteRange range;
      return reply ? DecodeBody(body, &get) : DecodeBody(body, &key, &range);
    }
    case Op::kHead: {
      ObjectMeta meta;
      return reply ? DecodeBody(body, &meta) : DecodeBody(body, &key);
    }
    case Op::kDelete:
      return reply ? DecodeBody(body) : DecodeBody(body, &key);
    case Op::kCopy: {
      ObjectMeta meta;
      std::optional<PutOptions> replace;
      return reply ? DecodeBody(body, &meta) : DecodeBody(body, &key, &key2, &replace);
    }
    case Op::kList: {
      ListResult list;
      ListOptions options;
      return reply ? DecodeBody(body, &list) : DecodeBody(body, &s1, &options);
    }
    case Op::kHeadMany: {
      std::vector<std::string> names;
      std::vector<std::optional<ObjectMeta>> metas;
      return reply ? DecodeBody(body, &metas) : DecodeBody(body, &s1, &names);
    }
    case Op::kCreateUpload: {
      PutOptions options;
      return reply ? DecodeBody(body, &s1) : DecodeBody(body, &key, &options);
    }
    case Op::kUploadPartBegin: {
      PutOptions options;
      return reply ? DecodeBody(body) : DecodeBody(body, &key, &s1, &u1, &options);
    }
    case Op::kCompleteUpload: {
      ObjectMeta meta;
      std::vector<CompletedPart> parts;
      return reply ? DecodeBody(body, &meta) : DecodeBody(body, &key, &s1, &parts);
    }
    case Op::kAbortUpload:
      return reply ? DecodeBody(body) : DecodeBody(body, &key, &s1);
    case Op::kListParts: {
      ListPartsResult parts;
      return reply ? DecodeBody(body, &parts) : DecodeBody(body, &key, &s1, &u1, &u2);
    }
    case Op::kListUploads: {
      ListUploadsResult uploads;
      ListUploadsOptions options;
      return reply ? DecodeBody(body, &uploads) : DecodeBody(body, &s1, &options);
    }
    case Op::kStats: {
      StoreStats stats;
      return reply ? DecodeBody(body, &stats) : DecodeBody(body);
    }
    case Op::kKvProbe:
    case Op::kKvGetLayers:
    case Op::kKvPutChunks: {
      if (reply) {
        KvProbeResult probe;
        KvGetReport get;
        KvPutReport put;
        return op == Op::kKvProbe       ? DecodeBody(body, &probe)
               : op == Op::kKvGetLayers ? DecodeBody(body, &get)
                                        : DecodeBody(body, &put);
      }
      std::string principal;
      OC_RETURN_IF_ERROR(DecodeBody(body, &s1, &s2, &principal));
      return DecodeDescriptorText(s2).status();
    }
    case Op::kKvDataPlane: {
      DataPlaneInfo info;
      return reply ? DecodeBody(body, &info) : DecodeBody(body, &s1);
    }
    case Op::kKvPlan: {
      KvPlan plan;
      return DecodeBody(body, &plan);
    }
    case Op::kKvData: {
      WireReader r(body);
      uint64_t offset = 0;
      ByteSpan rest;
      (void)(r.U64(&offset) && r.Take(r.remaining(), &rest));
      return r.Finish();
    }
    case Op::kKvLayerReady:
      return DecodeBody(body, &u1);
  }
  return Status(Code::kUnimplemented, Subject::kNone, "op", "unknown op");
}

Result<HostPort> ParseHostPort(std::string_view text, std::string_view field) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::InvalidArgument(std::string(field), fmt::format("'{}' is not host:port", text));
  }
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return Status::InvalidArgument(std::string(field),
                                     fmt::format("'{}' is not [address]:port", text));
    }
    host = host.substr(1, host.size() - 2);
  }
  uint64_t port = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      return Status::InvalidArgument(std::string(field), fmt::format("'{}' has a bad port", text));
    }
    port = port * 10 + static_cast<uint64_t>(c - '0');
  }
  if (port > 65535) {
    return Status::InvalidArgument(std::string(field), fmt::format("'{}' has a bad port", text));
  }
  return HostPort{std::string(host), static_cast<uint16_t>(port)};
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of the longer input is visited and differences are OR-ed together, so the
  // time depends on the lengths only (which a shared secret's length does not hide anyway).
  const size_t n = std::max(a.size(), b.size());
  uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff |= static_cast<uint8_t>(x ^ y);
  }
  return diff == 0;
}

}  // namespace oc::storage::rpc
