#include "lifecycle/lifecycle_worker.h"

#include <algorithm>

#include "lifecycle/lifecycle_configs.h"
#include "oc/common/log.h"

namespace oc::gateway {
namespace {

const Logger kLog{"lifecycle"};

// One listing page: S3's page size, and never more than the pass may still look at.
constexpr uint64_t kPageEntries = 1000;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string CursorKey(const std::string& bucket, const LifecycleRule& rule, char kind) {
  std::string key = bucket;
  key.push_back('\0');
  key += rule.id;
  key.push_back('\0');
  key.push_back(kind);
  return key;
}

// A listing or a removal that found the object (or upload, or bucket) gone, or replaced:
// nothing to do, the next pass looks again.
bool Benign(const Status& s) {
  return s.code() == Code::kNotFound || s.code() == Code::kFailedPrecondition;
}

}  // namespace

LifecycleWorker::LifecycleWorker(storage::Store* store, const LifecycleOptions& options)
    : store_(store),
      options_(options),
      day_ms_(static_cast<int64_t>(std::max<uint64_t>(options.day_seconds, 1) * 1000)) {}

LifecycleWorker::~LifecycleWorker() { Stop(); }

void LifecycleWorker::Start() {
  std::lock_guard lock(stop_mu_);
  if (thread_.joinable() || stop_) {
    return;
  }
  thread_ = std::thread([this] { Loop(); });
}

void LifecycleWorker::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool LifecycleWorker::Stopping() {
  std::lock_guard lock(stop_mu_);
  return stop_;
}

void LifecycleWorker::Loop() {
  const std::chrono::milliseconds interval = LifecycleIntervalFor(options_);
  kLog.Info("worker started: day={}s interval={}ms max_objects_per_pass={}", options_.day_seconds,
            interval.count(), options_.max_objects_per_pass);
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    const PassReport r = RunPass(NowUnixMs());
    if (r.expired > 0 || r.aborted > 0 || r.failed > 0 || !r.complete) {
      kLog.Info("pass: buckets={} examined={} expired={} aborted={} failed={} complete={}",
                r.buckets, r.examined, r.expired, r.aborted, r.failed, r.complete);
    }
    std::unique_lock lock(stop_mu_);
    if (stop_cv_.wait_until(lock, started + interval, [this] { return stop_; })) {
      return;
    }
  }
}

LifecycleWorker::PassReport LifecycleWorker::RunPass(int64_t now) {
  std::lock_guard lock(pass_mu_);
  PassReport report;
  uint64_t budget = options_.max_objects_per_pass;
  Result<std::vector<storage::BucketInfo>> buckets = store_->ListBuckets();
  if (!buckets.has_value()) {
    kLog.Warn("listing buckets failed: {}", buckets.error().ToString());
    ++report.failed;
    failures_.fetch_add(1, std::memory_order_relaxed);
    return report;
  }
  for (const storage::BucketInfo& b : *buckets) {
    if (Stopping()) {
      report.complete = false;
      break;
    }
    Result<std::string> stored = store_->GetBucketLifecycle(b.name);
    if (!stored.has_value()) {
      if (!Benign(stored.error())) {
        kLog.Warn("bucket {}: reading its lifecycle configuration failed: {}", b.name,
                  stored.error().ToString());
        ++report.failed;
      }
      continue;
    }
    Result<LifecycleConfigPtr> config = ParseStoredLifecycle(*stored);
    if (!config.has_value()) {
      kLog.Error("bucket {}: {}", b.name, config.error().ToString());
      ++report.failed;
      continue;
    }
    if (*config == nullptr) {
      continue;
    }
    ++report.buckets;
    if (!PassBucket(b.name, **config, now, &budget, &report)) {
      report.complete = false;
      break;
    }
  }
  // Cursors of buckets or rules that are gone stay until their key is walked again; a pass
  // that walked everything starts the next one afresh.
  if (report.complete) {
    cursors_.clear();
  }
  failures_.fetch_add(report.failed, std::memory_order_relaxed);
  passes_.fetch_add(1, std::memory_order_relaxed);
  return report;
}

bool LifecycleWorker::PassBucket(const std::string& bucket, const LifecycleConfiguration& config,
                                 int64_t now, uint64_t* budget, PassReport* report) {
  for (const LifecycleRule& rule : config.rules) {
    if (!rule.enabled) {
      continue;
    }
    if ((rule.expiration_days || rule.expiration_date_ms) &&
        !ExpireObjects(bucket, config, rule, now, budget, report)) {
      return false;
    }
    if (rule.abort_days && !AbortUploads(bucket, config, rule, now, budget, report)) {
      return false;
    }
  }
  return true;
}

bool LifecycleWorker::ExpireObjects(const std::string& bucket, const LifecycleConfiguration& config,
                                    const LifecycleRule& rule, int64_t now, uint64_t* budget,
                                    PassReport* report) {
  // A rule dated in the future expires nothing yet: no listing.
  if (rule.expiration_date_ms && !rule.expiration_days && *rule.expiration_date_ms > now) {
    return true;
  }
  const std::string cursor_key = CursorKey(bucket, rule, 'o');
  Cursor& cursor = cursors_[cursor_key];
  for (;;) {
    if (*budget == 0 || Stopping()) {
      return false;  // the cursor says where to continue
    }
    storage::ListOptions list;
    list.prefix = rule.prefix;
    list.start_after = cursor.after;
    list.max_keys = static_cast<uint32_t>(std::min(kPageEntries, *budget));
    Result<storage::ListResult> page = store_->List(bucket, list);
    if (!page.has_value()) {
      if (!Benign(page.error())) {
        kLog.Warn("bucket {}: listing for rule {} failed: {}", bucket, rule.id,
                  page.error().ToString());
        ++report->failed;
      }
      cursors_.erase(cursor_key);
      return true;
    }
    for (const storage::ListEntry& e : page->objects) {
      --*budget;
      ++report->examined;
      const std::optional<LifecycleExpiry> due =
          ObjectExpiry(config, e.name, e.meta.size, e.meta.tags, e.meta.mtime_unix_ms, day_ms_);
      if (!due || due->due_ms > now) {
        continue;
      }
      const Status s = store_->DeleteIf({bucket, e.name}, {e.meta.etag, e.meta.mtime_unix_ms});
      if (s.ok()) {
        ++report->expired;
        expired_.fetch_add(1, std::memory_order_relaxed);  // counted as it happens
      } else if (!Benign(s)) {
        kLog.Warn("bucket {}: expiring {} failed: {}", bucket, e.name, s.ToString());
        ++report->failed;
      }
    }
    if (!page->truncated) {
      cursors_.erase(cursor_key);
      return true;
    }
    cursor.after = page->next_start_after;
  }
}

bool LifecycleWorker::AbortUploads(const std::string& bucket, const LifecycleConfiguration& config,
                                   const LifecycleRule& rule, int64_t now, uint64_t* budget,
                                   PassReport* report) {
  const std::string cursor_key = CursorKey(bucket, rule, 'u');
  Cursor& cursor = cursors_[cursor_key];
  for (;;) {
    if (*budget == 0 || Stopping()) {
      return false;
    }
    storage::ListUploadsOptions list;
    list.prefix = rule.prefix;
    list.key_marker = cursor.after;
    list.upload_id_marker = cursor.upload_id;
    list.max_uploads = static_cast<uint32_t>(std::min(kPageEntries, *budget));
    Result<storage::ListUploadsResult> page = store_->ListMultipartUploads(bucket, list);
    if (!page.has_value()) {
      if (!Benign(page.error())) {
        kLog.Warn("bucket {}: listing uploads for rule {} failed: {}", bucket, rule.id,
                  page.error().ToString());
        ++report->failed;
      }
      cursors_.erase(cursor_key);
      return true;
    }
    for (const storage::UploadInfo& u : page->uploads) {
      --*budget;
      ++report->examined;
      const std::optional<LifecycleExpiry> due =
          UploadAbortDue(config, u.key, u.initiated_unix_ms, day_ms_);
      if (!due || due->due_ms > now) {
        continue;
      }
      const Status s = store_->AbortMultipartUpload({bucket, u.key}, u.upload_id);
      if (s.ok()) {
        ++report->aborted;
        aborted_.fetch_add(1, std::memory_order_relaxed);
      } else if (!Benign(s)) {
        kLog.Warn("bucket {}: aborting upload {} of {} failed: {}", bucket, u.upload_id, u.key,
                  s.ToString());
        ++report->failed;
      }
    }
    if (!page->truncated) {
      cursors_.erase(cursor_key);
      return true;
    }
    cursor.after = page->next_key_marker;
    cursor.upload_id = page->next_upload_id_marker;
  }
}

}  // namespace oc::gateway
