// storage_bench: what one layer read of a KV-cache prefix costs the object store.
//
// A layer read (docs/design.md, delivery) copies slice l (offset l*S, S bytes) of each of N chunk
// objects into a caller buffer, one call of ReadSlices (the local store as the KV engine's
// kv::SliceSource, storage-server/src/kv/slice_source.h) per batch of slices. Every
// iteration reads one layer of all N objects, cycling l over the L = 32 layers, from a warm
// store (every extent in RocksDB's block or blob cache, or for data files in the page cache).
// Benchmarks, for N in {16, 224, 3584} and S in {64 KiB, 256 KiB, 1 MiB}:
//   BM_Memcpy/N/S/T             the ceiling: memcpy of the same slices from one buffer
//                               holding the same bytes, on T = 1 and 2 threads
//   BM_ReadSlices/N/S/layout/mode
//                               layout 0 = SST blocks + block cache, 1 = blob files +
//                               blob cache + XXH3 per extent, 2 = data files (page cache,
//                               copied from the file's mapping, XXH3 per extent); mode 1 =
//                               one Get per extent, 2 = MultiGet, 3 = Get on a pool (the
//                               caller + 1 thread)
// Counters: bytes_per_second (Google Benchmark), GBps (the same, 10^9 bytes/s, from this
// run's wall time) and ratio_to_memcpy (GBps over the matching memcpy's: 1 thread for modes
// 1 and 2, 2 threads for mode 3). Run with --benchmark_format=json.
//
// Sizing: N*L*S reaches 112 GiB, so the store holds fewer distinct objects per S (at most
// kDistinctBytes of them: 64 objects at 64 KiB, 16 at 256 KiB, 4 at 1 MiB) and chunk j of
// a read is object j mod D; the destination is at most kDestBytes, reused batch after
// batch (ReadSlices calls of kDestBytes / S slices). The memcpy ceiling reads the same
// D objects' bytes into the same destination, so both touch the same memory footprint.
//
// Raw object reads (issue 7, experiment 1), a separate store, in storage_bench_block_reads.cc
// (which lists their counters and the --block_* flags):
//   BM_BlockRead/B/T/cold       whole-object reads of objects of B bytes by T threads, after
//                               dropping the caches (cold = 1) or from the block cache (0)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "composed_store.h"
#include "kv/slice_source.h"
#include "oc/common/units.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"
#include "storage_bench_block_reads.h"

namespace {

using oc::bench::RegisterBlockReads;
using oc::storage::ExtentLayout;
using oc::storage::SliceReadMode;
using oc::storage::kv::SliceRead;
using oc::storage::kv::SliceStatus;

constexpr uint32_t kLayers = 32;
constexpr uint64_t kDistinctBytes = 128ull << 20;
constexpr uint64_t kDestBytes = 64ull << 20;
constexpr uint64_t kSizes[] = {64 << 10, 256 << 10, 1 << 20};
constexpr uint64_t kCounts[] = {16, 224, 3584};

uint64_t Distinct(uint64_t n, uint64_t s) {
  return std::max<uint64_t>(1, std::min<uint64_t>(n, kDistinctBytes / (kLayers * s)));
}

std::string ObjectName(uint64_t s, uint64_t d) {
  return "s" + std::to_string(s) + "/c" + std::to_string(d);
}

// The bytes of every object of size class S, back to back: object d's layer l at
// (d*L + l)*S. Shared by the memcpy ceiling and the store's setup.
struct Corpus {
  uint64_t s = 0;
  uint64_t objects = 0;
  std::vector<std::byte> bytes;
};

const Corpus& CorpusFor(uint64_t s) {
  static std::map<uint64_t, Corpus> corpora;
  Corpus& c = corpora[s];
  if (c.s == 0) {
    c.s = s;
    c.objects = Distinct(kCounts[2], s);
    c.bytes.resize(c.objects * kLayers * s);
    for (uint64_t d = 0; d < c.objects; ++d) {
      std::vector<std::byte> obj = oc::testutil::PatternBytes(s * 1000 + d, kLayers * s);
      std::memcpy(c.bytes.data() + d * kLayers * s, obj.data(), obj.size());
    }
  }
  return c;
}

// The one open store; reopened when a benchmark asks for another layout or mode.
struct Bench {
  std::unique_ptr<oc::testutil::TempDir> dirs[3];
  std::unique_ptr<oc::storage::Store> store;
  int layout = -1;
  int mode = -1;
  std::map<std::pair<uint64_t, uint64_t>, double> memcpy_gbps;  // (N*S key, threads)
};
Bench& State() {
  static Bench b;
  return b;
}

oc::storage::StoreOptions Options(int layout, int mode) {
  oc::storage::StoreOptions o;
  o.data_dir = State().dirs[layout]->path().string();
  o.block_cache_bytes = 1ull << 30;  // holds all 384 MiB of extents
  o.sync_writes = false;             // setup only; reads are what is measured
  o.read_threads = 1;                // with the caller: 2 threads on this 2-core machine
  o.extent_layout = layout == 0   ? ExtentLayout::kSstBlocks
                    : layout == 1 ? ExtentLayout::kBlobFiles
                                  : ExtentLayout::kDataFiles;
  o.slice_read_mode = static_cast<SliceReadMode>(mode);
  return o;
}

bool UseStore(benchmark::State& state, int layout, int mode) {
  Bench& b = State();
  if (b.layout == layout && b.mode == mode) {
    return true;
  }
  b.store.reset();
  const bool fresh = b.dirs[layout] == nullptr;
  if (fresh) {
    b.dirs[layout] = std::make_unique<oc::testutil::TempDir>();
  }
  auto opened = oc::storage::OpenStore(Options(layout, mode));
  if (!opened.has_value()) {
    state.SkipWithError(opened.error().ToString().c_str());
    return false;
  }
  b.store = std::move(*opened);
  b.layout = layout;
  b.mode = mode;
  if (fresh) {
    if (!b.store->CreateBucket("kvc", "bench").ok()) {
      state.SkipWithError("CreateBucket failed");
      return false;
    }
    for (uint64_t s : kSizes) {
      const Corpus& c = CorpusFor(s);
      for (uint64_t d = 0; d < c.objects; ++d) {
        oc::storage::PutOptions po;
        po.chunk = oc::storage::ChunkShape{oc::descriptor::StoredLayout::kL2TD, kLayers, s};
        auto w = b.store->Put({"kvc", ObjectName(s, d)}, po);
        if (!w.has_value() ||
            !(*w)->Append(oc::ByteSpan(c.bytes.data() + d * kLayers * s, kLayers * s)).ok() ||
            !(*w)->Commit().has_value()) {
          state.SkipWithError("setup write failed");
          return false;
        }
      }
    }
  }
  // Warm: read every extent once, so the measured reads hit the cache.
  for (uint64_t s : kSizes) {
    const Corpus& c = CorpusFor(s);
    std::vector<std::byte> buf(s);
    for (uint64_t d = 0; d < c.objects; ++d) {
      for (uint32_t l = 0; l < kLayers; ++l) {
        const SliceRead one{ObjectName(s, d), l * s, oc::MutableByteSpan(buf)};
        auto r = dynamic_cast<oc::storage::kv::SliceSource&>(*BackendOf(*b.store))
                     .ReadSlices("kvc", std::span<const SliceRead>(&one, 1));
        if (!r.has_value() || (*r)[0] != SliceStatus::kOk ||
            std::memcmp(buf.data(), c.bytes.data() + (d * kLayers + l) * s, s) != 0) {
          state.SkipWithError("warm-up read failed or returned wrong bytes");
          return false;
        }
      }
    }
  }
  return true;
}

void Report(benchmark::State& state, uint64_t bytes_per_iteration, double seconds,
            double ceiling_gbps) {
  const double bytes = static_cast<double>(bytes_per_iteration) * state.iterations();
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  const double gbps = seconds > 0 ? bytes / seconds / 1e9 : 0;
  state.counters["GBps"] = gbps;
  if (ceiling_gbps > 0) {
    state.counters["ratio_to_memcpy"] = gbps / ceiling_gbps;
  }
}

void BM_Memcpy(benchmark::State& state) {
  const uint64_t n = state.range(0);
  const uint64_t s = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const Corpus& c = CorpusFor(s);
  const uint64_t per_batch = std::min<uint64_t>(n, kDestBytes / s);
  std::vector<std::byte> dest(per_batch * s);
  uint32_t layer = 0;
  auto copy = [&](uint64_t first, uint64_t count, uint32_t l) {
    for (uint64_t j = first; j < first + count; ++j) {
      const uint64_t d = j % c.objects;
      std::memcpy(dest.data() + (j % per_batch) * s, c.bytes.data() + (d * kLayers + l) * s, s);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (uint64_t first = 0; first < n; first += per_batch) {
      const uint64_t count = std::min(per_batch, n - first);
      if (threads == 1) {
        copy(first, count, layer);
      } else {
        const uint64_t half = count / 2;
        std::thread helper([&] { copy(first + half, count - half, layer); });
        copy(first, half, layer);
        helper.join();
      }
    }
    benchmark::DoNotOptimize(dest.data());
    benchmark::ClobberMemory();
    layer = (layer + 1) % kLayers;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Report(state, n * s, seconds, 0);
  State().memcpy_gbps[{n * 100000000ull + s, threads}] = state.counters["GBps"];
}

void BM_ReadSlices(benchmark::State& state) {
  const uint64_t n = state.range(0);
  const uint64_t s = state.range(1);
  const int layout = static_cast<int>(state.range(2));
  const int mode = static_cast<int>(state.range(3));
  if (!UseStore(state, layout, mode)) {
    return;
  }
  const Corpus& c = CorpusFor(s);
  const uint64_t per_batch = std::min<uint64_t>(n, kDestBytes / s);
  std::vector<std::byte> dest(per_batch * s);
  // Every call's slices, prepared outside the timed loop: [layer][batch].
  std::vector<std::vector<std::vector<SliceRead>>> calls(kLayers);
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (uint64_t first = 0; first < n; first += per_batch) {
      std::vector<SliceRead>& batch = calls[l].emplace_back();
      for (uint64_t j = first; j < std::min(n, first + per_batch); ++j) {
        batch.push_back(SliceRead{ObjectName(s, j % c.objects), l * s,
                                  oc::MutableByteSpan(dest.data() + (j - first) * s, s)});
      }
    }
  }
  oc::storage::kv::SliceSource& store =
      dynamic_cast<oc::storage::kv::SliceSource&>(*BackendOf(*State().store));
  uint32_t layer = 0;
  bool ok = true;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (const std::vector<SliceRead>& batch : calls[layer]) {
      auto r = store.ReadSlices("kvc", batch);
      ok = ok && r.has_value() && r->size() == batch.size() && (*r)[0] == SliceStatus::kOk;
    }
    layer = (layer + 1) % kLayers;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    state.SkipWithError("ReadSlices failed");
    return;
  }
  // The last batch read must hold the right bytes (a cheap check that nothing is skipped).
  const uint32_t last_layer = (layer + kLayers - 1) % kLayers;
  const std::vector<SliceRead>& last = calls[last_layer].back();
  const uint64_t first = (calls[last_layer].size() - 1) * per_batch;
  for (uint64_t k = 0; k < last.size(); ++k) {
    const uint64_t d = (first + k) % c.objects;
    if (std::memcmp(last[k].dest.data(), c.bytes.data() + (d * kLayers + last_layer) * s, s) != 0) {
      state.SkipWithError("ReadSlices returned wrong bytes");
      return;
    }
  }
  const int threads = mode == static_cast<int>(SliceReadMode::kParallelGet) ? 2 : 1;
  auto it = State().memcpy_gbps.find({n * 100000000ull + s, threads});
  Report(state, n * s, seconds, it == State().memcpy_gbps.end() ? 0 : it->second);
}

void Register() {
  for (uint64_t n : kCounts) {
    for (uint64_t s : kSizes) {
      for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy)
            ->Args({static_cast<int64_t>(n), static_cast<int64_t>(s), threads})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (int layout : {0, 1, 2}) {
    for (SliceReadMode mode :
         {SliceReadMode::kSerialGet, SliceReadMode::kMultiGet, SliceReadMode::kParallelGet}) {
      for (uint64_t n : kCounts) {
        for (uint64_t s : kSizes) {
          benchmark::RegisterBenchmark("BM_ReadSlices", BM_ReadSlices)
              ->Args({static_cast<int64_t>(n), static_cast<int64_t>(s), layout,
                      static_cast<int>(mode)})
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  RegisterBlockReads();
}

}  // namespace

int main(int argc, char** argv) {
  if (!oc::bench::ParseBlockFlags(&argc, argv)) {
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  State().store.reset();  // before the temp dirs go
  for (auto& dir : State().dirs) {
    dir.reset();
  }
  oc::bench::CloseBlockStore();
  return 0;
}
