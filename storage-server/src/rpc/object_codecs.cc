// The value codecs of the object calls (wire.h): Status, keys, ranges, bucket and object
// metadata, put and list options and results, multipart records, Get's reply, store figures.
#include <algorithm>
#include <array>

#include <fmt/core.h>

#include "rpc/codec_util.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

using internal::DecodeVector;

// Smallest encodings of vector elements, for WireReader::Count: a count claiming more
// elements than the remaining bytes could hold is refused before any reserve().
constexpr size_t kMinStringBytes = 4;
constexpr size_t kMinPairBytes = 2 * kMinStringBytes;
constexpr size_t kMinBucketInfoBytes = 2 * kMinStringBytes + 8;
constexpr size_t kMinObjectMetaBytes = 8 + 4 + 4 + 4 + 4 + 8 + 4 + 1 + 4;
constexpr size_t kMinListEntryBytes = kMinStringBytes + kMinObjectMetaBytes;
constexpr size_t kMinChecksumBytes = 2 * kMinStringBytes;
constexpr size_t kMinCompletedPartBytes = 4 + kMinStringBytes + kMinChecksumBytes + 1;
constexpr size_t kMinPartInfoBytes = 4 + 8 + kMinStringBytes + 8 + kMinChecksumBytes;
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

void EncodeChecksum(WireWriter& w, const ObjectChecksum& c) {
  w.Str(c.header);
  w.Str(c.value);
}

bool DecodeChecksum(WireReader& r, ObjectChecksum* c) {
  return r.Str(&c->header) && r.Str(&c->value);
}

// The write conditions' fields (WriteConditions, and PutOptions, which holds the same two):
// if_none_match u8, present u8, then the If-Match ETag when present.
void EncodeConditions(WireWriter& w, bool if_none_match,
                      const std::optional<std::string>& if_match) {
  w.U8(if_none_match ? 1 : 0);
  w.U8(if_match.has_value() ? 1 : 0);
  if (if_match.has_value()) {
    w.Str(*if_match);
  }
}

bool DecodeConditions(WireReader& r, bool* if_none_match, std::optional<std::string>* if_match) {
  bool has_if_match = false;
  if (!r.Bool(if_none_match) || !r.Bool(&has_if_match)) {
    return false;
  }
  if_match->reset();
  if (has_if_match) {
    std::string etag;
    if (!r.Str(&etag)) {
      return false;
    }
    *if_match = std::move(etag);
  }
  return true;
}

// A ChecksumType as its u8; any other value is refused.
bool DecodeChecksumType(WireReader& r, ChecksumType* t) {
  uint8_t v = 0;
  if (!r.U8(&v)) {
    return false;
  }
  if (v > static_cast<uint8_t>(ChecksumType::kFullObject)) {
    return r.Fail("checksum_type", "unknown checksum type");
  }
  *t = static_cast<ChecksumType>(v);
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
  w.U32(v.part_number);
}

bool Decode(WireReader& r, ByteRange* v) {
  return r.U64(&v->offset) && r.U64(&v->length) && r.Bool(&v->suffix) && r.U32(&v->part_number);
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
  EncodePairs(w, v.tags);
}

bool Decode(WireReader& r, ObjectMeta* v) {
  return r.U64(&v->size) && r.Str(&v->etag) && r.Str(&v->content_type) &&
         DecodePairs(r, &v->user_meta) && DecodePairs(r, &v->headers) && r.I64(&v->mtime_unix_ms) &&
         r.U32(&v->parts_count) && DecodeChunk(r, &v->chunk) && DecodePairs(r, &v->tags);
}

void Encode(WireWriter& w, const std::pair<std::string, std::string>& v) {
  w.Str(v.first);
  w.Str(v.second);
}

bool Decode(WireReader& r, Tags* v) { return DecodePairs(r, v); }

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
  EncodeConditions(w, v.if_none_match, v.if_match);
  w.U8(v.tags.has_value() ? 1 : 0);
  if (v.tags.has_value()) {
    EncodePairs(w, *v.tags);
  }
  w.Str(v.upload_checksum_header);
  w.U8(static_cast<uint8_t>(v.upload_checksum_type));
  w.Str(v.part_checksum_header);
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
  if (!DecodeConditions(r, &v->if_none_match, &v->if_match)) {
    return false;
  }
  bool has_tags = false;
  if (!r.Bool(&has_tags)) {
    return false;
  }
  v->tags.reset();
  if (has_tags) {
    Tags tags;
    if (!DecodePairs(r, &tags)) {
      return false;
    }
    v->tags = std::move(tags);
  }
  return r.Str(&v->upload_checksum_header) && DecodeChecksumType(r, &v->upload_checksum_type) &&
         r.Str(&v->part_checksum_header);
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
  EncodeChecksum(w, v.checksum);
  w.U8(v.size.has_value() ? 1 : 0);
  if (v.size.has_value()) {
    w.U64(*v.size);
  }
}

bool Decode(WireReader& r, CompletedPart* v) {
  bool has_size = false;
  if (!r.U32(&v->part_number) || !r.Str(&v->etag) || !DecodeChecksum(r, &v->checksum) ||
      !r.Bool(&has_size)) {
    return false;
  }
  v->size.reset();
  if (has_size) {
    uint64_t size = 0;
    if (!r.U64(&size)) {
      return false;
    }
    v->size = size;
  }
  return true;
}

void Encode(WireWriter& w, const WriteConditions& v) {
  EncodeConditions(w, v.if_none_match, v.if_match);
}

bool Decode(WireReader& r, WriteConditions* v) {
  return DecodeConditions(r, &v->if_none_match, &v->if_match);
}

void Encode(WireWriter& w, const ObjectVersionMatch& v) {
  w.Str(v.etag);
  w.U64(static_cast<uint64_t>(v.mtime_unix_ms));
}

bool Decode(WireReader& r, ObjectVersionMatch* v) {
  return r.Str(&v->etag) && r.I64(&v->mtime_unix_ms);
}

void Encode(WireWriter& w, const CompleteOptions& v) {
  Encode(w, v.conditions);
  EncodeChecksum(w, v.checksum);
}

bool Decode(WireReader& r, CompleteOptions* v) {
  return Decode(r, &v->conditions) && DecodeChecksum(r, &v->checksum);
}

void Encode(WireWriter& w, const ListPartsResult& v) {
  w.U32(static_cast<uint32_t>(v.parts.size()));
  for (const PartInfo& p : v.parts) {
    w.U32(p.part_number);
    w.U64(p.size);
    w.Str(p.etag);
    w.U64(static_cast<uint64_t>(p.mtime_unix_ms));
    EncodeChecksum(w, p.checksum);
  }
  w.U8(v.truncated ? 1 : 0);
  w.U32(v.next_part_number_marker);
  w.Str(v.checksum_header);
  w.U8(static_cast<uint8_t>(v.checksum_type));
}

bool Decode(WireReader& r, ListPartsResult* v) {
  return DecodeVector(r, &v->parts, kMinPartInfoBytes,
                      [](WireReader& rr, PartInfo* p) {
                        return rr.U32(&p->part_number) && rr.U64(&p->size) && rr.Str(&p->etag) &&
                               rr.I64(&p->mtime_unix_ms) && DecodeChecksum(rr, &p->checksum);
                      }) &&
         r.Bool(&v->truncated) && r.U32(&v->next_part_number_marker) &&
         r.Str(&v->checksum_header) && DecodeChecksumType(r, &v->checksum_type);
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

void Encode(WireWriter& w, const StoreIdentity& v) {
  w.Str(v.backend);
  w.Str(v.fsid);
  w.Str(v.pool);
  w.Str(v.rados_namespace);
}

bool Decode(WireReader& r, StoreIdentity* v) {
  return r.Str(&v->backend) && r.Str(&v->fsid) && r.Str(&v->pool) && r.Str(&v->rados_namespace);
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

}  // namespace oc::storage::rpc
