// Multipart uploads: an upload record per upload, a part record per part (each part's
// bytes under its own data id), and completion that writes an object record whose
// segments are the listed parts' data ids, so no byte is copied (S3 CompleteMultipartUpload).

#include <chrono>
#include <random>

#include <rocksdb/snapshot.h>

#include "names.h"
#include "object/new_records.h"
#include "records/multipart_complete.h"
#include "records/multipart_names.h"
#include "records/write_conditions.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {

Result<UploadRecord> RocksStore::GetUpload(const rocksdb::ReadOptions& ro, const ObjectKey& key,
                                           std::string_view upload_id) {
  if (!IsUploadId(upload_id)) {
    return NoSuchUpload(upload_id);
  }
  rocksdb::PinnableSlice value;
  rocksdb::Status s =
      db_->Get(ro, uploads_cf_, UploadDbKey(key.bucket, key.name, upload_id), &value);
  if (s.IsNotFound()) {
    return NoSuchUpload(upload_id);
  }
  OC_RETURN_IF_ERROR(FromRocks(s));
  return DecodeUploadRecord(value.ToStringView());
}

Result<std::vector<NumberedPart>> RocksStore::GetParts(const rocksdb::ReadOptions& ro,
                                                       std::string_view upload_id) {
  std::vector<NumberedPart> parts;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, parts_cf_));
  for (it->Seek(PartDbKey(upload_id, 0)); it->Valid() && it->key().starts_with(upload_id);
       it->Next()) {
    if (it->key().size() != upload_id.size() + 4) {
      return Status::Corruption("malformed part key");
    }
    const uint32_t number =
        GetBigEndian32(reinterpret_cast<const std::byte*>(it->key().data() + upload_id.size()));
    OC_ASSIGN_OR_RETURN(PartRecord part, DecodePartRecord(it->value().ToStringView()));
    parts.push_back(NumberedPart{number, part});
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return parts;
}

Result<std::string> RocksStore::CreateMultipartUpload(const ObjectKey& key,
                                                      const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  UploadRecord record = NewUploadRecord(options, NowUnixMs());
  OC_ASSIGN_OR_RETURN(record.extent_bytes,
                      ChooseExtentBytes(options, options_.default_extent_bytes));
  OC_RETURN_IF_ERROR(AdmitWrite(0));
  const std::string upload_id = NewUploadId();
  std::shared_lock bucket_lock(bucket_mu_);
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_RETURN_IF_ERROR(
      FromRocks(db_->Put(synced_, uploads_cf_, UploadDbKey(key.bucket, key.name, upload_id),
                         EncodeUploadRecord(record))));
  return upload_id;
}

Result<std::unique_ptr<ObjectWriter>> RocksStore::UploadPart(const ObjectKey& key,
                                                             std::string_view upload_id,
                                                             uint32_t part_number,
                                                             const PutOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_RETURN_IF_ERROR(CheckPartNumber(part_number));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(UploadRecord upload, GetUpload(meta_read_, key, upload_id));
  OC_ASSIGN_OR_RETURN(PutOptions part_options, PartWriteOptions(upload, options));
  part_options.extent_bytes = upload.extent_bytes;
  return NewWriter(WriteTarget{key, std::string(upload_id), part_number, part_options},
                   upload.extent_bytes);
}

Result<ObjectMeta> RocksStore::CompleteMultipartUpload(const ObjectKey& key,
                                                       std::string_view upload_id,
                                                       std::span<const CompletedPart> parts,
                                                       const CompleteOptions& options) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  const std::string object_key = ObjectDbKey(key.bucket, key.name);
  std::shared_lock bucket_lock(bucket_mu_);
  std::lock_guard key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  Result<UploadRecord> upload = GetUpload(meta_read_, key, upload_id);
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> old, GetRecord(object_key, meta_read_));
  if (!upload.has_value()) {
    // A retry of a completion that succeeded: the object it made answers (S3 does).
    if (upload.error().subject() == Subject::kUpload && old.has_value() &&
        old->completed_upload_id == upload_id) {
      return std::move(old->meta);
    }
    return upload.error();
  }
  OC_RETURN_IF_ERROR(CheckListedParts(parts));
  // Under the key lock: no other commit of the key can land between this check and the write.
  OC_RETURN_IF_ERROR(CheckWriteConditions(options.conditions, key.name, old));
  OC_ASSIGN_OR_RETURN(const std::vector<NumberedPart> stored, GetParts(meta_read_, upload_id));
  OC_ASSIGN_OR_RETURN(CompletedUpload done,
                      CompleteUpload(parts, stored, *upload, options, NowUnixMs()));
  done.record.completed_upload_id = std::string(upload_id);
  rocksdb::WriteBatch batch;
  OC_RETURN_IF_ERROR(
      FromRocks(batch.Put(objects_cf_, object_key, EncodeObjectRecord(done.record))));
  OC_RETURN_IF_ERROR(
      FromRocks(batch.Delete(uploads_cf_, UploadDbKey(key.bucket, key.name, upload_id))));
  uint64_t freed = 0;
  FileBytes dead;
  for (size_t i = 0; i < stored.size(); ++i) {
    OC_RETURN_IF_ERROR(FromRocks(batch.Delete(parts_cf_, PartDbKey(upload_id, stored[i].number))));
    if (!done.stitched[i]) {
      freed += DeleteSegments({stored[i].part.segment}, &batch, &dead);
    }
  }
  if (old.has_value()) {
    freed += DeleteSegments(old->segments, &batch, &dead);
  }
  OC_RETURN_IF_ERROR(FromRocks(db_->Write(synced_, &batch)));
  NoteDataFiles({}, dead);
  NoteFreed(freed);
  return std::move(done.record.meta);
}

Status RocksStore::AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  const std::string object_key = ObjectDbKey(key.bucket, key.name);
  std::shared_lock bucket_lock(bucket_mu_);
  std::lock_guard key_lock(KeyMutex(object_key));
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, meta_read_));
  OC_ASSIGN_OR_RETURN(UploadRecord upload, GetUpload(meta_read_, key, upload_id));
  (void)upload;
  OC_ASSIGN_OR_RETURN(auto stored, GetParts(meta_read_, upload_id));
  rocksdb::WriteBatch batch;
  OC_RETURN_IF_ERROR(
      FromRocks(batch.Delete(uploads_cf_, UploadDbKey(key.bucket, key.name, upload_id))));
  uint64_t freed = 0;
  FileBytes dead;
  for (const auto& [number, part] : stored) {
    OC_RETURN_IF_ERROR(FromRocks(batch.Delete(parts_cf_, PartDbKey(upload_id, number))));
    freed += DeleteSegments({part.segment}, &batch, &dead);
  }
  OC_RETURN_IF_ERROR(FromRocks(db_->Write(synced_, &batch)));
  NoteDataFiles({}, dead);
  NoteFreed(freed);
  return Status::Ok();
}

Result<ListPartsResult> RocksStore::ListParts(const ObjectKey& key, std::string_view upload_id,
                                              uint32_t part_number_marker, uint32_t max_parts) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, ro));
  OC_ASSIGN_OR_RETURN(UploadRecord upload, GetUpload(ro, key, upload_id));
  ListPartsResult result;
  result.checksum_header = upload.checksum_header;
  result.checksum_type = upload.checksum_type;
  if (part_number_marker >= kMaxPartNumber || max_parts == 0) {
    return result;
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, parts_cf_));
  for (it->Seek(PartDbKey(upload_id, part_number_marker + 1));
       it->Valid() && it->key().starts_with(upload_id); it->Next()) {
    if (result.parts.size() == max_parts) {
      result.truncated = true;
      break;
    }
    if (it->key().size() != upload_id.size() + 4) {
      return Status::Corruption("malformed part key");
    }
    const uint32_t number =
        GetBigEndian32(reinterpret_cast<const std::byte*>(it->key().data() + upload_id.size()));
    OC_ASSIGN_OR_RETURN(PartRecord part, DecodePartRecord(it->value().ToStringView()));
    result.parts.push_back(PartInfo{number, part.segment.size, HexEncode(part.md5),
                                    part.mtime_unix_ms, std::move(part.checksum)});
    result.next_part_number_marker = number;
  }
  OC_RETURN_IF_ERROR(FromRocks(it->status()));
  return result;
}

}  // namespace oc::storage
