// Fuzzes the records a store reads back (storage-server/src/records/meta_codec.h: object,
// bucket, upload and part records, in RocksDB column families and RADOS omap values) and the
// RADOS registry record and omap keys/oids (src/rados/rados_keys.h). Byte 0 chooses the
// decoder, the rest is the stored value:
//   0 object  1 bucket  2 upload  3 part  4 RADOS bucket registry record
//   5 RADOS names: an upload or part omap key, a GC omap key, a data or index shard oid
// Properties beyond no crash: a record decodes to kCorruption, or to a value that re-encodes
// to the bytes read, except for forms the encoder never writes and the decoder reads for
// compatibility (extension fields of later formats, which are skipped; an empty or duplicate
// field; fields in another order; a format-2 or -4 record whose segments have no writer,
// rewritten as format 1 or 3). For those the re-encoding is a fixed point (decode(encode(v))
// encodes to the same bytes), never longer than the input, and when as long, the same bytes
// after the format byte in another order. A decoded object's
// segments add up to its size and have a non-zero extent size. A name that parses is
// rebuilt by its encoder to a name that parses to the same parts (the upload key to the same
// bytes).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "rados/rados_keys.h"
#include "records/meta_codec.h"

namespace {

namespace st = oc::storage;
namespace rados = oc::storage::rados;

// Whether a re-encoding may start with format byte `again` when the input started with `in`:
// the same format, or for an object record a with-writer format (2, 4) read back with no
// segment that has a writer, which the encoder writes as its writerless twin (1, 3). With no
// segments at all that rewrite is as long as the input.
bool SameFormat(char in, char again) { return in == again; }
bool ObjectFormat(char in, char again) {
  return in == again || ((in == 2 || in == 4) && again == in - 1);
}

template <typename Record>
void CheckRecord(std::string_view in, oc::Result<Record> (*decode)(std::string_view),
                 std::string (*encode)(const Record&), bool (*format_ok)(char, char) = SameFormat) {
  const oc::Result<Record> r = decode(in);
  if (!r.has_value()) {
    OC_CHECK(r.error().code() == oc::Code::kCorruption);
    return;
  }
  const std::string again = encode(*r);
  OC_CHECK(again.size() <= in.size());
  if (again.size() == in.size() && again != in) {
    std::string a = again.substr(1);
    std::string b(in.substr(1));
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    OC_CHECK(format_ok(in[0], again[0]) && a == b);
  }
  const oc::Result<Record> back = decode(again);
  OC_CHECK(back.has_value() && encode(*back) == again);
}

void ObjectRecord(std::string_view in) {
  CheckRecord<st::ObjectRecord>(in, st::DecodeObjectRecord, st::EncodeObjectRecord, ObjectFormat);
  if (const oc::Result<st::ObjectRecord> r = st::DecodeObjectRecord(in); r.has_value()) {
    uint64_t total = 0;
    for (const st::Segment& s : r->segments) {
      OC_CHECK(s.extent_bytes > 0);
      OC_CHECK(!__builtin_add_overflow(total, s.size, &total));
    }
    OC_CHECK(total == r->meta.size);
  }
}

void RegistryRecord(std::string_view in) {
  const oc::Result<rados::RadosBucketRecord> r = rados::DecodeRadosBucketRecord(in);
  if (!r.has_value()) {
    OC_CHECK(r.error().code() == oc::Code::kCorruption);
    return;
  }
  OC_CHECK(r->index_shards > 0);
  OC_CHECK(rados::EncodeRadosBucketRecord(*r) == in);
}

void Names(std::string_view in) {
  std::string name;
  std::string upload_id;
  if (rados::ParseUploadOmapKey(in, &name, &upload_id)) {
    OC_CHECK(rados::UploadOmapKey(name, upload_id) == in);
  }
  uint32_t part = 0;
  if (rados::ParsePartOmapKey(in, &upload_id, &part)) {
    std::string id_back;
    uint32_t part_back = 0;
    OC_CHECK(rados::PartOmapKey(upload_id, part).starts_with(rados::PartOmapPrefix(upload_id)));
    OC_CHECK(rados::ParsePartOmapKey(rados::PartOmapKey(upload_id, part), &id_back, &part_back));
    OC_CHECK(id_back == upload_id && part_back == part);
  }
  int64_t due = 0;
  if (rados::ParseGcOmapKey(in, &due)) {
    int64_t due_back = 0;
    OC_CHECK(rados::ParseGcOmapKey(rados::GcOmapKey(due, st::Segment{}), &due_back));
    OC_CHECK(due_back == due);
  }
  rados::DataOidParts parts;
  if (rados::ParseDataOid(in, &parts)) {
    st::Segment s;
    s.writer = parts.writer;
    s.data_id = parts.seq;
    rados::DataOidParts back;
    OC_CHECK(rados::ParseDataOid(rados::DataOid(parts.bucket_id, s, parts.extent), &back));
    OC_CHECK(back.bucket_id == parts.bucket_id && back.writer == parts.writer &&
             back.seq == parts.seq && back.extent == parts.extent);
  }
  uint64_t bucket_id = 0;
  if (rados::ParseIndexOid(in, &bucket_id)) {
    uint64_t back = 0;
    OC_CHECK(rados::ParseIndexOid(rados::IndexOid(bucket_id, 7), &back) && back == bucket_id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0:
      ObjectRecord(in);
      break;
    case 1:
      CheckRecord<st::BucketRecord>(in, st::DecodeBucketRecord, st::EncodeBucketRecord);
      break;
    case 2:
      CheckRecord<st::UploadRecord>(in, st::DecodeUploadRecord, st::EncodeUploadRecord);
      break;
    case 3:
      CheckRecord<st::PartRecord>(in, st::DecodePartRecord, st::EncodePartRecord);
      break;
    case 4:
      RegistryRecord(in);
      break;
    default:
      Names(in);
      break;
  }
  return 0;
}
