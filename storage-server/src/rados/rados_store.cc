// RadosStore, the core: open, the bucket registry and bucket calls, the record reads every
// part shares (rados_store.h) and Stats. The guarded shard commit is in rados_commit.cc.
#include "rados/rados_store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/core.h>

#include "names.h"
#include "oc/common/log.h"

namespace oc::storage {
namespace {

using rados::Completion;
using rados::FromRados;
using rados::ReadOp;
using rados::WriteOp;

const Logger kLog{"rados"};

// Keys per omap read op (HeadMany and ReadSlices group by shard, then split at this).
constexpr size_t kMaxKeysPerOp = 1024;
// Bucket registry entries per listing page.
constexpr uint64_t kRegistryPage = 1000;

uint64_t RandomWriterId() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) {
    id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  return id;
}

}  // namespace

int64_t RadosNowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<Backend>> OpenRadosBackend(const StoreOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<RadosStore> store, RadosStore::Open(options));
  return std::unique_ptr<Backend>(std::move(store));
}

RadosStore::RadosStore(const StoreOptions& options)
    : options_(options),
      writer_id_(RandomWriterId()),
      in_flight_(options.rados.max_ops_in_flight, options.rados.max_bytes_in_flight),
      read_ahead_budget_(ReadAheadMemoryFor(options.rados.read_ahead_memory_bytes)) {}

RadosStore::~RadosStore() { StopGc(); }

Result<std::unique_ptr<RadosStore>> RadosStore::Open(const StoreOptions& options) {
  StoreOptions o = options;
  o.backend = "rados";  // this backend's name (backends.def)
  OC_RETURN_IF_ERROR(o.Validate());
  std::unique_ptr<RadosStore> store(new RadosStore(o));
  OC_ASSIGN_OR_RETURN(store->cluster_, rados::Cluster::Connect(o.rados));
  OC_RETURN_IF_ERROR(store->ConnectReadHandles());
  // The OSDs refuse objects above osd_max_object_size: a chunk object must fit.
  Result<std::string> max_object = store->cluster_->MonCommand(
      R"({"prefix": "config get", "who": "osd", "key": "osd_max_object_size"})");
  if (max_object.has_value()) {
    const uint64_t limit = std::strtoull(max_object->c_str(), nullptr, 10);
    if (limit != 0 && o.rados.max_chunk_object_bytes > limit) {
      return Status::InvalidArgument(
          "rados.max_chunk_object_bytes",
          fmt::format("must not exceed the cluster's osd_max_object_size ({})", limit));
    }
  }
  WriteOp ensure;
  ensure.Create(/*exclusive=*/false);
  OC_RETURN_IF_ERROR(FromRados(ensure.Operate(store->io(), rados::kRegistryOid),
                               std::string("creating ") + rados::kRegistryOid));
  if (o.rados.gc) {
    store->StartGc();
  }
  kLog.Info("opened fsid={} pool={} namespace={} client={} writer={:016x}", store->cluster_->fsid(),
            o.rados.pool, o.rados.rados_namespace, o.rados.client_name, store->writer_id_);
  return store;
}

StoreIdentity RadosStore::identity() const {
  return StoreIdentity{"rados", cluster_->fsid(), options_.rados.pool,
                       options_.rados.rados_namespace};
}

Segment RadosStore::NewVersion(uint64_t extent_bytes) {
  Segment s;
  s.writer = writer_id_;
  s.data_id = next_seq_.fetch_add(1);
  s.extent_bytes = extent_bytes;
  return s;
}

Result<uint64_t> RadosStore::ChooseObjectBytes(const PutOptions& o) const {
  const RadosOptions& r = options_.rados;
  if (o.chunk.has_value()) {
    const ChunkShape& c = *o.chunk;
    if (c.num_layers == 0 || c.layer_bytes == 0 ||
        (c.layout == descriptor::StoredLayout::k2LTD && c.layer_bytes % 2 != 0)) {
      return Status(Code::kInvalidArgument, Subject::kNone, "chunk",
                    "chunk shape needs L > 0 and S > 0 (even for KV_2LTD)");
    }
    if (o.extent_bytes == 0) {
      // One data object per chunk when it fits, else whole layer ranges per object, so a
      // layer slice never straddles two objects.
      const uint64_t range =
          c.layout == descriptor::StoredLayout::kL2TD ? c.layer_bytes : c.layer_bytes / 2;
      const uint64_t total = c.layer_bytes * c.num_layers;
      if (total <= r.max_chunk_object_bytes) {
        return std::max<uint64_t>(total, 1);
      }
      return std::max<uint64_t>(range, r.max_chunk_object_bytes / range * range);
    }
  }
  if (o.extent_bytes == 0) {
    return r.object_extent_bytes;
  }
  return std::clamp(o.extent_bytes, kMinRadosObjectBytes, kMaxRadosObjectBytes);
}

void RadosStore::RemoveData(uint64_t bucket_id, const Segment& segment) {
  const uint64_t n = rados::ExtentCount(segment);
  std::vector<std::pair<std::unique_ptr<WriteOp>, Completion>> ops;
  ops.reserve(n);
  for (uint64_t e = 0; e < n; ++e) {
    auto op = std::make_unique<WriteOp>();
    op->Remove();
    Completion c;
    if (op->OperateAsync(io(), rados::DataOid(bucket_id, segment, e), c) == 0) {
      ops.emplace_back(std::move(op), std::move(c));
    }
  }
  for (auto& [op, c] : ops) {
    const int rc = c.Wait();
    if (rc < 0 && rc != -ENOENT) {
      kLog.Warn("removing data of version {} failed: {}", rados::VersionId(segment),
                FromRados(rc, "remove").ToString());
    }
  }
}

// --- Buckets ---

Result<rados::RadosBucketRecord> RadosStore::ReadRegistry(std::string_view bucket) {
  ReadOp op;
  rados::OmapIter it;
  int prval = 0;
  const std::vector<std::string> keys{std::string(bucket)};
  op.OmapGetByKeys(keys, &it, &prval);
  OC_RETURN_IF_ERROR(FromRados(op.Operate(io(), rados::kRegistryOid), "reading the registry"));
  OC_RETURN_IF_ERROR(FromRados(prval, "reading the registry"));
  std::string_view k;
  std::string_view v;
  if (!it.Next(&k, &v)) {
    return Status::NotFound(Subject::kBucket, std::string(bucket));
  }
  return rados::DecodeRadosBucketRecord(v);
}

Result<RadosStore::BucketRef> RadosStore::Bucket(std::string_view bucket) {
  {
    std::lock_guard lock(buckets_mu_);
    auto it = buckets_.find(bucket);
    if (it != buckets_.end()) {
      return it->second;
    }
  }
  OC_ASSIGN_OR_RETURN(rados::RadosBucketRecord record, ReadRegistry(bucket));
  BucketRef ref{record.bucket_id, record.index_shards};
  std::lock_guard lock(buckets_mu_);
  buckets_[std::string(bucket)] = ref;
  return ref;
}

void RadosStore::ForgetBucket(std::string_view bucket) {
  std::lock_guard lock(buckets_mu_);
  auto it = buckets_.find(bucket);
  if (it != buckets_.end()) {
    buckets_.erase(it);
  }
}

Status RadosStore::ShardGone(std::string_view bucket) {
  ForgetBucket(bucket);
  return Status::NotFound(Subject::kBucket, std::string(bucket));
}

Status RadosStore::CreateBucket(std::string_view bucket, std::string_view owner) {
  OC_RETURN_IF_ERROR(ValidateBucketName(bucket));
  Result<rados::RadosBucketRecord> existing = ReadRegistry(bucket);
  if (existing.has_value()) {
    return Status::AlreadyExists(Subject::kBucket, std::string(bucket));
  }
  if (!existing.error().IsNotFound()) {
    return existing.error();
  }
  rados::RadosBucketRecord record;
  record.owner = std::string(owner);
  record.created_unix_ms = RadosNowUnixMs();
  record.bucket_id = RandomWriterId();
  record.index_shards = options_.rados.index_shards;
  // The shards first (exclusive create, live), all in flight; then the registry entry, which
  // makes the bucket exist.
  std::vector<std::pair<std::unique_ptr<WriteOp>, Completion>> ops;
  Status failed;
  for (uint32_t s = 0; s < record.index_shards; ++s) {
    auto op = std::make_unique<WriteOp>();
    op->Create(/*exclusive=*/true);
    op->SetXattr(rados::kStateXattr, rados::kStateLive);
    Completion c;
    const int rc = op->OperateAsync(io(), rados::IndexOid(record.bucket_id, s), c);
    if (rc < 0) {
      failed = FromRados(rc, "creating an index shard");
      break;
    }
    ops.emplace_back(std::move(op), std::move(c));
  }
  for (auto& [op, c] : ops) {
    const int rc = c.Wait();
    if (rc < 0 && failed.ok()) {
      failed = FromRados(rc, "creating an index shard");
    }
  }
  auto remove_shards = [&] {
    for (uint32_t s = 0; s < record.index_shards; ++s) {
      (void)rados_remove(io(), rados::IndexOid(record.bucket_id, s).c_str());
    }
  };
  if (!failed.ok()) {
    remove_shards();
    return failed;
  }
  WriteOp reg;
  int cmp = 0;
  reg.OmapCmp(bucket, "", &cmp);
  reg.OmapSet({{std::string(bucket), rados::EncodeRadosBucketRecord(record)}});
  const int rc = reg.Operate(io(), rados::kRegistryOid);
  if (rc == -ECANCELED) {
    remove_shards();
    return Status::AlreadyExists(Subject::kBucket, std::string(bucket));
  }
  if (rc < 0) {
    remove_shards();
    return FromRados(rc, "registering the bucket");
  }
  std::lock_guard lock(buckets_mu_);
  buckets_[std::string(bucket)] = BucketRef{record.bucket_id, record.index_shards};
  return Status::Ok();
}

Status RadosStore::DeleteBucket(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(rados::RadosBucketRecord record, ReadRegistry(bucket));
  const uint64_t id = record.bucket_id;
  auto set_state = [&](const char* state) {
    std::vector<std::pair<std::unique_ptr<WriteOp>, Completion>> ops;
    for (uint32_t s = 0; s < record.index_shards; ++s) {
      auto op = std::make_unique<WriteOp>();
      op->SetXattr(rados::kStateXattr, state);
      Completion c;
      if (op->OperateAsync(io(), rados::IndexOid(id, s), c) == 0) {
        ops.emplace_back(std::move(op), std::move(c));
      }
    }
    Status st;
    for (auto& [op, c] : ops) {
      const int rc = c.Wait();
      if (rc < 0 && rc != -ENOENT && st.ok()) {
        st = FromRados(rc, "setting an index shard's state");
      }
    }
    return st;
  };
  // 1. No commit can land once a shard is `deleting` (each asserts `live`).
  Status marked = set_state(rados::kStateDeleting);
  // 2. Any object left? One read per shard, all in flight. Only objects (o/) count, as in
  // S3: unfinished multipart uploads (u/, m/) are aborted with the bucket, their parts' data
  // removed below with the shards that list them.
  bool empty = marked.ok();
  Status read_error;
  if (empty) {
    struct Probe {
      ReadOp op;
      rados::OmapIter objects;
      unsigned char more = 0;
      int prval = 0;
      Completion c;
    };
    std::vector<std::unique_ptr<Probe>> probes;
    const std::string after;
    const std::string objects = rados::kObjectPrefix;
    for (uint32_t s = 0; s < record.index_shards; ++s) {
      auto p = std::make_unique<Probe>();
      p->op.OmapGetVals(after, objects, 1, &p->objects, &p->more, &p->prval);
      if (p->op.OperateAsync(io(), rados::IndexOid(id, s), p->c) == 0) {
        probes.push_back(std::move(p));
      }
    }
    for (auto& p : probes) {
      const int rc = p->c.Wait();
      std::string_view k;
      std::string_view v;
      if (rc < 0 && rc != -ENOENT) {
        read_error = FromRados(rc, "reading an index shard");
      } else if (rc >= 0 && p->prval >= 0 && p->objects.Next(&k, &v)) {
        empty = false;
      }
    }
  }
  if (!empty || !read_error.ok()) {
    Status back = set_state(rados::kStateLive);
    if (!back.ok()) {
      kLog.Warn("bucket {}: setting shards back to live failed: {}", bucket, back.ToString());
    }
    if (!marked.ok()) {
      return marked;
    }
    if (!read_error.ok()) {
      return read_error;
    }
    return Status::FailedPrecondition(Subject::kBucket, "bucket is not empty");
  }
  // 3. The registry entry (guarded: the same bucket, not a re-created one), then the shards.
  WriteOp reg;
  int cmp = 0;
  reg.OmapCmp(bucket, rados::EncodeRadosBucketRecord(record), &cmp);
  reg.OmapRm({std::string(bucket)});
  const int rc = reg.Operate(io(), rados::kRegistryOid);
  ForgetBucket(bucket);
  if (rc == -ECANCELED) {
    return Status::NotFound(Subject::kBucket, std::string(bucket));
  }
  OC_RETURN_IF_ERROR(FromRados(rc, "removing the bucket from the registry"));
  // Data still named by GC entries (deleted objects) or by parts (of finished uploads, and of
  // the unfinished ones this delete aborts) goes with the bucket: the shards that listed them are
  // removed (docs/decisions/rados-backend.md).
  for (uint32_t s = 0; s < record.index_shards; ++s) {
    const std::string oid = rados::IndexOid(id, s);
    std::vector<std::string> data;
    for (const char* prefix : {rados::kGcPrefix, rados::kPartPrefix}) {
      (void)ScanOmap(oid, prefix, "", [&](std::string_view k, std::string_view v) -> Result<bool> {
        for (const Segment& seg : SegmentsOfEntry(k, v)) {
          AppendDataOids(id, seg, &data);
        }
        return true;
      });
    }
    RemoveObjects(data);
    (void)rados_remove(io(), oid.c_str());
  }
  return Status::Ok();
}

Status RadosStore::SetBucketLifecycle(std::string_view bucket, std::string_view config) {
  if (config.size() > kMaxLifecycleConfigBytes) {
    return Status(
        Code::kInvalidArgument, Subject::kBucket, "lifecycle",
        "lifecycle configuration over " + std::to_string(kMaxLifecycleConfigBytes) + " bytes");
  }
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  const std::string key = rados::kLifecycleOmapKey;
  // The op compares only the state: a refusal on a live shard means a DeleteBucket marked it
  // `deleting` and set it back (the bucket was not empty) meanwhile, so the write is tried again.
  constexpr int kTries = 16;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    OC_ASSIGN_OR_RETURN(const bool applied, GuardedWrite(bucket, ref, 0, [&](WriteOp& op) {
                          if (config.empty()) {
                            op.OmapRm({key});
                          } else {
                            op.OmapSet({{key, std::string(config)}});
                          }
                        }));
    if (applied) {
      return Status::Ok();
    }
  }
  return Status::Unavailable("the bucket's index shard keeps changing state; try again");
}

Result<std::string> RadosStore::GetBucketLifecycle(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(const BucketRef ref, Bucket(bucket));
  OC_ASSIGN_OR_RETURN(auto values, ReadOmapKeys(bucket, ref, 0, {rados::kLifecycleOmapKey}));
  auto it = values.find(rados::kLifecycleOmapKey);
  return it == values.end() ? std::string() : std::move(it->second);
}

Result<BucketInfo> RadosStore::HeadBucket(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(rados::RadosBucketRecord record, ReadRegistry(bucket));
  return BucketInfo{std::string(bucket), std::move(record.owner), record.created_unix_ms};
}

Result<std::vector<BucketInfo>> RadosStore::ListBuckets() {
  std::vector<BucketInfo> out;
  std::string after;
  const std::string prefix;
  for (;;) {
    ReadOp op;
    rados::OmapIter it;
    unsigned char more = 0;
    int prval = 0;
    op.OmapGetVals(after, prefix, kRegistryPage, &it, &more, &prval);
    OC_RETURN_IF_ERROR(FromRados(op.Operate(io(), rados::kRegistryOid), "listing buckets"));
    OC_RETURN_IF_ERROR(FromRados(prval, "listing buckets"));
    std::string_view k;
    std::string_view v;
    while (it.Next(&k, &v)) {
      OC_ASSIGN_OR_RETURN(rados::RadosBucketRecord r, rados::DecodeRadosBucketRecord(v));
      out.push_back(BucketInfo{std::string(k), std::move(r.owner), r.created_unix_ms});
      after.assign(k);
    }
    if (more == 0) {
      return out;
    }
  }
}

// --- Records and the commit op ---

Result<std::vector<std::optional<ObjectRecord>>> RadosStore::ReadRecords(
    std::string_view bucket, const BucketRef& ref, uint32_t shard,
    const std::vector<std::string>& names) {
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const std::string& n : names) {
    keys.push_back(rados::ObjectOmapKey(n));
  }
  ReadOp op;
  rados::OmapIter it;
  int prval = 0;
  op.OmapGetByKeys(keys, &it, &prval);
  const int rc = op.Operate(io(), rados::IndexOid(ref.id, shard));
  if (rc == -ENOENT) {
    return ShardGone(bucket);
  }
  OC_RETURN_IF_ERROR(FromRados(rc, "reading an index shard"));
  OC_RETURN_IF_ERROR(FromRados(prval, "reading an index shard"));
  std::vector<std::optional<ObjectRecord>> out(names.size());
  std::string_view k;
  std::string_view v;
  while (it.Next(&k, &v)) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == k && !out[i].has_value()) {
        OC_ASSIGN_OR_RETURN(ObjectRecord r, DecodeObjectRecord(v));
        out[i] = std::move(r);
      }
    }
  }
  return out;
}

Result<std::vector<std::optional<ObjectRecord>>> RadosStore::ReadManyRecords(
    std::string_view bucket, const BucketRef& ref, std::span<const std::string> names) {
  struct Batch {
    uint32_t shard = 0;
    std::vector<size_t> index;  // into names
    std::vector<std::string> keys;
    ReadOp op;
    rados::OmapIter it;
    int prval = 0;
    Completion c;
    int rc = 0;
  };
  std::map<uint32_t, std::vector<size_t>> by_shard;
  for (size_t i = 0; i < names.size(); ++i) {
    if (ValidateObjectKey(names[i]).ok()) {
      by_shard[rados::ShardOf(names[i], ref.shards)].push_back(i);
    }
  }
  std::vector<std::unique_ptr<Batch>> batches;
  for (auto& [shard, idx] : by_shard) {
    for (size_t from = 0; from < idx.size(); from += kMaxKeysPerOp) {
      auto b = std::make_unique<Batch>();
      b->shard = shard;
      for (size_t j = from; j < std::min(idx.size(), from + kMaxKeysPerOp); ++j) {
        b->index.push_back(idx[j]);
        b->keys.push_back(rados::ObjectOmapKey(names[idx[j]]));
      }
      b->op.OmapGetByKeys(b->keys, &b->it, &b->prval);
      b->rc = b->op.OperateAsync(io(), rados::IndexOid(ref.id, shard), b->c);
      batches.push_back(std::move(b));
    }
  }
  Status first;
  bool gone = false;
  for (auto& b : batches) {
    if (b->rc == 0) {
      b->rc = b->c.Wait();
    }
    if (b->rc == -ENOENT) {
      gone = true;
    } else if (b->rc < 0 && first.ok()) {
      first = FromRados(b->rc, "reading an index shard");
    } else if (b->prval < 0 && first.ok()) {
      first = FromRados(b->prval, "reading an index shard");
    }
  }
  if (gone) {
    return ShardGone(bucket);
  }
  OC_RETURN_IF_ERROR(first);
  std::vector<std::optional<ObjectRecord>> out(names.size());
  for (auto& b : batches) {
    std::map<std::string_view, size_t> where;
    for (size_t j = 0; j < b->keys.size(); ++j) {
      where.emplace(b->keys[j], b->index[j]);
    }
    std::string_view k;
    std::string_view v;
    while (b->it.Next(&k, &v)) {
      auto w = where.find(k);
      if (w != where.end()) {
        OC_ASSIGN_OR_RETURN(ObjectRecord r, DecodeObjectRecord(v));
        out[w->second] = std::move(r);
      }
    }
  }
  // A name given twice gets the same answer.
  for (size_t i = 0; i < names.size(); ++i) {
    if (!out[i].has_value() && ValidateObjectKey(names[i]).ok()) {
      for (size_t j = 0; j < i; ++j) {
        if (names[j] == names[i] && out[j].has_value()) {
          out[i] = out[j];
          break;
        }
      }
    }
  }
  return out;
}

// --- Operations ---

Result<StoreStats> RadosStore::Stats() {
  StoreStats stats;
  stats.figures.emplace_back("rados_commits", commits_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_commit_conflicts",
                             commit_conflicts_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_commit_ops", commit_ops_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_commit_rereads",
                             commit_rereads_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_commit_expected_remembered",
                             commit_remembered_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_puts_grouped", puts_grouped_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_slice_read_ops",
                             slice_read_ops_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_slice_index_lookups",
                             slice_index_lookups_.load(std::memory_order_relaxed));
  stats.figures.emplace_back("rados_slice_index_batches",
                             slice_index_batches_.load(std::memory_order_relaxed));
  AddReadHandleFigures(stats);
  {
    std::lock_guard lock(buckets_mu_);
    stats.figures.emplace_back("rados_cached_buckets", buckets_.size());
  }
  // The cluster must answer: one registry read.
  ReadOp op;
  rados::OmapIter it;
  unsigned char more = 0;
  int prval = 0;
  op.OmapGetVals("", "", 1, &it, &more, &prval);
  OC_RETURN_IF_ERROR(FromRados(op.Operate(io(), rados::kRegistryOid), "reading the registry"));
  return stats;
}

Result<uint64_t> RadosStore::CountDataObjects() {
  rados_list_ctx_t ctx = nullptr;
  OC_RETURN_IF_ERROR(FromRados(rados_nobjects_list_open(io(), &ctx), "listing objects"));
  uint64_t n = 0;
  for (;;) {
    const char* entry = nullptr;
    const int rc = rados_nobjects_list_next(ctx, &entry, nullptr, nullptr);
    if (rc == -ENOENT) {
      break;
    }
    if (rc < 0) {
      rados_nobjects_list_close(ctx);
      return FromRados(rc, "listing objects");
    }
    if (std::string_view(entry).starts_with("oc.d.")) {
      ++n;
    }
  }
  rados_nobjects_list_close(ctx);
  return n;
}

}  // namespace oc::storage
