// CacheStore (cache_store.h): the Store calls, each forwarded to the store below, with the
// cache buckets' hooks and the PUT admission. The worker, eviction and snapshots are in
// cache_worker.cc.
#include "cache/cache_store.h"

#include <fmt/core.h>

#include <map>
#include <utility>

#include "cache/cache_bucket.h"

namespace oc::storage::cache {
namespace {

Status NoSuchBucket() { return Status::NotFound(Subject::kBucket, "no such bucket"); }

// The descriptor's chunk names 0..n-1 (the views point into `names`).
std::vector<std::string_view> PrefixNames(const descriptor::Descriptor& d, uint64_t n,
                                          std::vector<std::string>* names) {
  names->reserve(n);
  std::vector<std::string_view> views;
  views.reserve(n);
  for (uint64_t j = 0; j < n; ++j) {
    names->push_back(d.ObjectName(j));
  }
  for (const std::string& s : *names) {
    views.push_back(s);
  }
  return views;
}

// A plain object's writer in a cache bucket: forwards every call (the lend path included) and,
// at Commit, admits the bytes if the PUT announced no size, then records the object.
class CacheWriter final : public ObjectWriter {
 public:
  CacheWriter(CacheStore& store, CacheStore::Bucket& bucket, std::string key,
              std::unique_ptr<ObjectWriter> inner, CacheStore::Reservation reservation)
      : store_(store),
        bucket_(bucket),
        key_(std::move(key)),
        inner_(std::move(inner)),
        reservation_(std::move(reservation)) {}
  ~CacheWriter() override {
    if (reservation_.Release()) {
      store_.NotifyRoom(bucket_);
    }
  }

  Status Append(ByteSpan data) override {
    OC_RETURN_IF_ERROR(inner_->Append(data));
    appended_ += data.size();
    return Status::Ok();
  }
  Result<MutableByteSpan> AppendSpace(uint64_t min_bytes, uint64_t max_bytes) override {
    return inner_->AppendSpace(min_bytes, max_bytes);
  }
  Status Appended(uint64_t n) override {
    OC_RETURN_IF_ERROR(inner_->Appended(n));
    appended_ += n;
    return Status::Ok();
  }
  Status AddHeader(std::string name, std::string value) override {
    return inner_->AddHeader(std::move(name), std::move(value));
  }
  Result<ObjectMeta> Commit() override {
    if (!reservation_.held()) {
      // No size was announced: admit what arrived, before anything becomes visible.
      OC_ASSIGN_OR_RETURN(reservation_, store_.Admit(bucket_, appended_));
    }
    Result<ObjectMeta> meta = inner_->Commit();
    if (meta.has_value()) {
      store_.PlainCommitted(bucket_, key_, meta->size, reservation_);
    }
    if (reservation_.Release()) {
      store_.NotifyRoom(bucket_);
    }
    return meta;
  }

 private:
  CacheStore& store_;
  CacheStore::Bucket& bucket_;
  const std::string key_;
  std::unique_ptr<ObjectWriter> inner_;
  CacheStore::Reservation reservation_;
  uint64_t appended_ = 0;
};

// A group of objects in a cache bucket: each committed object is recorded as a plain one.
class CacheGroupWriter final : public ObjectGroupWriter {
 public:
  CacheGroupWriter(CacheStore& store, CacheStore::Bucket& bucket,
                   std::unique_ptr<ObjectGroupWriter> inner)
      : store_(store), bucket_(bucket), inner_(std::move(inner)) {}
  Status Begin(std::string_view name, const PutOptions& options) override {
    OC_RETURN_IF_ERROR(inner_->Begin(name, options));
    names_.emplace_back(name);
    return Status::Ok();
  }
  Status Append(ByteSpan data) override { return inner_->Append(data); }
  Result<std::vector<GroupCommitted>> Commit() override {
    Result<std::vector<GroupCommitted>> done = inner_->Commit();
    if (done.has_value()) {
      for (size_t i = 0; i < done->size() && i < names_.size(); ++i) {
        CacheStore::Reservation none;  // a group's objects are admitted as they commit
        store_.PlainCommitted(bucket_, names_[i], (*done)[i].meta.size, none);
      }
    }
    return done;
  }

 private:
  CacheStore& store_;
  CacheStore::Bucket& bucket_;
  std::unique_ptr<ObjectGroupWriter> inner_;
  std::vector<std::string> names_;
};

}  // namespace

CacheStore::Bucket* CacheStore::Find(std::string_view bucket) const {
  for (const auto& b : buckets_) {
    if (b->name == bucket) {
      return b.get();
    }
  }
  return nullptr;
}

// --- Admission ---

Result<CacheStore::Reservation> CacheStore::Admit(Bucket& b, uint64_t incoming) {
  const auto refuse = [&](std::string why) {
    b.puts_refused.fetch_add(1, std::memory_order_relaxed);
    return Status::ResourceExhausted(std::string(kCacheFullField),
                                     fmt::format("cache bucket {} is full: {}", b.name, why));
  };
  if (incoming > b.capacity) {
    return refuse(fmt::format("{} bytes exceed its capacity of {}", incoming, b.capacity));
  }
  // What the decision saw is what the peak records: read again later, the sum would include
  // other threads' changes, which are no admission (churn_bench once saw a "peak" 1.8 KB over
  // the capacity that way).
  uint64_t seen = 0;
  const auto fits = [&] {
    seen = b.index.UsedBytes() + b.deleting.load(std::memory_order_relaxed) +
           b.reserved.load(std::memory_order_relaxed) + incoming;
    return seen <= b.capacity;
  };
  std::unique_lock lock(mu_);
  if (!fits()) {
    b.puts_waited.fetch_add(1, std::memory_order_relaxed);
    b.waiting.fetch_add(incoming, std::memory_order_relaxed);
    kicked_ = true;
    work_cv_.notify_one();
    const bool room =
        room_cv_.wait_for(lock, options_.put_wait, [&] { return stopping_ || fits(); });
    b.waiting.fetch_sub(incoming, std::memory_order_relaxed);
    if (!room || stopping_) {
      return refuse(fmt::format("eviction did not free {} bytes within {} ms", incoming,
                                options_.put_wait.count()));
    }
  }
  b.reserved.fetch_add(incoming, std::memory_order_relaxed);
  const uint64_t admitted = seen;
  uint64_t peak = b.admitted_peak.load(std::memory_order_relaxed);
  while (admitted > peak &&
         !b.admitted_peak.compare_exchange_weak(peak, admitted, std::memory_order_relaxed)) {
  }
  return Reservation(&b, incoming);
}

void CacheStore::PlainCommitted(Bucket& b, std::string_view key, uint64_t size,
                                Reservation& reservation) {
  bool released = false;
  {
    std::lock_guard lock(mu_);  // with the index entry, in one step (cache_store.h)
    b.index.OnPlainPut(key, size);
    released = reservation.Release();
  }
  b.Log(key, {}, size, kLogPut);
  b.dirty.store(true, std::memory_order_relaxed);
  MaybeKick(b);
  if (released) {
    NotifyRoom(b);
  }
}

void CacheStore::NotifyRoom(Bucket& b) {
  if (b.waiting.load(std::memory_order_relaxed) == 0) {
    return;
  }
  { std::lock_guard lock(mu_); }  // a waiter between its check and its wait sees the change
  room_cv_.notify_all();
}

void CacheStore::Kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  work_cv_.notify_one();
}

void CacheStore::MaybeKick(Bucket& b) {
  // Only what is stored: the caller's own reservation is still held here, and a PUT that
  // needs room for reserved bytes kicks the worker itself (Admit).
  if (b.index.NeedsEviction()) {
    Kick();
  }
}

// --- Buckets: the state bucket is nobody's ---

Status CacheStore::CreateBucket(std::string_view bucket, std::string_view owner) {
  if (bucket == kCacheStateBucket) {
    return Status::AlreadyExists(Subject::kBucket, "the name is reserved");
  }
  return inner_->CreateBucket(bucket, owner);
}
Status CacheStore::DeleteBucket(std::string_view bucket) {
  return bucket == kCacheStateBucket ? NoSuchBucket() : inner_->DeleteBucket(bucket);
}
Result<BucketInfo> CacheStore::HeadBucket(std::string_view bucket) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->HeadBucket(bucket);
}
Result<std::vector<BucketInfo>> CacheStore::ListBuckets() {
  OC_ASSIGN_OR_RETURN(std::vector<BucketInfo> all, inner_->ListBuckets());
  std::erase_if(all, [](const BucketInfo& b) { return b.name == kCacheStateBucket; });
  return all;
}
Status CacheStore::SetBucketLifecycle(std::string_view bucket, std::string_view config) {
  return bucket == kCacheStateBucket ? NoSuchBucket() : inner_->SetBucketLifecycle(bucket, config);
}
Result<std::string> CacheStore::GetBucketLifecycle(std::string_view bucket) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->GetBucketLifecycle(bucket);
}

// --- Objects ---

Result<std::unique_ptr<ObjectWriter>> CacheStore::Put(const ObjectKey& key,
                                                      const PutOptions& options) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Bucket* b = Find(key.bucket);
  if (b == nullptr) {
    return inner_->Put(key, options);
  }
  Reservation reservation;
  if (options.expected_size.has_value()) {
    // The size is known: wait for room (or refuse) before a byte of the body is read.
    OC_ASSIGN_OR_RETURN(reservation, Admit(*b, *options.expected_size));
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer, inner_->Put(key, options));
  return std::unique_ptr<ObjectWriter>(
      new CacheWriter(*this, *b, key.name, std::move(writer), std::move(reservation)));
}

Result<std::unique_ptr<ObjectReader>> CacheStore::Get(const ObjectKey& key, ByteRange range) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Result<std::unique_ptr<ObjectReader>> reader = inner_->Get(key, range);
  if (Bucket* b = Find(key.bucket); b != nullptr && reader.has_value()) {
    b->index.OnPlainGet(key.name);
    b->Log(key.name, {}, 0, kLogGet);
    b->dirty.store(true, std::memory_order_relaxed);
  }
  return reader;
}

Result<ObjectMeta> CacheStore::Head(const ObjectKey& key) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Result<ObjectMeta> meta = inner_->Head(key);
  if (Bucket* b = Find(key.bucket); b != nullptr && meta.has_value()) {
    b->index.OnPlainGet(key.name);
    b->Log(key.name, {}, 0, kLogGet);
    b->dirty.store(true, std::memory_order_relaxed);
  }
  return meta;
}

Result<std::vector<std::optional<ObjectMeta>>> CacheStore::HeadMany(
    std::string_view bucket, std::span<const std::string> names) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->HeadMany(bucket, names);
}

Status CacheStore::Delete(const ObjectKey& key) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Status s = inner_->Delete(key);
  if (Bucket* b = Find(key.bucket); b != nullptr && s.ok()) {
    b->index.OnRemove(key.name);
    b->client_deletes.fetch_add(1, std::memory_order_relaxed);
    b->dirty.store(true, std::memory_order_relaxed);
  }
  return s;
}

Status CacheStore::DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Status s = inner_->DeleteIf(key, expected);
  if (Bucket* b = Find(key.bucket); b != nullptr && s.ok()) {
    b->index.OnRemove(key.name);
    b->lifecycle_expired.fetch_add(1, std::memory_order_relaxed);  // its only caller
    b->dirty.store(true, std::memory_order_relaxed);
  }
  return s;
}

Result<ObjectMeta> CacheStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                    const std::optional<PutOptions>& replace,
                                    const WriteConditions& conditions) {
  if (src.bucket == kCacheStateBucket || dst.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Bucket* to = Find(dst.bucket);
  Reservation reservation;
  if (to != nullptr) {
    OC_ASSIGN_OR_RETURN(ObjectMeta from, inner_->Head(src));
    OC_ASSIGN_OR_RETURN(reservation, Admit(*to, from.size));
  }
  Result<ObjectMeta> meta = inner_->Copy(src, dst, replace, conditions);
  if (meta.has_value()) {
    if (Bucket* from = Find(src.bucket); from != nullptr) {
      from->index.OnPlainGet(src.name);
      from->Log(src.name, {}, 0, kLogGet);
    }
    if (to != nullptr) {
      PlainCommitted(*to, dst.name, meta->size, reservation);
    }
  }
  if (to != nullptr && reservation.Release()) {
    NotifyRoom(*to);
  }
  return meta;
}

Result<ObjectMeta> CacheStore::PutObjectTags(const ObjectKey& key, const Tags& tags) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->PutObjectTags(key, tags);
}

Result<std::unique_ptr<ObjectGroupWriter>> CacheStore::PutGroup(std::string_view bucket) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectGroupWriter> group, inner_->PutGroup(bucket));
  Bucket* b = Find(bucket);
  if (b == nullptr) {
    return group;
  }
  return std::unique_ptr<ObjectGroupWriter>(new CacheGroupWriter(*this, *b, std::move(group)));
}

Result<ListResult> CacheStore::List(std::string_view bucket, const ListOptions& options) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->List(bucket, options);
}

// --- Multipart: parts are not counted; the object is admitted at completion ---

namespace {

constexpr uint32_t kPartsPerPage = 1000;  // S3's ListParts page

// The bytes `parts` of the upload would make the object, from its stored parts' sizes.
// kNotFound/kUpload when the upload is gone (a retry of a completion that succeeded). A listed
// part that is not stored adds nothing: the completion below refuses it (InvalidPart).
Result<uint64_t> CompletedSize(Store& store, const ObjectKey& key, std::string_view upload_id,
                               std::span<const CompletedPart> parts) {
  std::map<uint32_t, uint64_t> sizes;
  uint32_t marker = 0;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ListPartsResult page,
                        store.ListParts(key, upload_id, marker, kPartsPerPage));
    for (const PartInfo& p : page.parts) {
      sizes[p.part_number] = p.size;
    }
    if (!page.truncated || page.next_part_number_marker <= marker) {
      break;
    }
    marker = page.next_part_number_marker;
  }
  uint64_t total = 0;
  for (const CompletedPart& p : parts) {
    if (auto it = sizes.find(p.part_number); it != sizes.end()) {
      total += it->second;  // at most 10,000 parts of at most 5 GiB: no overflow
    }
  }
  return total;
}

}  // namespace

Result<std::string> CacheStore::CreateMultipartUpload(const ObjectKey& key,
                                                      const PutOptions& options) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->CreateMultipartUpload(key, options);
}
Result<std::unique_ptr<ObjectWriter>> CacheStore::UploadPart(const ObjectKey& key,
                                                             std::string_view upload_id,
                                                             uint32_t part_number,
                                                             const PutOptions& options) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->UploadPart(key, upload_id, part_number, options);
}
Result<ObjectMeta> CacheStore::CompleteMultipartUpload(const ObjectKey& key,
                                                       std::string_view upload_id,
                                                       std::span<const CompletedPart> parts,
                                                       const CompleteOptions& options) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Bucket* b = Find(key.bucket);
  Reservation reservation;
  if (b != nullptr) {
    // The object appears whole at completion, so that is where it must fit: wait put_wait for
    // room, else refuse before anything is stored; the upload stays, so the client may retry
    // the completion (after Retry-After) or abort it.
    Result<uint64_t> size = CompletedSize(*inner_, key, upload_id, parts);
    if (size.has_value()) {
      OC_ASSIGN_OR_RETURN(reservation, Admit(*b, *size));
    }  // else the completion below answers (a retry of a success, or the listing's error)
  }
  Result<ObjectMeta> meta = inner_->CompleteMultipartUpload(key, upload_id, parts, options);
  if (b != nullptr && meta.has_value()) {
    PlainCommitted(*b, key.name, meta->size, reservation);
  }
  if (reservation.Release()) {
    NotifyRoom(*b);
  }
  return meta;
}
Status CacheStore::AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->AbortMultipartUpload(key, upload_id);
}
Result<ListPartsResult> CacheStore::ListParts(const ObjectKey& key, std::string_view upload_id,
                                              uint32_t part_number_marker, uint32_t max_parts) {
  if (key.bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->ListParts(key, upload_id, part_number_marker, max_parts);
}
Result<ListUploadsResult> CacheStore::ListMultipartUploads(std::string_view bucket,
                                                           const ListUploadsOptions& options) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->ListMultipartUploads(bucket, options);
}

// --- Descriptor calls ---

Result<KvProbeResult> CacheStore::ProbeChunks(std::string_view bucket,
                                              const descriptor::Descriptor& d) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Result<KvProbeResult> probe = inner_->ProbeChunks(bucket, d);
  if (Bucket* b = Find(bucket); b != nullptr && probe.has_value()) {
    b->Hit(d, probe->matched);
  }
  return probe;
}

Result<KvGetReport> CacheStore::GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                          LayerSink* body_sink,
                                          const std::function<Status(const KvPlan&)>& on_plan) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Bucket* b = Find(bucket);
  if (b == nullptr) {
    return inner_->GetLayers(bucket, d, body_sink, on_plan);
  }
  // Every named chunk stays until the GET ends (read_pins.h): what the plan finds present is
  // there for the whole read, however long the transfer.
  std::vector<std::string> names;
  const std::vector<std::string_view> named = PrefixNames(d, d.num_chunks(), &names);
  b->pins.Pin(named);
  Result<KvGetReport> report = inner_->GetLayers(bucket, d, body_sink, on_plan);
  if (report.has_value()) {
    b->Hit(d, report->plan.matched);  // raised before eviction may pick the chunks again
  }
  b->pins.Unpin(named);
  return report;
}

Result<KvPutReport> CacheStore::PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                          ChunkSource* body) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  Bucket* b = Find(bucket);
  if (b == nullptr) {
    return inner_->PutChunks(bucket, d, body);
  }
  // N·L·S; an overflowing or malformed descriptor is left to the engine's checks.
  const uint64_t n = d.num_chunks();
  uint64_t chunk_bytes = 0;
  uint64_t total = 0;
  const bool sized = !__builtin_mul_overflow(uint64_t{d.num_layers}, d.layer_bytes, &chunk_bytes) &&
                     !__builtin_mul_overflow(chunk_bytes, n, &total);
  Reservation reservation;
  if (sized && total > 0) {
    OC_ASSIGN_OR_RETURN(reservation, Admit(*b, total));
  }
  Result<KvPutReport> report = inner_->PutChunks(bucket, d, body);
  if (report.has_value()) {
    std::vector<std::string> names;
    const std::vector<std::string_view> keys = PrefixNames(d, n, &names);
    std::vector<ChunkRef> chain;
    chain.reserve(n);
    for (std::string_view k : keys) {
      chain.push_back(ChunkRef{k, chunk_bytes});
    }
    // The rest of a prefix a request hit in part: its first chunk follows the last one hit.
    const std::string predecessor = n > 0 ? b->miss_links.PredecessorOf(keys[0]) : std::string();
    if (!predecessor.empty()) {
      b->puts_linked.fetch_add(1, std::memory_order_relaxed);
    }
    bool released = false;
    {
      std::lock_guard lock(mu_);  // as PlainCommitted
      b->index.OnPut(chain, predecessor);
      released = reservation.Release();
    }
    for (uint64_t j = 0; j < n; ++j) {
      b->Log(keys[j], j == 0 ? std::string_view(predecessor) : keys[j - 1], chunk_bytes, kLogPut);
    }
    b->dirty.store(true, std::memory_order_relaxed);
    MaybeKick(*b);
    if (released) {
      NotifyRoom(*b);
    }
  }
  if (reservation.Release()) {
    NotifyRoom(*b);
  }
  return report;
}

Result<DataPlaneInfo> CacheStore::DataPlane(std::string_view bucket) {
  if (bucket == kCacheStateBucket) {
    return NoSuchBucket();
  }
  return inner_->DataPlane(bucket);
}

void CacheStore::Bucket::Hit(const descriptor::Descriptor& d, uint64_t matched) {
  chunks_requested.fetch_add(d.num_chunks(), std::memory_order_relaxed);
  chunks_served.fetch_add(matched, std::memory_order_relaxed);
  if (matched == 0) {
    return;
  }
  std::vector<std::string> names;
  const std::vector<std::string_view> prefix = PrefixNames(d, matched, &names);
  index.OnHit(prefix);
  if (matched < d.num_chunks()) {
    miss_links.Record(d.ObjectName(matched), prefix[matched - 1]);
  }
  // The deepest chunk names the chain: the leader raises its recorded predecessors with it.
  Log(prefix[matched - 1], matched > 1 ? prefix[matched - 2] : std::string_view(), 0, kLogHit);
  dirty.store(true, std::memory_order_relaxed);
}

}  // namespace oc::storage::cache
