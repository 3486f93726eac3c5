// cache_churn_bench: the offline half of issue 31's churn benchmark. Generates a seeded
// multi-tenant prefix workload (workload.h: shared system prompts, documents reused across users
// under drifting Zipf popularity, conversation tails) and replays it against each eviction
// policy (policies.h: chain-aware = the store's EvictionIndex, chain-aware-nolink, per-object
// LRU, FIFO, the Belady bound over chains) at capacities that are fractions of the working set
// (distinct bytes asked within one drift period), with the store's watermarks (evict above 90%
// down to 80%). A request hits the longest present prefix of its chain (as a probe answers),
// then stores the rest (a descriptor PUT of chunks M..N-1).
//
// Reports per policy and capacity: prefix hit ratio (tokens served / tokens asked, whole run and
// after the first period), dead bytes (present chunks below a missing one) as a share of
// capacity (mean and max over samples), turnovers (bytes stored / capacity); the ratios of
// chain-aware to LRU; and the index's memory per entry and time per operation at
// --index-entries chunks. JSON on stdout (or --json FILE), one progress line per run on stderr.
//
//   cache_churn_bench [--seed N] [--requests N] [--documents N] [--capacities 0.1,0.33,0.66]
//                     [--policies a,b] [--index-entries N] [--json FILE]
// Exit status 0, or 2 for bad flags.
#include <malloc.h>
#include <sys/sysinfo.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cache/eviction_index.h"
#include "policies.h"
#include "workload.h"

namespace churn = oc::bench::churn;
namespace cache = oc::storage::cache;
using Json = nlohmann::ordered_json;

namespace {

constexpr double kHigh = 0.90;  // the store's default watermarks (eviction_index.h)
constexpr double kLow = 0.80;

struct Flags {
  churn::WorkloadOptions workload;
  std::vector<double> capacities = {0.10, 0.33, 0.66};
  std::vector<std::string> policies = churn::kPolicies;
  uint64_t index_entries = 200000;
  std::string json;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU seconds of this (single-threaded) process: what per-operation costs are measured in, since
// wall time on a shared 2-core machine mostly measures the other jobs.
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Bytes malloc has handed out, small blocks and mmapped large ones (vectors) both.
uint64_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Bytes of present chunks some predecessor of which is absent (never hit again).
class DeadMeter {
 public:
  explicit DeadMeter(const churn::Trace& trace)
      : trace_(trace), stamp_(trace.chunks.size(), 0), dead_(trace.chunks.size(), false) {}
  uint64_t Measure(const churn::Policy& p) {
    ++round_;
    uint64_t bytes = 0;
    for (uint32_t id : p.live()) {
      if (IsDead(p, id)) {
        bytes += trace_.chunks[id].bytes;
      }
    }
    return bytes;
  }

 private:
  bool IsDead(const churn::Policy& p, uint32_t id) {
    walk_.clear();
    bool dead = false;
    for (uint32_t c = id; c != churn::kRoot; c = trace_.chunks[c].parent) {
      if (!p.Present(c)) {
        dead = true;
        break;
      }
      if (stamp_[c] == round_) {
        dead = dead_[c];
        break;
      }
      walk_.push_back(c);
    }
    for (uint32_t c : walk_) {
      stamp_[c] = round_;
      dead_[c] = dead;
    }
    return dead;
  }
  const churn::Trace& trace_;
  std::vector<uint32_t> stamp_;
  std::vector<bool> dead_;
  std::vector<uint32_t> walk_;
  uint32_t round_ = 0;
};

Json Simulate(const churn::Trace& trace, const std::string& name, double fraction,
              DeadMeter& meter) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  const auto capacity = static_cast<uint64_t>(fraction * trace.working_set_bytes);
  std::unique_ptr<churn::Policy> p = churn::MakePolicy(name, trace, capacity);
  const auto high = static_cast<uint64_t>(kHigh * capacity);
  const auto low = static_cast<uint64_t>(kLow * capacity);
  const auto requests = static_cast<uint32_t>(trace.path_offsets.size() - 1);
  const uint32_t sample_every = std::max<uint32_t>(1, requests / 200);
  uint64_t asked = 0, served = 0, asked_steady = 0, served_steady = 0;
  uint64_t dead_sum = 0, dead_max = 0, samples = 0, used_max = 0, memory_max = 0;
  for (uint32_t r = 0; r < requests; ++r) {
    const std::span<const uint32_t> path(trace.path_ids.data() + trace.path_offsets[r],
                                         trace.path_offsets[r + 1] - trace.path_offsets[r]);
    size_t hit = 0;
    while (hit < path.size() && p->Present(path[hit])) {
      ++hit;
    }
    asked += path.size();
    served += hit;
    if (r >= trace.period_requests) {
      asked_steady += path.size();
      served_steady += hit;
    }
    if (hit > 0) {
      p->OnHit(r, path, hit);
    }
    p->OnPut(r, path, hit);
    used_max = std::max(used_max, p->used_bytes());
    if (p->used_bytes() > high) {
      p->EvictTo(low);
    }
    if (r % sample_every == 0 && r >= trace.period_requests) {
      const uint64_t dead = meter.Measure(*p);
      dead_sum += dead;
      dead_max = std::max(dead_max, dead);
      ++samples;
      if (p->present_chunks() > 0) {
        memory_max = std::max(memory_max, p->MemoryBytes() / p->present_chunks());
      }
    }
  }
  const double seconds = Seconds(start);
  const double cpu_seconds = CpuSeconds() - cpu_start;
  std::cerr << "cache_churn: policy=" << name << " capacity=" << fraction
            << " hit=" << (asked ? static_cast<double>(served) / asked : 0)
            << " cpu_seconds=" << cpu_seconds << "\n";
  Json row;
  row["policy"] = name;
  row["capacity_fraction"] = fraction;
  row["capacity_bytes"] = capacity;
  row["hit_ratio"] = asked ? static_cast<double>(served) / asked : 0.0;
  row["hit_ratio_steady"] = asked_steady ? static_cast<double>(served_steady) / asked_steady : 0.0;
  row["dead_share_mean"] = samples ? static_cast<double>(dead_sum) / samples / capacity : 0.0;
  row["dead_share_max"] = static_cast<double>(dead_max) / capacity;
  row["turnovers"] = static_cast<double>(p->inserted_bytes()) / capacity;
  row["evicted_chunks"] = p->evicted_chunks();
  row["used_max_share"] = static_cast<double>(used_max) / capacity;
  row["index_bytes_per_chunk_max"] = memory_max;
  row["seconds"] = seconds;
  row["cpu_seconds"] = cpu_seconds;
  return row;
}

// The index alone: memory per entry and time per operation, chains of 16 chunks with 35-byte
// keys ("kv/" + 32 hex digits, as docs/protocol.md's compact keys under a short prefix).
Json MeasureIndex(uint64_t entries) {
  constexpr size_t kChain = 16;
  std::vector<std::string> keys(entries);
  std::mt19937_64 rng(7);
  for (std::string& k : keys) {
    char hex[40];
    std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    k = std::string("kv/") + hex;
  }
  cache::EvictionOptions o;
  o.capacity_bytes = entries << 20;
  const uint64_t heap_before = HeapBytes();
  auto index = std::make_unique<cache::EvictionIndex>(o);
  std::vector<cache::ChunkRef> chain;
  double start = CpuSeconds();
  for (size_t i = 0; i < entries; i += kChain) {
    chain.clear();
    for (size_t j = i; j < std::min<size_t>(i + kChain, entries); ++j) {
      chain.push_back({keys[j], 1u << 20});
    }
    index->OnPut(chain);
  }
  const double put_s = CpuSeconds() - start;
  const uint64_t heap_after = HeapBytes();
  std::vector<std::string_view> prefix;
  start = CpuSeconds();
  const size_t hits = entries / kChain;
  for (size_t h = 0; h < hits; ++h) {
    const size_t c = (rng() % (entries / kChain)) * kChain;
    prefix.assign(keys.begin() + c, keys.begin() + c + kChain / 2);
    (void)index->OnHit(prefix);
  }
  const double hit_s = CpuSeconds() - start;
  const uint64_t model_bytes = index->MemoryBytes();
  start = CpuSeconds();
  const size_t victims = index->PickVictims(uint64_t{entries / 2} << 20).size();
  const double pick_s = CpuSeconds() - start;
  Json j;
  j["entries"] = entries;
  j["key_bytes"] = keys.empty() ? 0 : keys[0].size();
  j["bytes_per_entry_counted"] = static_cast<double>(model_bytes) / entries;
  j["bytes_per_entry_malloc"] = static_cast<double>(heap_after - heap_before) / entries;
  j["put_ns_per_chunk"] = put_s * 1e9 / entries;
  j["hit_ns_per_request_8_chunks"] = hit_s * 1e9 / hits;
  j["pick_ns_per_victim"] = victims ? pick_s * 1e9 / victims : 0.0;
  std::cerr << "cache_churn: index entries=" << entries
            << " bytes/entry=" << j["bytes_per_entry_malloc"] << "\n";
  return j;
}

template <typename T>
std::vector<T> SplitList(const std::string& text) {
  std::vector<T> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if constexpr (std::is_same_v<T, double>) {
      out.push_back(std::strtod(item.c_str(), nullptr));
    } else {
      out.push_back(item);
    }
    pos = comma + 1;
  }
  return out;
}

int Run(const Flags& f) {
  const auto start = std::chrono::steady_clock::now();
  const churn::Trace trace = churn::Generate(f.workload);
  std::cerr << "cache_churn: trace requests=" << f.workload.requests
            << " chunks=" << trace.chunks.size()
            << " working_set_MiB=" << (trace.working_set_bytes >> 20)
            << " footprint_MiB=" << (trace.footprint_bytes >> 20) << " seconds=" << Seconds(start)
            << "\n";
  Json out;
  out["bench"] = "cache_churn";
  const auto& w = f.workload;
  out["config"] = {{"seed", w.seed},
                   {"requests", w.requests},
                   {"tenants", w.tenants},
                   {"prompts_per_tenant", w.prompts_per_tenant},
                   {"documents", w.documents},
                   {"zipf", w.zipf},
                   {"periods", w.periods},
                   {"new_documents", w.new_documents},
                   {"conversation_share", w.conversation_share},
                   {"active_conversations", w.active_conversations},
                   {"high_watermark", kHigh},
                   {"low_watermark", kLow}};
  out["workload"] = {{"chunks", trace.chunks.size()},
                     {"asked_chunks", trace.asked_chunks},
                     {"period_requests", trace.period_requests},
                     {"working_set_bytes", trace.working_set_bytes},
                     {"footprint_bytes", trace.footprint_bytes}};
  DeadMeter meter(trace);
  Json rows = Json::array();
  for (double fraction : f.capacities) {
    for (const std::string& name : f.policies) {
      rows.push_back(Simulate(trace, name, fraction, meter));
    }
  }
  out["rows"] = rows;
  Json ratios = Json::array();
  auto find = [&rows](double fraction, const std::string& policy) -> const Json* {
    for (const Json& row : rows) {
      if (row["capacity_fraction"] == fraction && row["policy"] == policy) {
        return &row;
      }
    }
    return nullptr;
  };
  for (double fraction : f.capacities) {
    const Json* lru = find(fraction, "lru");
    for (const std::string& policy : f.policies) {
      const Json* p = find(fraction, policy);
      if (lru == nullptr || p == nullptr || policy == "lru") {
        continue;
      }
      const double a = (*p)["hit_ratio_steady"], b = (*lru)["hit_ratio_steady"];
      ratios.push_back({{"capacity_fraction", fraction},
                        {"policy", policy},
                        {"over_lru", b > 0 ? a / b : 0.0},
                        {"minus_lru_points", 100 * (a - b)}});
    }
  }
  out["ratios"] = ratios;
  if (f.index_entries > 0) {
    out["index"] = MeasureIndex(f.index_entries);
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    out["load_average"] = {load[0], load[1], load[2]};
  }
  out["seconds"] = Seconds(start);
  const std::string text = out.dump(2) + "\n";
  if (f.json.empty()) {
    std::cout << text;
  } else {
    std::ofstream(f.json) << text;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc || i < argc; i += 2) {
    const std::string name = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "cache_churn_bench: " << name << " wants a value\n";
      return 2;
    }
    const std::string value = argv[i + 1];
    const uint64_t n = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "--seed") {
      f.workload.seed = n;
    } else if (name == "--requests") {
      f.workload.requests = static_cast<uint32_t>(n);
    } else if (name == "--documents") {
      f.workload.documents = static_cast<uint32_t>(n);
    } else if (name == "--capacities") {
      f.capacities = SplitList<double>(value);
    } else if (name == "--policies") {
      f.policies = SplitList<std::string>(value);
    } else if (name == "--index-entries") {
      f.index_entries = n;
    } else if (name == "--json") {
      f.json = value;
    } else {
      std::cerr << "cache_churn_bench: unknown flag " << name << "\n";
      return 2;
    }
  }
  for (const std::string& p : f.policies) {
    if (std::find(churn::kPolicies.begin(), churn::kPolicies.end(), p) == churn::kPolicies.end() &&
        !(p.starts_with("chain-aware@") && std::strtod(p.c_str() + 12, nullptr) >= 0 &&
          std::strtod(p.c_str() + 12, nullptr) < 1)) {
      std::cerr << "cache_churn_bench: unknown policy " << p << " (chain-aware@f: 0 <= f < 1)\n";
      return 2;
    }
  }
  for (double c : f.capacities) {
    if (!(c > 0 && c <= 10)) {
      std::cerr << "cache_churn_bench: capacities are fractions of the working set, > 0\n";
      return 2;
    }
  }
  if (f.workload.requests < 10 || f.workload.documents == 0) {
    std::cerr << "cache_churn_bench: --requests >= 10, --documents >= 1\n";
    return 2;
  }
  return Run(f);
}
