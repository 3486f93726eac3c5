#pragma once
// ReadAhead: one descriptor GET's windows over its chunk objects, for a backend that pays per
// read rather than per byte (SliceSource::read_ahead(); RADOS: the OSD charges about as much
// for a 64 KiB read as for 200 KiB more of a larger one, docs/decisions/rados-read-ahead.md).
// Layerwise delivery wants slice l of every chunk before slice l+1 of any, so each slice alone
// would be one small read. Instead the first read of a chunk's range loads one slice, and each
// later miss loads twice as much as the one before (up to the window size): layer 0 costs what it
// did, and a 32-layer chunk takes 6 reads, not 32. Slices then come out of the window with one
// memcpy each.
//
// Memory: every window of the request is at most window_bytes, and the request holds the
// windows' total from the backend's ReadAheadBudget for its whole life (a smaller share when
// the budget is short, none at all below two slices per window: then it reads slice by slice
// as before). A window's buffer is window_bytes from its first load (it grows no more), taken
// from and given back to the budget's kept buffers, so requests reuse memory already mapped.
// Not thread-safe: one request's Assembler uses it.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kv/slice_source.h"
#include "oc/common/result.h"

namespace oc::storage::kv {

// Which window of a request a slice read belongs to: chunk j's range `slot` (0, or 1 for the
// V half of a kv_2ltd chunk).
struct WindowKey {
  uint64_t chunk = 0;
  uint32_t slot = 0;
};

class ReadAhead {
 public:
  // `chunks` chunk objects of `object_bytes` each, read as `slots` equal ranges (1, or 2:
  // kv_2ltd's K and V halves), `unit` bytes per slice of a range. Takes its memory share from
  // policy.budget now; gives it back when destroyed.
  ReadAhead(SliceSource& source, std::string_view bucket, const ReadAheadPolicy& policy,
            uint64_t chunks, uint32_t slots, uint64_t object_bytes, uint64_t unit);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // False when the budget left no room for windows (Read is then ReadSlices).
  bool active() const { return window_bytes_ > 0; }
  // Largest window this request uses (0 when inactive).
  uint64_t window_bytes() const { return window_bytes_; }
  // Slice reads asked of the source so far (window loads and direct reads).
  uint64_t source_reads() const { return source_reads_; }

  // ReadSlices' contract for `reads`, reads[i] being window keys[i]: fills every kOk dest from
  // a window, loading (or growing) the windows it misses with one ReadSlices for the batch.
  Result<std::vector<SliceStatus>> Read(std::span<const SliceRead> reads,
                                        std::span<const WindowKey> keys);

 private:
  struct Window {
    uint64_t start = 0;
    uint64_t length = 0;                    // 0: holds nothing
    uint64_t next = 0;                      // bytes of the next load (0: not read yet)
    bool loading = false;                   // being loaded by the current Read
    SliceStatus status = SliceStatus::kOk;  // of the last load
    std::unique_ptr<std::byte[]> bytes;
    uint64_t capacity = 0;
  };

  SliceSource& source_;
  const std::string_view bucket_;
  ReadAheadBudget* const budget_;
  const uint32_t slots_;
  const uint64_t object_bytes_;
  const uint64_t unit_;
  uint64_t window_bytes_ = 0;
  uint64_t reserved_ = 0;
  uint64_t source_reads_ = 0;
  std::vector<Window> windows_;
};

}  // namespace oc::storage::kv
