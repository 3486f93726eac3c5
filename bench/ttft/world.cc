#include "world.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>

#include "composed_store.h"
#include "kv/pacing.h"
#include "kv/slice_source.h"
#include "node.h"
#include "oc/sched/grant.h"

namespace oc::bench::ttft {
namespace {

constexpr char kBucket[] = "ttft";

}  // namespace

Status World::Open() {
  dir_ = std::make_unique<testutil::TempDir>();
  storage::StoreOptions o;
  o.data_dir = dir_->path().string();
  o.sync_writes = false;
  o.block_cache_bytes = 4ull << 30;  // everything stays cached: a warm store
  o.read_threads = 2;
  OC_ASSIGN_OR_RETURN(store_, storage::OpenStore(o));
  OC_RETURN_IF_ERROR(store_->CreateBucket(kBucket, "bench"));
  OC_ASSIGN_OR_RETURN(layerwise_, MakeEngine(1, nullptr));
  OC_ASSIGN_OR_RETURN(chunkwise_, MakeEngine(~uint64_t{0}, nullptr));
  return Status::Ok();
}

void World::Close() {
  targets_.clear();
  clients_.clear();
  layerwise_.reset();
  chunkwise_.reset();
  store_.reset();
  dir_.reset();
}

Result<std::unique_ptr<storage::kv::KvEngine>> World::MakeEngine(
    uint64_t threshold, std::shared_ptr<const sched::SchedulerOptions> scheduler) {
  storage::KvOptions kv;
  kv.layerwise_threshold_bytes = threshold;
  kv.data_plane_transports = "shm";
  kv.scheduler = std::move(scheduler);
  OC_RETURN_IF_ERROR(kv.Validate());
  auto engine = std::make_unique<storage::kv::KvEngine>(
      dynamic_cast<storage::kv::SliceSource&>(*BackendOf(*store_)), kv);
  if (kv.scheduler != nullptr && engine->pacing() == nullptr) {
    return Status::InvalidArgument("scheduler", "the engine rejected the scheduler options");
  }
  return engine;
}

std::string World::ChunkName(uint64_t g, int layers, uint64_t j) {
  return "g" + std::to_string(g) + "-l" + std::to_string(layers) + "/" + std::to_string(j);
}

descriptor::Descriptor World::MakeDescriptor(const Request& r) {
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

Status World::Fill(uint64_t g, int layers, uint64_t chunks) {
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

Result<client::TargetBuffer*> World::Target(size_t i, uint64_t bytes) {
  while (targets_.size() <= i) targets_.emplace_back();
  if (targets_[i] == nullptr || targets_[i]->length() < bytes) {
    targets_[i].reset();
    OC_ASSIGN_OR_RETURN(client::DataPlane * c, Client(i));
    OC_ASSIGN_OR_RETURN(targets_[i], c->Allocate(bytes));
    std::memset(targets_[i]->bytes().data(), 0x5a, targets_[i]->length());  // fault pages in now
  }
  return targets_[i].get();
}

Result<client::DataPlane*> World::Client(size_t i) {
  while (clients_.size() <= i) {
    client::DataPlaneOptions co;
    co.transports = "shm";
    OC_ASSIGN_OR_RETURN(auto c, client::DataPlane::Open(co));
    clients_.push_back(std::move(c));
  }
  return clients_[i].get();
}

std::vector<Measured> World::RunStore(storage::kv::KvEngine& engine,
                                      const std::vector<Request>& reqs, bool layerwise,
                                      double link_cap) {
  const size_t n = reqs.size();
  std::vector<Measured> out(n);
  std::vector<descriptor::Descriptor> ds(n);
  std::vector<std::unique_ptr<client::Delivery>> deliveries(n);
  // When each layer-ready notification reached the client's progress thread (ns since the clock's
  // epoch; 0 until then): the time the layer landed.
  std::vector<std::unique_ptr<std::atomic<int64_t>[]>> landed(n);
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
    Result<client::TargetBuffer*> target = Target(i, reqs[i].payload());
    if (!target.has_value()) return fail_all(target.error());
    ds[i] = MakeDescriptor(reqs[i]);
    Result<storage::DataPlaneInfo> where = engine.DataPlaneInfo();
    if (!where.has_value()) return fail_all(where.error());
    Result<descriptor::ConnectionId> connection =
        (*c)->Connect(where->address, where->shared_memory);
    if (!connection.has_value()) return fail_all(connection.error());
    Result<descriptor::DataPlaneTarget> where_to =
        (*target)->Target(*connection, 0, reqs[i].payload());
    if (!where_to.has_value()) return fail_all(where_to.error());
    ds[i].target = *where_to;
    landed[i] = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(reqs[i].layers));
    std::atomic<int64_t>* at = landed[i].get();
    auto d = (*c)->Expect(
        ds[i].target->address, static_cast<uint32_t>(reqs[i].layers), [at](uint32_t l) {
          at[l].store(Clock::now().time_since_epoch().count(), std::memory_order_release);
        });
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
      auto wait = [&](int l) -> std::optional<Clock::time_point> {
        while (true) {
          Status s =
              deliveries[i]->WaitLayer(static_cast<uint32_t>(l), std::chrono::milliseconds(200));
          if (s.ok()) break;
          if (s.code() != Code::kUnavailable || server_failed[i] ||
              Clock::now() - start > kLayerTimeout) {
            if (out[i].error.empty()) out[i].error = s.ToString();
            return std::nullopt;
          }
        }
        // The progress thread marks the layer ready, then runs the callback: it may trail by a
        // moment.
        int64_t ns = 0;
        while ((ns = landed[i][static_cast<size_t>(l)].load(std::memory_order_acquire)) == 0) {
          std::this_thread::yield();
        }
        return Clock::time_point(Clock::duration(ns));
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

}  // namespace oc::bench::ttft
