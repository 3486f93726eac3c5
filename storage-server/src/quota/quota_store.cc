// QuotaStore (quota_store.h): the checks and the accounting of quota buckets' writes; the
// writers it hands out are in quota_writers.cc, the counting in quota_count.cc.
#include "quota/quota_store.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "oc/common/log.h"
#include "quota/quota_internal.h"

namespace oc::storage {
namespace quota {
namespace {

const Logger kLog{"quota"};

}  // namespace

QuotaStore::QuotaStore(std::unique_ptr<Store> inner, const QuotaOptions& options)
    : ForwardingStore(std::move(inner)), usage_(options) {}

QuotaStore::~QuotaStore() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (recount_.joinable()) {
    recount_.join();
  }
}

Status QuotaStore::CountAll() {
  for (const std::string& bucket : usage_.Buckets()) {
    OC_ASSIGN_OR_RETURN(Usage counted, CountBucket(*inner_, bucket));
    usage_.Set(bucket, counted);
  }
  return Status::Ok();
}

void QuotaStore::StartRecount(std::chrono::milliseconds interval) {
  recount_ = std::thread([this, interval] {
    std::unique_lock lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, interval, [this]() OC_REQUIRES(stop_mu_) { return stop_; })) {
      lock.unlock();
      if (Status s = CountAll(); !s.ok()) {
        kLog.Warn("quota recount failed error={}", s.ToString());
      }
      lock.lock();
    }
  });
}

Result<uint64_t> QuotaStore::OldSize(const ObjectKey& key, bool* existed) {
  Result<ObjectMeta> old = inner_->Head(key);
  if (old.has_value()) {
    *existed = true;
    return old->size;
  }
  if (old.error().code() == Code::kNotFound && old.error().subject() == Subject::kKey) {
    *existed = false;
    return uint64_t{0};
  }
  return std::move(old).error();
}

// --- Buckets ---
Status QuotaStore::CreateBucket(std::string_view bucket, std::string_view owner) {
  OC_RETURN_IF_ERROR(inner_->CreateBucket(bucket, owner));
  usage_.Set(bucket, Usage{});  // a new bucket holds nothing
  return Status::Ok();
}

Status QuotaStore::DeleteBucket(std::string_view bucket) {
  OC_RETURN_IF_ERROR(inner_->DeleteBucket(bucket));
  usage_.Set(bucket, Usage{});  // its uploads went with it
  return Status::Ok();
}

// --- Objects ---
Result<std::unique_ptr<ObjectWriter>> QuotaStore::Put(const ObjectKey& key,
                                                      const PutOptions& options) {
  const BucketQuota* limits = usage_.Limits(key.bucket);
  if (limits == nullptr) {
    return inner_->Put(key, options);
  }
  // The early check: with the size known, a request that cannot fit is refused before any of
  // its body is read (RGW checks Content-Length first, then the size at the end).
  bool existed = false;
  OC_ASSIGN_OR_RETURN(const uint64_t old, OldSize(key, &existed));
  if (options.expected_size.has_value()) {
    OC_RETURN_IF_ERROR(usage_.Check(
        key.bucket, Delta{static_cast<int64_t>(*options.expected_size) - static_cast<int64_t>(old),
                          existed ? 0 : 1, 0}));
  } else {
    OC_RETURN_IF_ERROR(usage_.Check(key.bucket, Delta{0, existed ? 0 : 1, 0}));
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer, inner_->Put(key, options));
  return MakeObjectWriter(*this, key, std::move(writer), old);
}

Status QuotaStore::Delete(const ObjectKey& key) {
  if (usage_.Limits(key.bucket) == nullptr) {
    return inner_->Delete(key);
  }
  KeyLocks::Held held = locks_.Lock({ObjectLockName(key)});
  bool existed = false;
  Result<uint64_t> old = OldSize(key, &existed);
  Status s = inner_->Delete(key);
  if (s.ok() && old.has_value() && existed) {
    usage_.Settle({}, true, key.bucket, Delta{-static_cast<int64_t>(*old), -1, 0});
  }
  return s;
}

Status QuotaStore::DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) {
  if (usage_.Limits(key.bucket) == nullptr) {
    return inner_->DeleteIf(key, expected);
  }
  KeyLocks::Held held = locks_.Lock({ObjectLockName(key)});
  bool existed = false;
  Result<uint64_t> old = OldSize(key, &existed);
  Status s = inner_->DeleteIf(key, expected);
  if (s.ok() && old.has_value() && existed) {
    usage_.Settle({}, true, key.bucket, Delta{-static_cast<int64_t>(*old), -1, 0});
  }
  return s;
}

Result<ObjectMeta> QuotaStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                    const std::optional<PutOptions>& replace,
                                    const WriteConditions& conditions) {
  if (usage_.Limits(dst.bucket) == nullptr) {
    return inner_->Copy(src, dst, replace, conditions);
  }
  KeyLocks::Held held = locks_.Lock({ObjectLockName(dst)});
  Result<ObjectMeta> source = inner_->Head(src);
  if (!source.has_value()) {
    return inner_->Copy(src, dst, replace, conditions);  // its own error (NoSuchKey...)
  }
  bool existed = false;
  OC_ASSIGN_OR_RETURN(const uint64_t old, OldSize(dst, &existed));
  const int64_t objects = existed ? 0 : 1;
  OC_ASSIGN_OR_RETURN(
      Charge charge,
      usage_.Take(dst.bucket, Delta{static_cast<int64_t>(source->size) - static_cast<int64_t>(old),
                                    objects, 0}));
  Result<ObjectMeta> copied = inner_->Copy(src, dst, replace, conditions);
  usage_.Settle(
      charge, copied.has_value(), dst.bucket,
      Delta{copied.has_value() ? static_cast<int64_t>(copied->size) - static_cast<int64_t>(old) : 0,
            objects, 0});
  return copied;
}

Result<std::unique_ptr<ObjectGroupWriter>> QuotaStore::PutGroup(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectGroupWriter> group, inner_->PutGroup(bucket));
  if (usage_.Limits(bucket) == nullptr) {
    return group;
  }
  return MakeGroupWriter(*this, std::string(bucket), std::move(group));
}

// --- Multipart ---
Result<std::unique_ptr<ObjectWriter>> QuotaStore::UploadPart(const ObjectKey& key,
                                                             std::string_view upload_id,
                                                             uint32_t part_number,
                                                             const PutOptions& options) {
  if (usage_.Limits(key.bucket) == nullptr) {
    return inner_->UploadPart(key, upload_id, part_number, options);
  }
  OC_ASSIGN_OR_RETURN(const uint64_t old, OldPartSize(key, upload_id, part_number));
  if (options.expected_size.has_value()) {
    OC_RETURN_IF_ERROR(usage_.Check(
        key.bucket,
        Delta{0, 0, static_cast<int64_t>(*options.expected_size) - static_cast<int64_t>(old)}));
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer,
                      inner_->UploadPart(key, upload_id, part_number, options));
  return MakePartWriter(*this, key, std::string(upload_id), part_number, std::move(writer), old);
}

Result<uint64_t> QuotaStore::OldPartSize(const ObjectKey& key, std::string_view upload_id,
                                         uint32_t part_number) {
  if (part_number == 0) {
    return uint64_t{0};  // out of range: the inner store's error follows
  }
  Result<ListPartsResult> listed = inner_->ListParts(key, upload_id, part_number - 1, 1);
  if (!listed.has_value()) {
    return uint64_t{0};  // no such upload: UploadPart answers it
  }
  if (!listed->parts.empty() && listed->parts.front().part_number == part_number) {
    return listed->parts.front().size;
  }
  return uint64_t{0};
}

Result<ObjectMeta> QuotaStore::CompleteMultipartUpload(const ObjectKey& key,
                                                       std::string_view upload_id,
                                                       std::span<const CompletedPart> parts,
                                                       const CompleteOptions& options) {
  if (usage_.Limits(key.bucket) == nullptr) {
    return inner_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  KeyLocks::Held held = locks_.Lock({ObjectLockName(key), UploadLockName(key, upload_id)});
  Result<std::map<uint32_t, uint64_t>> stored = ListAllParts(*inner_, key, upload_id);
  if (!stored.has_value()) {
    // No such upload (or a retry of one completed): nothing to account; the inner store
    // answers (the completed object's metadata, or NoSuchUpload).
    return inner_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  uint64_t parts_total = 0;
  for (const auto& [number, size] : *stored) {
    parts_total += size;
  }
  uint64_t listed = 0;
  for (const CompletedPart& p : parts) {
    auto it = stored->find(p.part_number);
    listed += it == stored->end() ? 0 : it->second;
  }
  bool existed = false;
  OC_ASSIGN_OR_RETURN(const uint64_t old, OldSize(key, &existed));
  const int64_t objects = existed ? 0 : 1;
  OC_ASSIGN_OR_RETURN(
      Charge charge,
      usage_.Take(key.bucket, Delta{static_cast<int64_t>(listed) - static_cast<int64_t>(old),
                                    objects, -static_cast<int64_t>(parts_total)}));
  Result<ObjectMeta> done = inner_->CompleteMultipartUpload(key, upload_id, parts, options);
  usage_.Settle(
      charge, done.has_value(), key.bucket,
      Delta{done.has_value() ? static_cast<int64_t>(done->size) - static_cast<int64_t>(old) : 0,
            objects, -static_cast<int64_t>(parts_total)});
  return done;
}

Status QuotaStore::AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) {
  if (usage_.Limits(key.bucket) == nullptr) {
    return inner_->AbortMultipartUpload(key, upload_id);
  }
  KeyLocks::Held held = locks_.Lock({UploadLockName(key, upload_id)});
  Result<std::map<uint32_t, uint64_t>> stored = ListAllParts(*inner_, key, upload_id);
  Status s = inner_->AbortMultipartUpload(key, upload_id);
  if (s.ok() && stored.has_value()) {
    uint64_t total = 0;
    for (const auto& [number, size] : *stored) {
      total += size;
    }
    usage_.Settle({}, true, key.bucket, Delta{0, 0, -static_cast<int64_t>(total)});
  }
  return s;
}

// --- Descriptor PUT ---
Result<KvPutReport> QuotaStore::PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                          ChunkSource* body) {
  if (usage_.Limits(bucket) == nullptr) {
    return inner_->PutChunks(bucket, d, body);
  }
  // N·L·S is known from the descriptor before any byte moves. The chunk names stay locked for
  // the transfer: the engine commits inside PutChunks, so the old sizes read here must still be
  // the ones the commit replaces.
  const uint64_t n = d.num_chunks();
  const uint64_t chunk_bytes = uint64_t{d.num_layers} * d.layer_bytes;
  std::vector<std::string> names;
  names.reserve(n);
  for (uint64_t j = 0; j < n; ++j) {
    names.push_back(d.ObjectName(j));
  }
  std::vector<std::string> lock_names;
  lock_names.reserve(n);
  for (const std::string& name : names) {
    lock_names.push_back(ObjectLockName(ObjectKey{std::string(bucket), name}));
  }
  KeyLocks::Held held = locks_.Lock(std::move(lock_names));
  OC_ASSIGN_OR_RETURN(std::vector<std::optional<ObjectMeta>> old, inner_->HeadMany(bucket, names));
  // The last occurrence of a name is the one stored.
  std::map<std::string_view, size_t> last;
  for (size_t j = 0; j < names.size(); ++j) {
    last[names[j]] = j;
  }
  Delta delta;
  for (const auto& [name, j] : last) {
    if (old[j].has_value() && d.if_none_match) {
      continue;  // left as it is
    }
    delta.bytes += static_cast<int64_t>(chunk_bytes) -
                   static_cast<int64_t>(old[j].has_value() ? old[j]->size : 0);
    delta.objects += old[j].has_value() ? 0 : 1;
  }
  OC_ASSIGN_OR_RETURN(Charge charge, usage_.Take(bucket, delta));
  Result<KvPutReport> report = inner_->PutChunks(bucket, d, body);
  Delta actual;
  if (report.has_value()) {
    for (const auto& [name, j] : last) {
      if (j < report->existed.size() && report->existed[j]) {
        continue;
      }
      actual.bytes += static_cast<int64_t>(chunk_bytes) -
                      static_cast<int64_t>(old[j].has_value() ? old[j]->size : 0);
      actual.objects += old[j].has_value() ? 0 : 1;
    }
  }
  usage_.Settle(charge, report.has_value(), bucket, actual);
  return report;
}

// --- Operations ---
Result<StoreStats> QuotaStore::Stats() {
  OC_ASSIGN_OR_RETURN(StoreStats stats, inner_->Stats());
  usage_.AppendFigures(&stats.figures);
  return stats;
}

uint64_t QuotaStore::Room(std::string_view bucket, uint64_t old) const {
  const BucketQuota* limits = usage_.Limits(bucket);
  if (limits == nullptr || limits->max_bytes == BucketQuota::kNoLimit) {
    return BucketQuota::kNoLimit;
  }
  const Usage u = usage_.Get(bucket);
  const uint64_t held = u.bytes + u.upload_bytes;
  const uint64_t free = held >= limits->max_bytes ? 0 : limits->max_bytes - held;
  return free + old;
}

std::string ObjectLockName(const ObjectKey& key) {
  std::string out = key.bucket;
  out.push_back('\0');
  out += key.name;
  return out;
}

std::string UploadLockName(const ObjectKey& key, std::string_view upload_id) {
  std::string out = key.bucket;
  out.append(2, '\0');  // never an object's: keys are not empty
  out += upload_id;
  return out;
}

}  // namespace quota

Result<std::unique_ptr<Store>> ComposeQuotaStore(std::unique_ptr<Store> inner,
                                                 const QuotaOptions& options) {
  auto store = std::make_unique<quota::QuotaStore>(std::move(inner), options);
  OC_RETURN_IF_ERROR(store->CountAll());
  if (!store->identity().fsid.empty() && options.recount_interval.count() > 0) {
    store->StartRecount(options.recount_interval);
  }
  return std::unique_ptr<Store>(std::move(store));
}

Store& InnerOfQuotaStore(Store& store) {
  if (auto* q = dynamic_cast<quota::QuotaStore*>(&store)) {
    return q->inner();
  }
  return store;
}

bool RecountQuotaStoreNow(Store& store) {
  auto* q = dynamic_cast<quota::QuotaStore*>(&store);
  if (q == nullptr) {
    return false;
  }
  return q->CountAll().ok();
}

}  // namespace oc::storage
