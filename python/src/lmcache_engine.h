#pragma once
// The engine behind objectcache.integrations.lmcache.ObjectCacheL2Connector: LMCache's
// multi-process `native_plugin` L2 connector contract (docs/integrations.md, section 1) in
// plain C++. Batches are submitted as jobs, run by a few worker threads over one
// liboc_client Client, and finished as completions that a single eventfd announces:
//
//   exists  one batched probe per run of keys (GET /{bucket}?objectcache&probe); exists
//           batches waiting together go out as one probe (kMaxMergedProbeKeys)
//   get     one descriptor GET per run of equally sized buffers, chunk j read straight into
//           buffer j (Client::GetChunksInto). A GET stops at the first absent key (the
//           matched prefix): then one probe of the keys after it and one GET of those present
//           follow. A present key of another size fails the GET's shape check: the run is
//           read key by key with plain GETs, so that key alone misses
//   set     one descriptor PUT per run of equally sized buffers (gathered into one body)
//   delete  one DeleteObject per key
//
// Every key is one object, `prefix + key`, stored as one layer of its own size (L = 1,
// S = bytes, G = 1, kv_l2td), so buffers of different sizes can share a batch
// (docs/decisions/lmcache-l2-connector.md says why and what the probe relies on).
//
// Lifetimes and the GIL: a Job carries its Python buffers pinned (PinnedBuffer); the worker
// moves the pins into the job's Completion, never destroying one, and they are released by
// whoever destroys the completion: drain_completions() or the binding's destructor, both with
// the GIL held. Nothing here takes the GIL.
// Thread safety: Submit, Drain, Stats and Close may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "binding.h"
#include "oc/client/client.h"
#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::python::lmcache {

enum class Op { kGet, kSet, kExists, kDelete };

// Keys per descriptor request: far below descriptor::Limits::max_chunks (65,536); the client
// sends a POST when the key list outgrows the header limit.
inline constexpr uint64_t kMaxKeysPerRequest = 4096;
// Bytes gathered into one descriptor PUT body: a set of 256 chunks of 32 MiB becomes 32 PUTs
// of 256 MiB, not one 8 GiB copy. A single larger buffer is still sent alone.
inline constexpr uint64_t kMaxPutBodyBytes = 256ull << 20;
// The largest buffer: one key is one layer, and a layer is at most
// descriptor::Limits::max_layer_bytes.
inline constexpr uint64_t kMaxObjectBytes = 256ull << 20;
// Default keys of one probe made of several exists batches that were waiting together (each
// still completes on its own; Engine::Options::merge_exists_keys): enough to spread a probe's fixed
// cost (the HTTP exchange, SigV4, the gateway's thread hand-offs) over 16 callers' 256-key batches
// in four probes, few enough that those four run side by side on the gateway's cores rather than as
// one long probe.
inline constexpr uint64_t kMaxMergedProbeKeys = 1024;
// The first key of every exists probe: a name no LMCache key can be (LMCache keys always hold
// '@'), so it is absent, and the probe then reports every other key's size without checking
// its shape (docs/decisions/lmcache-l2-connector.md).
inline constexpr std::string_view kAbsentProbeKey = "objectcache-lmcache-absent-probe-key";

struct Job {
  Op op = Op::kExists;
  std::vector<std::string> names;        // object names: prefix + key
  std::vector<MutableByteSpan> buffers;  // get and set: one per name
  std::vector<PinnedBuffer> pins;        // keeps `buffers` valid; never destroyed here
};

// One finished batch, as drain_completions() returns it (per_key always has one entry per
// key: LMCache's wrapper reads a get without a list as "all loaded").
struct Completion {
  uint64_t id = 0;
  bool ok = false;
  std::string error;
  std::vector<bool> per_key;
  std::vector<PinnedBuffer> pins;  // released by the completion's destroyer, GIL held
};

// What the engine did so far, per operation; seconds run from submit to completion.
struct OpStats {
  uint64_t batches = 0;
  uint64_t keys = 0;
  uint64_t hits = 0;   // per-key true
  uint64_t bytes = 0;  // get: bytes loaded; set: bytes stored
  uint64_t failed_batches = 0;
  double seconds_total = 0;
  double last_seconds = 0;
};
struct Stats {
  OpStats get, set, exists, del;
};

class Engine {
 public:
  struct Options {
    client::ClientOptions client;
    std::string bucket;
    // Prepended to every key (the binding already did so for Job::names); the absent probe
    // key lives under it too. Default: ""
    std::string prefix;
    // Worker threads, so lookups are not queued behind loads. Default: 8
    uint32_t workers = 8;
    // Exists batches waiting together are probed as one request of at most this many keys;
    // 0 probes each batch on its own. Default: kMaxMergedProbeKeys
    uint64_t merge_exists_keys = kMaxMergedProbeKeys;
  };
  // kInvalidArgument for bad options (the client's, an empty bucket, 0 or > 256 workers); a
  // failed eventfd() as kInternal. Connects lazily.
  static Result<std::unique_ptr<Engine>> Open(Options options);
  ~Engine();  // Close(); REQUIRES: completions left hold no pins, or the GIL is held
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The eventfd, readable while completions wait; -1 after Close().
  int event_fd() const;
  // Queues `job` and returns its future id; an empty batch completes at once (ok, no keys).
  // kFailedPrecondition after Close() (the job, pins included, is handed back in *refused
  // so the caller releases it with the GIL).
  Result<uint64_t> Submit(Job job, Job* refused);
  // Every completion ready since the last call, in finishing order; clears the eventfd.
  // After Close() it returns what is left (cancelled jobs included), then nothing.
  std::vector<Completion> Drain();
  // Stops taking jobs, fails the jobs still queued ("connector closed", every key false),
  // waits for the running ones (each bounded by the client's timeout), joins the workers and
  // closes the eventfd. Idempotent.
  void Close();
  Stats stats() const;

 private:
  struct Queued {
    uint64_t id;
    Job job;
    std::chrono::steady_clock::time_point submitted;
  };
  explicit Engine(Options options, std::unique_ptr<client::Client> client, int event_fd);
  void Worker();
  // Moves exists jobs waiting in queue_ into `batch` (whose first job is one), up to
  // Options::merge_exists_keys keys in all. REQUIRES: mu_ held.
  void TakeQueuedExists(std::vector<Queued>& batch);
  // One probe for the exists jobs of `batch` (merge_exists_keys keys at most), each finished
  // as its own completion; a failed probe fails them all.
  void RunExistsTogether(std::vector<Queued>& batch);
  void Run(Queued& q, Completion& c);
  void RunGet(Job& job, Completion& c);
  // One descriptor GET of job's keys `run` (equal sizes) into their buffers: M, as
  // Client::GetChunksInto.
  Result<uint64_t> GetRun(Job& job, const std::vector<size_t>& run);
  // One probe: the stored size of each name in [first, last), nullopt when absent.
  Result<std::vector<std::optional<uint64_t>>> SizesOf(
      std::vector<std::string>::const_iterator first,
      std::vector<std::string>::const_iterator last);
  void RunSet(Job& job, Completion& c);
  void RunExists(Job& job, Completion& c);
  void RunDelete(Job& job, Completion& c);
  void Finish(Op op, Completion c, std::chrono::steady_clock::time_point submitted, uint64_t bytes);
  void Signal();

  const Options options_;
  std::unique_ptr<client::Client> client_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;          // guarded by mu_
  std::vector<Completion> done_;      // guarded by mu_
  uint64_t next_id_ = 1;              // guarded by mu_
  bool closed_ = false;               // guarded by mu_
  int event_fd_ = -1;                 // guarded by mu_; -1 once closed
  Stats stats_;                       // guarded by mu_
  std::vector<std::thread> workers_;  // started by Open, joined by Close
  std::mutex close_mu_;               // serialises Close()
};

}  // namespace oc::python::lmcache
