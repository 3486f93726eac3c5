// Read-ahead windows of a descriptor GET (read_ahead.h).

#include "kv/read_ahead.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>

namespace oc::storage::kv {
namespace {

// A window must hold at least this many slices to be worth its copy.
constexpr uint64_t kMinWindowSlices = 2;

}  // namespace

// One ReadSlices of loads ahead, run once by a worker or by the request's thread, whichever
// claims it first.
struct ReadAhead::Batch {
  std::vector<SliceRead> reads;
  std::atomic<bool> claimed{false};
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                  // guarded by mu
  Status status;                      // guarded by mu: the call's own error
  std::vector<SliceStatus> statuses;  // guarded by mu: one per read, when status is OK

  void Run(ReadSession& session) {
    Result<std::vector<SliceStatus>> r = session.ReadSlices(reads);
    std::lock_guard lock(mu);
    if (r.has_value()) {
      statuses = std::move(*r);
    } else {
      status = r.status();
    }
    done = true;
    cv.notify_all();
  }
  // Runs it here unless a worker has claimed it; then waits for that worker to finish.
  void Settle(ReadSession& session) {
    if (!claimed.exchange(true)) {
      Run(session);
      return;
    }
    Wait();
  }
  // At the request's end: drops it unrun unless a worker has claimed it; then waits for that
  // worker to finish.
  void Drop() {
    if (!claimed.exchange(true)) {
      std::lock_guard lock(mu);
      status = Status::Cancelled("load ahead dropped");
      done = true;
      return;
    }
    Wait();
  }
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
  }
};

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

ReadAhead::ReadAhead(ReadSession& session, const ReadAheadPolicy& policy, uint64_t chunks,
                     uint32_t slots, uint64_t object_bytes, uint64_t unit, BoundedExecutor* workers)
    : session_(session),
      budget_(policy.budget),
      slots_(std::max<uint32_t>(1, slots)),
      object_bytes_(object_bytes),
      unit_(unit),
      workers_(workers) {
  const uint64_t count = chunks * slots_;  // chunks <= N and slots <= 2: no overflow
  if (policy.window_bytes == 0 || policy.budget == nullptr || count == 0 || unit == 0) {
    return;
  }
  // No window larger than a chunk's range, nor than the policy allows; whole slices, so that
  // no window ends inside a slice (which would cost a read more per range).
  const uint64_t range = object_bytes / slots_;
  uint64_t window = std::min(policy.window_bytes, range) / unit * unit;
  if (window < kMinWindowSlices * unit || window > UINT64_MAX / (2 * count)) {
    return;
  }
  // Loads ahead need a second buffer per window. Full windows without them read in as few
  // ops as full windows with them, and smaller windows cost ops: so loads ahead only while
  // the budget has room for both at full size.
  if (workers_ != nullptr) {
    reserved_ = budget_->TakeUpTo(2 * window * count);
    if (reserved_ < 2 * window * count) {
      budget_->Give(reserved_);
      reserved_ = 0;
      workers_ = nullptr;
    }
  }
  if (workers_ == nullptr) {
    reserved_ = budget_->TakeUpTo(window * count);
    window = std::min(window, reserved_ / count / unit * unit);
    if (window < kMinWindowSlices * unit) {
      budget_->Give(reserved_);
      reserved_ = 0;
      return;
    }
    budget_->Give(reserved_ - window * count);
    reserved_ = window * count;
  }
  window_bytes_ = window;
  windows_.resize(count);
}

ReadAhead::~ReadAhead() {
  for (Window& w : windows_) {
    if (w.ahead != nullptr) {
      w.ahead->Drop();  // a worker may be writing into w.ahead_bytes: waits for it
    }
    budget_->KeepBuffer(std::move(w.bytes), w.capacity);
    budget_->KeepBuffer(std::move(w.ahead_bytes), w.ahead_capacity);
  }
  if (reserved_ > 0) {
    budget_->Give(reserved_);
  }
}

void ReadAhead::EnsureBuffer(std::unique_ptr<std::byte[]>& bytes, uint64_t& capacity,
                             uint64_t size) {
  if (capacity < size) {
    // The largest window this request uses at once (size <= window_bytes_): one buffer per
    // window (and one per load ahead) for the request's life, kept warm across requests.
    budget_->KeepBuffer(std::move(bytes), capacity);
    bytes = budget_->TakeBuffer(window_bytes_, &capacity);
  }
}

Status ReadAhead::TakeAhead(Window& w) {
  const std::shared_ptr<Batch> b = std::move(w.ahead);
  b->Settle(session_);
  std::swap(w.bytes, w.ahead_bytes);
  std::swap(w.capacity, w.ahead_capacity);
  w.start = w.ahead_start;
  w.length = 0;
  std::lock_guard lock(b->mu);  // done: Run's writes are visible
  OC_RETURN_IF_ERROR(b->status);
  w.status = b->statuses.at(w.ahead_entry);
  if (w.status == SliceStatus::kOk) {
    w.length = w.ahead_length;
  }
  return Status::Ok();
}

void ReadAhead::DropAhead(Window& w) {
  if (w.ahead != nullptr) {
    // Other windows' loads share the batch: it runs, only this entry goes unused.
    std::shared_ptr<Batch> b = std::move(w.ahead);
    b->Settle(session_);
  }
}

void ReadAhead::LoadAhead(const std::vector<Window*>& due) {
  auto batch = std::make_shared<Batch>();
  const uint64_t range = object_bytes_ / slots_;
  for (Window* w : due) {
    w->due = false;
    const uint64_t index = static_cast<uint64_t>(w - windows_.data());
    const uint64_t range_end = range * (index % slots_ + 1);
    const uint64_t left = w->frontier < range_end ? range_end - w->frontier : 0;
    const uint64_t size = std::min({w->next, window_bytes_, left});
    if (w->ahead != nullptr || size == 0 || w->status != SliceStatus::kOk) {
      continue;
    }
    EnsureBuffer(w->ahead_bytes, w->ahead_capacity, size);
    w->ahead = batch;
    w->ahead_entry = batch->reads.size();
    w->ahead_start = w->frontier;
    w->ahead_length = size;
    w->frontier += size;
    w->next = NextLoad(size);
    batch->reads.push_back(
        SliceRead{w->name, w->ahead_start, MutableByteSpan(w->ahead_bytes.get(), size)});
  }
  if (batch->reads.empty()) {
    return;
  }
  loads_ahead_ += batch->reads.size();
  source_reads_ += batch->reads.size();
  // Refused (the pool's queue is full): the request's thread runs it when it needs it.
  (void)workers_->Submit([batch, session = &session_, count = by_workers_] {
    if (!batch->claimed.exchange(true)) {
      count->fetch_add(batch->reads.size());
      batch->Run(*session);
    }
  });
}

Result<std::vector<SliceStatus>> ReadAhead::Read(std::span<const SliceRead> reads,
                                                 std::span<const WindowKey> keys) {
  if (!active()) {
    source_reads_ += reads.size();
    return session_.ReadSlices(reads);
  }
  if (keys.size() != reads.size()) {
    return Status::Internal("read-ahead: one key per read expected");
  }
  std::vector<SliceStatus> out(reads.size(), SliceStatus::kOk);
  std::vector<SliceRead> batch;                      // window loads and direct reads, in one call
  std::vector<Window*> batch_window;                 // the window each batch entry loads, or null
  std::vector<size_t> batch_read;                    // the read a direct entry serves
  std::vector<std::pair<size_t, Window*>> deferred;  // reads served by a window being loaded
  std::vector<Window*> due;                          // whose next load starts ahead (workers)
  auto load_next = [&](Window& w) {
    if (workers_ != nullptr && !w.due) {
      w.due = true;
      due.push_back(&w);
    }
  };
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
    if (w.ahead != nullptr && r.offset >= w.ahead_start && n <= w.ahead_length &&
        r.offset - w.ahead_start <= w.ahead_length - n) {
      OC_RETURN_IF_ERROR(TakeAhead(w));
      if (w.status != SliceStatus::kOk) {
        out[i] = w.status;
        continue;
      }
      std::memcpy(r.dest.data(), w.bytes.get() + (r.offset - w.start), n);
      load_next(w);
      continue;
    }
    DropAhead(w);  // not read in order: what was loaded ahead goes unused
    if (w.name.empty()) {
      w.name = r.name;
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
    EnsureBuffer(w.bytes, w.capacity, size);
    w.start = r.offset;
    w.length = size;
    w.frontier = r.offset + size;
    w.loading = true;
    load_next(w);  // once it is in
    w.next = NextLoad(size);
    batch.push_back(SliceRead{r.name, r.offset, MutableByteSpan(w.bytes.get(), size)});
    batch_window.push_back(&w);
    batch_read.push_back(i);
    deferred.emplace_back(i, &w);
  }
  if (batch.empty()) {
    if (!due.empty()) {
      LoadAhead(due);
    }
    return out;
  }
  source_reads_ += batch.size();
  Result<std::vector<SliceStatus>> loaded = session_.ReadSlices(batch);
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
  if (!loaded.has_value()) {
    for (Window* w : due) {
      w->due = false;
    }
    return loaded.status();
  }
  if (!due.empty()) {
    LoadAhead(due);
  }
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
