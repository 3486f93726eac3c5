// storage_bench: what one layer read of a KV-cache prefix costs the object store.
//
// A layer read (docs/design.md, delivery) copies slice l (offset l*S, S bytes) of each of N chunk
// objects into a caller buffer, one call of ReadSlices (the local store as the KV engine's
// kv::SliceSource, storage-server/src/kv/slice_source.h) per batch of slices. Every
// iteration reads one layer of all N objects, cycling l over the L = 32 layers, from a warm
// store (every extent in RocksDB's block or blob cache). Benchmarks, for N in {16, 224,
// 3584} and S in {64 KiB, 256 KiB, 1 MiB}:
//   BM_Memcpy/N/S/T             the ceiling: memcpy of the same slices from one buffer
//                               holding the same bytes, on T = 1 and 2 threads
//   BM_ReadSlices/N/S/layout/mode
//                               layout 0 = SST blocks + block cache, 1 = blob files +
//                               blob cache + XXH3 per extent; mode 1 = one Get per extent,
//                               2 = MultiGet, 3 = Get on a pool (the caller + 1 thread)
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
// Raw object reads (issue 7, experiment 1), a separate store:
//   BM_BlockRead/B/T/cold       whole-object reads (Store::Get + ObjectReader::Read) of objects
//                               of B bytes (default extents, 1 MiB) by T threads; each timed
//                               pass reads every object of the data set once (object i by
//                               thread i mod T). cold = 1: before each pass the store is closed,
//                               dirty pages synced, the page cache dropped (writing 3 to
//                               /proc/sys/vm/drop_caches; needs root) and the store reopened
//                               with an empty block cache. cold = 0: one untimed pass first, then
//                               every pass hits the block cache (sized to hold the data set).
// Counters: GBps, ops_per_s, p50_us and p99_us (per read), objects, cache_dropped (1 when
// every cold pass dropped the page cache; 0 means the reads may have hit the page cache).
// Flags (before the benchmark's own): --block_sizes=64KiB,256KiB,1MiB,4MiB
// --block_threads=8,32 --block_data_bytes=256MiB (data set per block size) --block_passes=3
// --block_drop_caches=true|false (default false: cold passes only reopen the store, leaving
// the page cache warm; bench/run-all turns it on outside --smallest) --block_dir=PATH (where
// the store lives; default a temp dir, which must be on a disk for cold reads to mean anything).

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kv/slice_source.h"
#include "oc/common/units.h"
#include "oc/storage/local_store.h"
#include "oc/testutil/testutil.h"

namespace {

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
  std::unique_ptr<oc::testutil::TempDir> dirs[2];
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
  o.extent_layout = layout == 0 ? ExtentLayout::kSstBlocks : ExtentLayout::kBlobFiles;
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
  auto opened = oc::storage::OpenLocalStore(Options(layout, mode));
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
        auto r = dynamic_cast<oc::storage::kv::SliceSource&>(*b.store).ReadSlices(
            "kvc", std::span<const SliceRead>(&one, 1));
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
  oc::storage::kv::SliceSource& store = dynamic_cast<oc::storage::kv::SliceSource&>(*State().store);
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

// --- Raw object reads (BM_BlockRead) ---

struct BlockFlags {
  std::vector<uint64_t> sizes = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
  std::vector<uint64_t> threads = {8, 32};
  uint64_t data_bytes = 256ull << 20;
  uint64_t passes = 3;
  bool drop_caches = false;  // dropping slows every process on the machine: opt in
  std::string dir;
};
BlockFlags& Flags() {
  static BlockFlags f;
  return f;
}

// The store of BM_BlockRead: one per process, holding every block size's objects.
struct BlockStore {
  std::unique_ptr<oc::testutil::TempDir> temp;
  std::string dir;
  std::unique_ptr<oc::storage::Store> store;
  std::map<uint64_t, uint64_t> objects;  // block size -> object count
};
BlockStore& Blocks() {
  static BlockStore b;
  return b;
}

uint64_t BlockObjects(uint64_t b, uint64_t threads) {
  return std::max<uint64_t>(Flags().data_bytes / b, threads);
}

std::string BlockName(uint64_t b, uint64_t i) {
  return "b" + std::to_string(b) + "/o" + std::to_string(i);
}

oc::Status OpenBlockStore() {
  BlockStore& bs = Blocks();
  bs.store.reset();
  oc::storage::StoreOptions o;
  o.data_dir = bs.dir;
  // Holds the largest data set read by one benchmark, so warm passes hit the cache.
  o.block_cache_bytes = std::max<uint64_t>(Flags().data_bytes * 5 / 4, 64ull << 20);
  o.sync_writes = false;
  OC_ASSIGN_OR_RETURN(bs.store, oc::storage::OpenLocalStore(o));
  return oc::Status::Ok();
}

// Writes the objects of block size b (at least `threads` of them) if they are not there yet,
// then closes and reopens the store so that they are read from SST files.
oc::Status EnsureBlockObjects(uint64_t b, uint64_t threads) {
  BlockStore& bs = Blocks();
  if (bs.store == nullptr) {
    if (Flags().dir.empty()) {
      bs.temp = std::make_unique<oc::testutil::TempDir>();
      bs.dir = bs.temp->path().string();
    } else {
      bs.dir = Flags().dir;
    }
    OC_RETURN_IF_ERROR(OpenBlockStore());
    OC_RETURN_IF_ERROR(bs.store->CreateBucket("blk", "bench"));
  }
  const uint64_t want = BlockObjects(b, threads);
  uint64_t& have = bs.objects[b];
  if (have >= want) {
    return oc::Status::Ok();
  }
  for (uint64_t i = have; i < want; ++i) {
    const std::vector<std::byte> data = oc::testutil::PatternBytes(b * 7 + i, b);
    OC_ASSIGN_OR_RETURN(std::unique_ptr<oc::storage::ObjectWriter> w,
                        bs.store->Put({"blk", BlockName(b, i)}, oc::storage::PutOptions{}));
    OC_RETURN_IF_ERROR(w->Append(oc::ByteSpan(data)));
    OC_RETURN_IF_ERROR(w->Commit().status());
  }
  have = want;
  return OpenBlockStore();  // recovery flushes the memtables into SST files
}

// Closes the store, syncs and drops the page cache, reopens: true if the drop succeeded.
oc::Result<bool> ColdRestart() {
  Blocks().store.reset();
  ::sync();
  bool dropped = false;
  if (Flags().drop_caches) {
    std::ofstream drop("/proc/sys/vm/drop_caches");
    if (drop) {
      drop << "3\n";
      drop.flush();
      dropped = static_cast<bool>(drop);
    }
  }
  OC_RETURN_IF_ERROR(OpenBlockStore());
  return dropped;
}

// One pass: T threads read every object of block size b once. Per-read latencies (µs) are
// appended to *latencies; false if a read failed or returned the wrong size.
bool BlockPass(uint64_t b, uint64_t threads, uint64_t objects, std::vector<double>* latencies) {
  oc::storage::Store& store = *Blocks().store;
  std::vector<std::vector<double>> lat(threads);
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (uint64_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<std::byte> buf(b);
      for (uint64_t i = t; i < objects; i += threads) {
        const auto start = std::chrono::steady_clock::now();
        auto reader = store.Get({"blk", BlockName(b, i)}, oc::storage::ByteRange::All());
        if (!reader.has_value()) {
          ok = false;
          return;
        }
        uint64_t got = 0;
        while (got < b) {
          auto n = (*reader)->Read(oc::MutableByteSpan(buf.data() + got, b - got));
          if (!n.has_value() || *n == 0) {
            break;
          }
          got += *n;
        }
        if (got != b) {
          ok = false;
          return;
        }
        lat[t].push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count());
      }
    });
  }
  for (std::thread& th : pool) {
    th.join();
  }
  for (const std::vector<double>& l : lat) {
    latencies->insert(latencies->end(), l.begin(), l.end());
  }
  return ok;
}

double Percentile(std::vector<double>* v, double q) {
  if (v->empty()) {
    return 0;
  }
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(q * static_cast<double>(v->size())));
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(k), v->end());
  return (*v)[k];
}

void BM_BlockRead(benchmark::State& state) {
  const uint64_t b = state.range(0);
  const uint64_t threads = state.range(1);
  const bool cold = state.range(2) != 0;
  if (oc::Status s = EnsureBlockObjects(b, threads); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  const uint64_t objects = BlockObjects(b, threads);
  std::vector<double> latencies;
  bool dropped_every_time = true;
  if (!cold) {  // the untimed pass that fills the block cache
    if (!BlockPass(b, threads, objects, &latencies)) {
      state.SkipWithError("warm-up read failed");
      return;
    }
    latencies.clear();
  }
  double seconds = 0;
  for (auto _ : state) {
    if (cold) {
      oc::Result<bool> dropped = ColdRestart();
      if (!dropped.has_value()) {
        state.SkipWithError(dropped.error().ToString().c_str());
        return;
      }
      dropped_every_time = dropped_every_time && *dropped;
    }
    const auto start = std::chrono::steady_clock::now();
    const bool ok = BlockPass(b, threads, objects, &latencies);
    const double pass =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!ok) {
      state.SkipWithError("read failed or short");
      return;
    }
    state.SetIterationTime(pass);
    seconds += pass;
  }
  const double bytes = static_cast<double>(b * objects) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GBps"] = seconds > 0 ? bytes / seconds / 1e9 : 0;
  state.counters["ops_per_s"] = seconds > 0 ? static_cast<double>(latencies.size()) / seconds : 0;
  state.counters["objects"] = static_cast<double>(objects);
  state.counters["p50_us"] = Percentile(&latencies, 0.5);
  state.counters["p99_us"] = Percentile(&latencies, 0.99);
  state.counters["cache_dropped"] = cold && dropped_every_time ? 1 : 0;
}

// Takes this file's --block_* flags out of argv (Google Benchmark refuses unknown ones).
bool ParseBlockFlags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--block_")) {
      argv[out++] = argv[i];
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : arg.substr(eq + 1);
    auto list = [&](std::vector<uint64_t>* dest, bool sizes) {
      dest->clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const std::string_view item = value.substr(start, comma - start);
        oc::Result<uint64_t> v = sizes ? oc::ParseSize(item, name) : oc::ParseUint64(item, name);
        if (!v.has_value() || *v == 0) {
          return false;
        }
        dest->push_back(*v);
        start = comma + 1;
      }
      return !dest->empty();
    };
    bool ok = false;
    if (name == "--block_sizes") {
      ok =
          list(&Flags().sizes, true) && std::all_of(Flags().sizes.begin(), Flags().sizes.end(),
                                                    [](uint64_t b) { return b <= (256ull << 20); });
    } else if (name == "--block_threads") {
      ok = list(&Flags().threads, false) &&
           std::all_of(Flags().threads.begin(), Flags().threads.end(),
                       [](uint64_t t) { return t <= 1024; });
    } else if (name == "--block_data_bytes") {
      oc::Result<uint64_t> v = oc::ParseSize(value, name);
      ok = v.has_value() && *v > 0;
      if (ok) {
        Flags().data_bytes = *v;
      }
    } else if (name == "--block_passes") {
      oc::Result<uint64_t> v = oc::ParseUint64(value, name);
      ok = v.has_value() && *v > 0 && *v <= 1000;
      if (ok) {
        Flags().passes = *v;
      }
    } else if (name == "--block_drop_caches") {
      ok = value == "true" || value == "false";
      Flags().drop_caches = value == "true";
    } else if (name == "--block_dir") {
      Flags().dir = std::string(value);
      ok = !value.empty();
    }
    if (!ok) {
      std::cerr << "storage_bench: bad flag " << arg << "\n";
      return false;
    }
  }
  *argc = out;
  argv[out] = nullptr;
  return true;
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
  for (int layout : {0, 1}) {
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
  for (uint64_t b : Flags().sizes) {
    for (uint64_t t : Flags().threads) {
      for (int cold : {0, 1}) {
        benchmark::RegisterBenchmark("BM_BlockRead", BM_BlockRead)
            ->Args({static_cast<int64_t>(b), static_cast<int64_t>(t), cold})
            ->Iterations(static_cast<int64_t>(Flags().passes))
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!ParseBlockFlags(&argc, argv)) {
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
  State().dirs[0].reset();
  State().dirs[1].reset();
  Blocks().store.reset();
  Blocks().temp.reset();
  return 0;
}
