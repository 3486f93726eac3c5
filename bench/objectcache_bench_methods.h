#pragma once
// objectcache_bench's measurements (objectcache_bench.cc is the driver: flags, the loop over
// shapes, the JSON): the store loop, the four timed read methods, and the per-process CPU
// meter, over liboc_client. Llama-3.1-8B shapes: L = 32 layers, 4 KiB per token per layer.
// Thread safety: the functions may run concurrently on one Client (it is thread-safe);
// a CpuMeter is used by one thread.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "oc/client/client.h"
#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/descriptor/descriptor.h"

namespace oc::bench::objectcache {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

inline constexpr uint32_t kLayers = 32;
inline constexpr uint64_t kBytesPerTokenLayer = 4096;

// The command line (objectcache_bench.cc parses it; the file comment there lists the flags).
struct Flags {
  std::string endpoint = "http://127.0.0.1:9000";
  std::string bucket = "bench";
  std::vector<uint64_t> groups = {16, 64, 256};
  std::vector<uint64_t> contexts = {4096, 16384};
  std::vector<double> hits = {0.5, 0.875};
  std::vector<std::string> methods = {"ucx", "http-body", "http-object", "http-range"};
  // Threads issuing the http-range GETs; each value after the first adds a method
  // "http-range-c<N>" (the first keeps the name "http-range").
  std::vector<uint64_t> range_concurrency = {1};
  uint32_t object_concurrency = 1;
  std::string put_mode = "descriptor";
  uint32_t put_concurrency = 8;
  uint32_t desc_put_concurrency = 1;  // descriptor PUTs in flight at once
  uint32_t repeat = 3;
  uint32_t warmup = 1;
  // (name, pid) of processes whose CPU time each measurement records.
  std::vector<std::pair<std::string, int>> cpu_pids;
  bool put = true;
  std::string json;
  std::string label;
};

double Seconds(Clock::duration d);

// utime + stime of `pid` (0: this process) in seconds, from /proc/<pid>/stat; -1 if unreadable
// (the process exited).
double CpuSeconds(int pid);

// CPU seconds per named process (--cpu-pids plus "client"), sampled before and after a
// measurement; Add() accumulates the difference.
class CpuMeter {
 public:
  explicit CpuMeter(const std::vector<std::pair<std::string, int>>& pids);
  std::vector<double> Sample() const;
  // Adds each process's CPU seconds and minor page faults since `before` (a Sample).
  void Add(const std::vector<double>& before, Json* cpu_total, Json* faults_total) const;

 private:
  std::vector<std::pair<std::string, int>> pids_;
};

// The q-quantile (0..1) of `v` by the nearest-rank method: with 3 repetitions p50 is the
// median and p99 the slowest.
double Quantile(std::vector<double> v, double q);

// The descriptor of chunks first..first+count-1 of G = g (compact keys under "bench/g<g>/").
descriptor::Descriptor MakeDescriptor(uint64_t g, uint64_t first, uint64_t count);

struct Measure {
  double total_s = 0;
  double ttfl_s = 0;
  std::string mode;
};

// One descriptor GET into `buf` over UCX / into `out` as the HTTP body; total time, time to the
// first layer-ready (chunkwise: the whole request) and the mode served. A partial hit is an
// error: the benchmark's store holds every chunk it asks for.
Result<Measure> RunUcx(client::Client& c, const std::string& bucket,
                       const descriptor::Descriptor& d, const client::TargetBuffer& buf);
Result<Measure> RunHttpBody(client::Client& c, const std::string& bucket,
                            const descriptor::Descriptor& d, MutableByteSpan out);
// M plain GETs, one per chunk object, by `concurrency` threads sharing the client.
Result<Measure> RunObjects(client::Client& c, const std::string& bucket,
                           const descriptor::Descriptor& d, MutableByteSpan out,
                           uint32_t concurrency);
// M·L range GETs of S bytes in layer order, issued by `concurrency` threads sharing the client
// (its connection pool), each taking the next (layer, chunk) in order: what an S3 client
// that fetches a layer's slices with a worker pool does. Layer 0 is complete (ttfl) when its
// M GETs have all returned.
Result<Measure> RunRanges(client::Client& c, const std::string& bucket,
                          const descriptor::Descriptor& d, MutableByteSpan out,
                          uint32_t concurrency);

// A load's send buffers, one per sender thread (--desc-put-concurrency descriptor PUTs of up to
// kPutBatchChunks chunks, or --put-concurrency S3 PUTs of one chunk), allocated and first
// touched before the load is timed: a warm client, as the GETs' registered buffers are.
struct PutBuffers {
  PutBuffers(const Flags& f, uint64_t g, uint64_t count);
  uint64_t batch_chunks = 1;
  std::vector<std::vector<std::byte>> per_sender;
};

// Stores chunks 0..count-1 of G = g: chunk j's bytes are a pattern of (g, j), chunk-major in
// kv_l2td, by descriptor PUTs of up to kPutBatchChunks chunks or by one S3 PUT per chunk.
Status Store(client::Client& c, const Flags& f, uint64_t g, uint64_t count, PutBuffers& buffers);

}  // namespace oc::bench::objectcache
