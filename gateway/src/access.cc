#include "access.h"

#include <algorithm>

namespace oc::gateway {

Access::Access(const GatewayOptions& options, storage::Store* store)
    : store_(store), public_read_(options.public_read_buckets) {
  for (const std::string& grant : options.grants) {
    const size_t eq = grant.find('=');
    grants_.emplace_back(grant.substr(0, eq), grant.substr(eq + 1));  // Validate() checked '='
  }
}

bool Access::Granted(const auth::User& user, const std::string& bucket,
                     const std::string& owner) const {
  if (user.admin || owner == user.access_key) {
    return true;
  }
  return std::any_of(grants_.begin(), grants_.end(),
                     [&](const auto& g) { return g.first == user.name && g.second == bucket; });
}

bool Access::MayList(const auth::User& user, const storage::BucketInfo& info) const {
  return Granted(user, info.name, info.owner);
}

Result<std::string> Access::Owner(const std::string& bucket) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = owners_.find(bucket);
    if (it != owners_.end() && it->second.expires > now) {
      return it->second.owner;
    }
  }
  OC_ASSIGN_OR_RETURN(storage::BucketInfo info, store_->HeadBucket(bucket));
  std::lock_guard lock(mu_);
  if (owners_.size() > 100000) {
    owners_.clear();  // bounded: a scan over many bucket names cannot grow it without limit
  }
  owners_[bucket] = {info.owner, now + kOwnerCacheTtl};
  return info.owner;
}

void Access::Forget(const std::string& bucket) {
  std::lock_guard lock(mu_);
  owners_.erase(bucket);
}

std::optional<Response> Access::Check(const Request& req, AccessClass access,
                                      const std::string& bucket) {
  switch (access) {
    case AccessClass::kUnsigned:
    case AccessClass::kAnyCaller:
      return std::nullopt;
    case AccessClass::kSignedUser:
    case AccessClass::kBucketUser:
    case AccessClass::kPublicRead:
      break;
  }
  if (bucket.empty() || access == AccessClass::kSignedUser) {
    if (req.user == nullptr) {
      return Response::Error(S3Error::kAccessDenied);
    }
    return std::nullopt;
  }
  // S3's precedence: a bucket that does not exist is NoSuchBucket before any AccessDenied,
  // for a signed user and an anonymous request alike.
  Result<std::string> owner = Owner(bucket);
  if (!owner.has_value()) {
    return Response::FromStatus(
        owner.error().IsNotFound() ? owner.error().WithSubject(Subject::kBucket) : owner.error());
  }
  if (req.user == nullptr) {
    const bool is_public =
        std::find(public_read_.begin(), public_read_.end(), bucket) != public_read_.end();
    if (!is_public || access != AccessClass::kPublicRead) {
      return Response::Error(S3Error::kAccessDenied);
    }
  }
  if (req.user != nullptr && !Granted(*req.user, bucket, *owner)) {
    return Response::Error(S3Error::kAccessDenied);
  }
  return std::nullopt;
}

}  // namespace oc::gateway
