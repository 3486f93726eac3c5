// data_plane_bench: how fast the UCX data plane writes layers into a client's registered
// buffer, against memcpy of the same bytes on this machine, in one run.
//
//   BM_Memcpy/<bytes>            memcpy of a request's layers (kLayers x bytes) from a staging
//                                buffer into a target buffer: the one-copy ceiling.
//   BM_Put/<tls>/<mode>/<bytes>  one request per iteration through the real path: OpenSink
//                                (cached endpoint, rkey unpack), kLayers x (AcquireBuffer,
//                                Write, LayerReady), Finish, and the client's Wait() for
//                                "done". tls: 0 = shm (posix/sysv + CMA), 1 = tcp; mode:
//                                0 = put + flush per layer, 1 = put + fence per layer,
//                                2 = rendezvous active messages (WriteMode::kRendezvous),
//                                3 = in place (shm only: the client's UCX-allocated System V
//                                target attached in the server, DataPlaneOptions::direct_writes;
//                                modes 0-2 run with it off). Counters:
//                                bytes_per_second, and vs_memcpy = put rate / memcpy rate of
//                                the same size measured in this run.
// Server and client are two ucp contexts in this process (as in client_test); staging holds
// four buffers of the largest layer. Run with --benchmark_format=json.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data_plane/ucx_data_plane.h"
#include "oc/client/target_buffer.h"
#include "oc/storage/layer_sink.h"

namespace {

constexpr uint32_t kLayers = 16;
constexpr uint64_t kMaxLayerBytes = 4 << 20;
constexpr std::chrono::milliseconds kWait{30'000};
constexpr const char* kTls[] = {"shm", "tcp"};

// memcpy rate per layer size, filled by BM_Memcpy (registered first, so it runs first).
std::map<uint64_t, double>& MemcpyRate() {
  static std::map<uint64_t, double> rates;
  return rates;
}

void BM_Memcpy(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  std::vector<std::byte> src(bytes, std::byte{0x5a});
  std::vector<std::byte> dst(kLayers * bytes);
  for (auto _ : state) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      std::memcpy(dst.data() + l * bytes, src.data(), bytes);
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double total = static_cast<double>(state.iterations()) * kLayers * bytes;
  state.SetBytesProcessed(static_cast<int64_t>(total));
  state.counters["rate"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
}

void BM_Put(benchmark::State& state) {
  const char* tls = kTls[state.range(0)];
  const auto ordering =
      state.range(1) == 1 ? oc::storage::LayerOrdering::kFence : oc::storage::LayerOrdering::kFlush;
  const auto write_mode =
      state.range(1) >= 2 ? oc::storage::WriteMode::kRendezvous : oc::storage::WriteMode::kPut;
  const uint64_t bytes = static_cast<uint64_t>(state.range(2));

  oc::storage::DataPlaneOptions options;
  options.transports = tls;
  options.ordering = ordering;
  options.write_mode = write_mode;
  options.direct_writes = state.range(1) == 3;
  options.staging_buffers = 4;
  options.staging_buffer_bytes = kMaxLayerBytes;
  options.op_timeout = kWait;
  auto server = oc::storage::UcxDataPlane::Create(options);
  oc::client::DataPlaneOptions copts;
  copts.transports = tls;
  auto client = oc::client::DataPlane::Open(copts);
  if (!server.has_value() || !client.has_value()) {
    state.SkipWithError("cannot open the data plane");
    return;
  }
  auto connection = (*client)->Connect((*server)->listen_address(), (*server)->shared_memory());
  if (!connection.has_value()) {
    state.SkipWithError("cannot connect to the data plane");
    return;
  }
  auto target = (*client)->Allocate(kLayers * bytes);
  if (!target.has_value()) {
    state.SkipWithError("cannot allocate the target");
    return;
  }
  for (auto _ : state) {
    auto delivery = (*client)->Expect((*target)->address(), kLayers);
    auto sink = (*server)->OpenSink((*target)->Target(*connection));
    if (!delivery.has_value() || !sink.has_value()) {
      state.SkipWithError("cannot open the request");
      return;
    }
    for (uint32_t l = 0; l < kLayers; ++l) {
      auto buffer = (*sink)->AcquireBuffer();
      if (!buffer.has_value() || !(*sink)->Write(l * bytes, std::move(*buffer), bytes).ok() ||
          !(*sink)->LayerReady(l).ok()) {
        state.SkipWithError("write failed");
        return;
      }
    }
    if (!(*sink)->Finish(oc::Status::Ok()).ok() || !(*delivery)->Wait(kWait).ok()) {
      state.SkipWithError("request did not complete");
      return;
    }
  }
  const double total = static_cast<double>(state.iterations()) * kLayers * bytes;
  state.SetBytesProcessed(static_cast<int64_t>(total));
  state.counters["rate"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  // Filled in after the run: benchmark reports rates only once timing is known, so the ratio
  // is computed by a custom reporter below.
}

// Adds vs_memcpy (put rate / memcpy rate at the same size) to every BM_Put row.
class RatioReporter : public benchmark::JSONReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> out = runs;
    for (Run& run : out) {
      const double rate =
          run.counters.count("rate") ? static_cast<double>(run.counters["rate"]) : 0.0;
      const std::string& args = run.run_name.args;  // "<bytes>" or "<tls>/<order>/<bytes>"
      const uint64_t bytes = std::strtoull(args.c_str() + args.rfind('/') + 1, nullptr, 10);
      if (run.run_name.function_name == "BM_Memcpy") {
        MemcpyRate()[bytes] = rate;  // counters arrive finalised: bytes per second
      } else if (MemcpyRate().count(bytes) && MemcpyRate()[bytes] > 0) {
        run.counters["vs_memcpy"] = rate / MemcpyRate()[bytes];
      }
    }
    benchmark::JSONReporter::ReportRuns(out);
  }
};

const std::vector<int64_t> kSizes = {64 << 10, 256 << 10, 1 << 20, 4 << 20};

void Register() {
  for (int64_t size : kSizes) {
    benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy)->Arg(size)->UseRealTime();
  }
  for (int64_t tls : {0, 1}) {
    for (int64_t order : {0, 1, 2, 3}) {
      if (order == 3 && tls != 0) {
        continue;  // in place needs shared memory
      }
      for (int64_t size : kSizes) {
        benchmark::RegisterBenchmark("BM_Put", BM_Put)
            ->Args({tls, order, size})
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Register();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
