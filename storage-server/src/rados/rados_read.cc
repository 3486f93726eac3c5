// RadosStore, reading: the ranged object reader (the record read once at open, then the data
// objects of that version with two reads ahead in flight), Head and the batch HeadMany.

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "names.h"
#include "rados/rados_store.h"
#include "rados/rados_stream.h"
#include "records/object_range.h"

namespace oc::storage {
namespace {

// Reads a reader keeps in flight ahead of its caller.
constexpr size_t kReadAhead = 2;

class RadosReader final : public ObjectReader {
 public:
  RadosReader(RadosStore* store, uint64_t bucket_id, std::string name, ObjectRecord record,
              uint64_t offset, uint64_t length)
      : store_(store),
        bucket_id_(bucket_id),
        name_(std::move(name)),
        record_(std::move(record)),
        offset_(offset),
        length_(length),
        fetch_at_(offset) {}

  ~RadosReader() override {
    for (auto& p : pending_) {
      (void)p->c.Wait();  // librados writes into p->buf until it completes
    }
  }

  const ObjectMeta& meta() const override { return record_.meta; }
  uint64_t offset() const override { return offset_; }
  uint64_t length() const override { return length_; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    const uint64_t n = std::min<uint64_t>(out.size(), length_ - pos_);
    uint64_t done = 0;
    while (done < n) {
      OC_RETURN_IF_ERROR(Prefetch());
      Pending& p = *pending_.front();
      if (!p.waited) {
        p.waited = true;
        const int rc = p.c.Wait();
        const int err = rc < 0 ? rc : p.prval;
        if (err == -ENOENT) {
          return Status::FailedPrecondition(
              Subject::kKey, name_ + ": the version being read was replaced and collected");
        }
        OC_RETURN_IF_ERROR(rados::FromRados(err, "reading a data object"));
        if (p.got != p.len) {
          return Status::Corruption(name_ + ": a data object is shorter than its record says");
        }
      }
      const uint64_t m = std::min<uint64_t>(p.len - p.consumed, n - done);
      std::memcpy(out.data() + done, p.buf.get() + p.consumed, m);
      p.consumed += m;
      done += m;
      pos_ += m;
      if (p.consumed == p.len) {
        pending_.pop_front();
      }
    }
    return done;
  }

 private:
  struct Pending {
    rados::ReadOp op;
    rados::Completion c;
    std::unique_ptr<char[]> buf;
    size_t len = 0;
    size_t got = 0;
    int prval = 0;
    size_t consumed = 0;
    bool waited = false;
  };

  // Keeps kReadAhead reads of the range in flight.
  Status Prefetch() {
    const uint64_t end = offset_ + length_;
    while (pending_.size() < kReadAhead && fetch_at_ < end) {
      // The data object holding fetch_at_ and the bytes from there to its end.
      const std::optional<ExtentPos> l = LocateExtent(record_.segments, fetch_at_);
      if (!l.has_value()) {
        return Status::Corruption(name_ + ": record segments do not cover its size");
      }
      const Segment& seg = record_.segments[l->segment];
      const uint64_t room = ExtentDataBytes(seg, l->extent) - l->within;
      auto p = std::make_unique<Pending>();
      p->len = std::min({room, end - fetch_at_, rados::kPieceBytes});
      p->buf = std::make_unique_for_overwrite<char[]>(p->len);
      p->op.Read(l->within, p->len, p->buf.get(), &p->got, &p->prval);
      const int rc =
          p->op.OperateAsync(store_->io(), rados::DataOid(bucket_id_, seg, l->extent), p->c);
      OC_RETURN_IF_ERROR(rados::FromRados(rc, "reading a data object"));
      fetch_at_ += p->len;
      pending_.push_back(std::move(p));
    }
    return Status::Ok();
  }

  RadosStore* const store_;
  const uint64_t bucket_id_;
  const std::string name_;
  const ObjectRecord record_;
  const uint64_t offset_;
  const uint64_t length_;
  uint64_t pos_ = 0;
  uint64_t fetch_at_;
  std::deque<std::unique_ptr<Pending>> pending_;
};

}  // namespace

Result<std::unique_ptr<ObjectReader>> RadosStore::Get(const ObjectKey& key, ByteRange range) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  OC_ASSIGN_OR_RETURN(
      std::vector<std::optional<ObjectRecord>> records,
      ReadRecords(key.bucket, ref, rados::ShardOf(key.name, ref.shards), {key.name}));
  if (!records[0].has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  ObjectRecord& record = *records[0];
  OC_ASSIGN_OR_RETURN(const ResolvedRange r, ResolveRange(record, range));
  return std::unique_ptr<ObjectReader>(
      new RadosReader(this, ref.id, key.name, std::move(record), r.offset, r.length));
}

Result<ObjectMeta> RadosStore::Head(const ObjectKey& key) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(key.bucket));
  OC_ASSIGN_OR_RETURN(
      std::vector<std::optional<ObjectRecord>> records,
      ReadRecords(key.bucket, ref, rados::ShardOf(key.name, ref.shards), {key.name}));
  if (!records[0].has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  return std::move(records[0]->meta);
}

Result<std::vector<std::optional<ObjectMeta>>> RadosStore::HeadMany(
    std::string_view bucket, std::span<const std::string> names) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  OC_ASSIGN_OR_RETURN(std::vector<std::optional<ObjectRecord>> records,
                      ReadManyRecords(bucket, ref, names));
  std::vector<std::optional<ObjectMeta>> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (records[i].has_value()) {
      out[i] = std::move(records[i]->meta);
    }
  }
  return out;
}

}  // namespace oc::storage
