#include "records/meta_codec.h"

#include <cstring>

#include "oc/common/bytes.h"

namespace oc::storage {
namespace {

constexpr uint8_t kFormatVersion = 1;
// Segments carry a writer id (RADOS version ids).
constexpr uint8_t kFormatWithWriter = 2;
// Formats 1 and 2 followed by the extension block (meta_codec.h).
constexpr uint8_t kFormatExtended = 3;
constexpr uint8_t kFormatWithWriterExtended = 4;
// Extension field ids of an object record. Never renumber.
constexpr uint8_t kFieldCompletedUploadId = 1;
constexpr uint8_t kFieldTags = 2;
// Extension field ids of an upload record. Never renumber.
constexpr uint8_t kUploadFieldTags = 1;
constexpr uint8_t kUploadFieldChecksumHeader = 2;
constexpr uint8_t kUploadFieldChecksumType = 3;
// Field 3's one value (written only for kFullObject; absent is kComposite).
constexpr std::string_view kFullObjectText = "FULL_OBJECT";
// Extension field ids of a part record. Never renumber.
constexpr uint8_t kPartFieldChecksum = 1;
// No record holds more entries than this; a larger count is corruption, refused before
// anything is reserved.
constexpr uint32_t kMaxRecordEntries = 1u << 20;

class Encoder {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) {
    std::byte b[4];
    PutLittleEndian32(v, b);
    out_.append(reinterpret_cast<const char*>(b), 4);
  }
  void U64(uint64_t v) {
    std::byte b[8];
    PutLittleEndian64(v, b);
    out_.append(reinterpret_cast<const char*>(b), 8);
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
    U32(static_cast<uint32_t>(pairs.size()));
    for (const auto& [k, v] : pairs) {
      Str(k);
      Str(v);
    }
  }
  void Chunk(const std::optional<ChunkShape>& chunk) {
    U8(chunk.has_value() ? 1 : 0);
    if (chunk.has_value()) {
      U8(static_cast<uint8_t>(chunk->layout));
      U32(chunk->num_layers);
      U64(chunk->layer_bytes);
    }
  }
  void Seg(const Segment& s, bool with_writer) {
    if (with_writer) {
      U64(s.writer);
    }
    U64(s.data_id);
    U64(s.size);
    U64(s.extent_bytes);
    U8(s.flags);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) {
    if (in_.size() < 1) {
      return false;
    }
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    if (in_.size() < 4) {
      return false;
    }
    *v = GetLittleEndian32(reinterpret_cast<const std::byte*>(in_.data()));
    in_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t* v) {
    if (in_.size() < 8) {
      return false;
    }
    *v = GetLittleEndian64(reinterpret_cast<const std::byte*>(in_.data()));
    in_.remove_prefix(8);
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t u = 0;
    if (!U64(&u)) {
      return false;
    }
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool Str(std::string* s) {
    uint32_t n = 0;
    if (!U32(&n) || in_.size() < n) {
      return false;
    }
    s->assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool Count(uint32_t* n) { return U32(n) && *n <= kMaxRecordEntries && *n <= in_.size(); }
  bool Pairs(std::vector<std::pair<std::string, std::string>>* pairs) {
    uint32_t n = 0;
    if (!Count(&n)) {
      return false;
    }
    pairs->resize(n);
    for (auto& [k, v] : *pairs) {
      if (!Str(&k) || !Str(&v)) {
        return false;
      }
    }
    return true;
  }
  bool Chunk(std::optional<ChunkShape>* chunk) {
    uint8_t present = 0;
    if (!U8(&present) || present > 1) {
      return false;
    }
    if (present == 0) {
      chunk->reset();
      return true;
    }
    ChunkShape c;
    uint8_t layout = 0;
    if (!U8(&layout) || !U32(&c.num_layers) || !U64(&c.layer_bytes)) {
      return false;
    }
    if (layout != static_cast<uint8_t>(descriptor::StoredLayout::kL2TD) &&
        layout != static_cast<uint8_t>(descriptor::StoredLayout::k2LTD)) {
      return false;
    }
    c.layout = static_cast<descriptor::StoredLayout>(layout);
    *chunk = c;
    return true;
  }
  bool Seg(Segment* s, bool with_writer) {
    return (!with_writer || U64(&s->writer)) && U64(&s->data_id) && U64(&s->size) &&
           U64(&s->extent_bytes) && U8(&s->flags) && s->extent_bytes > 0;
  }
  bool Version() {
    uint8_t v = 0;
    return U8(&v) && v == kFormatVersion;
  }
  // Formats 1 to 4: *with_writer and *extended tell which.
  bool ObjectVersion(bool* with_writer, bool* extended) {
    uint8_t v = 0;
    if (!U8(&v) || v < kFormatVersion || v > kFormatWithWriterExtended) {
      return false;
    }
    *with_writer = v == kFormatWithWriter || v == kFormatWithWriterExtended;
    *extended = v >= kFormatExtended;
    return true;
  }
  bool Done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// Tags as an extension field's value: the pairs' encoding.
std::string EncodeTags(const Tags& tags) {
  Encoder e;
  e.Pairs(tags);
  return e.Take();
}

bool DecodeTags(std::string_view value, Tags* tags) {
  Decoder d(value);
  return d.Pairs(tags) && d.Done();
}

Status Corrupt(std::string_view what) {
  return Status::Corruption(std::string("malformed ") + std::string(what) + " record");
}

bool AnyWriter(const std::vector<Segment>& segments) {
  for (const Segment& s : segments) {
    if (s.writer != 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string EncodeObjectRecord(const ObjectRecord& r) {
  Encoder e;
  const bool with_writer = AnyWriter(r.segments);
  uint32_t fields = 0;
  fields += r.completed_upload_id.empty() ? 0 : 1;
  fields += r.meta.tags.empty() ? 0 : 1;
  if (fields == 0) {
    e.U8(with_writer ? kFormatWithWriter : kFormatVersion);
  } else {
    e.U8(with_writer ? kFormatWithWriterExtended : kFormatExtended);
  }
  e.U64(r.meta.size);
  e.Str(r.meta.etag);
  e.Str(r.meta.content_type);
  e.Pairs(r.meta.user_meta);
  e.Pairs(r.meta.headers);
  e.I64(r.meta.mtime_unix_ms);
  e.U32(r.meta.parts_count);
  e.Chunk(r.meta.chunk);
  e.U32(static_cast<uint32_t>(r.segments.size()));
  for (const Segment& s : r.segments) {
    e.Seg(s, with_writer);
  }
  if (fields > 0) {
    e.U32(fields);
    if (!r.completed_upload_id.empty()) {
      e.U8(kFieldCompletedUploadId);
      e.Str(r.completed_upload_id);
    }
    if (!r.meta.tags.empty()) {
      e.U8(kFieldTags);
      e.Str(EncodeTags(r.meta.tags));
    }
  }
  return e.Take();
}

Result<ObjectRecord> DecodeObjectRecord(std::string_view bytes) {
  Decoder d(bytes);
  ObjectRecord r;
  uint32_t n = 0;
  bool with_writer = false;
  bool extended = false;
  if (!d.ObjectVersion(&with_writer, &extended) || !d.U64(&r.meta.size) || !d.Str(&r.meta.etag) ||
      !d.Str(&r.meta.content_type) || !d.Pairs(&r.meta.user_meta) || !d.Pairs(&r.meta.headers) ||
      !d.I64(&r.meta.mtime_unix_ms) || !d.U32(&r.meta.parts_count) || !d.Chunk(&r.meta.chunk) ||
      !d.Count(&n)) {
    return Corrupt("object");
  }
  r.segments.resize(n);
  uint64_t total = 0;
  for (Segment& s : r.segments) {
    // Sizes that wrap around 2^64 must not add up to the object's size.
    if (!d.Seg(&s, with_writer) || __builtin_add_overflow(total, s.size, &total)) {
      return Corrupt("object");
    }
  }
  uint32_t fields = 0;
  if (extended && !d.Count(&fields)) {
    return Corrupt("object");
  }
  for (uint32_t i = 0; i < fields; ++i) {
    uint8_t id = 0;
    std::string value;
    if (!d.U8(&id) || !d.Str(&value)) {
      return Corrupt("object");
    }
    if (id == kFieldCompletedUploadId) {
      r.completed_upload_id = std::move(value);
    } else if (id == kFieldTags) {
      if (!DecodeTags(value, &r.meta.tags)) {
        return Corrupt("object");
      }
    }  // other ids: fields of a later format, skipped
  }
  if (!d.Done() || total != r.meta.size) {
    return Corrupt("object");
  }
  return r;
}

std::string EncodeBucketRecord(const BucketRecord& r) {
  Encoder e;
  e.U8(kFormatVersion);
  e.Str(r.owner);
  e.I64(r.created_unix_ms);
  return e.Take();
}

Result<BucketRecord> DecodeBucketRecord(std::string_view bytes) {
  Decoder d(bytes);
  BucketRecord r;
  if (!d.Version() || !d.Str(&r.owner) || !d.I64(&r.created_unix_ms) || !d.Done()) {
    return Corrupt("bucket");
  }
  return r;
}

std::string EncodeUploadRecord(const UploadRecord& r) {
  Encoder e;
  const bool full_object = r.checksum_type == ChecksumType::kFullObject;
  const uint32_t fields =
      (r.tags.empty() ? 0 : 1) + (r.checksum_header.empty() ? 0 : 1) + (full_object ? 1 : 0);
  e.U8(fields == 0 ? kFormatVersion : kFormatExtended);
  e.Str(r.content_type);
  e.Pairs(r.user_meta);
  e.Pairs(r.headers);
  e.U64(r.extent_bytes);
  e.Chunk(r.chunk);
  e.I64(r.initiated_unix_ms);
  if (fields > 0) {
    e.U32(fields);
    if (!r.tags.empty()) {
      e.U8(kUploadFieldTags);
      e.Str(EncodeTags(r.tags));
    }
    if (!r.checksum_header.empty()) {
      e.U8(kUploadFieldChecksumHeader);
      e.Str(r.checksum_header);
    }
    if (full_object) {
      e.U8(kUploadFieldChecksumType);
      e.Str(kFullObjectText);
    }
  }
  return e.Take();
}

Result<UploadRecord> DecodeUploadRecord(std::string_view bytes) {
  Decoder d(bytes);
  UploadRecord r;
  uint8_t version = 0;
  if (!d.U8(&version) || (version != kFormatVersion && version != kFormatExtended) ||
      !d.Str(&r.content_type) || !d.Pairs(&r.user_meta) || !d.Pairs(&r.headers) ||
      !d.U64(&r.extent_bytes) || !d.Chunk(&r.chunk) || !d.I64(&r.initiated_unix_ms)) {
    return Corrupt("upload");
  }
  uint32_t fields = 0;
  if (version == kFormatExtended && !d.Count(&fields)) {
    return Corrupt("upload");
  }
  for (uint32_t i = 0; i < fields; ++i) {
    uint8_t id = 0;
    std::string value;
    if (!d.U8(&id) || !d.Str(&value)) {
      return Corrupt("upload");
    }
    if (id == kUploadFieldTags && !DecodeTags(value, &r.tags)) {
      return Corrupt("upload");
    }
    if (id == kUploadFieldChecksumHeader) {
      r.checksum_header = std::move(value);
    }
    if (id == kUploadFieldChecksumType) {
      if (value != kFullObjectText) {
        return Corrupt("upload");
      }
      r.checksum_type = ChecksumType::kFullObject;
    }  // other ids: fields of a later format, skipped
  }
  if (!d.Done()) {
    return Corrupt("upload");
  }
  return r;
}

std::string EncodePartRecord(const PartRecord& r) {
  Encoder e;
  const bool with_writer = r.segment.writer != 0;
  const bool extended = !r.checksum.empty();
  if (extended) {
    e.U8(with_writer ? kFormatWithWriterExtended : kFormatExtended);
  } else {
    e.U8(with_writer ? kFormatWithWriter : kFormatVersion);
  }
  e.Seg(r.segment, with_writer);
  std::string out = e.Take();
  out.append(reinterpret_cast<const char*>(r.md5.data()), r.md5.size());
  Encoder tail;
  tail.I64(r.mtime_unix_ms);
  if (extended) {
    Encoder checksum;
    checksum.Str(r.checksum.header);
    checksum.Str(r.checksum.value);
    tail.U32(1);
    tail.U8(kPartFieldChecksum);
    tail.Str(checksum.Take());
  }
  out += tail.Take();
  return out;
}

Result<PartRecord> DecodePartRecord(std::string_view bytes) {
  Decoder d(bytes);
  PartRecord r;
  bool with_writer = false;
  bool extended = false;
  if (!d.ObjectVersion(&with_writer, &extended) || !d.Seg(&r.segment, with_writer)) {
    return Corrupt("part");
  }
  const size_t kHead = 1 + (with_writer ? 8 : 0) + 8 + 8 + 8 + 1;
  if (bytes.size() < kHead + 16 + 8 || (!extended && bytes.size() != kHead + 16 + 8)) {
    return Corrupt("part");
  }
  std::memcpy(r.md5.data(), bytes.data() + kHead, 16);
  Decoder tail(bytes.substr(kHead + 16));
  if (!tail.I64(&r.mtime_unix_ms)) {
    return Corrupt("part");
  }
  uint32_t fields = 0;
  if (extended && !tail.Count(&fields)) {
    return Corrupt("part");
  }
  for (uint32_t i = 0; i < fields; ++i) {
    uint8_t id = 0;
    std::string value;
    if (!tail.U8(&id) || !tail.Str(&value)) {
      return Corrupt("part");
    }
    if (id == kPartFieldChecksum) {
      Decoder checksum(value);
      if (!checksum.Str(&r.checksum.header) || !checksum.Str(&r.checksum.value) ||
          !checksum.Done() || r.checksum.header.empty()) {
        return Corrupt("part");
      }
    }  // other ids: fields of a later format, skipped
  }
  if (!tail.Done()) {
    return Corrupt("part");
  }
  return r;
}

}  // namespace oc::storage
