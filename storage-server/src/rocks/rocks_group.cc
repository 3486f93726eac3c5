// RocksStore::PutGroup: objects of one bucket written under fresh data ids and made visible
// together by one metadata write (store.h, ObjectGroupWriter;
// docs/decisions/kv-descriptor-put-all-or-nothing.md).
//
// The extents of every object of the group go into one shared WriteBatch, written unsynced
// whenever it holds write_batch_bytes, so memory stays bounded whatever the group's size;
// each data id's pending record goes into the batch of its first extent. Until the commit no
// object record refers to those extents, so no reader can see them, and recovery at open
// frees every pending id (rocks_store.h). The commit writes the last extents, every object
// record, the removal of every pending record and the DeleteRange of every replaced version
// in one batch under the keys' locks, then waits for a WAL sync like any object commit.

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "names.h"
#include "object/checking_writer.h"
#include "object/new_records.h"
#include "oc/common/log.h"
#include "records/chunk_etag.h"
#include "records/meta_codec.h"
#include "rocks/extent_buffer.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {
namespace {

const Logger kLog{"storage"};

class RocksGroupWriter final : public ObjectGroupWriter {
 public:
  RocksGroupWriter(RocksStore* store, std::string bucket, uint8_t flags)
      : store_(store), bucket_(std::move(bucket)), flags_(flags) {}

  ~RocksGroupWriter() override {
    if (!written_) {
      Discard();
    }
  }

  Status Begin(std::string_view name, const PutOptions& options) override {
    OC_RETURN_IF_ERROR(Usable());
    failed_ = EndObject();
    OC_RETURN_IF_ERROR(failed_);
    OC_RETURN_IF_ERROR(ValidateObjectKey(name));
    OC_ASSIGN_OR_RETURN(const uint64_t extent_bytes,
                        ChooseExtentBytes(options, store_->options().default_extent_bytes));
    Result<uint64_t> data_id = store_->NewDataId();
    if (!data_id.has_value()) {
      failed_ = data_id.error();
      return failed_;
    }
    RocksStore::GroupMember m;
    m.name = std::string(name);
    m.options = options;
    m.segment = Segment{*data_id, 0, extent_bytes, flags_};
    // The ETag reuses each extent's XXH3-64 when extents are its pieces (always for a
    // descriptor PUT's chunks); MD5 only to check a Content-MD5.
    const uint64_t piece_bytes = ChunkEtag::PieceBytes(options);
    etag_.emplace(piece_bytes);
    etag_from_extents_ = piece_bytes == extent_bytes;
    check_.emplace(options, /*etag_md5=*/false);
    members_.push_back(std::move(m));
    next_extent_ = 0;
    buf_.Clear();
    return Status::Ok();
  }

  Status Append(ByteSpan data) override {
    OC_RETURN_IF_ERROR(Usable());
    if (!etag_.has_value()) {
      return Status::FailedPrecondition(Subject::kEntity, "Append before Begin");
    }
    RocksStore::GroupMember& m = members_.back();
    check_->Update(data);
    if (!etag_from_extents_) {
      etag_->Update(data);
    }
    m.segment.size += data.size();
    const uint64_t extent_bytes = m.segment.extent_bytes;
    while (!data.empty()) {
      if (buf_.capacity() < extent_bytes) {
        uint64_t want = extent_bytes;
        if (m.options.expected_size.has_value()) {
          want = std::min(want, *m.options.expected_size);
        }
        buf_.Reserve(want);
      }
      const uint64_t n = std::min<uint64_t>(extent_bytes - buf_.size(), data.size());
      buf_.Append(data.first(n));
      data = data.subspan(n);
      if (buf_.size() == extent_bytes) {
        failed_ = EmitExtent(/*may_flush=*/true);
        OC_RETURN_IF_ERROR(failed_);
      }
    }
    return Status::Ok();
  }

  Result<std::vector<GroupCommitted>> Commit() override {
    OC_RETURN_IF_ERROR(Usable());
    spent_ = true;
    OC_RETURN_IF_ERROR(EndObject());
    bool written = false;
    Result<std::vector<GroupCommitted>> r =
        store_->CommitGroup(bucket_, members_, &batch_, staged_.ticket, &written);
    // Written: the records refer to the extents, which stay even if the sync failed (the
    // commit is then reported failed, as it may not survive a crash).
    written_ = written;
    return r;
  }

 private:
  Status Usable() const {
    if (spent_) {
      return Status::FailedPrecondition(Subject::kEntity, "group already committed");
    }
    return failed_;
  }

  // Ends the object in progress: its last extent, its digest and the checks of its options.
  Status EndObject() {
    if (!etag_.has_value()) {
      return Status::Ok();
    }
    if (!buf_.empty()) {
      OC_RETURN_IF_ERROR(EmitExtent(/*may_flush=*/false));
    }
    RocksStore::GroupMember& m = members_.back();
    m.etag = etag_->Finish();
    etag_.reset();
    const Status checked = check_->Finish(m.name);
    check_.reset();
    return checked;
  }

  Status EmitExtent(bool may_flush) {
    const uint64_t data_id = members_.back().segment.data_id;
    if ((flags_ & kSegmentDataFile) != 0) {
      // The bytes go to a data file now; only the locator waits in the batch for Commit
      // (32 bytes per extent: no flush, so no pending record).
      OC_ASSIGN_OR_RETURN(const uint64_t hash,
                          store_->AppendDataExtent(&batch_, data_id, next_extent_++, buf_.bytes(),
                                                   &staged_, &members_.back().live));
      if (etag_from_extents_) {
        etag_->AddPieceHash(hash);  // the frame's hash, not computed again
      }
      buf_.Clear();
      return Status::Ok();
    }
    if (next_extent_ == 0) {
      OC_RETURN_IF_ERROR(FromRocks(batch_.Put(store_->pending_cf(), PendingKey(data_id), "")));
    }
    uint64_t hash = 0;
    OC_RETURN_IF_ERROR(AddExtent(&batch_, store_->extents_cf(), data_id, next_extent_++, flags_,
                                 buf_.bytes(), etag_from_extents_ ? &hash : nullptr));
    if (etag_from_extents_) {
      etag_->AddPieceHash(hash);  // a blob extent's trailer hash, or hashed once here
    }
    batch_bytes_ += buf_.size();
    buf_.Clear();
    if (may_flush && batch_bytes_ >= store_->options().write_batch_bytes) {
      OC_RETURN_IF_ERROR(store_->AdmitWrite(batch_bytes_));
      OC_RETURN_IF_ERROR(
          store_->NoteSpace(FromRocks(store_->db()->Write(store_->unsynced(), &batch_))));
      batch_.Clear();
      batch_bytes_ = 0;
      flushed_members_ = members_.size();
    }
    return Status::Ok();
  }

  // Frees what earlier flushes wrote: the extents and pending records of every object begun
  // before the last flush (extents still in batch_ never reached RocksDB).
  void Discard() {
    if (flushed_members_ == 0) {
      return;
    }
    rocksdb::WriteBatch batch;
    for (size_t i = 0; i < flushed_members_; ++i) {
      const uint64_t id = members_[i].segment.data_id;
      (void)batch.DeleteRange(store_->extents_cf(), AsSlice(ExtentRangeBegin(id)),
                              AsSlice(ExtentRangeEnd(id)));
      (void)batch.Delete(store_->pending_cf(), PendingKey(id));
    }
    // Unsynced: if this is lost in a crash, recovery frees the still-pending ids.
    Status s = FromRocks(store_->db()->Write(store_->unsynced(), &batch));
    if (!s.ok()) {
      kLog.Warn("discarding {} staged objects failed: {}", flushed_members_, s.ToString());
    }
    flushed_members_ = 0;
  }

  RocksStore* const store_;
  const std::string bucket_;
  const uint8_t flags_;
  std::vector<RocksStore::GroupMember> members_;
  // Of the object in progress; empty between objects.
  std::optional<ChunkEtag> etag_;
  bool etag_from_extents_ = false;  // each extent is a piece: its hash is the piece's
  std::optional<BodyCheck> check_;  // size and Content-MD5 (object/checking_writer.h)
  ExtentBuffer buf_;                // the extent being filled
  rocksdb::WriteBatch batch_;
  uint64_t batch_bytes_ = 0;
  StagedData staged_;  // data-file appends (their live bytes are per member)
  uint64_t next_extent_ = 0;
  size_t flushed_members_ = 0;  // members_[0, this) may have extents in RocksDB
  bool spent_ = false;
  bool written_ = false;
  Status failed_;
};

}  // namespace

Result<std::unique_ptr<ObjectGroupWriter>> RocksStore::PutGroup(std::string_view bucket) {
  OC_RETURN_IF_ERROR(CheckBucket(bucket, meta_read_));
  OC_RETURN_IF_ERROR(AdmitWrite(0));
  return std::unique_ptr<ObjectGroupWriter>(
      new RocksGroupWriter(this, std::string(bucket), NewSegmentFlags()));
}

Result<std::vector<GroupCommitted>> RocksStore::CommitGroup(std::string_view bucket,
                                                            std::span<const GroupMember> members,
                                                            rocksdb::WriteBatch* batch,
                                                            uint64_t data_ticket, bool* written) {
  *written = false;
  OC_RETURN_IF_ERROR(AdmitWrite(batch->GetDataSize()));
  // The bytes first: a record must never name bytes a crash could lose.
  OC_RETURN_IF_ERROR(NoteSpace(data_files_->AwaitSynced(data_ticket)));
  std::vector<std::string> keys;
  keys.reserve(members.size());
  std::vector<size_t> stripes;
  stripes.reserve(members.size());
  for (const GroupMember& m : members) {
    keys.push_back(ObjectDbKey(bucket, m.name));
    stripes.push_back(KeyStripe(keys.back()));
  }
  // Every stripe once, in ascending order: single-key commits hold one stripe at a time, so
  // taking several in a fixed order cannot deadlock with them or with another group.
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  // A name given twice keeps its last object; the earlier one's extents are freed.
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < keys.size(); ++i) {
    last[keys[i]] = i;
  }
  const int64_t now = NowUnixMs();
  std::vector<GroupCommitted> results(members.size());
  uint64_t freed = 0;
  FileBytes added;
  FileBytes dead;
  uint64_t ticket = 0;
  {
    std::shared_lock bucket_lock(bucket_mu_);
    std::vector<std::unique_lock<std::mutex>> key_locks;
    key_locks.reserve(stripes.size());
    for (const size_t s : stripes) {
      key_locks.emplace_back(key_mu_[s]);
    }
    OC_RETURN_IF_ERROR(CheckBucket(bucket, meta_read_));
    for (size_t i = 0; i < members.size(); ++i) {
      const GroupMember& m = members[i];
      OC_RETURN_IF_ERROR(FromRocks(batch->Delete(pending_cf_, PendingKey(m.segment.data_id))));
      ObjectRecord record;
      record.meta = NewObjectMeta(m.options, m.segment.size, m.etag, now);
      record.segments.push_back(m.segment);
      if (last[keys[i]] != i) {
        freed += DeleteSegments(record.segments, batch, &dead);
        results[i].meta = std::move(record.meta);
        continue;
      }
      OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> old, GetRecord(keys[i], meta_read_));
      if (m.options.if_none_match && old.has_value()) {
        // Create-if-absent, decided under the keys' locks: no commit of this key can land
        // between this read and the batch. The member's bytes go as a superseded one's do.
        freed += DeleteSegments(record.segments, batch, &dead);
        results[i] = GroupCommitted{std::move(old->meta), true};
        continue;
      }
      for (const auto& [file, bytes] : m.live.items) {  // a freed member's never count
        added.Add(file, bytes);
      }
      OC_RETURN_IF_ERROR(FromRocks(batch->Put(objects_cf_, keys[i], EncodeObjectRecord(record))));
      if (old.has_value()) {
        freed += DeleteSegments(old->segments, batch, &dead);
      }
      results[i].meta = std::move(record.meta);
    }
    for (size_t i = 0; i < members.size(); ++i) {
      results[i].existed = results[last[keys[i]]].existed;
    }
    OC_ASSIGN_OR_RETURN(ticket, WriteForDurability(batch));
    *written = true;
    NoteDataFiles(added, dead);
  }
  OC_RETURN_IF_ERROR(AwaitDurable(ticket));
  NoteFreed(freed);
  return results;
}

}  // namespace oc::storage
