#pragma once
// The product side of the TTFT emulator: a warm RocksDB store (temp dir) whose descriptor GETs run
// through kv::KvEngine::GetLayers, the engine OpenStore composes over the backend, over the
// engine's own UCX data plane (UCX_TLS=shm) into each serving node's registered buffer
// (client::DataPlane / TargetBuffer, one client per node, layer-ready through
// Delivery::WaitLayer). One engine per configuration of KvOptions: Θ = 1 (layerwise), Θ = ∞
// (chunkwise), and one per scheduler configuration (KvOptions::scheduler: the real admission,
// policy, epochs or work-conserving reallocation, DWRR pacer and dispatcher thread). Every
// engine reads the same warm store, so its block cache stays hot across configurations.
// Not thread-safe: one thread drives a World.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_engine.h"
#include "oc/client/target_buffer.h"
#include "oc/sched/options.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"
#include "request.h"

namespace oc::bench::ttft {

class World {
 public:
  Status Open();

  // Teardown in the order kv_bench uses: clients, engines (their data planes), the store.
  void Close();

  Result<std::unique_ptr<storage::kv::KvEngine>> MakeEngine(
      uint64_t threshold, std::shared_ptr<const sched::SchedulerOptions> scheduler);

  // Stores chunks 0..chunks-1 of the (g, layers) set (idempotent), then reads them once.
  Status Fill(uint64_t g, int layers, uint64_t chunks);

  storage::kv::KvEngine& layerwise() { return *layerwise_; }
  storage::kv::KvEngine& chunkwise() { return *chunkwise_; }

  // Requests of `reqs` start together, node i on client i, through `engine`.
  std::vector<Measured> RunStore(storage::kv::KvEngine& engine, const std::vector<Request>& reqs,
                                 bool layerwise, double link_cap);

 private:
  static std::string ChunkName(uint64_t g, int layers, uint64_t j);
  static descriptor::Descriptor MakeDescriptor(const Request& r);
  Result<client::DataPlane*> Client(size_t i);
  // Node i's target buffer, at least `bytes` long. Each node keeps one across runs, as a serving
  // node keeps its registered KV memory, so the store attaches it once per engine (a fresh
  // buffer per run made every request pay the attach, 1-70 ms on this machine:
  // docs/decisions/ttft-one-target-buffer.md).
  Result<client::TargetBuffer*> Target(size_t i, uint64_t bytes);

  std::unique_ptr<testutil::TempDir> dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<storage::kv::KvEngine> layerwise_;
  std::unique_ptr<storage::kv::KvEngine> chunkwise_;
  std::vector<std::unique_ptr<client::DataPlane>> clients_;
  std::vector<std::unique_ptr<client::TargetBuffer>> targets_;  // one per client, same index
  std::map<std::pair<uint64_t, int>, uint64_t> filled_;
};

}  // namespace oc::bench::ttft
