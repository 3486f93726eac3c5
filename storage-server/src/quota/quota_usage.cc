// QuotaUsage (quota_usage.h): the check and the bookkeeping of every quota bucket.
#include "quota/quota_usage.h"

#include <algorithm>

#include <fmt/core.h>

namespace oc::storage::quota {
namespace {

uint64_t Growth(int64_t d) { return d > 0 ? static_cast<uint64_t>(d) : 0; }

// used + d, never below zero (a delete of an object this server did not count, on RADOS).
uint64_t Add(uint64_t used, int64_t d) {
  if (d >= 0) {
    return used + static_cast<uint64_t>(d);
  }
  const uint64_t down = static_cast<uint64_t>(-(d + 1)) + 1;
  return used > down ? used - down : 0;
}

}  // namespace

QuotaUsage::QuotaUsage(const QuotaOptions& options) {
  for (const auto& [name, limits] : options.buckets) {
    entries_.emplace(name, Entry{limits, {}, 0, 0});
  }
}

const BucketQuota* QuotaUsage::Limits(std::string_view bucket) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  // Entries are never added or removed after construction, so the address stays valid.
  return it == entries_.end() ? nullptr : &it->second.limits;
}

std::vector<std::string> QuotaUsage::Buckets() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) {
    out.push_back(name);
  }
  return out;
}

Status QuotaUsage::Fits(std::string_view bucket, const Entry& e, uint64_t more_bytes,
                        uint64_t more_objects) const {
  const uint64_t bytes = e.used.bytes + e.used.upload_bytes + e.pending_bytes;
  if (more_bytes > 0 && e.limits.max_bytes != BucketQuota::kNoLimit &&
      (bytes > e.limits.max_bytes || more_bytes > e.limits.max_bytes - bytes)) {
    return QuotaExceeded(
        fmt::format("Bucket {} is over its quota: max_bytes is {}; it holds {} bytes (objects and "
                    "unfinished uploads' parts) and this request needs {} more.",
                    bucket, e.limits.max_bytes, bytes, more_bytes));
  }
  const uint64_t objects = e.used.objects + e.pending_objects;
  if (more_objects > 0 && e.limits.max_objects != BucketQuota::kNoLimit &&
      (objects > e.limits.max_objects || more_objects > e.limits.max_objects - objects)) {
    return QuotaExceeded(fmt::format(
        "Bucket {} is over its quota: max_objects is {}; it holds {} objects and this request "
        "adds {}.",
        bucket, e.limits.max_objects, objects, more_objects));
  }
  return Status::Ok();
}

Status QuotaUsage::Check(std::string_view bucket, const Delta& delta) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  if (it == entries_.end()) {
    return Status::Ok();
  }
  return Fits(bucket, it->second, Growth(delta.bytes + delta.upload_bytes), Growth(delta.objects));
}

Result<Charge> QuotaUsage::Take(std::string_view bucket, const Delta& delta) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  if (it == entries_.end()) {
    return Charge{};
  }
  Entry& e = it->second;
  Charge charge{std::string(bucket), Growth(delta.bytes + delta.upload_bytes),
                Growth(delta.objects)};
  OC_RETURN_IF_ERROR(Fits(bucket, e, charge.bytes, charge.objects));
  e.pending_bytes += charge.bytes;
  e.pending_objects += charge.objects;
  return charge;
}

void QuotaUsage::Settle(const Charge& charge, bool committed, std::string_view bucket,
                        const Delta& actual) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  if (it == entries_.end()) {
    return;
  }
  Entry& e = it->second;
  if (!charge.bucket.empty()) {
    e.pending_bytes -= std::min(e.pending_bytes, charge.bytes);
    e.pending_objects -= std::min(e.pending_objects, charge.objects);
  }
  if (committed) {
    e.used.bytes = Add(e.used.bytes, actual.bytes);
    e.used.objects = Add(e.used.objects, actual.objects);
    e.used.upload_bytes = Add(e.used.upload_bytes, actual.upload_bytes);
  }
}

void QuotaUsage::Set(std::string_view bucket, const Usage& usage) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  if (it != entries_.end()) {
    it->second.used = usage;
  }
}

Usage QuotaUsage::Get(std::string_view bucket) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(bucket);
  return it == entries_.end() ? Usage{} : it->second.used;
}

void QuotaUsage::AppendFigures(std::vector<std::pair<std::string, uint64_t>>* figures) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, e] : entries_) {
    const std::string prefix = "quota." + name + ".";
    if (e.limits.max_bytes != BucketQuota::kNoLimit) {
      figures->emplace_back(prefix + "max_bytes", e.limits.max_bytes);
    }
    if (e.limits.max_objects != BucketQuota::kNoLimit) {
      figures->emplace_back(prefix + "max_objects", e.limits.max_objects);
    }
    figures->emplace_back(prefix + "used_bytes", e.used.bytes);
    figures->emplace_back(prefix + "used_objects", e.used.objects);
    figures->emplace_back(prefix + "upload_bytes", e.used.upload_bytes);
  }
}

}  // namespace oc::storage::quota
