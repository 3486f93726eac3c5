#pragma once
// The quota store's class and helpers, shared by quota_store.cc (the calls), quota_writers.cc
// (the writers it hands out) and quota_count.cc (counting from listings). quota_store.h is
// the interface; this header is private to src/quota/.
// Thread safety: as Store.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "forwarding_store.h"
#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/quota.h"
#include "oc/storage/store.h"
#include "quota/key_locks.h"
#include "quota/quota_usage.h"

namespace oc::storage::quota {

// The calls it does not override run on the store below (ForwardingStore).
class QuotaStore final : public ForwardingStore {
 public:
  QuotaStore(std::unique_ptr<Store> inner, const QuotaOptions& options);
  ~QuotaStore() override;

  QuotaUsage& usage() { return usage_; }
  KeyLocks& locks() { return locks_; }
  // Counts every quota bucket from listings and replaces its usage.
  Status CountAll();
  // Starts the recount thread (a backend several servers share).
  void StartRecount(std::chrono::milliseconds interval);
  // The size of `key`'s object now (0 and *existed = false when absent).
  Result<uint64_t> OldSize(const ObjectKey& key, bool* existed);
  // The size of part `part_number` of the upload now, 0 when absent.
  Result<uint64_t> OldPartSize(const ObjectKey& key, std::string_view upload_id,
                               uint32_t part_number);
  // Bytes a write replacing `old` bytes may bring before it is certain not to fit:
  // max_bytes - usage + old (kNoLimit without a byte limit). A streamed body past it is
  // refused at once instead of at commit.
  uint64_t Room(std::string_view bucket, uint64_t old) const;

  // --- Buckets ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override;
  Status DeleteBucket(std::string_view bucket) override;

  // --- Objects ---
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override;
  Status Delete(const ObjectKey& key) override;
  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override;
  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace,
                          const WriteConditions& conditions) override;
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override;

  // --- Multipart ---
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override;
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& options) override;
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override;

  // --- Descriptor calls ---
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override;

  // --- Operations ---
  Result<StoreStats> Stats() override;

 private:
  QuotaUsage usage_;
  KeyLocks locks_;
  std::thread recount_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ OC_GUARDED_BY(stop_mu_) = false;
};

// The lock names of an object and of an upload (KeyLocks).
std::string ObjectLockName(const ObjectKey& key);
std::string UploadLockName(const ObjectKey& key, std::string_view upload_id);

// The writers (quota_writers.cc). `old`: the size the write replaces, as read at open.
std::unique_ptr<ObjectWriter> MakeObjectWriter(QuotaStore& store, const ObjectKey& key,
                                               std::unique_ptr<ObjectWriter> inner, uint64_t old);
std::unique_ptr<ObjectWriter> MakePartWriter(QuotaStore& store, const ObjectKey& key,
                                             std::string upload_id, uint32_t part_number,
                                             std::unique_ptr<ObjectWriter> inner, uint64_t old);
std::unique_ptr<ObjectGroupWriter> MakeGroupWriter(QuotaStore& store, std::string bucket,
                                                   std::unique_ptr<ObjectGroupWriter> inner);

// Counting (quota_count.cc): a bucket's usage from its listing, its uploads and their parts
// (zero when the bucket does not exist); and one upload's parts, number -> size.
Result<Usage> CountBucket(Store& store, std::string_view bucket);
Result<std::map<uint32_t, uint64_t>> ListAllParts(Store& store, const ObjectKey& key,
                                                  std::string_view upload_id);

}  // namespace oc::storage::quota
