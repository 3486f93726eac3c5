#include "lifecycle/lifecycle_configs.h"

#include "oc/storage/cached_reads.h"

namespace oc::gateway {

Result<LifecycleConfigPtr> ParseStoredLifecycle(const std::string& stored) {
  if (stored.empty()) {
    return LifecycleConfigPtr();
  }
  Result<LifecycleConfiguration> parsed = ParseLifecycleXml(stored);
  if (!parsed.has_value()) {
    return Status::Corruption("stored lifecycle configuration: " +
                              std::string(parsed.error().message()));
  }
  return LifecycleConfigPtr(std::make_shared<const LifecycleConfiguration>(std::move(*parsed)));
}

Result<LifecycleConfigPtr> LifecycleConfigs::Get(std::string_view bucket) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(std::string(bucket));
    if (it != entries_.end() && now - it->second.fetched < ttl_) {
      return it->second.config;
    }
  }
  if (storage::CachedReadsOnly::Active()) {
    storage::CachedReadsOnly::NoteMiss();
    return Status::Unavailable("lifecycle configuration not in memory");
  }
  OC_ASSIGN_OR_RETURN(const std::string stored, store_->GetBucketLifecycle(bucket));
  OC_ASSIGN_OR_RETURN(LifecycleConfigPtr config, ParseStoredLifecycle(stored));
  Remember(bucket, config);
  return config;
}

Status LifecycleConfigs::Set(std::string_view bucket, LifecycleConfigPtr config) {
  const Status s = store_->SetBucketLifecycle(bucket, config ? LifecycleXml(*config) : "");
  if (s.ok()) {
    Remember(bucket, std::move(config));
  } else {
    std::lock_guard lock(mu_);
    entries_.erase(std::string(bucket));  // whatever the store holds now, read it next time
  }
  return s;
}

void LifecycleConfigs::Remember(std::string_view bucket, LifecycleConfigPtr config) {
  std::lock_guard lock(mu_);
  if (entries_.size() >= kMaxCachedLifecycles) {
    entries_.clear();
  }
  entries_[std::string(bucket)] = Entry{std::move(config), std::chrono::steady_clock::now()};
}

}  // namespace oc::gateway
