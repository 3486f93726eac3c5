#include "rados/rados_keys.h"

#include <algorithm>
#include <charconv>

#include <fmt/core.h>
#include <xxhash.h>

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

std::string EscapeUploadName(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 8);
  for (char c : name) {
    if (c == '\x01') {
      out.append("\x01\x02", 2);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string UploadOmapKey(std::string_view name, std::string_view upload_id) {
  std::string k(kUploadPrefix);
  k.append(EscapeUploadName(name));
  k.append("\x01\x01", 2);
  k.append(upload_id);
  return k;
}

bool ParseUploadOmapKey(std::string_view k, std::string* name, std::string* upload_id) {
  if (!k.starts_with(kUploadPrefix)) {
    return false;
  }
  k.remove_prefix(std::string_view(kUploadPrefix).size());
  name->clear();
  for (size_t i = 0; i < k.size(); ++i) {
    if (k[i] != '\x01') {
      name->push_back(k[i]);
      continue;
    }
    if (i + 1 >= k.size()) {
      return false;
    }
    if (k[i + 1] == '\x02') {
      name->push_back('\x01');
      ++i;
      continue;
    }
    if (k[i + 1] != '\x01') {
      return false;
    }
    upload_id->assign(k.substr(i + 2));
    return true;
  }
  return false;
}

std::string PartOmapPrefix(std::string_view upload_id) {
  return fmt::format("{}{}/", kPartPrefix, upload_id);
}

std::string PartOmapKey(std::string_view upload_id, uint32_t part_number) {
  return fmt::format("{}{}/{:05}", kPartPrefix, upload_id, part_number);
}

namespace {

bool ParseNumber(std::string_view text, int base, uint64_t* out) {
  if (text.empty()) {
    return false;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool ParsePartOmapKey(std::string_view k, std::string* upload_id, uint32_t* part_number) {
  if (!k.starts_with(kPartPrefix)) {
    return false;
  }
  k.remove_prefix(std::string_view(kPartPrefix).size());
  const size_t slash = k.rfind('/');
  uint64_t n = 0;
  if (slash == std::string_view::npos || !ParseNumber(k.substr(slash + 1), 10, &n) ||
      n > 0xffffffffull) {
    return false;
  }
  upload_id->assign(k.substr(0, slash));
  *part_number = static_cast<uint32_t>(n);
  return true;
}

bool ParseGcOmapKey(std::string_view k, int64_t* due_unix_ms) {
  if (!k.starts_with(kGcPrefix)) {
    return false;
  }
  k.remove_prefix(std::string_view(kGcPrefix).size());
  const size_t slash = k.find('/');
  uint64_t due = 0;
  if (slash == std::string_view::npos || !ParseNumber(k.substr(0, slash), 16, &due)) {
    return false;
  }
  *due_unix_ms = static_cast<int64_t>(due);
  return true;
}

bool ParseDataOid(std::string_view oid, DataOidParts* out) {
  if (!oid.starts_with(kDataOidPrefix)) {
    return false;
  }
  oid.remove_prefix(std::string_view(kDataOidPrefix).size());
  uint64_t* fields[] = {&out->bucket_id, &out->writer, &out->seq, &out->extent};
  const int bases[] = {16, 16, 16, 10};
  for (int i = 0; i < 4; ++i) {
    const size_t dot = i < 3 ? oid.find('.') : oid.size();
    if (dot == std::string_view::npos || !ParseNumber(oid.substr(0, dot), bases[i], fields[i])) {
      return false;
    }
    oid.remove_prefix(std::min(oid.size(), dot + 1));
  }
  return true;
}

bool ParseIndexOid(std::string_view oid, uint64_t* bucket_id) {
  if (!oid.starts_with(kIndexOidPrefix)) {
    return false;
  }
  oid.remove_prefix(std::string_view(kIndexOidPrefix).size());
  const size_t dot = oid.find('.');
  uint64_t shard = 0;
  return dot != std::string_view::npos && ParseNumber(oid.substr(0, dot), 16, bucket_id) &&
         ParseNumber(oid.substr(dot + 1), 10, &shard);
}

}  // namespace oc::storage::rados
