// RocksStore, reading: the ranged object reader (one RocksDB snapshot from open to close,
// one pinned extent, or one data-file extent's mapped bytes, at a time), Head and the batch
// HeadMany.

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <rocksdb/snapshot.h>

#include "names.h"
#include "oc/storage/cached_reads.h"
#include "records/object_range.h"
#include "rocks/extent_io.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {
namespace {

class RocksReader final : public ObjectReader {
 public:
  RocksReader(RocksStore* store, std::unique_ptr<rocksdb::ManagedSnapshot> snapshot,
              ObjectRecord record, uint64_t offset, uint64_t length)
      : store_(store),
        snapshot_(std::move(snapshot)),
        record_(std::move(record)),
        offset_(offset),
        length_(length) {
    read_options_ = store_->extent_read_options();
    read_options_.snapshot = snapshot_->snapshot();
  }

  const ObjectMeta& meta() const override { return record_.meta; }
  uint64_t offset() const override { return offset_; }
  uint64_t length() const override { return length_; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    const uint64_t n = std::min<uint64_t>(out.size(), length_ - pos_);
    uint64_t done = 0;
    while (done < n) {
      const uint64_t at = offset_ + pos_;
      if (!have_extent_ || at < extent_start_ || at >= extent_start_ + extent_len_) {
        OC_RETURN_IF_ERROR(LoadExtent(at));
      }
      const uint64_t m = std::min(extent_start_ + extent_len_ - at, n - done);
      std::memcpy(out.data() + done, view_.bytes.data() + (at - extent_start_), m);
      done += m;
      pos_ += m;
    }
    if (pos_ == length_ && have_extent_) {
      view_ = {};  // release the cache pin (or the mapping) as soon as the range is done
      pinned_.Reset();
      have_extent_ = false;
    }
    return done;
  }

  Result<ByteSpan> Lend(uint64_t max) override {
    const uint64_t n = std::min<uint64_t>(max, length_ - pos_);
    if (n == 0) {
      return ByteSpan();
    }
    const uint64_t at = offset_ + pos_;
    if (!have_extent_ || at < extent_start_ || at >= extent_start_ + extent_len_) {
      OC_RETURN_IF_ERROR(LoadExtent(at));
    }
    const uint64_t m = std::min(extent_start_ + extent_len_ - at, n);
    pos_ += m;
    return view_.bytes.subspan(at - extent_start_, m);  // held until the next load or the end
  }

 private:
  Status LoadExtent(uint64_t at) {
    have_extent_ = false;
    const std::optional<ExtentPos> located = LocateExtent(record_.segments, at);
    if (!located.has_value()) {
      return Status::Corruption("record segments do not cover its size");
    }
    const ExtentPos pos = *located;
    const Segment& seg = record_.segments[pos.segment];
    view_ = {};
    OC_RETURN_IF_ERROR(FetchExtent(store_->db(), store_->extents_cf(),
                                   RocksStore::ForThisThread(read_options_), seg, pos.extent,
                                   &pinned_));
    // The bytes pinned in the block cache, or a data file's mapped bytes (verified once per
    // extent here, then copied out as the caller reads). In a CachedReadsOnly scope a data
    // file's extent is taken only if all its pages are in the page cache (no fault waits).
    const bool scoped = CachedReadsOnly::Active();
    Result<ExtentView> view = ViewExtent(*store_->data_files(), seg, pinned_, scoped);
    if (!view.has_value()) {
      if (scoped && view.error().code() == Code::kUnavailable) {
        CachedReadsOnly::NoteMiss();
      }
      return view.error();
    }
    view_ = std::move(*view);
    extent_start_ = at - pos.within;
    extent_len_ = ExtentDataBytes(seg, pos.extent);
    have_extent_ = true;
    return Status::Ok();
  }

  RocksStore* const store_;
  std::unique_ptr<rocksdb::ManagedSnapshot> snapshot_;
  const ObjectRecord record_;
  const uint64_t offset_;
  const uint64_t length_;
  rocksdb::ReadOptions read_options_;
  uint64_t pos_ = 0;
  rocksdb::PinnableSlice pinned_;
  ExtentView view_;  // the loaded extent's bytes: in pinned_, or held in a data file's mapping
  bool have_extent_ = false;
  uint64_t extent_start_ = 0;  // object offset of the pinned extent's first byte
  uint64_t extent_len_ = 0;
};

}  // namespace

Result<std::unique_ptr<ObjectReader>> RocksStore::Get(const ObjectKey& key, ByteRange range) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  auto snapshot = std::make_unique<rocksdb::ManagedSnapshot>(db_.get());
  rocksdb::ReadOptions ro = ForThisThread(meta_read_);
  ro.snapshot = snapshot->snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, ro));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record,
                      GetRecord(ObjectDbKey(key.bucket, key.name), ro));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  OC_ASSIGN_OR_RETURN(const ResolvedRange r, ResolveRange(*record, range));
  return std::unique_ptr<ObjectReader>(
      new RocksReader(this, std::move(snapshot), std::move(*record), r.offset, r.length));
}

Result<ObjectMeta> RocksStore::Head(const ObjectKey& key) {
  OC_RETURN_IF_ERROR(ValidateObjectKey(key.name));
  const rocksdb::ReadOptions ro = ForThisThread(meta_read_);
  OC_RETURN_IF_ERROR(CheckBucket(key.bucket, ro));
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record,
                      GetRecord(ObjectDbKey(key.bucket, key.name), ro));
  if (!record.has_value()) {
    return Status::NotFound(Subject::kKey, key.name);
  }
  return std::move(record->meta);
}

Result<std::vector<std::optional<ObjectMeta>>> RocksStore::HeadMany(
    std::string_view bucket, std::span<const std::string> names) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions ro = meta_read_;
  ro.snapshot = snapshot.snapshot();
  OC_RETURN_IF_ERROR(CheckBucket(bucket, ro));
  std::vector<std::optional<ObjectMeta>> out(names.size());
  std::vector<std::string> keys;
  std::vector<size_t> index;  // position in `names` of each looked-up key
  keys.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (ValidateObjectKey(names[i]).ok()) {
      keys.push_back(ObjectDbKey(bucket, names[i]));
      index.push_back(i);
    }
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  if (!keys.empty()) {
    db_->MultiGet(ro, objects_cf_, keys.size(), slices.data(), values.data(), statuses.data());
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    if (statuses[k].IsNotFound()) {
      continue;
    }
    OC_RETURN_IF_ERROR(FromRocks(statuses[k]));
    OC_ASSIGN_OR_RETURN(ObjectRecord record, DecodeObjectRecord(values[k].ToStringView()));
    out[index[k]] = std::move(record.meta);
  }
  return out;
}

}  // namespace oc::storage
