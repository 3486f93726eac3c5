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
// Loads ahead: given a worker pool, from a range's first window on, each window's next load
// starts on a worker as soon as the window before it is in, in one ReadSlices per Read call for
// every window due, so the OSD reads the next layers while these are delivered; the same loads
// as without workers, only earlier. Layer 0's reads and the first window load as before (a load
// ahead of layer 1 would compete with layer 0's reads at the OSD and delay the first layer). A
// load no worker has started when the request needs it runs on the request's thread (claimed
// once, by whoever comes first), so a busy pool costs nothing but the overlap.
//
// Memory: every window of the request is at most window_bytes (whole slices), and the request
// holds the windows' total from the backend's ReadAheadBudget for its whole life: twice that
// with loads ahead (a window's bytes and the load ahead), which it makes only when the budget
// has room for both at full size; else full windows without loads ahead; else smaller ones,
// none at all below two slices per window (then it reads slice by slice as before). A
// window's buffers are window_bytes from their first load (they grow no more), taken from and
// given back to the budget's kept buffers, so requests reuse memory already mapped.
// Not thread-safe: one request's Assembler uses it (its loads ahead touch only their own
// buffers; the destructor waits for those that started).

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/slice_source.h"
#include "oc/common/executor.h"
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
  // `chunks` chunk objects of `object_bytes` each, read through `session` (the request's, which
  // outlives this) as `slots` equal ranges (1, or 2: kv_2ltd's K and V halves), `unit` bytes
  // per slice of a range. Takes its memory share from policy.budget now; gives it back when
  // destroyed. `workers` (may be null: no loads ahead) run the loads ahead.
  ReadAhead(ReadSession& session, const ReadAheadPolicy& policy, uint64_t chunks, uint32_t slots,
            uint64_t object_bytes, uint64_t unit, BoundedExecutor* workers = nullptr);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // False when the budget left no room for windows (Read is then ReadSlices).
  bool active() const { return window_bytes_ > 0; }
  // Largest window this request uses (0 when inactive).
  uint64_t window_bytes() const { return window_bytes_; }
  // Slice reads asked of the source so far (window loads and direct reads).
  uint64_t source_reads() const { return source_reads_; }
  // Window loads started ahead, and how many of them a worker ran (the rest the request's
  // thread ran when it needed them first, or were dropped unrun at the end).
  uint64_t loads_ahead() const { return loads_ahead_; }
  uint64_t loads_ahead_by_workers() const { return by_workers_->load(); }

  // ReadSlices' contract for `reads`, reads[i] being window keys[i]: fills every kOk dest from
  // a window, loading (or growing) the windows it misses with one ReadSlices for the batch.
  Result<std::vector<SliceStatus>> Read(std::span<const SliceRead> reads,
                                        std::span<const WindowKey> keys);

 private:
  struct Batch;  // one ReadSlices of loads ahead (read_ahead.cc)
  struct Window {
    uint64_t start = 0;
    uint64_t length = 0;                    // 0: holds nothing
    uint64_t next = 0;                      // bytes of the next load (0: not read yet)
    bool loading = false;                   // being loaded by the current Read
    SliceStatus status = SliceStatus::kOk;  // of the last load
    std::unique_ptr<std::byte[]> bytes;
    uint64_t capacity = 0;
    // The load ahead, if one was started: [ahead_start, + ahead_length) into ahead_bytes by
    // entry ahead_entry of *ahead. Its buffer is the window's second one.
    std::string name;       // the chunk object (from the window's first read)
    uint64_t frontier = 0;  // end of the range's last window load
    bool due = false;       // its next load starts ahead at the end of this Read
    std::shared_ptr<Batch> ahead;
    size_t ahead_entry = 0;
    uint64_t ahead_start = 0;
    uint64_t ahead_length = 0;
    std::unique_ptr<std::byte[]> ahead_bytes;
    uint64_t ahead_capacity = 0;
  };

  // The size of the load after one of `size` bytes: twice it, up to the window size.
  uint64_t NextLoad(uint64_t size) const {
    return size > window_bytes_ / 2 ? window_bytes_ : 2 * size;
  }
  // Makes `bytes` (of `capacity`) a window buffer of at least `size` bytes.
  void EnsureBuffer(std::unique_ptr<std::byte[]>& bytes, uint64_t& capacity, uint64_t size);
  // Waits for w's load ahead (running it here if no worker has started it) and takes its bytes
  // as the window's; the old bytes become the next load's buffer. Error if the batch failed.
  Status TakeAhead(Window& w);
  // Starts the next load of every window in `due` (from its frontier) as one batch.
  void LoadAhead(const std::vector<Window*>& due);
  // Ends w's load ahead without taking its bytes.
  void DropAhead(Window& w);

  ReadSession& session_;
  ReadAheadBudget* const budget_;
  const uint32_t slots_;
  const uint64_t object_bytes_;
  const uint64_t unit_;
  uint64_t window_bytes_ = 0;
  uint64_t reserved_ = 0;
  uint64_t source_reads_ = 0;
  BoundedExecutor* workers_;  // null: no loads ahead (none given, or no room for them)
  uint64_t loads_ahead_ = 0;
  // Loads ahead a worker ran (shared with the tasks, which may outlive the request queued).
  std::shared_ptr<std::atomic<uint64_t>> by_workers_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::vector<Window> windows_;
};

}  // namespace oc::storage::kv
