#include "rados/rados_keys.h"

#include <xxhash.h>

#include <fmt/core.h>

#include "oc/common/bytes.h"

namespace oc::storage::rados {
namespace {

constexpr uint8_t kBucketFormat = 1;
// version, bucket id, shards, created, owner length.
constexpr size_t kBucketFixedBytes = 1 + 8 + 4 + 8 + 4;

}  // namespace

std::string EncodeRadosBucketRecord(const RadosBucketRecord& r) {
  std::string out(kBucketFixedBytes, '\0');
  auto* p = reinterpret_cast<std::byte*>(out.data());
  p[0] = std::byte{kBucketFormat};
  PutLittleEndian64(r.bucket_id, p + 1);
  PutLittleEndian32(r.index_shards, p + 9);
  PutLittleEndian64(static_cast<uint64_t>(r.created_unix_ms), p + 13);
  PutLittleEndian32(static_cast<uint32_t>(r.owner.size()), p + 21);
  out.append(r.owner);
  return out;
}

Result<RadosBucketRecord> DecodeRadosBucketRecord(std::string_view bytes) {
  if (bytes.size() < kBucketFixedBytes || static_cast<uint8_t>(bytes[0]) != kBucketFormat) {
    return Status::Corruption("malformed bucket registry record");
  }
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  RadosBucketRecord r;
  r.bucket_id = GetLittleEndian64(p + 1);
  r.index_shards = GetLittleEndian32(p + 9);
  r.created_unix_ms = static_cast<int64_t>(GetLittleEndian64(p + 13));
  const uint32_t owner_len = GetLittleEndian32(p + 21);
  if (bytes.size() != kBucketFixedBytes + owner_len || r.index_shards == 0) {
    return Status::Corruption("malformed bucket registry record");
  }
  r.owner.assign(bytes.substr(kBucketFixedBytes));
  return r;
}

std::string IndexOid(uint64_t bucket_id, uint32_t shard) {
  return fmt::format("oc.idx.{:016x}.{}", bucket_id, shard);
}

std::string VersionId(const Segment& s) { return fmt::format("{:016x}.{:x}", s.writer, s.data_id); }

std::string DataOid(uint64_t bucket_id, const Segment& s, uint64_t extent) {
  return fmt::format("oc.d.{:016x}.{:016x}.{:x}.{}", bucket_id, s.writer, s.data_id, extent);
}

uint32_t ShardOf(std::string_view key, uint32_t shards) {
  return static_cast<uint32_t>(XXH3_64bits(key.data(), key.size()) % shards);
}

std::string GcOmapKey(int64_t due_unix_ms, const Segment& s) {
  return fmt::format("{}{:016x}/{}", kGcPrefix, static_cast<uint64_t>(due_unix_ms), VersionId(s));
}

}  // namespace oc::storage::rados
