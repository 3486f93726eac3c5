#pragma once
// Access: who may do what (issue 4, auth and access). Every bucket has an owner (the access
// key of the user that created it). A user touches only its own buckets, unless it is an admin
// (credentials file) or the config grants it the bucket ("user=bucket"). Anonymous requests
// may only call the kPublicRead operations (the access column of s3_ops.def) on buckets listed
// in public_read_buckets.
// Bucket owners are cached for kOwnerCacheTtl: a gateway in front of remote storage servers
// may not see another gateway's DeleteBucket/CreateBucket sooner than that.
// Thread safety: every method may be called concurrently.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oc/common/thread_annotations.h"
#include "oc/gateway/options.h"
#include "oc/storage/store.h"
#include "request.h"

namespace oc::gateway {

inline constexpr std::chrono::milliseconds kOwnerCacheTtl{2000};

class Access {
 public:
  // REQUIRES: `store` outlives this object.
  Access(const GatewayOptions& options, storage::Store* store);

  // nullopt when `req.user` (nullptr: anonymous) may call an operation of class `access`
  // (its row's, op_table.h) on `bucket` (or on the service if bucket is empty); otherwise the
  // error response (AccessDenied, NoSuchBucket, ...). Runs on the Store pool (may call
  // HeadBucket).
  std::optional<Response> Check(const Request& req, AccessClass access, const std::string& bucket);
  // Drops the cached owner of `bucket` (after DeleteBucket/CreateBucket).
  void Forget(const std::string& bucket);
  // True when `user` may see `info` in ListBuckets.
  bool MayList(const auth::User& user, const storage::BucketInfo& info) const;

 private:
  bool Granted(const auth::User& user, const std::string& bucket, const std::string& owner) const;
  Result<std::string> Owner(const std::string& bucket);

  storage::Store* store_;
  std::vector<std::string> public_read_;
  std::vector<std::pair<std::string, std::string>> grants_;  // (user name, bucket)

  struct Cached {
    std::string owner;
    std::chrono::steady_clock::time_point expires;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Cached> owners_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::gateway
