// RadosStore, writing one object: the bytes' way under a CheckingWriter (data objects first,
// then one guarded commit op on the key's index shard, RadosStore::CommitPut), Delete and Copy
// (rados_store.h).

#include <memory>
#include <optional>
#include <string>

#include "names.h"
#include "object/checking_writer.h"
#include "object/new_records.h"
#include "rados/rados_store.h"
#include "rados/rados_stream.h"
#include "records/write_conditions.h"
#include "stream_copy.h"

namespace oc::storage {
namespace {

// Copy to another key streams through a buffer of this size.
constexpr uint64_t kCopyBufferBytes = 4ull << 20;

ObjectRecord NewRecord(const PutOptions& o, const Segment& segment, const Md5Digest& md5) {
  ObjectRecord r;
  r.meta = NewObjectMeta(o, segment.size, HexEncode(md5), RadosNowUnixMs());
  r.segments.push_back(segment);
  return r;
}

// The bytes of one object on their way to its data objects, then the commit op, under a
// CheckingWriter (object/checking_writer.h: the counting, MD5 and checks, the writer state).
class RadosBody final : public RawBodyWriter {
 public:
  RadosBody(RadosStore* store, ObjectKey key, RadosStore::BucketRef bucket, Segment segment)
      : store_(store),
        key_(std::move(key)),
        bucket_(bucket),
        stream_(store->io(), bucket.id, key_.name, segment) {}

  Status Write(ByteSpan data) override { return stream_.Append(data); }
  Status Finish() override { return stream_.Finish(); }
  void Discard() override { stream_.Discard(); }

  Result<ObjectMeta> Commit(const PutOptions& options, const BodyCheck& check) override {
    const ObjectRecord record = NewRecord(options, stream_.segment(), check.md5());
    const Status done = IsConditional(options)
                            ? CommitConditional(options, record)
                            : store_->CommitPut(key_.bucket, bucket_, key_.name, record);
    if (!done.ok()) {
      // A refused op changed nothing (one op is atomic), so nothing names the data. An op
      // that timed out or failed in transport may still have applied: its data stays (an
      // orphan for the scrub if it did not).
      const Code code = done.code();
      if (code != Code::kUnavailable && code != Code::kIOError) {
        stream_.Discard();
      }
      return done;
    }
    return record.meta;
  }

 private:
  // A conditional PUT commits alone, not grouped with other PUTs of its key, and decides on
  // the record read first and guarded by the op's compare: a conflict re-reads and decides
  // again, so the condition holds against the record the op replaces.
  Status CommitConditional(const PutOptions& options, const ObjectRecord& record) {
    std::vector<RadosStore::KeyChange> changes(1);
    changes[0].name = key_.name;
    changes[0].decide =
        [&](const std::optional<ObjectRecord>& current) -> Result<std::optional<ObjectRecord>> {
      OC_RETURN_IF_ERROR(CheckWriteConditions(options, key_.name, current));
      return std::optional<ObjectRecord>(record);
    };
    return store_
        ->CommitShard(key_.bucket, bucket_, rados::ShardOf(key_.name, bucket_.shards), changes,
                      /*read_first=*/true)
        .status();
  }

  RadosStore* const store_;
  const ObjectKey key_;
  const RadosStore::BucketRef bucket_;
  rados::DataStream stream_;
};

}  // namespace

Result<std::unique_ptr<ObjectWriter>> RadosStore::Put(const ObjectKey& key,
                                                      const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const uint64_t object_bytes, ChooseObjectBytes(options));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  return std::unique_ptr<ObjectWriter>(
      new CheckingWriter(options, /*etag_md5=*/true,
                         std::make_unique<RadosBody>(this, key, ref, NewVersion(object_bytes))));
}

Status RadosStore::Delete(const ObjectKey& key) { return DeleteObject(key, nullptr); }

Status RadosStore::DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) {
  return DeleteObject(key, &expected);
}

Status RadosStore::DeleteObject(const ObjectKey& key, const ObjectVersionMatch* expected) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  std::vector<KeyChange> changes(1);
  changes[0].name = key.name;
  changes[0].decide =
      [&](const std::optional<ObjectRecord>& current) -> Result<std::optional<ObjectRecord>> {
    if (!current.has_value()) {
      return Status::NotFound(Subject::kKey, key.name);
    }
    // Decided on the record the guarded op compares: a commit that replaced it since fails
    // the op, which re-reads and decides again.
    if (expected != nullptr && (current->meta.etag != expected->etag ||
                                current->meta.mtime_unix_ms != expected->mtime_unix_ms)) {
      return Status::FailedPrecondition(Subject::kKey, "the object changed: " + key.name);
    }
    return std::optional<ObjectRecord>();
  };
  return CommitShard(key.bucket, ref, rados::ShardOf(key.name, ref.shards), changes,
                     /*read_first=*/true)
      .status();
}

Result<ObjectMeta> RadosStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                    const std::optional<PutOptions>& replace,
                                    const WriteConditions& conditions) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(src.name));
  OC_RETURN_IF_ERROR(ValidateObjectKey(dst.name));
  if (src.bucket != dst.bucket || src.name != dst.name) {
    // No server-side copy in the C API: stream, pinning src's version for the whole copy.
    return StreamCopy(*this, src, *this, dst, replace, conditions, kCopyBufferBytes);
  }
  // Same key: the data objects stay; only the record (metadata, mtime) is rewritten, guarded
  // like any commit, and nothing goes to the GC (the new record names the same version).
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(dst.bucket));
  const int64_t now = RadosNowUnixMs();
  std::vector<KeyChange> changes(1);
  changes[0].name = dst.name;
  changes[0].decide =
      [&](const std::optional<ObjectRecord>& current) -> Result<std::optional<ObjectRecord>> {
    if (!current.has_value()) {
      return Status::NotFound(Subject::kKey, src.name);
    }
    // Decided on the record the guarded op compares: atomic with the rewrite.
    OC_RETURN_IF_ERROR(CheckWriteConditions(conditions, dst.name, current));
    ObjectRecord next = *current;
    if (replace.has_value()) {
      ReplaceMetadata(&next.meta, *replace);
    }
    next.meta.mtime_unix_ms = now;
    return std::optional<ObjectRecord>(std::move(next));
  };
  OC_ASSIGN_OR_RETURN(
      std::vector<std::optional<ObjectRecord>> done,
      CommitShard(dst.bucket, ref, rados::ShardOf(dst.name, ref.shards), changes, true));
  return std::move(done[0]->meta);
}

Result<ObjectMeta> RadosStore::PutObjectTags(const ObjectKey& key, const Tags& tags) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  // Only the record changes, in one guarded op like any commit: the same data objects, ETag
  // and mtime (S3 PutObjectTagging), nothing for the GC.
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  std::vector<KeyChange> changes(1);
  changes[0].name = key.name;
  changes[0].decide =
      [&](const std::optional<ObjectRecord>& current) -> Result<std::optional<ObjectRecord>> {
    if (!current.has_value()) {
      return Status::NotFound(Subject::kKey, key.name);
    }
    ObjectRecord next = *current;
    next.meta.tags = tags;
    return std::optional<ObjectRecord>(std::move(next));
  };
  OC_ASSIGN_OR_RETURN(
      std::vector<std::optional<ObjectRecord>> done,
      CommitShard(key.bucket, ref, rados::ShardOf(key.name, ref.shards), changes, true));
  return std::move(done[0]->meta);
}

}  // namespace oc::storage
