// RadosStore::PutGroup: a descriptor PUT's chunks (store.h ObjectGroupWriter). Every member's
// data objects are written first, under fresh version ids that no record names, with several
// members' last writes in flight at once. Commit checks every member (sizes, digests) and waits
// for every write; only then does anything become visible: the members are grouped by index
// shard and each shard's members commit in ONE guarded op (rados_store.h).
//
// RADOS has no atomic write across objects, so a group spanning several shards commits shard
// by shard. A member begun with if_none_match keeps the record it finds in its shard's op
// (compared like any other), so the check is atomic with that shard's commit. What that
// means (also in store.h):
//   - a refused group (a size or digest check, a failed data write, the source's error, a
//     dropped writer) stores nothing: no commit op was sent, and its data objects are removed;
//   - each shard's members appear together, each object whole, replacing its earlier version;
//   - a crash of this process, or an engine error on one shard's op, between two shard
//     commits leaves the members of the shards already committed visible and the others not
//     (their data objects then wait for the orphan scrub). Readers never see a torn object,
//     and a descriptor GET serves only the present prefix of the chunks.

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "names.h"
#include "object/checking_writer.h"
#include "object/new_records.h"
#include "rados/rados_store.h"
#include "rados/rados_stream.h"

namespace oc::storage {
namespace {

// Members whose last writes may still be in flight while the next member streams.
constexpr size_t kMembersInFlight = 8;

class RadosGroupWriter final : public ObjectGroupWriter {
 public:
  RadosGroupWriter(RadosStore* store, std::string bucket, RadosStore::BucketRef ref)
      : store_(store), bucket_(std::move(bucket)), ref_(ref) {}

  ~RadosGroupWriter() override {
    if (!committed_) {
      DiscardAll();
    }
  }

  Status Begin(std::string_view name, const PutOptions& options) override {
    OC_RETURN_IF_ERROR(Usable());
    failed_ = EndObject();
    OC_RETURN_IF_ERROR(failed_);
    OC_RETURN_IF_ERROR(ValidateObjectKey(name));
    OC_ASSIGN_OR_RETURN(const uint64_t object_bytes, store_->ChooseObjectBytes(options));
    Member m;
    m.name = std::string(name);
    m.options = options;
    rados::StreamHashes hashes;  // the chunk ETag (records/chunk_etag.h)
    hashes.chunk_etag = true;
    hashes.chunk_piece_bytes = ChunkEtag::PieceBytes(options);
    m.stream = std::make_unique<rados::DataStream>(store_->io(), ref_.id, m.name,
                                                   store_->NewVersion(object_bytes), hashes);
    check_.emplace(options, /*etag_md5=*/false);
    members_.push_back(std::move(m));
    return Status::Ok();
  }

  Status Append(ByteSpan data) override {
    OC_RETURN_IF_ERROR(Usable());
    if (members_.empty() || members_.back().stream == nullptr) {
      return Status::FailedPrecondition(Subject::kEntity, "Append before Begin");
    }
    if (check_.has_value()) {  // none once the member ended: its closed stream refuses
      check_->Update(data);
    }
    failed_ = members_.back().stream->Append(data);
    return failed_;
  }

  Result<std::vector<GroupCommitted>> Commit() override {
    OC_RETURN_IF_ERROR(Usable());
    spent_ = true;
    failed_ = EndObject();
    while (failed_.ok() && !closing_.empty()) {
      failed_ = FinishOldest();
    }
    OC_RETURN_IF_ERROR(failed_);
    // Every byte is written and checked: build the records, last of a repeated name wins.
    const int64_t now = RadosNowUnixMs();
    std::unordered_map<std::string_view, size_t> last;
    for (size_t i = 0; i < members_.size(); ++i) {
      last[members_[i].name] = i;
    }
    std::map<uint32_t, std::vector<size_t>> by_shard;  // shard -> members, in Begin order
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      m.record.meta = NewObjectMeta(m.options, m.segment.size, m.etag, now);
      m.record.segments.push_back(m.segment);
      if (last[m.name] == i) {
        by_shard[rados::ShardOf(m.name, ref_.shards)].push_back(i);
      }
    }
    // Shards in the order of their first member, so an interrupted group leaves the earliest
    // chunks visible more often than the later ones.
    std::vector<std::vector<size_t>> order;
    for (auto& [shard, idx] : by_shard) {
      order.push_back(idx);
    }
    std::sort(order.begin(), order.end(),
              [](const auto& a, const auto& b) { return a.front() < b.front(); });
    for (const std::vector<size_t>& idx : order) {
      std::vector<RadosStore::KeyChange> changes;
      for (const size_t i : idx) {
        RadosStore::KeyChange c;
        c.name = members_[i].name;
        Member* m = &members_[i];
        // Create-if-absent keeps a present record: the op still compares it, so a key that
        // changed meanwhile makes the commit re-read and decide again (rados_commit.cc), and
        // the decision of the attempt that applied is the one reported.
        c.decide = [m](const std::optional<ObjectRecord>& current) {
          m->existed = m->options.if_none_match && current.has_value();
          if (m->existed) {
            m->kept = current->meta;
            return Result<std::optional<ObjectRecord>>(*current);
          }
          return Result<std::optional<ObjectRecord>>(m->record);
        };
        changes.push_back(std::move(c));
      }
      const uint32_t shard = rados::ShardOf(members_[idx.front()].name, ref_.shards);
      Result<std::vector<std::optional<ObjectRecord>>> done =
          store_->CommitShard(bucket_, ref_, shard, changes, /*read_first=*/false);
      if (!done.has_value()) {
        const Code code = done.error().code();
        // Ambiguous outcomes (a timeout) may have applied: keep those members' data.
        const bool may_have_applied = code == Code::kUnavailable || code == Code::kIOError;
        for (const size_t i : idx) {
          members_[i].committed = may_have_applied;
        }
        return done.error();
      }
      for (const size_t i : idx) {
        members_[i].committed = true;
      }
    }
    committed_ = true;
    // Earlier objects of a repeated name, and members whose key existed, never became
    // visible: their data goes now.
    std::vector<GroupCommitted> results(members_.size());
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      const Member& outcome = members_[last[m.name]];
      results[i].existed = outcome.existed;
      results[i].meta = m.existed ? m.kept : m.record.meta;
      if (last[m.name] != i || m.existed) {
        store_->RemoveData(ref_.id, m.segment);
      }
    }
    return results;
  }

 private:
  struct Member {
    std::string name;
    PutOptions options;
    std::unique_ptr<rados::DataStream> stream;  // until its writes are waited for
    Segment segment;
    std::string etag;  // records/chunk_etag.h
    ObjectRecord record;
    bool committed = false;
    bool existed = false;  // if_none_match found the key present at the commit
    ObjectMeta kept;       // then: the metadata of the object it kept
  };

  Status Usable() const {
    if (spent_) {
      return Status::FailedPrecondition(Subject::kEntity, "group already committed");
    }
    return failed_;
  }

  // Ends the member in progress: its last piece goes out, its checks run; its writes are
  // waited for later (at most kMembersInFlight members stay unwaited).
  Status EndObject() {
    if (members_.empty() || members_.back().stream == nullptr ||
        (!closing_.empty() && closing_.back() == members_.size() - 1)) {
      return Status::Ok();
    }
    Member& m = members_.back();
    OC_RETURN_IF_ERROR(m.stream->Close());
    m.segment = m.stream->segment();
    m.etag = m.stream->chunk_etag();
    closing_.push_back(members_.size() - 1);
    const Status checked = check_->Finish(m.name);
    check_.reset();
    OC_RETURN_IF_ERROR(checked);
    while (closing_.size() > kMembersInFlight) {
      OC_RETURN_IF_ERROR(FinishOldest());
    }
    return Status::Ok();
  }

  Status FinishOldest() {
    Member& m = members_[closing_.front()];
    closing_.pop_front();
    Status s = m.stream->Finish();
    m.stream.reset();
    return s;
  }

  // Removes the data of every member not committed (best effort).
  void DiscardAll() {
    for (Member& m : members_) {
      if (m.committed) {
        continue;
      }
      if (m.stream != nullptr) {
        m.stream->Discard();
        m.stream.reset();
      } else {
        store_->RemoveData(ref_.id, m.segment);
      }
    }
  }

  RadosStore* const store_;
  const std::string bucket_;
  const RadosStore::BucketRef ref_;
  std::vector<Member> members_;
  std::deque<size_t> closing_;  // members closed whose writes are not waited for yet
  // The size and Content-MD5 of the member in progress (object/checking_writer.h).
  std::optional<BodyCheck> check_;
  bool spent_ = false;
  bool committed_ = false;
  Status failed_;
};

}  // namespace

Result<std::unique_ptr<ObjectGroupWriter>> RadosStore::PutGroup(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  return std::unique_ptr<ObjectGroupWriter>(new RadosGroupWriter(this, std::string(bucket), ref));
}

}  // namespace oc::storage
