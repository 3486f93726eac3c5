#pragma once
// SliceSource: all the KV engine (kv_engine.h) sees of the storage backend it serves. Three
// jobs: the batch HEAD that plans a descriptor request, the layer-slice reads that fill it
// (copied into the engine's staging buffers, or lent without a copy), and the group writer
// that stores a descriptor PUT's chunks all or nothing. Every backend (src/backend.h: RocksStore,
// RadosStore) implements it, and OpenStore composes one engine over it (composed_store.h). The
// interface is internal to storage-server: the gateway sees only Store (store.h), whose
// descriptor calls a local store answers with its engine and a remote store forwards whole
// to the storage server (kKv* ops), so slices never cross the RPC
// (docs/decisions/storage-kv-slice-source.md).
//
// HeadMany and PutGroup have Store's contracts (store.h), so a backend that is also a Store
// answers both interfaces with one override each.
// Thread safety: every method may be called concurrently from any thread.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/store.h"
#include "oc/storage/types.h"

namespace oc::storage::kv {

// One slice of a layer read: `dest.size()` bytes of object `name` from `offset`.
struct SliceRead {
  std::string name;
  uint64_t offset = 0;
  MutableByteSpan dest;
};

// One slice of a zero-copy layer read (SliceSource::PinSlices): `length` bytes of object
// `name` from `offset`.
struct SlicePin {
  std::string_view name;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Bytes of a pinned slice, lent by the backend without a copy. A slice that spans several
// stored extents comes back as several pieces. `bytes` stay valid, and the backend's memory
// stays reserved for them, while any copy of `hold` lives; it may be released on any thread,
// but before the backend is closed.
struct PinnedPiece {
  size_t slice = 0;     // index into the PinSlices request
  uint64_t within = 0;  // offset of bytes.data() in that slice
  ByteSpan bytes;
  std::shared_ptr<const void> hold;
};

// Memory for the read-ahead windows (kv/read_ahead.h) of all of a backend's requests
// together, and the window buffers kept between requests: a request's windows go back here
// when it ends and the next request takes them with their pages already mapped, instead of
// touching fresh memory (a page fault per 4 KiB, costly in a virtual machine) for every byte
// it reads (docs/decisions/rados-read-handles.md). Kept buffers stay within the budget's size.
// Thread-safe.
class ReadAheadBudget {
 public:
  explicit ReadAheadBudget(uint64_t bytes) : capacity_(bytes), left_(bytes) {}
  // Takes min(want, what is left) and returns it; never waits.
  uint64_t TakeUpTo(uint64_t want) {
    uint64_t left = left_.load(std::memory_order_relaxed);
    uint64_t take = 0;
    do {
      take = std::min(want, left);
    } while (!left_.compare_exchange_weak(left, left - take, std::memory_order_relaxed));
    return take;
  }
  void Give(uint64_t bytes) { left_.fetch_add(bytes, std::memory_order_relaxed); }
  uint64_t left() const { return left_.load(std::memory_order_relaxed); }

  // A window buffer of at least `bytes` (at most twice that): a kept one if there is one, else
  // a new one. *got is its size.
  std::unique_ptr<std::byte[]> TakeBuffer(uint64_t bytes, uint64_t* got);
  // Keeps `buf` (`bytes` long) for a later request while the kept buffers fit the budget's
  // size; frees it otherwise.
  void KeepBuffer(std::unique_ptr<std::byte[]> buf, uint64_t bytes);
  uint64_t kept_bytes() const;

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> left_;
  mutable std::mutex mu_;
  std::multimap<uint64_t, std::unique_ptr<std::byte[]>> kept_ OC_GUARDED_BY(mu_);  // by size
  uint64_t kept_bytes_ OC_GUARDED_BY(mu_) = 0;
};

// How a backend wants a layerwise request's slices read (kv/read_ahead.h): windows of up to
// window_bytes per chunk range, their memory from *budget. window_bytes 0: slice by slice.
struct ReadAheadPolicy {
  uint64_t window_bytes = 0;
  ReadAheadBudget* budget = nullptr;
};

enum class SliceStatus : uint8_t {
  kOk = 0,   // dest filled
  kMissing,  // no such object
  kShort,    // the object ends before offset + dest.size(); dest is not filled
};

class SliceSource;

// The slice reads of one descriptor request (SliceSource::OpenReads), for as long as the
// request runs: ReadSlices' contract, in the request's bucket. A backend that looks every name
// up in an index before reading its bytes (RADOS) keeps what the request's first read of a
// chunk found, so the later reads of that chunk (its other layers) go straight to its data and
// all read the version the first one resolved. Thread-safe, like the source: a request's loads
// ahead read on workers while its own thread reads. Destroyed after the request's last read.
class ReadSession {
 public:
  virtual ~ReadSession() = default;
  virtual Result<std::vector<SliceStatus>> ReadSlices(std::span<const SliceRead> slices) = 0;
  // The chunks the request will read (its matched ones): a session that looks names up may
  // look them all up now, in one batch, so that the first read of each (layer 0's, a unit of
  // a few chunks at a time) waits for no index. Advice: a failure here is not the request's,
  // whose reads look up whatever is not known yet and report their own errors.
  virtual void Prepare(std::span<const std::string> names) { (void)names; }
};

class SliceSource {
 public:
  virtual ~SliceSource() = default;

  // The batch existence query of planning: Store::HeadMany's contract.
  virtual Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) = 0;

  // Reads every slice into its dest, in parallel and batched where the backend allows, all
  // from one consistent view. Returns one SliceStatus per slice, in order; a missing object
  // is not an error. kNotFound/kBucket if the bucket is absent.
  virtual Result<std::vector<SliceStatus>> ReadSlices(std::string_view bucket,
                                                      std::span<const SliceRead> slices) = 0;

  // A request's reads (ReadSession). The default keeps nothing: each read is ReadSlices.
  virtual std::unique_ptr<ReadSession> OpenReads(std::string_view bucket);

  // Whether the engine should read ahead of the layer it delivers (ReadAheadPolicy); a
  // backend whose reads cost little beyond their bytes answers the default, none.
  virtual ReadAheadPolicy read_ahead() { return {}; }

  // The zero-copy form of ReadSlices for a backend that holds the bytes in its own memory:
  // appends each kOk slice's pieces to *pieces instead of copying them. Only when
  // SupportsPinnedSlices(); others answer kUnimplemented.
  virtual bool SupportsPinnedSlices() const { return false; }
  virtual Result<std::vector<SliceStatus>> PinSlices(std::string_view bucket,
                                                     std::span<const SlicePin> slices,
                                                     std::vector<PinnedPiece>* pieces) {
    (void)bucket;
    (void)slices;
    (void)pieces;
    return Status::Unimplemented("this backend cannot lend slices without a copy");
  }

  // Starts a group of new objects that become visible together (a descriptor PUT's chunks):
  // Store::PutGroup's contract.
  virtual Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) = 0;
};

// The default ReadSession: every read is the source's ReadSlices.
class PlainReadSession final : public ReadSession {
 public:
  PlainReadSession(SliceSource& source, std::string_view bucket)
      : source_(source), bucket_(bucket) {}
  Result<std::vector<SliceStatus>> ReadSlices(std::span<const SliceRead> slices) override {
    return source_.ReadSlices(bucket_, slices);
  }

 private:
  SliceSource& source_;
  const std::string bucket_;
};

inline std::unique_ptr<ReadSession> SliceSource::OpenReads(std::string_view bucket) {
  return std::make_unique<PlainReadSession>(*this, bucket);
}

}  // namespace oc::storage::kv
