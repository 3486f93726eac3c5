#include "rados/rados_commit_memo.h"

#include <algorithm>
#include <functional>

namespace oc::storage::rados {

CommitMemo::StripeHold::~StripeHold() {
  if (memo_ != nullptr) {
    memo_->Release(stripes_);
  }
}

std::string CommitMemo::KeyId(uint64_t bucket_id, std::string_view name) {
  std::string id(sizeof(bucket_id), '\0');
  for (size_t i = 0; i < sizeof(bucket_id); ++i) {
    id[i] = static_cast<char>(bucket_id >> (8 * i));
  }
  id.append(name);
  return id;
}

size_t CommitMemo::StripeOf(const std::string& key_id) {
  return std::hash<std::string_view>{}(key_id) % kStripes;
}

CommitMemo::StripeHold CommitMemo::LockStripes(const std::vector<std::string>& key_ids) {
  std::vector<size_t> stripes;
  stripes.reserve(key_ids.size());
  for (const std::string& id : key_ids) {
    stripes.push_back(StripeOf(id));
  }
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::unique_lock lock(mu_);
  for (size_t s : stripes) {
    cv_.wait(lock, [&]() OC_REQUIRES(mu_) { return !busy_[s]; });
    busy_[s] = true;
  }
  return StripeHold(this, std::move(stripes));
}

void CommitMemo::Release(const std::vector<size_t>& stripes) {
  {
    std::lock_guard lock(mu_);
    for (size_t s : stripes) {
      busy_[s] = false;
    }
  }
  cv_.notify_all();
}

CommitMemo::PutTurn CommitMemo::AwaitPutTurn(const std::string& key_id, PendingPut* put) {
  const size_t s = StripeOf(key_id);
  std::unique_lock lock(mu_);
  pending_[key_id].push_back(put);
  cv_.wait(lock, [&]() OC_REQUIRES(mu_) { return put->done || !busy_[s]; });
  PutTurn turn;
  if (put->done) {
    return turn;
  }
  busy_[s] = true;
  auto it = pending_.find(key_id);  // holds `put` at least: only a stripe holder takes
  turn.batch = std::move(it->second);
  pending_.erase(it);
  turn.hold.emplace(this, std::vector<size_t>{s});
  return turn;
}

void CommitMemo::FinishPuts(const std::vector<PendingPut*>& batch, const Status& status) {
  {
    std::lock_guard lock(mu_);
    for (PendingPut* p : batch) {
      p->status = status;
      p->done = true;
    }
  }
  cv_.notify_all();
}

size_t CommitMemo::PendingCount(const std::string& key_id) {
  std::lock_guard lock(mu_);
  auto it = pending_.find(key_id);
  return it == pending_.end() ? 0 : it->second.size();
}

std::optional<ObjectRecord> CommitMemo::Recall(const std::string& key_id) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key_id);
  if (it == index_.end()) {
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void CommitMemo::Remember(const std::string& key_id, const std::optional<ObjectRecord>& record) {
  if (!record.has_value()) {
    Forget(key_id);  // "absent" is what a commit assumes of a key it does not remember
    return;
  }
  std::lock_guard lock(mu_);
  auto it = index_.find(key_id);
  if (it != index_.end()) {
    it->second->second = *record;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key_id, *record);
  index_[key_id] = lru_.begin();
  if (lru_.size() > kRememberedKeys) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void CommitMemo::Forget(const std::string& key_id) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key_id);
  if (it != index_.end()) {
    lru_.erase(it->second);
    index_.erase(it);
  }
}

}  // namespace oc::storage::rados
