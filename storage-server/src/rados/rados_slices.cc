// RadosStore::ReadSlices: the KV engine's layer reads (src/kv/slice_source.h). The slices'
// records come from one read op per index shard (in flight together); each slice resolves to
// pieces (data object, offset, length, destination), the pieces are grouped by data object,
// and each data object gets ONE read op with a read per piece, each straight into its
// destination (librados copies reply data into the caller's buffer: no copy of ours). So a
// chunk-major buffer reads a chunk in one op, a layer-major one an op per chunk it touches,
// and kv_2ltd's K and V halves share one. Ops in flight: at most max_ops_in_flight and
// max_bytes_in_flight for the whole store (RadosStore::InFlight), and at most half the op
// cap per call, so one request cannot starve the others. A data object gone (-ENOENT: the
// version was replaced and collected since the index read) re-resolves its slices from the
// index once; still gone is kMissing. The data ops go round-robin over the store's read
// handles ([rados] cluster_handles, rados_handles.cc); an op whose handle's session died
// (DeadSession) goes again on a live handle, so a dead handle loses no read.

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "names.h"
#include "rados/rados_store.h"

namespace oc::storage {

using kv::SliceRead;
using kv::SliceStatus;

namespace {

struct Piece {
  size_t slice = 0;
  uint64_t within = 0;  // offset in the data object
  char* dest = nullptr;
  size_t len = 0;
  size_t got = 0;
  int prval = 0;
};

struct ObjectRead {
  std::string oid;
  std::vector<Piece*> pieces;
  uint64_t bytes = 0;
  std::unique_ptr<rados::ReadOp> op;  // a fresh one per attempt
  rados::Completion c;
  size_t handle = 0;  // the read handle it went out on
  int rc = 0;
};

}  // namespace

// A descriptor request's reads: each chunk's record, read from the index by the request's
// first read of it, serves its later reads (the other layers) too, so the request reads the
// index about once per chunk instead of once per window load; and every layer of a chunk comes
// from the version that first read resolved, which the GC keeps readable (gc_min_wait) as it
// does for any reader.
class RadosStore::Reads final : public kv::ReadSession {
 public:
  Reads(RadosStore& store, std::string_view bucket) : store_(store), bucket_(bucket) {}
  Result<std::vector<SliceStatus>> ReadSlices(std::span<const SliceRead> slices) override {
    return store_.ReadSlicesWith(bucket_, slices, &memo_);
  }
  // The records of every name not known yet, in one batch: a layerwise GET's first layer
  // then reads only data objects, unit after unit, instead of an index op before each unit.
  void Prepare(std::span<const std::string> names) override {
    std::vector<std::string> todo;
    {
      std::lock_guard lock(memo_.mu);
      std::unordered_set<std::string_view> seen;
      for (const std::string& name : names) {
        if (!memo_.records.contains(name) && seen.insert(name).second) {
          todo.push_back(name);
        }
      }
    }
    Result<BucketRef> ref = store_.Bucket(bucket_);
    if (!todo.empty() && ref.has_value()) {
      (void)store_.LookUpRecords(bucket_, *ref, todo, &memo_);
    }
  }

 private:
  RadosStore& store_;
  const std::string bucket_;
  RecordMemo memo_;
};

std::unique_ptr<kv::ReadSession> RadosStore::OpenReads(std::string_view bucket) {
  return std::make_unique<Reads>(*this, bucket);
}

Result<std::vector<SliceStatus>> RadosStore::ReadSlices(std::string_view bucket,
                                                        std::span<const SliceRead> slices) {
  return ReadSlicesWith(bucket, slices, nullptr);
}

Result<std::vector<SliceStatus>> RadosStore::ReadSlicesWith(std::string_view bucket,
                                                            std::span<const SliceRead> slices,
                                                            RecordMemo* memo) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  std::vector<SliceStatus> out(slices.size(), SliceStatus::kMissing);
  std::vector<size_t> todo(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    todo[i] = i;
  }
  const size_t window = std::max<size_t>(1, options_.rados.max_ops_in_flight / 2);
  // Sends one read op per object of `batch` (a read per piece, straight into its
  // destination), at most `window` in flight, and waits for all of them; each object's rc is
  // its op's result. Only an op not sent for another reason than a dead session is an error.
  auto issue = [&](std::span<ObjectRead* const> batch) -> Status {
    std::deque<ObjectRead*> running;
    auto finish_oldest = [&] {
      ObjectRead* o = running.front();
      running.pop_front();
      o->rc = o->c.Wait();
      in_flight_.Release(o->bytes);
    };
    Status first;
    for (ObjectRead* obj : batch) {
      // Waits for the store's budget only with none of it held: a call holding ops that
      // waited for more would wait for itself (its reads past max_bytes_in_flight), or for
      // another call that waits for it.
      while (running.size() >= window || (!running.empty() && !in_flight_.TryAcquire(obj->bytes))) {
        finish_oldest();
      }
      if (running.empty()) {
        in_flight_.Acquire(obj->bytes);
      }
      obj->op = std::make_unique<rados::ReadOp>();
      obj->c = rados::Completion();
      for (Piece* p : obj->pieces) {
        p->got = 0;
        p->prval = 0;
        obj->op->Read(p->within, p->len, p->dest, &p->got, &p->prval);
      }
      obj->handle = PickReadHandle();
      obj->rc = obj->op->OperateAsync(read_io(obj->handle), obj->oid, obj->c);
      if (obj->rc < 0) {
        in_flight_.Release(obj->bytes);
        if (DeadSession(obj->rc)) {
          continue;  // the caller sends it again on another handle
        }
        first = rados::FromRados(obj->rc, "reading a data object");
        break;
      }
      slice_read_ops_.fetch_add(1, std::memory_order_relaxed);
      running.push_back(obj);
    }
    while (!running.empty()) {
      finish_oldest();
    }
    return first;
  };
  for (int round = 0; round < 2 && !todo.empty(); ++round) {
    // Each slice's record: the memo's (a session's earlier read found it), else the index's,
    // each name read once. The retry round reads the index again (a data object was gone).
    std::vector<std::shared_ptr<const ObjectRecord>> records(todo.size());
    std::map<std::string_view, std::vector<size_t>> need;  // name -> positions in todo
    for (size_t t = 0; t < todo.size(); ++t) {
      const std::string& name = slices[todo[t]].name;
      if (round == 0 && memo != nullptr) {
        std::lock_guard lock(memo->mu);
        auto it = memo->records.find(name);
        if (it != memo->records.end()) {
          records[t] = it->second;
          continue;
        }
      }
      need[name].push_back(t);
    }
    if (!need.empty()) {
      std::vector<std::string> names;
      names.reserve(need.size());
      for (const auto& [name, ts] : need) {
        names.emplace_back(name);
      }
      OC_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const ObjectRecord>> found,
                          LookUpRecords(bucket, ref, names, memo));
      size_t k = 0;
      for (const auto& [name, ts] : need) {
        for (const size_t t : ts) {
          records[t] = found[k];
        }
        ++k;
      }
    }
    // Resolve every slice to pieces, grouped by data object (ordered by oid: deterministic).
    std::deque<Piece> pieces;
    std::map<std::string, std::unique_ptr<ObjectRead>> objects;
    for (size_t t = 0; t < todo.size(); ++t) {
      const size_t i = todo[t];
      const SliceRead& s = slices[i];
      if (records[t] == nullptr) {
        out[i] = SliceStatus::kMissing;
        continue;
      }
      const ObjectRecord& r = *records[t];
      if (s.offset > r.meta.size || s.dest.size() > r.meta.size - s.offset) {
        out[i] = SliceStatus::kShort;
        continue;
      }
      out[i] = SliceStatus::kOk;
      uint64_t at = s.offset;
      uint64_t done = 0;
      uint64_t seg_start = 0;
      for (const Segment& seg : r.segments) {
        while (done < s.dest.size() && at < seg_start + seg.size) {
          const uint64_t in_seg = at - seg_start;
          const uint64_t extent = in_seg / seg.extent_bytes;
          const uint64_t within = in_seg % seg.extent_bytes;
          const uint64_t n = std::min({seg.extent_bytes - within, seg.size - in_seg,
                                       static_cast<uint64_t>(s.dest.size()) - done});
          Piece& p = pieces.emplace_back();
          p.slice = i;
          p.within = within;
          p.dest = reinterpret_cast<char*>(s.dest.data()) + done;
          p.len = n;
          std::unique_ptr<ObjectRead>& obj = objects[rados::DataOid(ref.id, seg, extent)];
          if (obj == nullptr) {
            obj = std::make_unique<ObjectRead>();
          }
          obj->pieces.push_back(&p);
          obj->bytes += n;
          at += n;
          done += n;
        }
        seg_start += seg.size;
      }
    }
    // One op per data object, at most `window` of this call's in flight, each on the next
    // read handle (round-robin: every handle's messenger thread takes a share of the bytes).
    // An op whose handle's session died goes again on a live handle, once per handle at most.
    std::vector<ObjectRead*> batch;
    batch.reserve(objects.size());
    for (auto& [oid, obj] : objects) {
      obj->oid = oid;
      batch.push_back(obj.get());
    }
    OC_RETURN_IF_ERROR(issue(batch));
    for (size_t attempt = 1; attempt < read_handles(); ++attempt) {
      std::vector<ObjectRead*> retry;
      for (ObjectRead* o : batch) {
        if (DeadSession(o->rc) && ReadHandleFailed(o->handle)) {
          retry.push_back(o);
        }
      }
      if (retry.empty()) {
        break;
      }
      read_retries_.fetch_add(retry.size(), std::memory_order_relaxed);
      OC_RETURN_IF_ERROR(issue(retry));
      batch = std::move(retry);
    }
    std::vector<size_t> again;
    for (auto& [oid, obj] : objects) {
      for (Piece* p : obj->pieces) {
        const int err = obj->rc < 0 ? obj->rc : p->prval;
        if (err == -ENOENT) {
          if (out[p->slice] == SliceStatus::kOk) {
            out[p->slice] = SliceStatus::kMissing;  // unless the retry finds it
            again.push_back(p->slice);
          }
          continue;
        }
        OC_RETURN_IF_ERROR(rados::FromRados(err, "reading a data object"));
        if (p->got != p->len) {
          return Status::Corruption(slices[p->slice].name +
                                    ": a data object is shorter than its record says");
        }
      }
    }
    std::sort(again.begin(), again.end());
    again.erase(std::unique(again.begin(), again.end()), again.end());
    todo = std::move(again);
  }
  return out;
}

Result<std::vector<std::shared_ptr<const ObjectRecord>>> RadosStore::LookUpRecords(
    std::string_view bucket, const BucketRef& ref, std::span<const std::string> names,
    RecordMemo* memo) {
  slice_index_lookups_.fetch_add(names.size(), std::memory_order_relaxed);
  slice_index_batches_.fetch_add(1, std::memory_order_relaxed);
  OC_ASSIGN_OR_RETURN(std::vector<std::optional<ObjectRecord>> found,
                      ReadManyRecords(bucket, ref, names));
  std::vector<std::shared_ptr<const ObjectRecord>> out(names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    if (found[k].has_value()) {
      out[k] = std::make_shared<const ObjectRecord>(std::move(*found[k]));
    }
  }
  if (memo != nullptr) {
    std::lock_guard lock(memo->mu);
    for (size_t k = 0; k < names.size(); ++k) {
      if (out[k] != nullptr) {
        memo->records.insert_or_assign(names[k], out[k]);
      } else {
        memo->records.erase(names[k]);
      }
    }
  }
  return out;
}

void RadosStore::InFlight::Acquire(uint64_t bytes) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&]() OC_REQUIRES(mu_) { return Fits(bytes); });
  ++ops_;
  bytes_ += bytes;
}

bool RadosStore::InFlight::TryAcquire(uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (!Fits(bytes)) {
    return false;
  }
  ++ops_;
  bytes_ += bytes;
  return true;
}

void RadosStore::InFlight::Release(uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    --ops_;
    bytes_ -= bytes;
  }
  cv_.notify_all();
}

}  // namespace oc::storage
