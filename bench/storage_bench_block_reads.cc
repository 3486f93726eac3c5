// storage_bench, part 2: raw object reads (issue 7, experiment 1), a store of their own.
//
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

#include "storage_bench_block_reads.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oc/common/units.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"

namespace oc::bench {
namespace {

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
  OC_ASSIGN_OR_RETURN(bs.store, oc::storage::OpenStore(o));
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

}  // namespace

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

void RegisterBlockReads() {
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

void CloseBlockStore() {
  Blocks().store.reset();
  Blocks().temp.reset();
}

}  // namespace oc::bench
