// The [quota] table (oc/storage/quota.h): its rows, reading the per-bucket inline tables, and
// Validate. docs/decisions/bucket-quotas.md says why quotas are configuration.
#include <string>
#include <vector>

#include <fmt/core.h>

#include "names.h"
#include "oc/common/config.h"
#include "oc/common/config_table.h"
#include "oc/storage/config_tables.h"
#include "oc/storage/quota.h"

namespace oc::storage {
namespace {

constexpr std::string_view kMaxBytes = "max_bytes";
constexpr std::string_view kMaxObjects = "max_objects";

// The checks of one bucket's entry, naming `key` (its quota.buckets.<name> key).
Status CheckBucket(const std::string& key, std::string_view name, const BucketQuota& q) {
  if (!ValidateBucketName(name).ok()) {
    return Status::InvalidArgument(key, "must be named by a valid S3 bucket name");
  }
  if (q.max_bytes == BucketQuota::kNoLimit && q.max_objects == BucketQuota::kNoLimit) {
    return Status::InvalidArgument(key, "needs max_bytes or max_objects (or both)");
  }
  if (q.max_bytes == 0) {
    return Status::InvalidArgument(Config::SubKey(key, kMaxBytes),
                                   "must be at least 1 (leave it out for no byte limit)");
  }
  if (q.max_objects == 0) {
    return Status::InvalidArgument(Config::SubKey(key, kMaxObjects),
                                   "must be at least 1 (leave it out for no object limit)");
  }
  return Status::Ok();
}

// `buckets = { photos = { max_bytes = "10GiB", max_objects = 1000 }, ... }`: replaces the
// whole map when present.
Status ReadBuckets(const Config& config, const std::string& key, QuotaOptions* o) {
  if (!config.Has(key)) {
    return Status::Ok();
  }
  OC_ASSIGN_OR_RETURN(std::vector<std::string> names, config.Names(key));
  decltype(QuotaOptions::buckets) buckets;
  for (const std::string& name : names) {
    const std::string bucket_key = Config::SubKey(key, name);
    OC_RETURN_IF_ERROR(config.Names(bucket_key).status());
    BucketQuota q;
    OC_RETURN_IF_ERROR(config.ReadSize(Config::SubKey(bucket_key, kMaxBytes), &q.max_bytes));
    OC_RETURN_IF_ERROR(config.Read(Config::SubKey(bucket_key, kMaxObjects), &q.max_objects));
    OC_RETURN_IF_ERROR(CheckBucket(bucket_key, name, q));
    buckets.emplace(name, q);
  }
  o->buckets = std::move(buckets);
  return Status::Ok();
}

std::string BucketsToml(const QuotaOptions& o) {
  std::string out = "{";
  for (const auto& [name, q] : o.buckets) {
    std::string fields;
    if (q.max_bytes != BucketQuota::kNoLimit) {
      fields += fmt::format("{} = {}", kMaxBytes, q.max_bytes);
    }
    if (q.max_objects != BucketQuota::kNoLimit) {
      fields += fmt::format("{}{} = {}", fields.empty() ? "" : ", ", kMaxObjects, q.max_objects);
    }
    out += fmt::format("{}{} = {{ {} }}", out.size() == 1 ? " " : ", ",
                       Config::SubKey("", name).substr(1), fields);
  }
  return out + (o.buckets.empty() ? "}" : " }");
}

}  // namespace

const ConfigTable<QuotaOptions>& QuotaConfigTable() {
  static const ConfigTable<QuotaOptions>* const table = [] {
    auto* t = new ConfigTable<QuotaOptions>(
        "quota",
        "[quota]: bucket quotas (storage-server/include/oc/storage/quota.h; "
        "docs/decisions/bucket-quotas.md). A write that would take a quota bucket over a limit "
        "is refused with 403 QuotaExceeded before its body is stored; deletes always pass.");
    (*t).Custom("buckets",
                "Bucket name -> its limits, as inline tables: buckets = { photos = { max_bytes = "
                "\"10GiB\", max_objects = 100000 } }. max_bytes counts the objects' bytes and the "
                "parts of unfinished multipart uploads; max_objects counts objects. Give either "
                "or both; a bucket not named has no quota. Quote a name with dots: "
                "\"my.photos\" = { ... }. Usage per bucket is in /stats (quota.<bucket>.*).",
                &ReadBuckets, &BucketsToml)
        .Duration("recount_interval", &QuotaOptions::recount_interval,
                  "On RADOS (servers sharing a pool), how often each server re-counts its quota "
                  "buckets' usage from a listing, to take in what the other servers wrote: the "
                  "bound on how stale a server's view is. \"0s\": never. RocksDB keeps usage "
                  "exact without it.");
    return t;
  }();
  return *table;
}

Status QuotaOptions::Validate() const {
  OC_RETURN_IF_ERROR(QuotaConfigTable().Check(*this));
  for (const auto& [name, q] : buckets) {
    OC_RETURN_IF_ERROR(CheckBucket(Config::SubKey("quota.buckets", name), name, q));
  }
  return Status::Ok();
}

Status ApplyConfig(const oc::Config& config, QuotaOptions* options) {
  return QuotaConfigTable().Apply(config, options);
}

}  // namespace oc::storage
