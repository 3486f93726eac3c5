#pragma once
// Bucket quotas (docs/decisions/bucket-quotas.md): the [quota] table's options and the one
// Status a store returns when a write would take a quota bucket over one of its limits. The
// store OpenStore returns enforces them (src/quota/quota_store.h) on every backend; the storage
// RPC carries the refusal unchanged (code, subject, field, message) and the gateway answers it
// 403 QuotaExceeded, as Ceph RGW does. Thread safety: values.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "oc/common/status.h"

namespace oc {
class Config;
}  // namespace oc

namespace oc::storage {

// The limits of one bucket. A limit left at kNoLimit is not enforced.
struct BucketQuota {
  static constexpr uint64_t kNoLimit = ~0ull;
  // Bytes of the bucket's objects plus the parts of its unfinished multipart uploads (RGW
  // counts uploaded parts too: an upload never completed still takes room).
  // Default: kNoLimit
  uint64_t max_bytes = kNoLimit;
  // Objects in the bucket (parts are not objects).
  // Default: kNoLimit
  uint64_t max_objects = kNoLimit;
  bool operator==(const BucketQuota&) const = default;
};

// The [quota] table.
struct QuotaOptions {
  // Bucket name -> its limits (`buckets = { photos = { max_bytes = "10GiB", max_objects =
  // 100000 } }`). Buckets not named have no quota and pay nothing for the feature.
  // Default: none
  std::map<std::string, BucketQuota, std::less<>> buckets;
  // On a backend several servers share (RADOS), how often each server re-counts the usage of
  // its quota buckets from a listing, taking in what the other servers wrote. 0: never. A
  // backend with one server per bucket (RocksDB) is counted once, at open, and kept exact.
  // Default: 60 s
  std::chrono::milliseconds recount_interval{60'000};
  // kInvalidArgument naming the key: a bucket name S3 refuses, a bucket with no limit.
  Status Validate() const;
};

// Reads the [quota] table into *options (absent keys leave it unchanged). kInvalidArgument
// naming the key on a bad value.
Status ApplyConfig(const oc::Config& config, QuotaOptions* options);

// The field of a quota refusal. Not a request field: the gateway never echoes it.
inline constexpr std::string_view kQuotaField = "quota";

// kResourceExhausted/kBucket/kQuotaField; `message` names the bucket and the limit and is
// what the client reads in the error's <Message>.
inline Status QuotaExceeded(std::string message) {
  return Status(Code::kResourceExhausted, Subject::kBucket, std::string(kQuotaField),
                std::move(message));
}

inline bool IsQuotaExceeded(const Status& s) {
  return s.code() == Code::kResourceExhausted && s.field() == kQuotaField;
}

}  // namespace oc::storage
