// Descriptor GET delivery cost (storage-server/src/kv/): a warm RocksDB store of Llama-3.1-8B
// KV chunks (L = 32, 4 KiB per token per layer, S = G · 4 KiB) served to a client in the same
// process over UCX shared memory (the client library's TargetBuffer, which UCX allocates in
// System V shared memory, so the server writes it in place;
// docs/decisions/data-plane-direct-writes-shm.md). Run:
//   build/<dir>/bench/kv_bench --benchmark_format=json
// Benchmarks, for G ∈ {16, 64, 256} and the matched prefix of a 4K or 16K context at 50% or
// 87.5% hit (N = context · hit / G chunks; W = N · 32 · S):
//   BM_Deliver/G/context/hit‰/mode  one GetLayers-equivalent request (plan = batch HEAD, then
//       assembly): mode 0 layerwise in place (Θ = 1 byte), 1 chunkwise in place (Θ = ∞),
//       2 layerwise into a body sink that copies each buffer into a payload in memory (the
//       HTTP path without the socket), 3 layerwise as UCX rendezvous messages the client
//       receives (DataPlaneOptions::direct_writes off), 4 layerwise in place through staging
//       buffers (AssembleOptions::zero_copy off; modes 0, 1 and 3 send from the pinned block
//       cache). Counters:
//       bytes_per_second (W / wall time), ttfl_us (request start to the client seeing layer 0;
//       chunkwise: all layers at once), read_us (storage reads into staging, summed), writes,
//       cpu_s_per_gb (user + system CPU of the whole process per GB delivered).
//   BM_Memcpy/W  the copy ceiling: memcpy of W bytes between two buffers, in the same run.
//   BM_PutChunks/G/N  one descriptor PUT (RocksStore::PutChunks) of N chunks at G from an
//       in-memory ChunkSource (a copy per byte, like the gateway's body pipe) into a store of
//       its own with sync_writes on (durable, as served), overwriting the same N names each
//       iteration. Counters: bytes_per_second (N·L·S / wall time), receive_us, commit_wait_us
//       (KvPutReport), cpu_s_per_gb.
// The store is filled once per G (the 16K·87.5% prefix; every smaller request names a prefix
// of it), compacted, and read once before timing, so every extent is in the block cache and
// no background flush or compaction runs during the timed requests.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "composed_store.h"
#include "data_plane/ucx_data_plane.h"
#include "kv/kv_engine.h"
#include "oc/client/target_buffer.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"
#include "rocks/rocks_store.h"

namespace {

using namespace oc;           // NOLINT: a benchmark's main file
using namespace oc::storage;  // NOLINT
using Clock = std::chrono::steady_clock;

constexpr uint32_t kLayers = 32;
constexpr uint64_t kTokenLayerBytes = 4096;
constexpr int64_t kMaxTokens = 16384 * 875 / 1000;  // the largest matched prefix
constexpr char kBucket[] = "bench";

descriptor::Descriptor MakeDescriptor(uint64_t g, uint64_t n) {
  descriptor::Descriptor d;
  descriptor::ExplicitKeys keys;
  for (uint64_t j = 0; j < n; ++j) {
    keys.names.push_back("llama-3.1-8b@g" + std::to_string(g) + "@" + std::to_string(j));
  }
  d.keys = std::move(keys);
  d.num_layers = kLayers;
  d.chunk_tokens = static_cast<uint32_t>(g);
  d.layer_bytes = g * kTokenLayerBytes;
  d.layout = descriptor::StoredLayout::kL2TD;
  d.request_id = "bench";
  return d;
}

// One store per G, filled on first use; the previous G's store is closed first.
struct World {
  uint64_t g = 0;
  std::unique_ptr<testutil::TempDir> dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<UcxDataPlane> plane;
  std::unique_ptr<UcxDataPlane> plane_rndv;  // direct writes off
  std::unique_ptr<client::DataPlane> client;
  std::unique_ptr<client::TargetBuffer> target;
  descriptor::ConnectionId connection{};       // to plane
  descriptor::ConnectionId connection_rndv{};  // to plane_rndv
};

World w;  // torn down explicitly in main, before UCX's and the logger's statics go

World& Get(uint64_t g) {
  if (w.g == g) {
    return w;
  }
  w.store.reset();
  w.dir.reset();
  w.g = g;
  w.dir = std::make_unique<testutil::TempDir>();
  StoreOptions o;
  o.data_dir = w.dir->path().string();
  o.sync_writes = false;
  o.block_cache_bytes = 3ull << 30;  // the whole 1.75 GiB prefix stays cached (warm store)
  o.read_threads = 2;
  w.store = *OpenStore(o);
  (void)w.store->CreateBucket(kBucket, "bench");
  const uint64_t n = kMaxTokens / g;
  descriptor::Descriptor d = MakeDescriptor(g, n);
  std::vector<std::byte> chunk = testutil::PatternBytes(g, kLayers * d.layer_bytes);
  for (uint64_t j = 0; j < n; ++j) {
    PutOptions po;
    po.chunk = ChunkShape{d.layout, kLayers, d.layer_bytes};
    chunk[j % chunk.size()] = static_cast<std::byte>(j);
    auto writer = *w.store->Put({kBucket, d.ObjectName(j)}, po);
    (void)writer->Append(chunk);
    (void)writer->Commit();
  }
  // Timed runs must not share the machine with the fill's flushes and compactions: move
  // everything into SST files now (the flush also warms the block cache).
  if (Status s = dynamic_cast<RocksStore&>(*BackendOf(*w.store)).CompactExtents(); !s.ok()) {
    std::fprintf(stderr, "compaction failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  if (w.plane == nullptr) {
    DataPlaneOptions po;
    po.transports = "shm";
    w.plane = *UcxDataPlane::Create(po);
    po.direct_writes = false;
    w.plane_rndv = *UcxDataPlane::Create(po);
    client::DataPlaneOptions co;
    co.transports = "shm";
    w.client = *client::DataPlane::Open(co);
    w.connection = *w.client->Connect(w.plane->listen_address(), w.plane->shared_memory());
    w.connection_rndv =
        *w.client->Connect(w.plane_rndv->listen_address(), w.plane_rndv->shared_memory());
    w.target = *w.client->Allocate(uint64_t{kMaxTokens} * kLayers * kTokenLayerBytes);
  }
  // Warm: one body-sink pass over everything.
  kv::PlanResult plan =
      *kv::PlanRequest(dynamic_cast<RocksStore&>(*BackendOf(*w.store)), kBucket, d, 1);
  HeapBufferPool pool(1, 4 << 20);
  struct Discard final : LayerSink {
    HeapBufferPool& p;
    explicit Discard(HeapBufferPool& pool) : p(pool) {}
    uint64_t buffer_bytes() const override { return p.buffer_bytes(); }
    Result<StagingBuffer> AcquireBuffer() override { return p.Acquire(std::chrono::seconds(30)); }
    Status Write(uint64_t, StagingBuffer, uint64_t) override { return Status::Ok(); }
    Status LayerReady(uint32_t) override { return Status::Ok(); }
    Status Finish(const Status& s) override { return s; }
  } discard(pool);
  (void)kv::Assemble(dynamic_cast<RocksStore&>(*BackendOf(*w.store)), kBucket, d, plan, discard,
                     {.dense = true}, Clock::now());
  return w;
}

// User + system CPU seconds of every thread of this process so far.
double ProcessCpuSeconds() {
  rusage u{};
  (void)getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// The HTTP path without the socket: each buffer is copied into the payload in memory.
class MemoryBodySink final : public LayerSink {
 public:
  MemoryBodySink(MutableByteSpan payload, Clock::time_point start)
      : pool_(8, 4 << 20), payload_(payload), start_(start) {}
  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(std::chrono::seconds(30)); }
  Status Write(uint64_t offset, StagingBuffer buffer, uint64_t length) override {
    std::memcpy(payload_.data() + offset, buffer.bytes().data(), length);
    return Status::Ok();
  }
  Status LayerReady(uint32_t layer) override {
    if (layer == 0) {
      first_layer_ = Clock::now() - start_;
    }
    return Status::Ok();
  }
  Status Finish(const Status& s) override { return s; }
  Clock::duration first_layer() const { return first_layer_; }

 private:
  HeapBufferPool pool_;
  MutableByteSpan payload_;
  Clock::time_point start_;
  Clock::duration first_layer_{};
};

void BM_Deliver(benchmark::State& state) {
  const uint64_t g = static_cast<uint64_t>(state.range(0));
  const uint64_t context = static_cast<uint64_t>(state.range(1));
  const uint64_t hit_permille = static_cast<uint64_t>(state.range(2));
  const int64_t mode = state.range(3);
  World& w = Get(g);
  const uint64_t n = context * hit_permille / 1000 / g;
  descriptor::Descriptor d = MakeDescriptor(g, n);
  const uint64_t bytes = n * kLayers * d.layer_bytes;
  const uint64_t threshold = mode == 1 ? ~0ull : 1;
  std::vector<std::byte> body(mode == 2 ? bytes : 0);
  double ttfl_us = 0;
  double read_us = 0;
  double writes = 0;
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    kv::PlanResult plan =
        *kv::PlanRequest(dynamic_cast<RocksStore&>(*BackendOf(*w.store)), kBucket, d, threshold);
    if (mode == 2) {
      MemoryBodySink sink(body, start);
      auto report = kv::Assemble(dynamic_cast<RocksStore&>(*BackendOf(*w.store)), kBucket, d, plan,
                                 sink, {.dense = true}, start);
      if (!report.has_value()) {
        state.SkipWithError(report.error().ToString().c_str());
        break;
      }
      ttfl_us += std::chrono::duration<double, std::micro>(sink.first_layer()).count();
      read_us += static_cast<double>(report->timings.read_us);
      writes += static_cast<double>(report->writes);
      continue;
    }
    d.target = *w.target->Target(mode == 3 ? w.connection_rndv : w.connection, 0, bytes);
    std::atomic<int64_t> first_ns{0};
    auto delivery = *w.client->Expect(d.target->address, kLayers, [&](uint32_t layer) {
      if (layer == 0) {
        first_ns = (Clock::now() - start).count();
      }
    });
    auto sink = *(mode == 3 ? w.plane_rndv : w.plane)->OpenSink(*d.target);
    kv::AssembleOptions ao;
    ao.zero_copy = mode != 4;
    auto report = kv::Assemble(dynamic_cast<RocksStore&>(*BackendOf(*w.store)), kBucket, d, plan,
                               *sink, ao, start);
    Status done = delivery->Wait(std::chrono::seconds(60));
    if (!report.has_value() || !done.ok()) {
      state.SkipWithError("delivery failed");
      break;
    }
    ttfl_us += static_cast<double>(first_ns.load()) / 1000.0;
    read_us += static_cast<double>(report->timings.read_us);
    writes += static_cast<double>(report->writes);
  }
  const double cpu = ProcessCpuSeconds() - cpu_start;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  // CPU seconds of the whole process (server, client, store threads) per GB delivered: what
  // the copies cost, less sensitive to other load on the machine than wall time.
  state.counters["cpu_s_per_gb"] =
      cpu / (static_cast<double>(std::max<int64_t>(1, state.iterations())) *
             static_cast<double>(bytes) / 1e9);
  state.counters["ttfl_us"] = benchmark::Counter(ttfl_us, benchmark::Counter::kAvgIterations);
  state.counters["read_us"] = benchmark::Counter(read_us, benchmark::Counter::kAvgIterations);
  state.counters["writes"] = benchmark::Counter(writes, benchmark::Counter::kAvgIterations);
  state.counters["chunks"] = static_cast<double>(n);
  state.counters["payload_bytes"] = static_cast<double>(bytes);
}

void DeliverArgs(benchmark::internal::Benchmark* b) {
  for (int64_t g : {16, 64, 256}) {
    for (int64_t context : {4096, 16384}) {
      for (int64_t hit : {500, 875}) {
        for (int64_t mode : {0, 1, 2, 3, 4}) {
          b->Args({g, context, hit, mode});
        }
      }
    }
  }
}
BENCHMARK(BM_Deliver)->Apply(DeliverArgs)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Memcpy(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  std::vector<std::byte> a(bytes, std::byte{1});
  std::vector<std::byte> b(bytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Memcpy)
    ->Arg(256ll << 20)
    ->Arg(1792ll << 20)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The body of a descriptor PUT, served from one chunk-sized pattern buffer.
class PatternSource final : public ChunkSource {
 public:
  PatternSource(const std::vector<std::byte>& chunk, uint64_t total)
      : chunk_(chunk), total_(total) {}
  Result<uint64_t> Read(MutableByteSpan out) override {
    const uint64_t within = offset_ % chunk_.size();
    const uint64_t n = std::min<uint64_t>({out.size(), total_ - offset_, chunk_.size() - within});
    std::memcpy(out.data(), chunk_.data() + within, n);
    offset_ += n;
    return n;
  }

 private:
  const std::vector<std::byte>& chunk_;
  const uint64_t total_;
  uint64_t offset_ = 0;
};

void BM_PutChunks(benchmark::State& state) {
  const uint64_t g = static_cast<uint64_t>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  testutil::TempDir dir;
  StoreOptions o;
  o.data_dir = dir.path().string();
  o.sync_writes = true;
  std::unique_ptr<Store> store = *OpenStore(o);
  (void)store->CreateBucket(kBucket, "bench");
  const descriptor::Descriptor d = MakeDescriptor(g, n);
  const uint64_t chunk_bytes = kLayers * d.layer_bytes;
  const uint64_t bytes = n * chunk_bytes;
  const std::vector<std::byte> chunk = testutil::PatternBytes(g, chunk_bytes);
  double receive_us = 0;
  double commit_wait_us = 0;
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    PatternSource source(chunk, bytes);
    Result<KvPutReport> r = store->PutChunks(kBucket, d, &source);
    if (!r.has_value()) {
      state.SkipWithError(r.error().ToString().c_str());
      break;
    }
    receive_us += static_cast<double>(r->receive_us);
    commit_wait_us += static_cast<double>(r->commit_wait_us);
  }
  const double cpu = ProcessCpuSeconds() - cpu_start;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["cpu_s_per_gb"] =
      cpu / (static_cast<double>(std::max<int64_t>(1, state.iterations())) *
             static_cast<double>(bytes) / 1e9);
  state.counters["receive_us"] = benchmark::Counter(receive_us, benchmark::Counter::kAvgIterations);
  state.counters["commit_wait_us"] =
      benchmark::Counter(commit_wait_us, benchmark::Counter::kAvgIterations);
  state.counters["chunks"] = static_cast<double>(n);
}
// G = 1: 128 KiB chunks (per-chunk overheads dominate); G = 16: 2 MiB; G = 256: 32 MiB.
BENCHMARK(BM_PutChunks)
    ->Args({1, 256})
    ->Args({16, 64})
    ->Args({256, 4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Client side first (its buffer, then its worker), then the server's planes, the store and
  // its temp dir.
  w.target.reset();
  w.client.reset();
  w.plane_rndv.reset();
  w.plane.reset();
  w.store.reset();
  w.dir.reset();
  return 0;
}
