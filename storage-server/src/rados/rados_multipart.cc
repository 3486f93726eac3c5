// RadosStore, multipart uploads (S3 CreateMultipartUpload .. CompleteMultipartUpload), with
// the same checks and answers as RocksStore (rocks_multipart.cc; the part list's checks are
// records/multipart_complete.h for both), and the omap helpers that multipart, the GC and the
// scrub share (rados_store.h).
//
// An upload's records live in its key's index shard (rados_keys.h): u/... holds the
// UploadRecord, which never changes, so "u/ still holds what we read" means "the upload is
// still open"; m/<upload id>/<part> holds each PartRecord. Every change is ONE guarded op on
// that shard:
//   UploadPart:  the part's data objects first (a fresh version), then cmp(u/) + cmp(m/ ==
//                the part it replaces, "" for none) + set(m/) + a g/ entry for the replaced
//                part's data;
//   Complete:    cmp(u/) + cmp(o/<key> == the object it replaces) + cmp(every m/ read) +
//                set(o/<key>), whose segments are the listed parts' versions (no byte is
//                copied) + rm(u/, m/...) + a g/ entry for the replaced object and the parts
//                not listed;
//   Abort:       cmp(u/) + cmp(every m/ read) + rm(u/, m/...) + a g/ entry for the parts.
// A failed compare re-reads and retries. A part committed between Complete's (or Abort's)
// read and its op is not in the object; its m/ entry outlives the upload until the scrub
// hands it to the GC (rados_scrub.cc).

#include <chrono>
#include <deque>
#include <random>
#include <thread>

#include "names.h"
#include "object/checking_writer.h"
#include "object/new_records.h"
#include "rados/rados_store.h"
#include "rados/rados_stream.h"
#include "records/multipart_complete.h"
#include "records/multipart_names.h"
#include "records/object_checksum.h"
#include "records/write_conditions.h"

namespace oc::storage {
namespace {

using rados::Completion;
using rados::FromRados;
using rados::ReadOp;
using rados::WriteOp;

// Compares that failed because a racing op changed what we read: retries before kUnavailable.
constexpr int kMaxTries = 32;
// A commit meeting a shard in state `deleting` waits this long for DeleteBucket (as
// CommitShard does).
constexpr auto kDeletingWait = std::chrono::seconds(2);
// Omap entries per page of a scan.
constexpr uint64_t kScanPage = 1000;
// Removals a RemoveObjects call keeps in flight.
constexpr size_t kRemovesInFlight = 32;

void Backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int cap_us = std::min(200 << std::min(attempt, 5), 5000);
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % (cap_us + 1)));
}

// A g/ entry handing `segments` (those with data) to the GC; nothing if none has data.
void AddGcEntry(WriteOp& op, std::vector<Segment> segments, int64_t due) {
  ObjectRecord gc;
  for (Segment& s : segments) {
    if (s.writer != 0 && s.size > 0) {
      gc.meta.size += s.size;
      gc.segments.push_back(s);
    }
  }
  if (!gc.segments.empty()) {
    op.OmapSet({{rados::GcOmapKey(due, gc.segments.front()), EncodeObjectRecord(gc)}});
  }
}

// The stored parts of an upload as read from its shard, ascending; index i of each vector is
// the same part.
struct StoredParts {
  std::vector<NumberedPart> parts;
  std::vector<std::string> keys;  // m/...
  std::vector<std::string> raws;  // the values, for the commit's compare
};

}  // namespace

// --- Helpers shared with the GC and the scrub ---

std::vector<Segment> SegmentsOfEntry(std::string_view omap_key, std::string_view value) {
  if (omap_key.starts_with(rados::kPartPrefix)) {
    Result<PartRecord> part = DecodePartRecord(value);
    return part.has_value() ? std::vector<Segment>{part->segment} : std::vector<Segment>{};
  }
  if (omap_key.starts_with(rados::kObjectPrefix) || omap_key.starts_with(rados::kGcPrefix)) {
    Result<ObjectRecord> record = DecodeObjectRecord(value);
    return record.has_value() ? std::move(record->segments) : std::vector<Segment>{};
  }
  return {};
}

void AppendDataOids(uint64_t bucket_id, const Segment& segment, std::vector<std::string>* out) {
  if (segment.writer == 0) {
    return;
  }
  for (uint64_t e = 0; e < rados::ExtentCount(segment); ++e) {
    out->push_back(rados::DataOid(bucket_id, segment, e));
  }
}

Result<bool> RadosStore::GuardedWrite(std::string_view bucket, const BucketRef& ref, uint32_t shard,
                                      const std::function<void(WriteOp&)>& build) {
  const std::string oid = rados::IndexOid(ref.id, shard);
  const auto since = std::chrono::steady_clock::now();
  for (;;) {
    WriteOp op;
    op.CmpXattr(rados::kStateXattr, rados::kStateLive);
    build(op);
    const int rc = op.Operate(io(), oid);
    if (rc >= 0) {
      commits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (rc == -ENOENT) {
      return ShardGone(bucket);
    }
    if (rc != -ECANCELED) {
      return FromRados(rc, "committing to an index shard");
    }
    commit_conflicts_.fetch_add(1, std::memory_order_relaxed);
    std::string state;
    const int xrc = rados::GetXattr(io(), oid, rados::kStateXattr, &state);
    if (xrc == -ENOENT) {
      return ShardGone(bucket);
    }
    OC_RETURN_IF_ERROR(FromRados(xrc, "reading an index shard's state"));
    if (state == rados::kStateLive) {
      return false;  // a compare of the caller's failed
    }
    if (std::chrono::steady_clock::now() - since > kDeletingWait) {
      Result<rados::RadosBucketRecord> reg = ReadRegistry(bucket);
      if (!reg.has_value() || reg->bucket_id != ref.id) {
        return ShardGone(bucket);
      }
      return Status::Unavailable("bucket " + std::string(bucket) + " is being deleted");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<std::map<std::string, std::string>> RadosStore::ReadOmapKeys(
    std::string_view bucket, const BucketRef& ref, uint32_t shard,
    const std::vector<std::string>& keys) {
  ReadOp op;
  rados::OmapIter it;
  int prval = 0;
  op.OmapGetByKeys(keys, &it, &prval);
  const int rc = op.Operate(io(), rados::IndexOid(ref.id, shard));
  if (rc == -ENOENT) {
    return ShardGone(bucket);
  }
  OC_RETURN_IF_ERROR(FromRados(rc, "reading an index shard"));
  OC_RETURN_IF_ERROR(FromRados(prval, "reading an index shard"));
  std::map<std::string, std::string> out;
  std::string_view k;
  std::string_view v;
  while (it.Next(&k, &v)) {
    out.emplace(k, v);
  }
  return out;
}

Status RadosStore::ScanOmap(
    const std::string& oid, const std::string& prefix, std::string after,
    const std::function<Result<bool>(std::string_view, std::string_view)>& visit) {
  for (;;) {
    ReadOp op;
    rados::OmapIter it;
    unsigned char more = 0;
    int prval = 0;
    op.OmapGetVals(after, prefix, kScanPage, &it, &more, &prval);
    OC_RETURN_IF_ERROR(FromRados(op.Operate(io(), oid), "reading an index shard"));
    OC_RETURN_IF_ERROR(FromRados(prval, "reading an index shard"));
    std::string_view k;
    std::string_view v;
    bool any = false;
    while (it.Next(&k, &v)) {
      any = true;
      after.assign(k);
      OC_ASSIGN_OR_RETURN(const bool go_on, visit(k, v));
      if (!go_on) {
        return Status::Ok();
      }
    }
    if (more == 0 || !any) {
      return Status::Ok();
    }
  }
}

uint64_t RadosStore::RemoveObjects(const std::vector<std::string>& oids) {
  struct Pending {
    WriteOp op;
    Completion c;
    const std::string* oid = nullptr;
  };
  std::deque<std::unique_ptr<Pending>> pending;
  uint64_t removed = 0;
  auto wait_oldest = [&] {
    std::unique_ptr<Pending> p = std::move(pending.front());
    pending.pop_front();
    const int rc = p->c.Wait();
    if (rc >= 0 || rc == -ENOENT) {
      ++removed;
    }
  };
  for (const std::string& oid : oids) {
    while (pending.size() >= kRemovesInFlight) {
      wait_oldest();
    }
    auto p = std::make_unique<Pending>();
    p->op.Remove();
    p->oid = &oid;
    if (p->op.OperateAsync(io(), oid, p->c) == 0) {
      pending.push_back(std::move(p));
    }
  }
  while (!pending.empty()) {
    wait_oldest();
  }
  return removed;
}

// --- The part writer ---

namespace {

// A part's bytes on their way to its data objects, then its commit op, under a CheckingWriter
// (object/checking_writer.h: the counting, MD5 and checks, the writer state, AddHeader: a part
// keeps only its checksum, which ChecksumOfHeaders picks at the commit).
class RadosPartBody final : public RawBodyWriter {
 public:
  RadosPartBody(RadosStore* store, ObjectKey key, std::string upload_key, std::string upload_raw,
                std::string part_key, RadosStore::BucketRef bucket, Segment segment)
      : store_(store),
        key_(std::move(key)),
        upload_key_(std::move(upload_key)),
        upload_raw_(std::move(upload_raw)),
        part_key_(std::move(part_key)),
        bucket_(bucket),
        stream_(store->io(), bucket.id, key_.name, segment) {}

  Status Write(ByteSpan data) override { return stream_.Append(data); }
  Status Finish() override { return stream_.Finish(); }
  void Discard() override { stream_.Discard(); }

  Result<ObjectMeta> Commit(const PutOptions& options, const BodyCheck& check) override {
    Result<ObjectMeta> done = CommitPart(options, check.md5());
    if (!done.has_value()) {
      // As for a PUT: a refused op changed nothing; one that may have applied keeps its data.
      const Code code = done.error().code();
      if (code != Code::kUnavailable && code != Code::kIOError) {
        stream_.Discard();
      }
    }
    return done;
  }

 private:
  Result<ObjectMeta> CommitPart(const PutOptions& options, const Md5Digest& md5) {
    PartRecord part;
    part.segment = stream_.segment();
    part.md5 = md5;
    part.mtime_unix_ms = RadosNowUnixMs();
    part.checksum = ChecksumOfHeaders(options.headers);
    const std::string value = EncodePartRecord(part);
    const uint32_t shard = rados::ShardOf(key_.name, bucket_.shards);
    std::string old;  // the part this one replaces ("" for none); assumed absent at first
    for (int attempt = 0; attempt < kMaxTries; ++attempt) {
      const int64_t due = RadosNowUnixMs() + store_->rados_options().gc_min_wait.count();
      int cmp[2] = {0, 0};
      OC_ASSIGN_OR_RETURN(const bool applied,
                          store_->GuardedWrite(key_.bucket, bucket_, shard, [&](WriteOp& op) {
                            op.OmapCmp(upload_key_, upload_raw_, &cmp[0]);
                            op.OmapCmp(part_key_, old, &cmp[1]);
                            op.OmapSet({{part_key_, value}});
                            if (!old.empty()) {
                              AddGcEntry(op, SegmentsOfEntry(part_key_, old), due);
                            }
                          }));
      if (applied) {
        ObjectMeta meta;
        meta.size = part.segment.size;
        meta.etag = HexEncode(part.md5);
        meta.mtime_unix_ms = part.mtime_unix_ms;
        return meta;
      }
      OC_ASSIGN_OR_RETURN(
          auto now, store_->ReadOmapKeys(key_.bucket, bucket_, shard, {upload_key_, part_key_}));
      auto u = now.find(upload_key_);
      if (u == now.end() || u->second != upload_raw_) {
        return NoSuchUpload(upload_key_.substr(upload_key_.size() - kUploadIdChars));
      }
      auto p = now.find(part_key_);
      old = p == now.end() ? std::string() : p->second;
      Backoff(attempt);
    }
    return Status::Unavailable("too many conflicting commits to one index shard; try again");
  }

  RadosStore* const store_;
  const ObjectKey key_;
  const std::string upload_key_;
  const std::string upload_raw_;
  const std::string part_key_;
  const RadosStore::BucketRef bucket_;
  rados::DataStream stream_;
};

// Every part of `upload_id` in `shard`, ascending.
Result<StoredParts> ReadParts(RadosStore& store, std::string_view bucket,
                              const RadosStore::BucketRef& ref, uint32_t shard,
                              std::string_view upload_id) {
  StoredParts parts;
  Status s = store.ScanOmap(rados::IndexOid(ref.id, shard), rados::PartOmapPrefix(upload_id), "",
                            [&](std::string_view k, std::string_view v) -> Result<bool> {
                              NumberedPart p;
                              std::string id;
                              if (!rados::ParsePartOmapKey(k, &id, &p.number)) {
                                return Status::Corruption("malformed part key");
                              }
                              OC_ASSIGN_OR_RETURN(p.part, DecodePartRecord(v));
                              parts.parts.push_back(std::move(p));
                              parts.keys.emplace_back(k);
                              parts.raws.emplace_back(v);
                              return true;
                            });
  if (s.IsNotFound()) {
    return store.ShardGone(bucket);
  }
  OC_RETURN_IF_ERROR(s);
  return parts;
}

}  // namespace

// --- Multipart calls ---

Result<std::string> RadosStore::CreateMultipartUpload(const ObjectKey& key,
                                                      const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  UploadRecord record = NewUploadRecord(options, RadosNowUnixMs());
  OC_ASSIGN_OR_RETURN(record.extent_bytes, ChooseObjectBytes(options));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  const std::string value = EncodeUploadRecord(record);
  const uint32_t shard = rados::ShardOf(key.name, ref.shards);
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    const std::string upload_id = NewUploadId();
    const std::string ukey = rados::UploadOmapKey(key.name, upload_id);
    int cmp = 0;
    OC_ASSIGN_OR_RETURN(const bool applied, GuardedWrite(key.bucket, ref, shard, [&](WriteOp& op) {
                          op.OmapCmp(ukey, "", &cmp);
                          op.OmapSet({{ukey, value}});
                        }));
    if (applied) {
      return upload_id;
    }
  }
  return Status::Unavailable("could not draw a fresh upload id; try again");
}

Result<std::unique_ptr<ObjectWriter>> RadosStore::UploadPart(const ObjectKey& key,
                                                             std::string_view upload_id,
                                                             uint32_t part_number,
                                                             const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_RETURN_IF_ERROR(CheckPartNumber(part_number));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  if (!IsUploadId(upload_id)) {
    return NoSuchUpload(upload_id);
  }
  const uint32_t shard = rados::ShardOf(key.name, ref.shards);
  std::string ukey = rados::UploadOmapKey(key.name, upload_id);
  OC_ASSIGN_OR_RETURN(auto found, ReadOmapKeys(key.bucket, ref, shard, {ukey}));
  if (found.empty()) {
    return NoSuchUpload(upload_id);
  }
  OC_ASSIGN_OR_RETURN(UploadRecord upload, DecodeUploadRecord(found.begin()->second));
  OC_ASSIGN_OR_RETURN(PutOptions part_options, PartWriteOptions(upload, options));
  return std::unique_ptr<ObjectWriter>(new CheckingWriter(
      std::move(part_options), /*etag_md5=*/true,
      std::make_unique<RadosPartBody>(
          this, key, std::move(ukey), std::move(found.begin()->second),
          rados::PartOmapKey(upload_id, part_number), ref,
          NewVersion(upload.extent_bytes != 0 ? upload.extent_bytes
                                              : options_.rados.object_extent_bytes))));
}

Result<ObjectMeta> RadosStore::CompleteMultipartUpload(const ObjectKey& key,
                                                       std::string_view upload_id,
                                                       std::span<const CompletedPart> parts,
                                                       const CompleteOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  if (!IsUploadId(upload_id)) {
    return NoSuchUpload(upload_id);
  }
  const uint32_t shard = rados::ShardOf(key.name, ref.shards);
  const std::string ukey = rados::UploadOmapKey(key.name, upload_id);
  const std::string okey = rados::ObjectOmapKey(key.name);
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    OC_ASSIGN_OR_RETURN(auto found, ReadOmapKeys(key.bucket, ref, shard, {ukey, okey}));
    auto u = found.find(ukey);
    auto o = found.find(okey);
    if (u == found.end()) {
      // A retry of a completion that succeeded: the object it made answers (S3 does).
      if (o != found.end()) {
        OC_ASSIGN_OR_RETURN(ObjectRecord made, DecodeObjectRecord(o->second));
        if (made.completed_upload_id == upload_id) {
          return std::move(made.meta);
        }
      }
      return NoSuchUpload(upload_id);
    }
    OC_ASSIGN_OR_RETURN(UploadRecord upload, DecodeUploadRecord(u->second));
    OC_RETURN_IF_ERROR(CheckListedParts(parts));
    const std::string old = o == found.end() ? std::string() : o->second;
    if (IsConditional(options.conditions)) {
      // Decided on the record the op below compares (o/<key> == old): atomic with the commit.
      std::optional<ObjectRecord> current;
      if (!old.empty()) {
        OC_ASSIGN_OR_RETURN(current, DecodeObjectRecord(old));
      }
      OC_RETURN_IF_ERROR(CheckWriteConditions(options.conditions, key.name, current));
    }
    OC_ASSIGN_OR_RETURN(const StoredParts stored,
                        ReadParts(*this, key.bucket, ref, shard, upload_id));
    OC_ASSIGN_OR_RETURN(CompletedUpload done,
                        CompleteUpload(parts, stored.parts, upload, options, RadosNowUnixMs()));
    done.record.completed_upload_id = std::string(upload_id);
    std::vector<Segment> garbage = SegmentsOfEntry(okey, old);
    std::vector<std::string> removes{ukey};
    for (size_t i = 0; i < stored.parts.size(); ++i) {
      removes.push_back(stored.keys[i]);
      if (!done.stitched[i]) {
        garbage.push_back(stored.parts[i].part.segment);
      }
    }
    const int64_t due = RadosNowUnixMs() + options_.rados.gc_min_wait.count();
    std::deque<int> cmp;
    OC_ASSIGN_OR_RETURN(const bool applied, GuardedWrite(key.bucket, ref, shard, [&](WriteOp& op) {
                          cmp.clear();
                          op.OmapCmp(ukey, u->second, &cmp.emplace_back());
                          op.OmapCmp(okey, old, &cmp.emplace_back());
                          for (size_t i = 0; i < stored.keys.size(); ++i) {
                            op.OmapCmp(stored.keys[i], stored.raws[i], &cmp.emplace_back());
                          }
                          op.OmapSet({{okey, EncodeObjectRecord(done.record)}});
                          op.OmapRm(removes);
                          AddGcEntry(op, garbage, due);
                        }));
    if (applied) {
      return std::move(done.record.meta);
    }
    Backoff(attempt);
  }
  return Status::Unavailable("too many conflicting commits to one index shard; try again");
}

Status RadosStore::AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  if (!IsUploadId(upload_id)) {
    return NoSuchUpload(upload_id);
  }
  const uint32_t shard = rados::ShardOf(key.name, ref.shards);
  const std::string ukey = rados::UploadOmapKey(key.name, upload_id);
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    OC_ASSIGN_OR_RETURN(auto found, ReadOmapKeys(key.bucket, ref, shard, {ukey}));
    if (found.empty()) {
      return NoSuchUpload(upload_id);
    }
    const std::string upload_raw = found.begin()->second;
    OC_ASSIGN_OR_RETURN(const StoredParts stored,
                        ReadParts(*this, key.bucket, ref, shard, upload_id));
    std::vector<std::string> removes{ukey};
    removes.insert(removes.end(), stored.keys.begin(), stored.keys.end());
    std::vector<Segment> garbage;
    for (const NumberedPart& p : stored.parts) {
      garbage.push_back(p.part.segment);
    }
    const int64_t due = RadosNowUnixMs() + options_.rados.gc_min_wait.count();
    std::deque<int> cmp;
    OC_ASSIGN_OR_RETURN(const bool applied, GuardedWrite(key.bucket, ref, shard, [&](WriteOp& op) {
                          cmp.clear();
                          op.OmapCmp(ukey, upload_raw, &cmp.emplace_back());
                          for (size_t i = 0; i < stored.keys.size(); ++i) {
                            op.OmapCmp(stored.keys[i], stored.raws[i], &cmp.emplace_back());
                          }
                          op.OmapRm(removes);
                          AddGcEntry(op, garbage, due);
                        }));
    if (applied) {
      return Status::Ok();
    }
    Backoff(attempt);
  }
  return Status::Unavailable("too many conflicting commits to one index shard; try again");
}

Result<ListPartsResult> RadosStore::ListParts(const ObjectKey& key, std::string_view upload_id,
                                              uint32_t part_number_marker, uint32_t max_parts) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  if (!IsUploadId(upload_id)) {
    return NoSuchUpload(upload_id);
  }
  const uint32_t shard = rados::ShardOf(key.name, ref.shards);
  OC_ASSIGN_OR_RETURN(auto found, ReadOmapKeys(key.bucket, ref, shard,
                                               {rados::UploadOmapKey(key.name, upload_id)}));
  if (found.empty()) {
    return NoSuchUpload(upload_id);
  }
  OC_ASSIGN_OR_RETURN(const UploadRecord upload, DecodeUploadRecord(found.begin()->second));
  ListPartsResult result;
  result.checksum_header = upload.checksum_header;
  result.checksum_type = upload.checksum_type;
  if (part_number_marker >= kMaxPartNumber || max_parts == 0) {
    return result;
  }
  Status s =
      ScanOmap(rados::IndexOid(ref.id, shard), rados::PartOmapPrefix(upload_id),
               rados::PartOmapKey(upload_id, part_number_marker),
               [&](std::string_view k, std::string_view v) -> Result<bool> {
                 if (result.parts.size() == max_parts) {
                   result.truncated = true;
                   return false;
                 }
                 std::string id;
                 uint32_t number = 0;
                 if (!rados::ParsePartOmapKey(k, &id, &number)) {
                   return Status::Corruption("malformed part key");
                 }
                 OC_ASSIGN_OR_RETURN(PartRecord part, DecodePartRecord(v));
                 result.parts.push_back(PartInfo{number, part.segment.size, HexEncode(part.md5),
                                                 part.mtime_unix_ms, std::move(part.checksum)});
                 result.next_part_number_marker = number;
                 return true;
               });
  if (s.IsNotFound()) {
    return ShardGone(key.bucket);
  }
  OC_RETURN_IF_ERROR(s);
  return result;
}

}  // namespace oc::storage
