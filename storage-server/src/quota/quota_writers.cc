// The writers a quota store hands out for quota buckets (quota_internal.h): they forward the
// bytes, stop a streamed body as soon as it cannot fit, and at Commit lock the key, read the
// size the commit replaces, take the charge, commit and settle it. A refusal at Commit leaves
// the inner writer uncommitted: it discards what it wrote when it is destroyed (store.h).
#include <map>
#include <utility>

#include "quota/quota_internal.h"

namespace oc::storage::quota {
namespace {

int64_t Signed(uint64_t v) { return static_cast<int64_t>(v); }

// The bytes of one object or part, checked against the room as they come.
class ByteCount {
 public:
  ByteCount(QuotaStore& store, std::string bucket, uint64_t old)
      : store_(store), bucket_(bucket), old_(old), room_(store.Room(bucket, old)) {}

  // Admits `n` more bytes: kOk, or QuotaExceeded once the body cannot fit whatever else
  // happens before its commit (the room is re-read first: others may have freed some).
  Status Admit(uint64_t n) {
    if (appended_ + n > room_) {
      room_ = store_.Room(bucket_, old_);
      if (appended_ + n > room_) {
        OC_RETURN_IF_ERROR(
            store_.usage().Check(bucket_, Delta{Signed(appended_ + n) - Signed(old_), 0, 0}));
      }
    }
    appended_ += n;
    return Status::Ok();
  }
  uint64_t appended() const { return appended_; }

 private:
  QuotaStore& store_;
  std::string bucket_;
  uint64_t old_;
  uint64_t room_;
  uint64_t appended_ = 0;
};

// An object's or a part's writer; `part` set for UploadPart.
class QuotaWriter final : public ObjectWriter {
 public:
  struct Part {
    std::string upload_id;
    uint32_t number = 0;
  };

  QuotaWriter(QuotaStore& store, ObjectKey key, std::optional<Part> part,
              std::unique_ptr<ObjectWriter> inner, uint64_t old)
      : store_(store),
        key_(std::move(key)),
        part_(std::move(part)),
        inner_(std::move(inner)),
        count_(store, key_.bucket, old) {}

  Status Append(ByteSpan data) override {
    OC_RETURN_IF_ERROR(count_.Admit(data.size()));
    return inner_->Append(data);
  }
  Result<MutableByteSpan> AppendSpace(uint64_t min_bytes, uint64_t max_bytes) override {
    return inner_->AppendSpace(min_bytes, max_bytes);
  }
  Status Appended(uint64_t n) override {
    if (Status s = count_.Admit(n); !s.ok()) {
      (void)inner_->Appended(0);  // ends the lend; the writer is failed anyway
      return s;
    }
    return inner_->Appended(n);
  }
  Status AddHeader(std::string name, std::string value) override {
    return inner_->AddHeader(std::move(name), std::move(value));
  }

  Result<ObjectMeta> Commit() override {
    QuotaUsage& usage = store_.usage();
    if (part_.has_value()) {
      KeyLocks::Held held = store_.locks().Lock({UploadLockName(key_, part_->upload_id)});
      OC_ASSIGN_OR_RETURN(const uint64_t old,
                          store_.OldPartSize(key_, part_->upload_id, part_->number));
      const Delta delta{0, 0, Signed(count_.appended()) - Signed(old)};
      OC_ASSIGN_OR_RETURN(Charge charge, usage.Take(key_.bucket, delta));
      Result<ObjectMeta> done = inner_->Commit();
      usage.Settle(charge, done.has_value(), key_.bucket, delta);
      return done;
    }
    KeyLocks::Held held = store_.locks().Lock({ObjectLockName(key_)});
    bool existed = false;
    OC_ASSIGN_OR_RETURN(const uint64_t old, store_.OldSize(key_, &existed));
    const int64_t objects = existed ? 0 : 1;
    OC_ASSIGN_OR_RETURN(
        Charge charge,
        usage.Take(key_.bucket, Delta{Signed(count_.appended()) - Signed(old), objects, 0}));
    Result<ObjectMeta> done = inner_->Commit();
    usage.Settle(charge, done.has_value(), key_.bucket,
                 Delta{done.has_value() ? Signed(done->size) - Signed(old) : 0, objects, 0});
    return done;
  }

 private:
  QuotaStore& store_;
  ObjectKey key_;
  std::optional<Part> part_;
  std::unique_ptr<ObjectWriter> inner_;
  ByteCount count_;
};

class QuotaGroupWriter final : public ObjectGroupWriter {
 public:
  QuotaGroupWriter(QuotaStore& store, std::string bucket, std::unique_ptr<ObjectGroupWriter> inner)
      : store_(store), bucket_(std::move(bucket)), inner_(std::move(inner)) {}

  Status Begin(std::string_view name, const PutOptions& options) override {
    OC_RETURN_IF_ERROR(inner_->Begin(name, options));
    objects_.push_back(Member{std::string(name), 0, options.if_none_match});
    return Status::Ok();
  }
  Status Append(ByteSpan data) override {
    OC_RETURN_IF_ERROR(inner_->Append(data));
    if (!objects_.empty()) {
      objects_.back().bytes += data.size();
    }
    return Status::Ok();
  }

  Result<std::vector<GroupCommitted>> Commit() override {
    std::vector<std::string> names;
    std::vector<std::string> lock_names;
    for (const Member& m : objects_) {
      names.push_back(m.name);
      lock_names.push_back(ObjectLockName(ObjectKey{bucket_, m.name}));
    }
    KeyLocks::Held held = store_.locks().Lock(std::move(lock_names));
    OC_ASSIGN_OR_RETURN(std::vector<std::optional<ObjectMeta>> old,
                        store_.inner().HeadMany(bucket_, names));
    std::map<std::string_view, size_t> last;  // a name given twice keeps its last object
    for (size_t j = 0; j < names.size(); ++j) {
      last[names[j]] = j;
    }
    Delta delta;
    for (const auto& [name, j] : last) {
      if (old[j].has_value() && objects_[j].if_none_match) {
        continue;  // left as it is
      }
      delta.bytes += Signed(objects_[j].bytes) - Signed(old[j] ? old[j]->size : 0);
      delta.objects += old[j].has_value() ? 0 : 1;
    }
    QuotaUsage& usage = store_.usage();
    OC_ASSIGN_OR_RETURN(Charge charge, usage.Take(bucket_, delta));
    Result<std::vector<GroupCommitted>> done = inner_->Commit();
    Delta actual;
    if (done.has_value()) {
      for (const auto& [name, j] : last) {
        if (j >= done->size() || (*done)[j].existed) {
          continue;
        }
        actual.bytes += Signed((*done)[j].meta.size) - Signed(old[j] ? old[j]->size : 0);
        actual.objects += old[j].has_value() ? 0 : 1;
      }
    }
    usage.Settle(charge, done.has_value(), bucket_, actual);
    return done;
  }

 private:
  struct Member {
    std::string name;
    uint64_t bytes = 0;
    bool if_none_match = false;
  };
  QuotaStore& store_;
  std::string bucket_;
  std::unique_ptr<ObjectGroupWriter> inner_;
  std::vector<Member> objects_;
};

}  // namespace

std::unique_ptr<ObjectWriter> MakeObjectWriter(QuotaStore& store, const ObjectKey& key,
                                               std::unique_ptr<ObjectWriter> inner, uint64_t old) {
  return std::make_unique<QuotaWriter>(store, key, std::nullopt, std::move(inner), old);
}

std::unique_ptr<ObjectWriter> MakePartWriter(QuotaStore& store, const ObjectKey& key,
                                             std::string upload_id, uint32_t part_number,
                                             std::unique_ptr<ObjectWriter> inner, uint64_t old) {
  return std::make_unique<QuotaWriter>(
      store, key, QuotaWriter::Part{std::move(upload_id), part_number}, std::move(inner), old);
}

std::unique_ptr<ObjectGroupWriter> MakeGroupWriter(QuotaStore& store, std::string bucket,
                                                   std::unique_ptr<ObjectGroupWriter> inner) {
  return std::make_unique<QuotaGroupWriter>(store, std::move(bucket), std::move(inner));
}

}  // namespace oc::storage::quota
