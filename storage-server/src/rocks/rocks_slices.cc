// ReadSlices and PinSlices: RocksStore as the KV engine's SliceSource (src/kv/slice_source.h),
// the KV-cache layer read (docs/design.md, delivery). Every slice is copied once,
// from the pinned RocksDB block/blob (PinnableSlice), or from a data file's mapping (lent
// as is for PinSlices' zero-copy loans), straight into the caller's buffer.
// Three strategies (SliceReadMode), compared by bench/storage_bench.cc: one Get per extent
// on the calling thread, batched MultiGet, or one Get per extent with the slices spread
// over the read pool (the calling thread works too).

#include <atomic>

#include <rocksdb/snapshot.h>

#include "names.h"
#include "rocks/extent_io.h"
#include "rocks/extent_key.h"
#include "rocks/rocks_store.h"
#include "rocks/store_keys.h"

namespace oc::storage {

using kv::PinnedPiece;
using kv::SlicePin;
using kv::SliceRead;
using kv::SliceStatus;

namespace {

// Keys per MultiGet call: enough to batch the lookups, few enough to keep the pinned
// values (and their cache handles) bounded.
constexpr size_t kMultiGetBatch = 32;

bool IsShort(uint64_t size, uint64_t offset, uint64_t length) {
  return offset > size || length > size - offset;
}

}  // namespace

Status RocksStore::ReadSlice(const rocksdb::ReadOptions& meta_ro,
                             const rocksdb::ReadOptions& extent_ro, std::string_view bucket,
                             const SliceRead& slice, SliceStatus* out) {
  if (!ValidateObjectKey(slice.name).ok()) {
    *out = SliceStatus::kMissing;
    return Status::Ok();
  }
  OC_ASSIGN_OR_RETURN(std::optional<ObjectRecord> record,
                      GetRecord(ObjectDbKey(bucket, slice.name), meta_ro));
  if (!record.has_value()) {
    *out = SliceStatus::kMissing;
    return Status::Ok();
  }
  if (IsShort(record->meta.size, slice.offset, slice.dest.size())) {
    *out = SliceStatus::kShort;
    return Status::Ok();
  }
  OC_RETURN_IF_ERROR(ReadObjectRange(db_.get(), extents_cf_, extent_ro, *data_files_,
                                     record->segments, slice.offset, slice.dest));
  *out = SliceStatus::kOk;
  return Status::Ok();
}

Status RocksStore::SnapshotReads(std::string_view bucket, rocksdb::ManagedSnapshot& snapshot,
                                 rocksdb::ReadOptions* meta_ro, rocksdb::ReadOptions* extent_ro) {
  *meta_ro = meta_read_;
  meta_ro->snapshot = snapshot.snapshot();
  *extent_ro = extent_read_;
  extent_ro->snapshot = snapshot.snapshot();
  return CheckBucket(bucket, *meta_ro);
}

Status RocksStore::MultiGetSlices(const rocksdb::ReadOptions& meta_ro,
                                  const rocksdb::ReadOptions& extent_ro, std::string_view bucket,
                                  std::span<const SlicePin> slices, std::vector<SliceStatus>* out,
                                  const ExtentVisitor& visit) {
  // Phase 1: every slice's metadata in one MultiGet.
  std::vector<std::string> keys;
  std::vector<size_t> key_slice;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (ValidateObjectKey(slices[i].name).ok()) {
      keys.push_back(ObjectDbKey(bucket, slices[i].name));
      key_slice.push_back(i);
    } else {
      (*out)[i] = SliceStatus::kMissing;
    }
  }
  std::vector<rocksdb::Slice> key_slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  if (!keys.empty()) {
    db_->MultiGet(meta_ro, objects_cf_, keys.size(), key_slices.data(), values.data(),
                  statuses.data());
  }
  std::vector<ObjectRecord> records(slices.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    const size_t i = key_slice[k];
    if (statuses[k].IsNotFound()) {
      (*out)[i] = SliceStatus::kMissing;
      continue;
    }
    OC_RETURN_IF_ERROR(FromRocks(statuses[k]));
    OC_ASSIGN_OR_RETURN(records[i], DecodeObjectRecord(values[k].ToStringView()));
    (*out)[i] = IsShort(records[i].meta.size, slices[i].offset, slices[i].length)
                    ? SliceStatus::kShort
                    : SliceStatus::kOk;
  }
  values.clear();

  // Phase 2: every extent the slices cover, in MultiGet batches.
  struct Piece {
    size_t slice;
    uint64_t done;
    const Segment* segment;
    uint64_t extent;
    uint64_t within;
    uint64_t length;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < slices.size(); ++i) {
    if ((*out)[i] != SliceStatus::kOk || slices[i].length == 0) {
      continue;
    }
    const std::vector<Segment>& segments = records[i].segments;
    const std::optional<ExtentPos> start = LocateExtent(segments, slices[i].offset);
    if (!start.has_value()) {
      return Status::Corruption("record segments do not cover its size");
    }
    ExtentPos pos = *start;
    uint64_t done = 0;
    while (done < slices[i].length) {
      const Segment& seg = segments[pos.segment];
      if (pos.extent * seg.extent_bytes >= seg.size) {
        ++pos.segment;
        pos.extent = 0;
        pos.within = 0;
        continue;
      }
      const uint64_t n = std::min<uint64_t>(ExtentDataBytes(seg, pos.extent) - pos.within,
                                            slices[i].length - done);
      pieces.push_back(Piece{i, done, &seg, pos.extent, pos.within, n});
      done += n;
      ++pos.extent;
      pos.within = 0;
    }
  }
  std::array<ExtentKey, kMultiGetBatch> extent_keys;
  std::array<rocksdb::Slice, kMultiGetBatch> extent_slices;
  std::array<rocksdb::PinnableSlice, kMultiGetBatch> extent_values;
  std::array<rocksdb::Status, kMultiGetBatch> extent_statuses;
  for (size_t start = 0; start < pieces.size(); start += kMultiGetBatch) {
    const size_t n = std::min(kMultiGetBatch, pieces.size() - start);
    for (size_t j = 0; j < n; ++j) {
      const Piece& p = pieces[start + j];
      extent_keys[j] = EncodeExtentKey(p.segment->data_id, p.extent);
      extent_slices[j] = rocksdb::Slice(extent_keys[j].data(), extent_keys[j].size());
      extent_values[j].Reset();
    }
    db_->MultiGet(extent_ro, extents_cf_, n, extent_slices.data(), extent_values.data(),
                  extent_statuses.data(), /*sorted_input=*/false);
    for (size_t j = 0; j < n; ++j) {
      const Piece& p = pieces[start + j];
      if (extent_statuses[j].IsNotFound()) {
        return Status::Corruption("extent record missing");
      }
      OC_RETURN_IF_ERROR(FromRocks(extent_statuses[j]));
      if (extent_values[j].size() != StoredExtentBytes(*p.segment, p.extent)) {
        return Status::Corruption("extent record has the wrong length");
      }
      OC_RETURN_IF_ERROR(visit(p.slice, p.done, *p.segment, p.within, p.length, extent_values[j]));
      extent_values[j].Reset();
    }
  }
  return Status::Ok();
}

Status RocksStore::ReadSlicesMultiGet(const rocksdb::ReadOptions& meta_ro,
                                      const rocksdb::ReadOptions& extent_ro,
                                      std::string_view bucket, std::span<const SliceRead> slices,
                                      std::vector<SliceStatus>* out) {
  std::vector<SlicePin> specs;
  specs.reserve(slices.size());
  for (const SliceRead& s : slices) {
    specs.push_back(SlicePin{s.name, s.offset, s.dest.size()});
  }
  return MultiGetSlices(meta_ro, extent_ro, bucket, specs, out,
                        [&](size_t slice, uint64_t done, const Segment& segment, uint64_t within,
                            uint64_t n, rocksdb::PinnableSlice& value) {
                          return CopyFromExtent(*data_files_, segment, value, within,
                                                slices[slice].dest.subspan(done, n));
                        });
}

Result<std::vector<SliceStatus>> RocksStore::PinSlices(std::string_view bucket,
                                                       std::span<const SlicePin> slices,
                                                       std::vector<PinnedPiece>* pieces) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions meta_ro;
  rocksdb::ReadOptions extent_ro;
  OC_RETURN_IF_ERROR(SnapshotReads(bucket, snapshot, &meta_ro, &extent_ro));
  std::vector<SliceStatus> out(slices.size(), SliceStatus::kMissing);
  const size_t first = pieces->size();
  Status st = MultiGetSlices(
      meta_ro, extent_ro, bucket, slices, &out,
      [&](size_t slice, uint64_t done, const Segment& segment, uint64_t within, uint64_t n,
          rocksdb::PinnableSlice& value) -> Status {
        if ((segment.flags & kSegmentDataFile) != 0) {
          // The data file's mapping lives as long as the hold does, even if the file is
          // rewritten and unlinked meanwhile.
          OC_ASSIGN_OR_RETURN(ExtentView view, ViewExtent(*data_files_, segment, value));
          pieces->push_back(
              PinnedPiece{slice, done, view.bytes.subspan(within, n), std::move(view.hold)});
          return Status::Ok();
        }
        OC_RETURN_IF_ERROR(VerifyExtent(segment, value));
        // The block stays pinned in the block cache (or, read from a memtable, the value's
        // own copy lives) as long as the hold does.
        auto held = std::make_shared<rocksdb::PinnableSlice>(std::move(value));
        const auto* data = reinterpret_cast<const std::byte*>(held->data()) + within;
        pieces->push_back(PinnedPiece{slice, done, ByteSpan(data, n), std::move(held)});
        return Status::Ok();
      });
  if (!st.ok()) {
    pieces->erase(pieces->begin() + static_cast<std::ptrdiff_t>(first), pieces->end());
    return st;
  }
  return out;
}

Result<std::vector<SliceStatus>> RocksStore::ReadSlices(std::string_view bucket,
                                                        std::span<const SliceRead> slices) {
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions meta_ro;
  rocksdb::ReadOptions extent_ro;
  OC_RETURN_IF_ERROR(SnapshotReads(bucket, snapshot, &meta_ro, &extent_ro));
  std::vector<SliceStatus> out(slices.size(), SliceStatus::kMissing);

  SliceReadMode mode = options_.slice_read_mode;
  if (mode == SliceReadMode::kAuto) {
    // Measured (bench/storage_bench.cc, docs/decisions/storage-readslices-multiget.md): from a
    // warm cache MultiGet beat one Get per extent and the pool at every N and S.
    mode = slices.size() > 1 ? SliceReadMode::kMultiGet : SliceReadMode::kSerialGet;
  }
  if (mode == SliceReadMode::kParallelGet && (pool_ == nullptr || slices.size() < 2)) {
    mode = SliceReadMode::kSerialGet;
  }
  switch (mode) {
    case SliceReadMode::kMultiGet:
      OC_RETURN_IF_ERROR(ReadSlicesMultiGet(meta_ro, extent_ro, bucket, slices, &out));
      break;
    case SliceReadMode::kParallelGet: {
      // Slices are handed out one at a time from a shared counter, so a slow slice does
      // not hold up a whole stripe.
      std::atomic<size_t> next{0};
      std::mutex error_mu;
      Status first_error;
      auto work = [&] {
        for (size_t i = next.fetch_add(1); i < slices.size(); i = next.fetch_add(1)) {
          Status s = ReadSlice(meta_ro, extent_ro, bucket, slices[i], &out[i]);
          if (!s.ok()) {
            std::lock_guard lock(error_mu);
            if (first_error.ok()) {
              first_error = std::move(s);
            }
            next.store(slices.size());
          }
        }
      };
      const uint32_t helpers =
          static_cast<uint32_t>(std::min<size_t>(pool_->size(), slices.size() - 1));
      CountDown done(helpers);
      for (uint32_t h = 0; h < helpers; ++h) {
        pool_->Submit([&] {
          work();
          done.Done();
        });
      }
      work();
      done.Wait();
      OC_RETURN_IF_ERROR(first_error);
      break;
    }
    case SliceReadMode::kAuto:
    case SliceReadMode::kSerialGet:
      for (size_t i = 0; i < slices.size(); ++i) {
        OC_RETURN_IF_ERROR(ReadSlice(meta_ro, extent_ro, bucket, slices[i], &out[i]));
      }
      break;
  }
  return out;
}

}  // namespace oc::storage
