// Read-ahead windows of a descriptor GET (read_ahead.h).

#include "kv/read_ahead.h"

#include <algorithm>
#include <cstring>

namespace oc::storage::kv {
namespace {

// A window must hold at least this many slices to be worth its copy.
constexpr uint64_t kMinWindowSlices = 2;

}  // namespace

std::unique_ptr<std::byte[]> ReadAheadBudget::TakeBuffer(uint64_t bytes, uint64_t* got) {
  {
    std::lock_guard lock(mu_);
    auto it = kept_.lower_bound(bytes);
    if (it != kept_.end() && it->first / 2 <= bytes) {
      *got = it->first;
      std::unique_ptr<std::byte[]> buf = std::move(it->second);
      kept_bytes_ -= it->first;
      kept_.erase(it);
      return buf;
    }
  }
  *got = bytes;
  return std::unique_ptr<std::byte[]>(new std::byte[bytes]);
}

void ReadAheadBudget::KeepBuffer(std::unique_ptr<std::byte[]> buf, uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (buf != nullptr && kept_bytes_ + bytes <= capacity_) {
    kept_bytes_ += bytes;
    kept_.emplace(bytes, std::move(buf));
  }
}

uint64_t ReadAheadBudget::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

ReadAhead::ReadAhead(SliceSource& source, std::string_view bucket, const ReadAheadPolicy& policy,
                     uint64_t chunks, uint32_t slots, uint64_t object_bytes, uint64_t unit)
    : source_(source),
      bucket_(bucket),
      budget_(policy.budget),
      slots_(std::max<uint32_t>(1, slots)),
      object_bytes_(object_bytes),
      unit_(unit) {
  const uint64_t count = chunks * slots_;  // chunks <= N and slots <= 2: no overflow
  if (policy.window_bytes == 0 || policy.budget == nullptr || count == 0 || unit == 0) {
    return;
  }
  // No window larger than a chunk's range, nor than the policy allows.
  const uint64_t range = object_bytes / slots_;
  uint64_t window = std::min(policy.window_bytes, range);
  if (window < kMinWindowSlices * unit || window > UINT64_MAX / count) {
    return;
  }
  reserved_ = budget_->TakeUpTo(window * count);
  window = reserved_ / count;
  if (window < kMinWindowSlices * unit) {
    budget_->Give(reserved_);
    reserved_ = 0;
    return;
  }
  window_bytes_ = window;
  windows_.resize(count);
}

ReadAhead::~ReadAhead() {
  for (Window& w : windows_) {
    budget_->KeepBuffer(std::move(w.bytes), w.capacity);
  }
  if (reserved_ > 0) {
    budget_->Give(reserved_);
  }
}

Result<std::vector<SliceStatus>> ReadAhead::Read(std::span<const SliceRead> reads,
                                                 std::span<const WindowKey> keys) {
  if (!active()) {
    source_reads_ += reads.size();
    return source_.ReadSlices(bucket_, reads);
  }
  if (keys.size() != reads.size()) {
    return Status::Internal("read-ahead: one key per read expected");
  }
  std::vector<SliceStatus> out(reads.size(), SliceStatus::kOk);
  std::vector<SliceRead> batch;                      // window loads and direct reads, in one call
  std::vector<Window*> batch_window;                 // the window each batch entry loads, or null
  std::vector<size_t> batch_read;                    // the read a direct entry serves
  std::vector<std::pair<size_t, Window*>> deferred;  // reads served by a window being loaded
  for (size_t i = 0; i < reads.size(); ++i) {
    const SliceRead& r = reads[i];
    if (keys[i].slot >= slots_ || keys[i].chunk >= windows_.size() / slots_) {
      return Status::Internal("read-ahead: a read names a window outside the request");
    }
    const uint64_t index = keys[i].chunk * slots_ + keys[i].slot;
    Window& w = windows_[index];
    const uint64_t n = r.dest.size();
    if (w.length > 0 && r.offset >= w.start && n <= w.length &&
        r.offset - w.start <= w.length - n) {
      if (w.loading) {
        deferred.emplace_back(i, &w);
      } else {
        std::memcpy(r.dest.data(), w.bytes.get() + (r.offset - w.start), n);
      }
      continue;
    }
    // A miss. A range's first read is its slice alone, straight into dest (layer 0 waits
    // for no more than it did); each later miss loads a window from here twice the last one.
    // Direct as well: a miss on a window this Read already loads (its old bytes may still
    // be copied out), and a window the range's end would cut below two slices.
    // Range `slot` is the slot-th of `slots_` equal parts of the object (kv_2ltd: K, V).
    const uint64_t range = object_bytes_ / slots_;
    const uint64_t range_end = range * (keys[i].slot + 1);
    const uint64_t left = r.offset < range_end ? range_end - r.offset : 0;
    const uint64_t size = std::min({w.next, window_bytes_, left});
    if (w.loading || w.next == 0 || size < n || size < kMinWindowSlices * unit_) {
      if (!w.loading && w.next == 0) {
        w.next = kMinWindowSlices * unit_;
      }
      batch.push_back(r);
      batch_window.push_back(nullptr);
      batch_read.push_back(i);
      continue;
    }
    if (w.capacity < size) {
      // The largest window this request uses at once (size <= window_bytes_): one buffer
      // per window for the request's life, kept warm across requests by the budget.
      budget_->KeepBuffer(std::move(w.bytes), w.capacity);
      w.bytes = budget_->TakeBuffer(window_bytes_, &w.capacity);
    }
    w.start = r.offset;
    w.length = size;
    w.loading = true;
    w.next = size > window_bytes_ / 2 ? window_bytes_ : 2 * size;
    batch.push_back(SliceRead{r.name, r.offset, MutableByteSpan(w.bytes.get(), size)});
    batch_window.push_back(&w);
    batch_read.push_back(i);
    deferred.emplace_back(i, &w);
  }
  if (batch.empty()) {
    return out;
  }
  source_reads_ += batch.size();
  Result<std::vector<SliceStatus>> loaded = source_.ReadSlices(bucket_, batch);
  for (size_t b = 0; b < batch.size(); ++b) {
    Window* w = batch_window[b];
    const SliceStatus s = loaded.has_value() ? (*loaded)[b] : SliceStatus::kMissing;
    if (w == nullptr) {
      out[batch_read[b]] = s;
      continue;
    }
    w->loading = false;
    w->status = s;
    if (s != SliceStatus::kOk) {
      w->length = 0;  // nothing valid: the reads it was to serve get s
    }
  }
  OC_RETURN_IF_ERROR(loaded.status());
  for (const auto& [i, w] : deferred) {
    const SliceRead& r = reads[i];
    if (w->status != SliceStatus::kOk) {
      out[i] = w->status;
      continue;
    }
    std::memcpy(r.dest.data(), w->bytes.get() + (r.offset - w->start), r.dest.size());
  }
  return out;
}

}  // namespace oc::storage::kv
