// ttft_emulator: time to first token of emulated serving nodes fed by the real product (issue 6's
// benchmark; issue 7's experiments 5-8). bench/README.md documents the flags and the JSON.
//
// The product path: a warm RocksDB store (temp dir) whose descriptor GETs run through
// kv::KvEngine::GetLayers, the engine RocksStore::GetLayers delegates to, over the engine's own
// UCX data plane (UCX_TLS=shm) into each node's registered buffer (client::DataPlane /
// TargetBuffer). One engine per configuration of KvOptions: Θ = 1 (layerwise), Θ = ∞ (chunkwise),
// and one per scheduler configuration (KvOptions::scheduler: the real admission, policy, epochs
// or work-conserving reallocation, DWRR pacer and dispatcher thread). Every engine reads the same
// warm store, so its block cache stays hot across configurations.
//
// A serving node is a client::DataPlane of its own. It sends its descriptor (GetLayers on a
// server thread), waits for each layer-ready notification (Delivery::WaitLayer), then "computes"
// the layer for c_i by sleeping (so compute does not take the 2 cores from the data plane), and
// its TTFT is when the last layer's compute ends: Equation 3's overlap
// T = X_0 + Σ_{l<L-1} max(X_{l+1}, C_l) + C_{L-1} happens for real. The local paths (KV already
// in this process's memory) copy it with memcpy on a loader thread and signal each layer.
//
// Scaling (recorded in the JSON): the data plane's rate R here stands for the paper's 100 Gbps
// link, k = R / 12.5 GB/s. A request keeps the paper's bytes per layer to compute per layer ratio
// times k: its KV is context·hit/φ tokens at 4 KiB per token per layer (φ: context scale), its
// per-layer compute c_paper/(φ·k). Layers are reduced to L (32 in --full).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kv/kv_engine.h"
#include "kv/pacing.h"
#include "kv/slice_source.h"
#include "oc/client/target_buffer.h"
#include "oc/sched/grant.h"
#include "oc/sched/options.h"
#include "oc/sched/policy.h"
#include "oc/storage/local_store.h"
#include "oc/testutil/testutil.h"

namespace {

using namespace oc;  // NOLINT: a benchmark's main file
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

constexpr uint64_t kTokenLayerBytes = 4096;       // Llama-3.1-8B: 8 KV heads x 128 x K,V x fp16
constexpr double kPaperLinkBytesPerSec = 12.5e9;  // 100 Gbps
constexpr char kBucket[] = "ttft";
constexpr auto kLayerTimeout = std::chrono::seconds(60);

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::vector<double> LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  f >> a >> b >> c;
  return {a, b, c};
}

// --- The paper's model: Table A8 (data/objectcache-table-a8.csv), Llama-3.1-8B on an A100 ---

struct A8Row {
  uint64_t context;
  double hit;
  double total_ms;  // prefill compute of the uncached tokens, all 32 layers
};
constexpr A8Row kA8[] = {
    {4096, 0.5, 185.31},   {4096, 0.875, 63.47},   {16384, 0.5, 955.89},  {16384, 0.875, 281.76},
    {32768, 0.5, 2589.25}, {32768, 0.875, 763.19}, {65536, 0.5, 8672.79}, {65536, 0.875, 2423.90},
};
constexpr int kPaperLayers = 32;

// Per-layer compute, ms, at a context and hit rate. Rows of Table A8 exactly; other hit rates
// (12.5%) by the line through the context's two rows in uncached tokens (each uncached token
// attends to about the whole context at a fixed context).
double PaperComputeMsPerLayer(uint64_t context, double hit) {
  const A8Row* lo = nullptr;
  const A8Row* hi = nullptr;
  for (const A8Row& r : kA8) {
    if (r.context != context) continue;
    if (std::fabs(r.hit - hit) < 1e-9) return r.total_ms / kPaperLayers;
    (r.hit < 0.7 ? lo : hi) = &r;
  }
  if (lo == nullptr || hi == nullptr) return 0;
  const double u_lo = (1 - lo->hit) * static_cast<double>(context);
  const double u_hi = (1 - hi->hit) * static_cast<double>(context);
  const double slope = (lo->total_ms - hi->total_ms) / (u_lo - u_hi);
  const double u = (1 - hit) * static_cast<double>(context);
  return (hi->total_ms + slope * (u - u_hi)) / kPaperLayers;
}

// Equation 3 with a constant per-layer transfer x and compute c (ms); chunkwise: everything
// arrives before compute starts.
double Eq3(bool layerwise, int layers, double x, double c) {
  if (!layerwise) return layers * (x + c);
  return x + (layers - 1) * std::max(x, c) + c;
}

// --- Sizes ---

struct Size {
  const char* name;
  int e2e_layers;
  std::vector<uint64_t> contexts;  // paper contexts of exp. 5/6
  std::vector<double> hits;
  std::vector<uint64_t> gs;
  uint64_t phi_64k;  // context scale of the 64K context
  uint64_t bw_g;
  std::vector<double> bw_hits;
  int reps;
  int sched_layers;
  uint64_t sched_phi;
  uint64_t sched_g;
  std::vector<std::string> sched_workloads;
  int sched_reps;
};

Size SmallestSize() {
  return {"smallest", 2, {4096}, {0.5}, {64}, 16, 64, {0.5}, 1, 2, 128, 16, {"B"}, 1};
}
Size ReducedSize() {
  return {"reduced",
          4,
          {4096, 65536},
          {0.125, 0.5, 0.875},
          {16, 64, 256},
          16,
          64,
          {0.5, 0.875},
          1,
          8,
          64,
          16,
          {"A", "B", "C"},
          3};
}
Size FullSize() {
  return {"full",
          32,
          {4096, 65536},
          {0.125, 0.5, 0.875},
          {16, 64, 256},
          32,
          64,
          {0.125, 0.5, 0.875},
          1,
          32,
          32,
          16,
          {"A", "B", "C"},
          1};
}

// --- Requests and paths ---

enum class Path { kOptLocalLW, kLocalCW, kLocalLW, kS3BatchCW, kS3AggLW };
constexpr Path kAllPaths[] = {Path::kOptLocalLW, Path::kLocalCW, Path::kLocalLW, Path::kS3BatchCW,
                              Path::kS3AggLW};

const char* PathName(Path p) {
  switch (p) {
    case Path::kOptLocalLW:
      return "opt-local-LW";
    case Path::kLocalCW:
      return "Local-CW";
    case Path::kLocalLW:
      return "Local-LW";
    case Path::kS3BatchCW:
      return "S3Batch-CW";
    case Path::kS3AggLW:
      return "S3Agg-LW";
  }
  return "?";
}
bool Layerwise(Path p) { return p != Path::kLocalCW && p != Path::kS3BatchCW; }

struct Request {
  std::string label;
  uint64_t g = 0;
  int layers = 0;
  uint64_t chunks = 0;  // M (= N: every named chunk is present)
  double compute_us = 0;
  uint64_t layer_bytes() const { return chunks * g * kTokenLayerBytes; }
  uint64_t payload() const { return layer_bytes() * static_cast<uint64_t>(layers); }
};

struct Measured {
  bool ok = true;
  std::string error;
  double ttft_ms = 0;
  double last_layer_ms = 0;  // the last layer's notification, from the start
  double admitted_gbps = 0;  // KvGetReport::assigned_rate_gbps
  // The scheduler's rate for it when each layer landed (paced runs only).
  std::vector<double> layer_rates_gbps;
};

// Layer-ready signals of the local paths.
class LayerSignal {
 public:
  void Set(int l) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = l;
    }
    cv_.notify_all();
  }
  bool Wait(int l) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kLayerTimeout, [&] { return ready_ >= l; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int ready_ = -1;
};

// The node's side of one request: waits for layer l (`wait_layer`), holds it back behind an
// emulated link of `link_cap` bytes/s (0: none), calls on_layer(l), computes it for c. Returns
// false on failure.
template <typename WaitLayer, typename OnLayer>
bool NodeLoop(const Request& r, bool layerwise, double link_cap, Clock::time_point start,
              WaitLayer wait_layer, OnLayer on_layer, Measured* m) {
  const auto c = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(r.compute_us));
  for (int l = 0; l < r.layers; ++l) {
    if (!wait_layer(l)) return false;
    m->last_layer_ms = Ms(Clock::now() - start);
    if (link_cap > 0) {
      const double cum = layerwise ? static_cast<double>(r.layer_bytes()) * (l + 1)
                                   : static_cast<double>(r.payload());
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(cum / link_cap)));
      m->last_layer_ms = Ms(Clock::now() - start);
    }
    on_layer(l);
    if (r.compute_us > 0) std::this_thread::sleep_for(c);
  }
  m->ttft_ms = Ms(Clock::now() - start);
  return true;
}

// --- The world: store, node clients, engines ---

class World {
 public:
  Status Open() {
    dir_ = std::make_unique<testutil::TempDir>();
    storage::StoreOptions o;
    o.data_dir = dir_->path().string();
    o.sync_writes = false;
    o.block_cache_bytes = 4ull << 30;  // everything stays cached: a warm store
    o.read_threads = 2;
    OC_ASSIGN_OR_RETURN(store_, storage::OpenLocalStore(o));
    OC_RETURN_IF_ERROR(store_->CreateBucket(kBucket, "bench"));
    OC_ASSIGN_OR_RETURN(layerwise_, MakeEngine(1, nullptr));
    OC_ASSIGN_OR_RETURN(chunkwise_, MakeEngine(~uint64_t{0}, nullptr));
    return Status::Ok();
  }

  // Teardown in the order kv_bench uses: clients, engines (their data planes), the store.
  void Close() {
    clients_.clear();
    layerwise_.reset();
    chunkwise_.reset();
    store_.reset();
    dir_.reset();
  }

  Result<std::unique_ptr<storage::kv::KvEngine>> MakeEngine(
      uint64_t threshold, std::shared_ptr<const sched::SchedulerOptions> scheduler) {
    storage::KvOptions kv;
    kv.layerwise_threshold_bytes = threshold;
    kv.data_plane_transports = "shm";
    kv.scheduler = std::move(scheduler);
    OC_RETURN_IF_ERROR(kv.Validate());
    auto engine = std::make_unique<storage::kv::KvEngine>(
        dynamic_cast<storage::kv::SliceSource&>(*store_), kv);
    if (kv.scheduler != nullptr && engine->pacing() == nullptr) {
      return Status::InvalidArgument("scheduler", "the engine rejected the scheduler options");
    }
    return engine;
  }

  static std::string ChunkName(uint64_t g, int layers, uint64_t j) {
    return "g" + std::to_string(g) + "-l" + std::to_string(layers) + "/" + std::to_string(j);
  }

  static descriptor::Descriptor MakeDescriptor(const Request& r) {
    descriptor::Descriptor d;
    descriptor::ExplicitKeys keys;
    for (uint64_t j = 0; j < r.chunks; ++j) keys.names.push_back(ChunkName(r.g, r.layers, j));
    d.keys = std::move(keys);
    d.num_layers = static_cast<uint32_t>(r.layers);
    d.chunk_tokens = static_cast<uint32_t>(r.g);
    d.layer_bytes = r.g * kTokenLayerBytes;
    d.layout = descriptor::StoredLayout::kL2TD;
    d.request_id = r.label;
    if (r.compute_us > 0) d.compute_window_us = static_cast<uint64_t>(std::llround(r.compute_us));
    return d;
  }

  // Stores chunks 0..chunks-1 of the (g, layers) set (idempotent), then reads them once.
  Status Fill(uint64_t g, int layers, uint64_t chunks) {
    uint64_t& have = filled_[{g, layers}];
    if (have >= chunks) return Status::Ok();
    const uint64_t s = g * kTokenLayerBytes;
    std::vector<std::byte> chunk = testutil::PatternBytes(g * 131 + static_cast<uint64_t>(layers),
                                                          s * static_cast<uint64_t>(layers));
    for (uint64_t j = have; j < chunks; ++j) {
      storage::PutOptions po;
      po.chunk =
          storage::ChunkShape{descriptor::StoredLayout::kL2TD, static_cast<uint32_t>(layers), s};
      chunk[j % chunk.size()] = static_cast<std::byte>(j);
      OC_ASSIGN_OR_RETURN(auto writer, store_->Put({kBucket, ChunkName(g, layers, j)}, po));
      OC_RETURN_IF_ERROR(writer->Append(chunk));
      if (auto committed = writer->Commit(); !committed.has_value()) return committed.error();
    }
    have = chunks;
    // Warm: one pass through a body sink that discards.
    storage::HeapBufferPool pool(2, 4 << 20);
    struct Discard final : storage::LayerSink {
      storage::HeapBufferPool& p;
      explicit Discard(storage::HeapBufferPool& pool) : p(pool) {}
      uint64_t buffer_bytes() const override { return p.buffer_bytes(); }
      Result<storage::StagingBuffer> AcquireBuffer() override {
        return p.Acquire(std::chrono::seconds(30));
      }
      Status Write(uint64_t, storage::StagingBuffer, uint64_t) override { return Status::Ok(); }
      Status LayerReady(uint32_t) override { return Status::Ok(); }
      Status Finish(const Status& st) override { return st; }
    } discard(pool);
    Request r{"warm", g, layers, chunks, 0};
    OC_ASSIGN_OR_RETURN(storage::KvGetReport rep,
                        store_->GetLayers(kBucket, MakeDescriptor(r), &discard, {}));
    if (rep.plan.matched != chunks) {
      return Status::Internal("warm-up matched " + std::to_string(rep.plan.matched) + " of " +
                              std::to_string(chunks) + " chunks");
    }
    return Status::Ok();
  }

  Result<client::DataPlane*> Client(size_t i) {
    while (clients_.size() <= i) {
      client::DataPlaneOptions co;
      co.transports = "shm";
      OC_ASSIGN_OR_RETURN(auto c, client::DataPlane::Open(co));
      clients_.push_back(std::move(c));
    }
    return clients_[i].get();
  }

  storage::kv::KvEngine& layerwise() { return *layerwise_; }
  storage::kv::KvEngine& chunkwise() { return *chunkwise_; }

  // Requests of `reqs` start together, node i on client i, through `engine`.
  std::vector<Measured> RunStore(storage::kv::KvEngine& engine, const std::vector<Request>& reqs,
                                 bool layerwise, double link_cap) {
    const size_t n = reqs.size();
    std::vector<Measured> out(n);
    std::vector<std::unique_ptr<client::TargetBuffer>> targets(n);
    std::vector<descriptor::Descriptor> ds(n);
    std::vector<std::unique_ptr<client::Delivery>> deliveries(n);
    auto fail_all = [&](const Status& s) {
      for (Measured& m : out) {
        m.ok = false;
        m.error = s.ToString();
      }
      return out;
    };
    for (size_t i = 0; i < n; ++i) {
      Result<client::DataPlane*> c = Client(i);
      if (!c.has_value()) return fail_all(c.error());
      auto t = (*c)->Allocate(reqs[i].payload());
      if (!t.has_value()) return fail_all(t.error());
      targets[i] = std::move(*t);
      std::memset(targets[i]->bytes().data(), 0x5a, targets[i]->length());  // fault pages in now
      ds[i] = MakeDescriptor(reqs[i]);
      Result<storage::DataPlaneInfo> where = engine.DataPlaneInfo();
      if (!where.has_value()) return fail_all(where.error());
      Result<descriptor::ConnectionId> connection =
          (*c)->Connect(where->address, where->shared_memory);
      if (!connection.has_value()) return fail_all(connection.error());
      ds[i].target = targets[i]->Target(*connection);
      auto d = (*c)->Expect(ds[i].target->address, static_cast<uint32_t>(reqs[i].layers));
      if (!d.has_value()) return fail_all(d.error());
      deliveries[i] = std::move(*d);
    }
    std::vector<std::atomic<bool>> server_failed(n);
    std::vector<std::string> server_error(n);
    std::vector<std::thread> threads;
    const Clock::time_point start = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        Result<storage::KvGetReport> rep = engine.GetLayers(kBucket, ds[i], nullptr, {});
        if (!rep.has_value()) {
          server_error[i] = rep.error().ToString();
          server_failed[i] = true;
        } else {
          out[i].admitted_gbps = rep->assigned_rate_gbps;
        }
      });
      threads.emplace_back([&, i] {
        auto wait = [&](int l) {
          while (true) {
            Status s =
                deliveries[i]->WaitLayer(static_cast<uint32_t>(l), std::chrono::milliseconds(200));
            if (s.ok()) return true;
            if (s.code() != Code::kUnavailable || server_failed[i] ||
                Clock::now() - start > kLayerTimeout) {
              if (out[i].error.empty()) out[i].error = s.ToString();
              return false;
            }
          }
        };
        auto on_layer = [&](int) {
          if (engine.pacing() == nullptr) return;
          for (const sched::RequestStats& rs : engine.pacing()->Stats().requests) {
            if (rs.name == reqs[i].label && !rs.released) {
              out[i].layer_rates_gbps.push_back(sched::BytesPerSecToGbps(rs.rate_bytes_per_sec));
            }
          }
        };
        if (!NodeLoop(reqs[i], layerwise, link_cap, start, wait, on_layer, &out[i])) {
          out[i].ok = false;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < n; ++i) {
      Status done = deliveries[i]->Wait(kLayerTimeout);
      if (!done.ok() || server_failed[i]) {
        out[i].ok = false;
        out[i].error = !server_error[i].empty() ? server_error[i] : done.ToString();
      }
    }
    return out;
  }

 private:
  std::unique_ptr<testutil::TempDir> dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<storage::kv::KvEngine> layerwise_;
  std::unique_ptr<storage::kv::KvEngine> chunkwise_;
  std::vector<std::unique_ptr<client::DataPlane>> clients_;
  std::map<std::pair<uint64_t, int>, uint64_t> filled_;
};

// The KV of one request in local memory: layer-major (opt-local) and chunk-major (Local-*).
struct LocalKv {
  explicit LocalKv(const Request& r)
      : layer_major(r.payload(), std::byte{0x11}),
        chunk_major(r.payload(), std::byte{0x22}),
        dst(r.payload(), std::byte{0}) {}
  std::vector<std::byte> layer_major;
  std::vector<std::byte> chunk_major;
  std::vector<std::byte> dst;
};

Measured RunLocal(Path p, const Request& r, LocalKv& kv, double link_cap) {
  Measured m;
  LayerSignal signal;
  const uint64_t s = r.layer_bytes();
  const uint64_t slice = r.g * kTokenLayerBytes;
  const uint64_t chunk = slice * static_cast<uint64_t>(r.layers);
  const Clock::time_point start = Clock::now();
  std::thread loader([&] {
    switch (p) {
      case Path::kOptLocalLW:
        for (int l = 0; l < r.layers; ++l) {
          std::memcpy(kv.dst.data() + l * s, kv.layer_major.data() + l * s, s);
          signal.Set(l);
        }
        break;
      case Path::kLocalLW:
        for (int l = 0; l < r.layers; ++l) {
          for (uint64_t j = 0; j < r.chunks; ++j) {
            std::memcpy(kv.dst.data() + l * s + j * slice,
                        kv.chunk_major.data() + j * chunk + l * slice, slice);
          }
          signal.Set(l);
        }
        break;
      default:  // Local-CW: whole chunks, then every layer at once
        for (uint64_t j = 0; j < r.chunks; ++j) {
          std::memcpy(kv.dst.data() + j * chunk, kv.chunk_major.data() + j * chunk, chunk);
        }
        signal.Set(r.layers - 1);
        break;
    }
  });
  if (!NodeLoop(
          r, Layerwise(p), link_cap, start, [&](int l) { return signal.Wait(l); }, [](int) {},
          &m)) {
    m.ok = false;
    m.error = "local layer wait timed out";
  }
  loader.join();
  return m;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// --- The emulator ---

class Emulator {
 public:
  Emulator(World& world, Size size) : w_(world), size_(std::move(size)) {}

  bool ok() const { return ok_; }

  // Single-thread memcpy rate and each path's rate with no compute, at 4K@87.5% and G = 64
  // (or the smallest size's configuration).
  Status Calibrate(Json* machine) {
    std::vector<std::byte> a(64 << 20, std::byte{1}), b(64 << 20, std::byte{0});
    uint64_t moved = 0;
    const Clock::time_point t0 = Clock::now();
    while (Clock::now() - t0 < std::chrono::milliseconds(300)) {
      std::memcpy(b.data(), a.data(), a.size());
      a[moved % a.size()] ^= b[a.size() / 2];
      moved += a.size();
    }
    memcpy_ = static_cast<double>(moved) / std::chrono::duration<double>(Clock::now() - t0).count();
    const double hit = size_.hits.back();
    const uint64_t g = size_.bw_g;
    Request r{"calibration", g, size_.e2e_layers,
              static_cast<uint64_t>(static_cast<double>(size_.contexts.front()) * hit) / g, 0};
    OC_RETURN_IF_ERROR(w_.Fill(g, r.layers, r.chunks));
    Json paths = Json::object();
    for (Path p : kAllPaths) {
      std::vector<double> rates;
      for (int rep = 0; rep < std::max(3, size_.reps); ++rep) {
        Measured m = RunPath(p, r, 0);
        if (!m.ok) return Status::Internal(std::string(PathName(p)) + ": " + m.error);
        rates.push_back(static_cast<double>(r.payload()) / (m.last_layer_ms * 1e-3));
      }
      path_rate_[p] = Median(rates);
      paths[PathName(p)] = path_rate_[p] / 1e9;
      std::fprintf(stderr, "calibration: %-13s %.3f GB/s (%llu MiB, G=%llu, L=%d)\n", PathName(p),
                   path_rate_[p] / 1e9, static_cast<unsigned long long>(r.payload() >> 20),
                   static_cast<unsigned long long>(g), r.layers);
    }
    rate_ = path_rate_[Path::kS3AggLW];
    k_ = rate_ / kPaperLinkBytesPerSec;
    (*machine)["memcpy_gbytes_per_s"] = memcpy_ / 1e9;
    (*machine)["data_plane_gbytes_per_s"] = rate_ / 1e9;
    (*machine)["path_gbytes_per_s"] = paths;
    (*machine)["calibration"] = {{"context", size_.contexts.front()},
                                 {"hit", hit},
                                 {"g", g},
                                 {"layers", r.layers},
                                 {"payload_bytes", r.payload()}};
    std::fprintf(stderr, "memcpy %.2f GB/s; data plane (S3Agg-LW) %.3f GB/s, k = %.4f\n",
                 memcpy_ / 1e9, rate_ / 1e9, k_);
    return Status::Ok();
  }

  Json Scaling() const {
    return {
        {"paper_link_gbps", 100},
        {"k", k_},
        {"k_meaning", "rates here = paper rates x k; k = S3Agg-LW rate measured here / 12.5 GB/s"},
        {"layers_e2e", size_.e2e_layers},
        {"context_scale_64k", size_.phi_64k},
        {"context_scale_note",
         "a context scaled by phi holds context*hit/phi tokens and computes c_paper/(phi*k) "
         "per layer, so bytes per layer / compute per layer = k x the paper's; 4K is "
         "unscaled"},
        {"compute_model",
         "Table A8 rows (Llama-3.1-8B, A100) per layer; 12.5% hit by the line through the "
         "context's 50% and 87.5% rows in uncached tokens"},
        {"compute", "sleep"},
        {"sched_k", k_ / 2},
        {"sched_k_note",
         "scheduling runs map the paper's 100 Gbps link to half the measured rate (4-6 "
         "nodes, the dispatcher and the data plane share 2 cores); caps, demands and delta "
         "scale by sched_k, times (c, epoch) by 1/(sched_phi*sched_k)"},
        {"sched_layers", size_.sched_layers},
        {"sched_context_scale", size_.sched_phi},
        {"sched_g", size_.sched_g}};
  }

  Request E2eRequest(uint64_t context, double hit, uint64_t g) const {
    const uint64_t phi = context >= 65536 ? size_.phi_64k : 1;
    const uint64_t tokens =
        static_cast<uint64_t>(std::llround(static_cast<double>(context) * hit)) / phi;
    Request r;
    r.g = g;
    r.layers = size_.e2e_layers;
    r.chunks = tokens / g;
    r.compute_us = PaperComputeMsPerLayer(context, hit) * 1e3 / (static_cast<double>(phi) * k_);
    r.label = std::to_string(context / 1024) + "K@" + std::to_string(hit * 100).substr(0, 4) +
              "%/G" + std::to_string(g);
    return r;
  }

  Measured RunPath(Path p, const Request& r, double link_cap) {
    switch (p) {
      case Path::kS3AggLW:
        return w_.RunStore(w_.layerwise(), {r}, true, link_cap)[0];
      case Path::kS3BatchCW:
        return w_.RunStore(w_.chunkwise(), {r}, false, link_cap)[0];
      default: {
        LocalKv kv(r);
        return RunLocal(p, r, kv, link_cap);
      }
    }
  }

  // Median TTFT over the repetitions (the whole Measured of the median run).
  Measured RunMedian(Path p, const Request& r, double link_cap) {
    std::vector<Measured> runs;
    for (int i = 0; i < size_.reps; ++i) {
      runs.push_back(RunPath(p, r, link_cap));
      if (!runs.back().ok) {
        ok_ = false;
        std::fprintf(stderr, "  %s %s failed: %s\n", PathName(p), r.label.c_str(),
                     runs.back().error.c_str());
        return runs.back();
      }
    }
    std::sort(runs.begin(), runs.end(),
              [](const Measured& a, const Measured& b) { return a.ttft_ms < b.ttft_ms; });
    return runs[runs.size() / 2];
  }

  double PredictMs(Path p, const Request& r, double rate) const {
    const double x = static_cast<double>(r.layer_bytes()) / rate * 1e3;
    return Eq3(Layerwise(p), r.layers, x, r.compute_us * 1e-3);
  }

  void AddModelRow(const std::string& experiment, const std::string& config, double measured,
                   double predicted) {
    model_rows_.push_back({{"experiment", experiment},
                           {"config", config},
                           {"measured_ms", measured},
                           {"eq3_ms", predicted},
                           {"error_pct", (predicted - measured) / measured * 100}});
  }

  Status E2e(Json* out) {
    Json rows = Json::array();
    for (uint64_t context : size_.contexts) {
      for (double hit : size_.hits) {
        for (uint64_t g : size_.gs) {
          Request r = E2eRequest(context, hit, g);
          if (r.chunks == 0) continue;
          OC_RETURN_IF_ERROR(w_.Fill(g, r.layers, r.chunks));
          double base = 0;
          for (Path p : kAllPaths) {
            Measured m = RunMedian(p, r, 0);
            e2e_[{PathName(p), r.label}] = m.ttft_ms;
            if (p == Path::kOptLocalLW) base = m.ttft_ms;
            const double eq3 = PredictMs(p, r, path_rate_[p]);
            rows.push_back({{"path", PathName(p)},
                            {"context", context},
                            {"tokens", r.chunks * g},
                            {"context_scale", context >= 65536 ? size_.phi_64k : 1},
                            {"hit", hit},
                            {"g", g},
                            {"layers", r.layers},
                            {"chunks", r.chunks},
                            {"layer_bytes", r.layer_bytes()},
                            {"compute_us", r.compute_us},
                            {"ttft_ms", m.ttft_ms},
                            {"last_layer_ms", m.last_layer_ms},
                            {"eq3_ms", eq3},
                            {"overhead_ms", m.ttft_ms - base},
                            {"overhead_pct", (m.ttft_ms - base) / base * 100},
                            {"ok", m.ok}});
            AddModelRow("e2e", std::string(PathName(p)) + " " + r.label, m.ttft_ms, eq3);
            std::fprintf(stderr,
                         "e2e %-13s %-16s TTFT %9.1f ms (+%6.1f%% vs opt-local-LW), "
                         "Eq.3 %9.1f ms\n",
                         PathName(p), r.label.c_str(), m.ttft_ms, (m.ttft_ms - base) / base * 100,
                         eq3);
          }
        }
      }
    }
    (*out)["rows"] = rows;
    return Status::Ok();
  }

  Status Bandwidth(Json* out) {
    Json rows = Json::array();
    for (uint64_t context : size_.contexts) {
      for (double hit : size_.bw_hits) {
        Request r = E2eRequest(context, hit, size_.bw_g);
        if (r.chunks == 0) continue;
        OC_RETURN_IF_ERROR(w_.Fill(r.g, r.layers, r.chunks));
        for (Path p : kAllPaths) {
          double uncapped = 0;
          auto it = e2e_.find({PathName(p), r.label});
          if (it != e2e_.end()) {
            uncapped = it->second;
          } else {
            uncapped = RunMedian(p, r, 0).ttft_ms;
          }
          const double cap = path_rate_[p] / 10;
          Measured m = RunMedian(p, r, cap);
          const double eq3 = PredictMs(p, r, cap);
          rows.push_back({{"path", PathName(p)},
                          {"context", context},
                          {"hit", hit},
                          {"g", r.g},
                          {"layers", r.layers},
                          {"layer_bytes", r.layer_bytes()},
                          {"compute_us", r.compute_us},
                          {"uncapped_gbytes_per_s", path_rate_[p] / 1e9},
                          {"cap_gbytes_per_s", cap / 1e9},
                          {"uncapped_ttft_ms", uncapped},
                          {"capped_ttft_ms", m.ttft_ms},
                          {"increase_pct", (m.ttft_ms - uncapped) / uncapped * 100},
                          {"eq3_capped_ms", eq3},
                          {"ok", m.ok}});
          AddModelRow("bandwidth", std::string(PathName(p)) + " " + r.label + " cap 10%", m.ttft_ms,
                      eq3);
          std::fprintf(stderr,
                       "bandwidth %-13s %-16s TTFT %9.1f -> %9.1f ms at 10%% (%.3f "
                       "GB/s), Eq.3 %9.1f ms\n",
                       PathName(p), r.label.c_str(), uncapped, m.ttft_ms, cap / 1e9, eq3);
        }
      }
    }
    (*out)["rows"] = rows;
    return Status::Ok();
  }

  // Workloads of issue 6 (Table A8 profiles; the paper's exact mixes are not in ../shared).
  struct Profile {
    uint64_t context;
    double hit;
  };
  struct Workload {
    const char* name;
    double paper_cap_gbps;
    std::vector<Profile> profiles;
  };
  static std::vector<Workload> Workloads() {
    return {
        {"A", 80, {{16384, 0.875}, {65536, 0.875}, {16384, 0.5}, {65536, 0.5}}},  // 91 Gbps
        {"B", 50, {{32768, 0.875}, {65536, 0.875}, {16384, 0.5}}},                // 73 Gbps
        {"C",
         50,
         {{16384, 0.5},
          {16384, 0.875},
          {32768, 0.5},
          {32768, 0.875},
          {65536, 0.5},
          {65536, 0.875}}},  // six tenants, 137 Gbps
    };
  }

  Status Sched(Json* out) {
    const double ks = k_ / 2;
    const double phi = static_cast<double>(size_.sched_phi);
    Json workloads = Json::array();
    for (const Workload& wl : Workloads()) {
      if (std::find(size_.sched_workloads.begin(), size_.sched_workloads.end(), wl.name) ==
          size_.sched_workloads.end()) {
        continue;
      }
      std::vector<Request> reqs;
      double demand = 0;
      for (const Profile& p : wl.profiles) {
        Request r;
        r.g = size_.sched_g;
        r.layers = size_.sched_layers;
        r.chunks = static_cast<uint64_t>(static_cast<double>(p.context) * p.hit / phi) / r.g;
        r.compute_us = PaperComputeMsPerLayer(p.context, p.hit) * 1e3 / (phi * ks);
        r.label = std::to_string(reqs.size()) + ":" + std::to_string(p.context / 1024) + "K@" +
                  (p.hit > 0.7 ? "87.5%" : "50%");
        if (r.chunks == 0) return Status::InvalidArgument("sched", "a request of no chunks");
        OC_RETURN_IF_ERROR(w_.Fill(r.g, r.layers, r.chunks));
        demand += static_cast<double>(r.layer_bytes()) / (r.compute_us * 1e-6);
        reqs.push_back(r);
      }
      const double cap = sched::GbpsToBytesPerSec(wl.paper_cap_gbps) * ks;
      std::fprintf(stderr,
                   "sched workload %s: %zu requests, demand %.3f Gbps, cap %.3f Gbps "
                   "(ratio %.2f)\n",
                   wl.name, reqs.size(), sched::BytesPerSecToGbps(demand),
                   sched::BytesPerSecToGbps(cap), demand / cap);
      // Each request's median TTFT over the repetitions; every Measured of the median run.
      auto median_run = [&](storage::kv::KvEngine& engine) {
        std::vector<std::vector<Measured>> runs;
        for (int rep = 0; rep < size_.sched_reps; ++rep) {
          runs.push_back(w_.RunStore(engine, reqs, true, 0));
        }
        std::vector<Measured> med(reqs.size());
        for (size_t i = 0; i < reqs.size(); ++i) {
          std::vector<std::pair<double, size_t>> t;
          for (size_t k = 0; k < runs.size(); ++k) t.push_back({runs[k][i].ttft_ms, k});
          std::sort(t.begin(), t.end());
          med[i] = runs[t[t.size() / 2].second][i];
          for (const auto& run : runs) {
            if (!run[i].ok) {
              med[i].ok = false;
              med[i].error = run[i].error;
              ok_ = false;
            }
          }
        }
        return med;
      };
      const std::vector<Measured> before = median_run(w_.layerwise());
      struct PolicyRun {
        sched::Policy policy;
        bool wc;
        std::vector<Measured> res;
      };
      std::vector<PolicyRun> policy_runs;
      for (bool wc : {false, true}) {
        for (sched::Policy policy : sched::kAllPolicies) {
          auto so = std::make_shared<sched::SchedulerOptions>();
          so->cap_gbps = sched::BytesPerSecToGbps(cap);
          so->margin_gbps = 5 * ks;
          so->policy = policy;
          so->work_conserving = wc;
          so->epoch =
              std::chrono::microseconds(std::max<int64_t>(1000, std::llround(10'000 / (phi * ks))));
          so->drr_quantum_bytes = 256 << 10;
          OC_ASSIGN_OR_RETURN(auto engine, w_.MakeEngine(1, so));
          policy_runs.push_back({policy, wc, median_run(*engine)});
          std::fprintf(stderr, "  ran %s %s\n", std::string(sched::PolicyName(policy)).c_str(),
                       wc ? "work-conserving" : "epoch");
        }
      }
      const std::vector<Measured> after = median_run(w_.layerwise());
      std::vector<double> base(reqs.size());
      Json unthrottled = Json::array();
      for (size_t i = 0; i < reqs.size(); ++i) {
        base[i] = (before[i].ttft_ms + after[i].ttft_ms) / 2;
        unthrottled.push_back({{"profile", reqs[i].label},
                               {"before_ms", before[i].ttft_ms},
                               {"after_ms", after[i].ttft_ms},
                               {"ttft_ms", base[i]}});
      }
      Json runs = Json::array();
      for (const PolicyRun& pr : policy_runs) {
        Json rq = Json::array();
        double sum_added = 0, max_added = -1e300, sum_eq3_added = 0;
        int n_modelled = 0;
        for (size_t i = 0; i < reqs.size(); ++i) {
          const Request& r = reqs[i];
          const Measured& m = pr.res[i];
          const double c_ms = r.compute_us * 1e-3;
          // Equation 3 with layer l's transfer at the rate the scheduler gave the request when
          // layer l landed (the data plane's rate if that was more, or if none was known).
          std::vector<double> xs;
          double rate_sum = 0;
          for (double g : m.layer_rates_gbps) {
            const double bps = sched::GbpsToBytesPerSec(g);
            rate_sum += g;
            xs.push_back(static_cast<double>(r.layer_bytes()) /
                         (bps > 0 ? std::min(bps, rate_) : rate_) * 1e3);
          }
          const double mean_rate = xs.empty() ? 0 : rate_sum / static_cast<double>(xs.size());
          // The grant is gone once the last layer is written, so the last notifications may find
          // no rate: they keep the last one seen.
          const bool modelled = !xs.empty();
          while (modelled && static_cast<int>(xs.size()) < r.layers) xs.push_back(xs.back());
          double eq3 = 0;
          if (modelled) {
            eq3 = xs[0] + c_ms;
            for (int l = 0; l + 1 < r.layers; ++l)
              eq3 += std::max(xs[static_cast<size_t>(l) + 1], c_ms);
          }
          // The unthrottled model: every layer at the data plane's calibrated rate.
          const double eq3_base = PredictMs(Path::kS3AggLW, r, rate_);
          const double added = m.ttft_ms - base[i];
          sum_added += added;
          max_added = std::max(max_added, added);
          if (modelled) {
            sum_eq3_added += eq3 - eq3_base;
            ++n_modelled;
          }
          const double zero_stall = static_cast<double>(r.layer_bytes()) / (c_ms * 1e-3);
          rq.push_back({{"profile", r.label},
                        {"layer_bytes", r.layer_bytes()},
                        {"compute_us", r.compute_us},
                        {"zero_stall_gbps", sched::BytesPerSecToGbps(zero_stall)},
                        {"admitted_gbps", m.admitted_gbps},
                        {"rate_gbps", mean_rate},
                        {"layer_rates_gbps", m.layer_rates_gbps},
                        {"ttft_ms", m.ttft_ms},
                        {"added_ttft_ms", added},
                        {"eq3_ms", eq3},
                        {"eq3_added_ms", modelled ? Json(eq3 - eq3_base) : Json(nullptr)},
                        {"ok", m.ok}});
          if (modelled) {
            AddModelRow("sched",
                        std::string(wl.name) + " " + std::string(sched::PolicyName(pr.policy)) +
                            (pr.wc ? " wc " : " epoch ") + r.label,
                        m.ttft_ms, eq3);
          }
        }
        const double n = static_cast<double>(reqs.size());
        runs.push_back({{"policy", std::string(sched::PolicyName(pr.policy))},
                        {"variant", pr.wc ? "work-conserving" : "epoch"},
                        {"requests", rq},
                        {"mean_added_ttft_ms", sum_added / n},
                        {"max_added_ttft_ms", max_added},
                        {"mean_eq3_added_ms",
                         n_modelled > 0 ? Json(sum_eq3_added / n_modelled) : Json(nullptr)}});
        std::fprintf(stderr,
                     "  %-14s %-15s added TTFT mean %8.2f ms, max %8.2f ms; Eq. 3 "
                     "added mean %8.2f ms\n",
                     std::string(sched::PolicyName(pr.policy)).c_str(),
                     pr.wc ? "work-conserving" : "epoch", sum_added / n, max_added,
                     n_modelled > 0 ? sum_eq3_added / n_modelled : 0.0);
      }
      workloads.push_back({{"name", wl.name},
                           {"paper_cap_gbps", wl.paper_cap_gbps},
                           {"cap_gbps", sched::BytesPerSecToGbps(cap)},
                           {"demand_gbps", sched::BytesPerSecToGbps(demand)},
                           {"demand_over_cap", demand / cap},
                           {"epoch_us", std::max<int64_t>(1000, std::llround(10'000 / (phi * ks)))},
                           {"unthrottled", unthrottled},
                           {"runs", runs}});
    }
    (*out)["workloads"] = workloads;
    return Status::Ok();
  }

  Json ModelRows() const { return model_rows_; }

 private:
  World& w_;
  const Size size_;
  bool ok_ = true;
  double memcpy_ = 0;
  double rate_ = 0;  // S3Agg-LW bytes/s
  double k_ = 0;
  std::map<Path, double> path_rate_;
  std::map<std::pair<std::string, std::string>, double> e2e_;
  Json model_rows_ = Json::array();
};

int Usage() {
  std::fprintf(stderr,
               "usage: ttft_emulator [--smallest | --reduced | --full] [--experiments LIST] "
               "[--reps N] [--out FILE]\n  LIST: comma list of e2e, bandwidth, sched, model "
               "(default all)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Size size = ReducedSize();
  std::set<std::string> experiments = {"e2e", "bandwidth", "sched", "model"};
  std::string out_path;
  int reps = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--smallest") {
      size = SmallestSize();
    } else if (a == "--reduced") {
      size = ReducedSize();
    } else if (a == "--full") {
      size = FullSize();
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1 || reps > 100) return Usage();
    } else if (a == "--experiments" && i + 1 < argc) {
      experiments.clear();
      std::stringstream ss(argv[++i]);
      std::string e;
      while (std::getline(ss, e, ',')) {
        if (e != "e2e" && e != "bandwidth" && e != "sched" && e != "model") return Usage();
        experiments.insert(e);
      }
    } else {
      return Usage();
    }
  }
  if (reps > 0) {
    size.reps = reps;
    size.sched_reps = reps;
  }
  Json out;
  out["mode"] = size.name;
  out["experiments"] = Json::array();
  for (const char* e : {"e2e", "bandwidth", "sched", "model"}) {
    if (experiments.count(e)) out["experiments"].push_back(e);
  }
  Json machine;
  machine["load_average_start"] = LoadAverage();
  machine["cores"] = std::thread::hardware_concurrency();
  const Clock::time_point t0 = Clock::now();

  World world;
  bool ok = true;
  Status st = world.Open();
  Emulator emu(world, size);
  if (st.ok()) st = emu.Calibrate(&machine);
  if (st.ok()) out["scaling"] = emu.Scaling();
  if (st.ok() && experiments.count("e2e")) {
    Json e;
    st = emu.E2e(&e);
    out["e2e"] = e;
  }
  if (st.ok() && experiments.count("bandwidth")) {
    Json e;
    st = emu.Bandwidth(&e);
    out["bandwidth"] = e;
  }
  if (st.ok() && experiments.count("sched")) {
    Json e;
    st = emu.Sched(&e);
    out["sched"] = e;
  }
  if (st.ok() && experiments.count("model")) {
    out["model"] = {{"rows", emu.ModelRows()}};
  }
  world.Close();
  if (!st.ok()) {
    std::fprintf(stderr, "ttft_emulator: %s\n", st.ToString().c_str());
    out["error"] = st.ToString();
    ok = false;
  }
  ok = ok && emu.ok();
  machine["load_average_end"] = LoadAverage();
  machine["wall_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  out["machine"] = machine;
  out["ok"] = ok;
  const std::string text = out.dump(1) + "\n";
  if (out_path.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream(out_path) << text;
  }
  return ok ? 0 : 1;
}
