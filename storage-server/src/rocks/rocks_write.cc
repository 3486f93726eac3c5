// RocksStore, writing one object or part: the bytes' way under a CheckingWriter (extents
// buffered, flushed unsynced under a pending record, committed in one batch), the commit
// under the key lock with the WAL group sync, Delete, and Copy (rocks_store.h: "Writes",
// "Locks").

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "names.h"
#include "object/checking_writer.h"
#include "object/new_records.h"
#include "oc/common/log.h"
#include "records/object_checksum.h"
#include "records/write_conditions.h"
#include "rocks/extent_buffer.h"
#include "rocks/extent_io.h"
#include "rocks/extent_key.h"
#include "rocks/group_sync.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"
#include "stream_copy.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

// Copy streams through a buffer of this size.
constexpr uint64_t kCopyBufferBytes = 1 << 20;

Status BadKeyStatus(std::string field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kNone, std::move(field), std::move(message));
}

// The bytes of one object or part on their way to RocksDB (or its data files), under a
// CheckingWriter (object/checking_writer.h: the counting, MD5 and checks, the writer state).
class RocksBody final : public RawBodyWriter {
 public:
  RocksBody(RocksStore* store, RocksStore::WriteTarget target, uint64_t data_id,
            uint64_t extent_bytes, uint8_t flags)
      : store_(store),
        target_(std::move(target)),
        data_id_(data_id),
        extent_bytes_(extent_bytes),
        flags_(flags) {}

  Status Write(ByteSpan data) override {
    size_ += data.size();
    while (!data.empty()) {
      ReserveExtent();
      const uint64_t n = std::min<uint64_t>(extent_bytes_ - buf_.size(), data.size());
      buf_.Append(data.first(n));
      data = data.subspan(n);
      if (buf_.size() == extent_bytes_) {
        OC_RETURN_IF_ERROR(EmitExtent(/*may_flush=*/true));
      }
    }
    return Status::Ok();
  }

  // Lends the free tail of the extent being filled (at most up to the extent's end), so the
  // bytes land where EmitExtent writes them from; a tail shorter than min_bytes is not worth
  // a read of its own, and the scratch lend (store.h) takes the bytes instead.
  MutableByteSpan Lend(uint64_t min_bytes, uint64_t max_bytes) override {
    ReserveExtent();
    const uint64_t room = std::min(buf_.capacity(), extent_bytes_) - buf_.size();
    if (room == 0 || room < std::min(min_bytes, max_bytes)) {
      return {};
    }
    return buf_.tail().first(std::min(room, max_bytes));
  }

  Status Lent(uint64_t n) override {
    buf_.Grow(n);
    size_ += n;
    if (buf_.size() == extent_bytes_) {
      return EmitExtent(/*may_flush=*/true);
    }
    return Status::Ok();
  }

  Status Finish() override {
    if (next_extent_ == 0 && (flags_ & kSegmentDataFile) != 0 &&
        size_ < store_->options().data_file_min_bytes) {
      flags_ = 0;  // small, in one extent: stays in RocksDB, one sync (options.h)
    }
    if (!buf_.empty()) {
      return EmitExtent(/*may_flush=*/false);
    }
    return Status::Ok();
  }

  Result<ObjectMeta> Commit(const PutOptions& options, const BodyCheck& check) override {
    target_.options = options;
    // CommitWrite frees the extents itself when it fails before writing the record.
    return store_->CommitWrite(target_, Segment{data_id_, size_, extent_bytes_, flags_},
                               check.md5(), flushed_, &batch_, staged_);
  }

  void Discard() override { store_->DiscardData(data_id_, flushed_); }

 private:
  // Room for the extent being filled: the extent's size, or the expected object's if smaller.
  void ReserveExtent() {
    if (buf_.capacity() == 0) {
      uint64_t want = extent_bytes_;
      if (target_.options.expected_size.has_value()) {
        want = std::min(want, *target_.options.expected_size);
      }
      buf_.Reserve(want);
    }
  }

  Status EmitExtent(bool may_flush) {
    if ((flags_ & kSegmentDataFile) != 0) {
      // The bytes go to a data file now; only the locator waits in the batch for Commit.
      OC_RETURN_IF_ERROR(store_
                             ->AppendDataExtent(&batch_, data_id_, next_extent_++, buf_.bytes(),
                                                &staged_, &staged_.live)
                             .status());
      buf_.Clear();
      return Status::Ok();
    }
    OC_RETURN_IF_ERROR(
        AddExtent(&batch_, store_->extents_cf(), data_id_, next_extent_++, flags_, buf_.bytes()));
    batch_bytes_ += buf_.size();
    buf_.Clear();
    if (may_flush && batch_bytes_ >= store_->options().write_batch_bytes) {
      return Flush();
    }
    return Status::Ok();
  }

  // Writes the buffered extents unsynced; the first flush also records the data id as
  // pending, in the same batch, so recovery can free it if Commit never happens.
  Status Flush() {
    OC_RETURN_IF_ERROR(store_->AdmitWrite(batch_bytes_));
    if (!flushed_) {
      OC_RETURN_IF_ERROR(FromRocks(batch_.Put(store_->pending_cf(), PendingKey(data_id_), "")));
    }
    OC_RETURN_IF_ERROR(
        store_->NoteSpace(FromRocks(store_->db()->Write(store_->unsynced(), &batch_))));
    flushed_ = true;
    batch_.Clear();
    batch_bytes_ = 0;
    return Status::Ok();
  }

  RocksStore* const store_;
  RocksStore::WriteTarget target_;  // options as at Put; at Commit, the writer's
  const uint64_t data_id_;
  const uint64_t extent_bytes_;
  uint8_t flags_;     // cleared at Finish for a small object under the data-file layout
  ExtentBuffer buf_;  // the extent being filled
  rocksdb::WriteBatch batch_;
  uint64_t batch_bytes_ = 0;
  StagedData staged_;  // data-file appends
  uint64_t next_extent_ = 0;
  uint64_t size_ = 0;
  bool flushed_ = false;
};

}  // namespace

std::string PendingKey(uint64_t data_id) {
  std::string key(8, '\0');
  PutBigEndian64(data_id, reinterpret_cast<std::byte*>(key.data()));
  return key;
}

Status AddExtent(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, uint64_t data_id,
                 uint64_t index, uint8_t flags, ByteSpan bytes, uint64_t* hash) {
  const bool trailer_hash = (flags & kSegmentExtentHash) != 0;
  uint64_t h = 0;
  if (trailer_hash || hash != nullptr) {
    h = ExtentHash(bytes);
  }
  if (hash != nullptr) {
    *hash = h;
  }
  const ExtentKey key = EncodeExtentKey(data_id, index);
  const rocksdb::Slice key_slice = AsSlice(key);
  const rocksdb::Slice value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!trailer_hash) {
    return FromRocks(batch->Put(cf, key_slice, value));
  }
  // The bytes and their trailer as one value, gathered by the batch (no copy here).
  std::byte trailer[kExtentHashBytes];
  PutLittleEndian64(h, trailer);
  const rocksdb::Slice parts[2] = {
      value, rocksdb::Slice(reinterpret_cast<const char*>(trailer), kExtentHashBytes)};
  return FromRocks(
      batch->Put(cf, rocksdb::SliceParts(&key_slice, 1), rocksdb::SliceParts(parts, 2)));
}

// Extent size of a new object or part: explicit, else the chunk's contiguous layer range
// (S for KV_L2TD, S/2 for KV_2LTD), else the store default (types.h PutOptions).
Result<uint64_t> ChooseExtentBytes(const PutOptions& o, uint64_t default_bytes) {
  if (o.chunk.has_value()) {
    const ChunkShape& c = *o.chunk;
    if (c.num_layers == 0 || c.layer_bytes == 0 ||
        (c.layout == descriptor::StoredLayout::k2LTD && c.layer_bytes % 2 != 0)) {
      return BadKeyStatus("chunk", "chunk shape needs L > 0 and S > 0 (even for KV_2LTD)");
    }
  }
  uint64_t bytes = default_bytes;
  if (o.extent_bytes != 0) {
    bytes = o.extent_bytes;
  } else if (o.chunk.has_value()) {
    bytes = o.chunk->layout == descriptor::StoredLayout::kL2TD ? o.chunk->layer_bytes
                                                               : o.chunk->layer_bytes / 2;
  }
  if (bytes == 0 || bytes > kMaxExtentBytes) {
    return BadKeyStatus("extent_bytes",
                        "extent size must be 1.." + std::to_string(kMaxExtentBytes));
  }
  return bytes;
}

Result<std::unique_ptr<ObjectWriter>> RocksStore::Put(const ObjectKey& key,
                                                      const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(uint64_t extent_bytes,
                      ChooseExtentBytes(options, options_.default_extent_bytes));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  return NewWriter(WriteTarget{key, "", 0, options}, extent_bytes);
}

Result<std::unique_ptr<ObjectWriter>> RocksStore::NewWriter(WriteTarget target,
                                                            uint64_t extent_bytes) {
  // Refused before the body is read when its declared size does not fit above the reserve.
  OC_RETURN_IF_ERROR(AdmitWrite(target.options.expected_size.value_or(0)));
  OC_ASSIGN_OR_RETURN(uint64_t data_id, NewDataId());
  PutOptions options = target.options;
  return std::unique_ptr<ObjectWriter>(
      new CheckingWriter(std::move(options), /*etag_md5=*/true,
                         std::make_unique<RocksBody>(this, std::move(target), data_id, extent_bytes,
                                                     NewSegmentFlags())));
}

uint8_t RocksStore::NewSegmentFlags() const {
  switch (options_.extent_layout) {
    case ExtentLayout::kBlobFiles:
      return kSegmentExtentHash;
    case ExtentLayout::kDataFiles:
      return kSegmentDataFile;
    case ExtentLayout::kSstBlocks:
      break;
  }
  return 0;
}

Result<uint64_t> RocksStore::AppendDataExtent(rocksdb::WriteBatch* batch, uint64_t data_id,
                                              uint64_t index, ByteSpan bytes, StagedData* staged,
                                              FileBytes* live) {
  OC_RETURN_IF_ERROR(AdmitWrite(kFrameHeaderBytes + bytes.size()));
  Result<DataFiles::Appended> appended = data_files_->Append(data_id, index, bytes);
  if (!appended.has_value()) {
    return NoteSpace(appended.error());
  }
  DataFiles::Appended& a = *appended;
  staged->ticket = std::max(staged->ticket, a.ticket);
  if (staged->pins.empty() || staged->pins.back() != a.pin) {
    staged->pins.push_back(std::move(a.pin));
  }
  live->Add(a.locator.file, a.locator.frame_bytes());
  const ExtentKey key = EncodeExtentKey(data_id, index);
  OC_RETURN_IF_ERROR(FromRocks(batch->Put(extents_cf_, AsSlice(key), EncodeLocator(a.locator))));
  return a.locator.hash;
}

Result<ObjectMeta> RocksStore::CommitWrite(const WriteTarget& target, const Segment& segment,
                                           const std::array<std::byte, 16>& md5, bool flushed,
                                           rocksdb::WriteBatch* batch, const StagedData& staged) {
  // The record's batch (the last extents of an object that stays in RocksDB) above the
  // reserve too.
  if (Status admitted = AdmitWrite(batch->GetDataSize()); !admitted.ok()) {
    DiscardData(segment.data_id, flushed);
    return admitted;
  }
  // The bytes first: a record must never name bytes a crash could lose. On failure nothing
  // names them (garbage of their data file).
  OC_RETURN_IF_ERROR(NoteSpace(data_files_->AwaitSynced(staged.ticket)));
  uint64_t freed = 0;
  uint64_t ticket = 0;
  Result<ObjectMeta> meta =
      WriteCommit(target, segment, md5, flushed, batch, staged, &freed, &ticket);
  if (!meta.has_value()) {
    DiscardData(segment.data_id, flushed);  // nothing refers to the extents
    return meta;
  }
  // Written: the record is visible and refers to the extents, so they stay even if the sync
  // fails (the commit is then reported failed, as it may not survive a crash).
  OC_RETURN_IF_ERROR(AwaitDurable(ticket));
  NoteFreed(freed);
  return meta;
}

Result<ObjectMeta> RocksStore::WriteCommit(const WriteTarget& target, const Segment& segment,
                                           const std::array<std::byte, 16>& md5, bool flushed,
                                           rocksdb::WriteBatch* batch, const StagedData& staged,
                                           uint64_t* freed_out, uint64_t* ticket_out) {
  const std::string object_key = ObjectDbKey(target.key.bucket, target.key.name);
  const int64_t now = NowUnixMs();
  std::shared_lock bucket_lock(bucket_mu_);
  std::lock_guard key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(target.key.bucket, meta_read_));
  if (flushed) {
    OC_RETURN_IF_ERROR(FromRocks(batch->Delete(pending_cf_, PendingKey(segment.data_id))));
  }
  ObjectMeta meta;
  meta.size = segment.size;
  meta.etag = HexEncode(md5);
  meta.mtime_unix_ms = now;
  uint64_t freed = 0;
  FileBytes dead;
  if (target.upload_id.empty()) {
    OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> old, GetRecord(object_key, meta_read_));
    // Under the key lock: no other commit of the key can land between this check and the write.
    OC_RETURN_IF_ERROR(CheckWriteConditions(target.options, target.key.name, old));
    ObjectRecord record;
    record.meta = NewObjectMeta(target.options, meta.size, meta.etag, now);
    record.segments.push_back(segment);
    OC_RETURN_IF_ERROR(FromRocks(batch->Put(objects_cf_, object_key, EncodeObjectRecord(record))));
    if (old.has_value()) {
      freed = DeleteSegments(old->segments, batch, &dead);
    }
    meta = std::move(record.meta);
  } else {
    const std::string upload_key =
        UploadDbKey(target.key.bucket, target.key.name, target.upload_id);
    rocksdb::PinnableSlice upload;
    rocksdb::Status s = db_->Get(meta_read_, uploads_cf_, upload_key, &upload);
    if (s.IsNotFound()) {
      return Status::NotFound(Subject::kUpload, target.upload_id);
    }
    OC_RETURN_IF_ERROR(FromRocks(s));
    const std::string part_key = PartDbKey(target.upload_id, target.part_number);
    std::string old_part;
    s = db_->Get(meta_read_, parts_cf_, part_key, &old_part);
    if (!s.IsNotFound()) {
      OC_RETURN_IF_ERROR(FromRocks(s));
      OC_ASSIGN_OR_RETURN(PartRecord old, DecodePartRecord(old_part));
      freed = DeleteSegments({old.segment}, batch, &dead);
    }
    PartRecord part{segment, md5, now, ChecksumOfHeaders(target.options.headers)};
    OC_RETURN_IF_ERROR(FromRocks(batch->Put(parts_cf_, part_key, EncodePartRecord(part))));
  }
  OC_ASSIGN_OR_RETURN(*ticket_out, WriteForDurability(batch));
  NoteDataFiles(staged.live, dead);
  *freed_out = freed;
  return meta;
}

Result<uint64_t> RocksStore::WriteForDurability(rocksdb::WriteBatch* batch) {
  OC_RETURN_IF_ERROR(NoteSpace(FromRocks(db_->Write(unsynced_, batch))));
  return wal_sync_ != nullptr ? wal_sync_->Written() : 0;
}

Status RocksStore::AwaitDurable(uint64_t ticket) {
  return wal_sync_ != nullptr ? NoteSpace(wal_sync_->AwaitSynced(ticket)) : Status::Ok();
}

void RocksStore::DiscardData(uint64_t data_id, bool flushed) {
  if (!flushed) {
    return;  // nothing reached RocksDB
  }
  rocksdb::WriteBatch batch;
  (void)batch.DeleteRange(extents_cf_, AsSlice(ExtentRangeBegin(data_id)),
                          AsSlice(ExtentRangeEnd(data_id)));
  (void)batch.Delete(pending_cf_, PendingKey(data_id));
  // Unsynced: if this is lost in a crash, recovery frees the still-pending id.
  Status s = FromRocks(db_->Write(unsynced_, &batch));
  if (!s.ok()) {
    kLog.Warn("discarding data id {} failed: {}", data_id, s.ToString());
  }
}

Status RocksStore::Delete(const ObjectKey& key) { return DeleteObject(key, nullptr); }

Status RocksStore::DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) {
  return DeleteObject(key, &expected);
}

Status RocksStore::DeleteObject(const ObjectKey& key, const ObjectVersionMatch* expected) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  const std::string object_key = ObjectDbKey(key.bucket, key.name);
  std::shared_lock bucket_lock(bucket_mu_);
  std::unique_lock key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record, GetRecord(object_key, meta_read_));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  // Decided under the key lock, which every commit of the key takes: nothing can replace the
  // record between this check and the batch.
  if (expected != nullptr && (record->meta.etag != expected->etag ||
                              record->meta.mtime_unix_ms != expected->mtime_unix_ms)) {
    return Status::FailedPrecondition(Subject::kKey, "the object changed: " + key.name);
  }
  rocksdb::WriteBatch batch;
  OC_RETURN_IF_ERROR(FromRocks(batch.Delete(objects_cf_, object_key)));
  FileBytes dead;
  const uint64_t freed = DeleteSegments(record->segments, &batch, &dead);
  // Deletes are never held to the reserve: they are how space comes back. RocksDB stopped by
  // a full disk refuses them too, so one Resume (which the reserve leaves room for) first.
  Result<uint64_t> ticket = WriteForDurability(&batch);
  if (!ticket.has_value() && IsNoSpace(ticket.error()) && ResumeDb(/*flush=*/false).ok()) {
    ticket = WriteForDurability(&batch);
  }
  if (!ticket.has_value()) {
    MaybeRecoverSpace();
    return ticket.error();
  }
  NoteDataFiles({}, dead);
  key_lock.unlock();
  bucket_lock.unlock();
  if (Status s = AwaitDurable(*ticket); !s.ok()) {
    MaybeRecoverSpace();  // a failed WAL sync is sticky until the recovery re-arms it
    return s;
  }
  NoteFreed(freed);
  return Status::Ok();
}

Result<ObjectMeta> RocksStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                    const std::optional<PutOptions>& replace,
                                    const WriteConditions& conditions) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(src.name));
  OC_RETURN_IF_ERROR(ValidateObjectKey(dst.name));
  if (src.bucket == dst.bucket && src.name == dst.name) {
    // Same key: the bytes stay where they are; only the metadata (and mtime) change.
    const std::string object_key = ObjectDbKey(dst.bucket, dst.name);
    std::shared_lock bucket_lock(bucket_mu_);
    std::lock_guard key_lock(KeyMutex(object_key));
    OC_RETURN_IF_ERROR(CheckBucket(dst.bucket, meta_read_));
    OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record, GetRecord(object_key, meta_read_));
    if (!record.has_value()) {
      return Status::NotFound(Subject::kKey, src.name);
    }
    OC_RETURN_IF_ERROR(CheckWriteConditions(conditions, dst.name, record));
    if (replace.has_value()) {
      ReplaceMetadata(&record->meta, *replace);
    }
    record->meta.mtime_unix_ms = NowUnixMs();
    OC_RETURN_IF_ERROR(AdmitWrite(0));
    OC_RETURN_IF_ERROR(
        FromRocks(db_->Put(synced_, objects_cf_, object_key, EncodeObjectRecord(*record))));
    return std::move(record->meta);
  }
  return StreamCopy(*this, src, *this, dst, replace, conditions, kCopyBufferBytes);
}

Result<ObjectMeta> RocksStore::PutObjectTags(const ObjectKey& key, const Tags& tags) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  // Only the record changes, under the key lock like any commit of the key: bytes, ETag and
  // mtime stay (S3 PutObjectTagging).
  const std::string object_key = ObjectDbKey(key.bucket, key.name);
  std::shared_lock bucket_lock(bucket_mu_);
  std::lock_guard key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record, GetRecord(object_key, meta_read_));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  record->meta.tags = tags;
  OC_RETURN_IF_ERROR(AdmitWrite(0));
  OC_RETURN_IF_ERROR(
      FromRocks(db_->Put(synced_, objects_cf_, object_key, EncodeObjectRecord(*record))));
  return std::move(record->meta);
}

}  // namespace oc::storage
