#include "rocks/group_sync.h"

#include <algorithm>

namespace oc::storage {

uint64_t GroupSync::Written() {
  std::lock_guard lock(mu_);
  const uint64_t ticket = ++written_;
  written_cv_.notify_one();  // only a gathering leader waits on it
  return ticket;
}

Status GroupSync::AwaitSynced(uint64_t ticket) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!failure_.ok() && ticket > failed_after_ && ticket <= failed_upto_) {
      return failure_;
    }
    if (synced_ >= ticket) {
      return Status::Ok();
    }
    if (syncing_) {
      synced_cv_.wait(lock);
      continue;
    }
    // Lead the next sync. Writers that piled up during the last sync are one cohort; the
    // writers that sync released are the other, and come back within a round trip.
    syncing_ = true;
    const uint64_t piled_up = written_at_sync_end_ - synced_;
    const uint64_t expect = std::min<uint64_t>(piled_up + last_group_, kMaxGroup);
    const auto wait = std::min<std::chrono::microseconds>(kMaxGatherWait, last_sync_time_ / 2);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    written_cv_.wait_until(lock, deadline, [&] { return written_ - synced_ >= expect; });
    const uint64_t target = written_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Status s = sync_();
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    lock.lock();
    syncing_ = false;
    last_sync_time_ = took;
    last_group_ = std::max<uint64_t>(1, target - synced_);
    written_at_sync_end_ = written_;
    if (s.ok()) {
      synced_ = target;
    } else if (failure_.ok() || failed_upto_ != kSticky) {
      // Sticky: what was written after a failed sync cannot be promised either. After a
      // Rearm the earlier window keeps failing too (a ticket is only ever reported failed
      // in excess, never acknowledged in error).
      failed_after_ = failure_.ok() ? synced_ : std::min(failed_after_, synced_);
      failure_ = std::move(s);
      failed_upto_ = kSticky;
    }
    synced_cv_.notify_all();
  }
}

void GroupSync::SyncInBackground(uint64_t ticket) {
  std::lock_guard lock(background_mu_);
  if (background_stopped_ || ticket <= background_ticket_) {
    return;
  }
  background_ticket_ = ticket;
  if (!background_.joinable()) {
    background_ = std::thread([this] {
      uint64_t done = 0;
      std::unique_lock lock(background_mu_);
      for (;;) {
        background_cv_.wait(lock, [&] { return background_stopped_ || background_ticket_ > done; });
        if (background_stopped_) {
          return;
        }
        const uint64_t ticket = background_ticket_;
        lock.unlock();
        (void)AwaitSynced(ticket);  // a failure stays for the waiters it concerns
        lock.lock();
        done = ticket;
      }
    });
  }
  background_cv_.notify_one();
}

void GroupSync::StopBackground() {
  {
    std::lock_guard lock(background_mu_);
    background_stopped_ = true;
  }
  background_cv_.notify_one();
  if (background_.joinable()) {
    background_.join();
  }
}

bool GroupSync::failed() {
  std::lock_guard lock(mu_);
  return !failure_.ok() && failed_upto_ == kSticky;
}

bool GroupSync::Rearm() {
  std::lock_guard lock(mu_);
  if (failure_.ok() || failed_upto_ != kSticky) {
    return false;
  }
  failed_upto_ = written_;
  return true;
}

}  // namespace oc::storage
