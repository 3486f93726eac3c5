// objectcache_bench: descriptor reads against a running gateway (issue 5's benchmark), for
// Llama-3.1-8B shapes: L = 32 layers, 4 KiB per token per layer (8 KV heads x 128 x bf16 x K,V),
// so S = 4096·G bytes per layer slice; G in --groups, context lengths in --contexts, prefix hit
// rates in --hits (the descriptor names the M = hit·context/G matched chunks).
//
// Methods, each timed on the same stored chunks in one run:
//   ucx         one descriptor GET into a registered buffer over UCX (the server picks
//               layerwise or chunkwise by its Θ; the mode it used is reported)
//   http-body   one descriptor GET, the layer-major payload streamed in the HTTP body
//   http-object M plain GETs, one per chunk object (L·S bytes each), by --object-concurrency
//               threads sharing the client (default 1)
//   http-range  M·L range GETs of S bytes (one per chunk per layer), in layer order, by
//               --range-concurrency threads sharing the client (default 1; more values add
//               methods http-range-c<N>); rows carry "concurrency" and "client"
// Storing (unless --no-put): --put-mode descriptor (default) sends descriptor PUTs of up to 128
// chunks, --desc-put-concurrency of them in flight (default 1); --put-mode object sends one plain
// S3 PUT per chunk object from --put-concurrency threads, as an S3 KV connector offloads to a
// server without the extension (Ceph RGW). Each G's load is timed and reported in "puts" (method
// "put-descriptor" or "put-object"). For each: total seconds, GB/s (payload / total), time to first
// layer (ucx and http-body: the first layer notification; http-range: the M GETs of layer 0;
// http-object: every object, since each holds all layers), and per shape the speedups of ucx and
// http-body over the two per-object baselines. Output: JSON (--json) for
// bench/objectcache_bench.py, which starts the server, runs this twice (layerwise and
// forced-chunkwise Θ) and plots.
//
// Buffers are allocated and registered once per G and reused (a warm data plane). Each
// measurement runs --warmup untimed times (default 1: page cache and block cache warm), then
// --repeat timed times: "total_s", "ttfl_s" and "gbps" are the best repetition's, "reps" lists
// every one (total_s, ttfl_s), and *_p50_s / *_p99_s summarise them.
// --cpu-pids name=pid,... adds "cpu_s" to every row and load: the CPU seconds (utime + stime
// from /proc/<pid>/stat) each named process spent over the timed repetitions (summed), with
// the bench's own process as "client"; a name given twice sums its processes. "minor_faults"
// beside it counts their minor page faults (stat field 10) over the same repetitions.
// This file is the driver (flags, the loop over shapes, the JSON); the store loop, the timed
// methods and the CPU meter are objectcache_bench_methods.{h,cc}.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "objectcache_bench_methods.h"
#include "oc/client/client.h"
#include "oc/common/units.h"
#include "oc/descriptor/chunk_key.h"

namespace {

using namespace oc::bench::objectcache;  // the measurements: objectcache_bench_methods.h
namespace client = oc::client;
namespace descriptor = oc::descriptor;

template <typename T>
std::vector<T> SplitList(const std::string& s) {
  std::vector<T> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) {
      if constexpr (std::is_same_v<T, std::string>) {
        out.push_back(item);
      } else if constexpr (std::is_same_v<T, double>) {
        out.push_back(std::strtod(item.c_str(), nullptr));
      } else {
        out.push_back(std::strtoull(item.c_str(), nullptr, 10));
      }
    }
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

// Concurrency of "http-range" (the first --range-concurrency value); "http-range-c<N>" says N.
uint32_t g_first_range_concurrency = 1;

uint32_t RangeConcurrency(const std::string& method) {
  if (method.starts_with("http-range-c")) {
    return static_cast<uint32_t>(
        std::max<uint64_t>(1, std::strtoull(method.c_str() + 12, nullptr, 10)));
  }
  return g_first_range_concurrency;
}

int Run(const Flags& f) {
  client::ClientOptions options;
  client::ApplyEnvironment(&options);
  options.endpoint = f.endpoint;
  options.timeout = std::chrono::minutes(5);
  oc::Result<std::unique_ptr<client::Client>> opened = client::Client::Open(options);
  if (!opened.has_value()) {
    std::cerr << opened.error() << "\n";
    return 1;
  }
  client::Client& c = **opened;
  if (f.put) {
    oc::Status s = c.CreateBucket(f.bucket);
    if (!s.ok() && s.code() != oc::Code::kAlreadyExists) {
      std::cerr << "create bucket: " << s << "\n";
      return 1;
    }
  }
  const CpuMeter cpu(f.cpu_pids);
  Json results = Json::array();
  Json puts = Json::array();  // one row per G's load, apart: it has no context or hit
  const uint64_t max_context = *std::max_element(f.contexts.begin(), f.contexts.end());
  const double max_hit = *std::max_element(f.hits.begin(), f.hits.end());
  for (uint64_t g : f.groups) {
    const uint64_t s = kBytesPerTokenLayer * g;
    const uint64_t object = kLayers * s;
    const uint64_t max_chunks =
        static_cast<uint64_t>(max_hit * static_cast<double>(max_context)) / g;
    if (f.put) {
      PutBuffers buffers(f, g, max_chunks);
      const std::vector<double> cpu0 = cpu.Sample();
      const Clock::time_point t0 = Clock::now();
      if (oc::Status st = Store(c, f, g, max_chunks, buffers); !st.ok()) {
        std::cerr << "put " << f.put_mode << ": " << st << "\n";
        return 1;
      }
      const double secs = Seconds(Clock::now() - t0);
      Json row = {
          {"label", f.label},
          {"G", g},
          {"chunks", max_chunks},
          {"layer_bytes", s},
          {"payload_bytes", max_chunks * object},
          {"method", "put-" + f.put_mode},
          {"concurrency", f.put_mode == "object" ? f.put_concurrency : f.desc_put_concurrency},
          {"total_s", secs},
          {"gbps", static_cast<double>(max_chunks * object) / secs / 1e9}};
      Json cpu_s = Json::object();
      Json faults = Json::object();
      cpu.Add(cpu0, &cpu_s, &faults);
      row["cpu_s"] = cpu_s;
      row["minor_faults"] = faults;
      std::cerr << fmt::format("stored {} chunks of {} bytes at G = {} by {} PUT: {:.3f} GB/s\n",
                               max_chunks, object, g, f.put_mode, row["gbps"].get<double>());
      puts.push_back(row);
    }
    // UCX is opened only when a method uses it (a plain S3 server has no data plane).
    std::unique_ptr<client::TargetBuffer> target;
    std::vector<std::byte> heap;
    oc::MutableByteSpan space;
    if (f.methods.empty()) {
      continue;  // a load only
    }
    if (std::find(f.methods.begin(), f.methods.end(), "ucx") != f.methods.end()) {
      oc::Result<client::DataPlane*> plane = c.data_plane();
      if (!plane.has_value()) {
        std::cerr << plane.error() << "\n";
        return 1;
      }
      oc::Result<std::unique_ptr<client::TargetBuffer>> buf =
          (*plane)->Allocate(max_chunks * object);
      if (!buf.has_value()) {
        std::cerr << buf.error() << "\n";
        return 1;
      }
      target = std::move(*buf);
      space = target->bytes();
    } else {
      heap.resize(max_chunks * object);
      space = oc::MutableByteSpan(heap.data(), heap.size());
    }
    for (uint64_t context : f.contexts) {
      for (double hit : f.hits) {
        const uint64_t m_chunks = static_cast<uint64_t>(hit * static_cast<double>(context)) / g;
        if (m_chunks == 0) {
          continue;
        }
        const descriptor::Descriptor d = MakeDescriptor(g, 0, m_chunks);
        const uint64_t payload = m_chunks * object;
        oc::MutableByteSpan out = space.subspan(0, payload);
        Json shape = {
            {"label", f.label},   {"G", g},           {"context", context},      {"hit", hit},
            {"chunks", m_chunks}, {"layer_bytes", s}, {"payload_bytes", payload}};
        for (const std::string& method : f.methods) {
          Measure best;
          best.total_s = 1e30;
          std::vector<Measure> reps;
          Json cpu_s = Json::object();
          Json faults = Json::object();
          for (uint32_t rep = 0; rep < f.warmup + f.repeat; ++rep) {  // warm-ups first
            const bool timed = rep >= f.warmup;
            const std::vector<double> cpu0 = timed ? cpu.Sample() : std::vector<double>{};
            oc::Result<Measure> r = oc::Status::Internal("unknown method " + method);
            if (method == "ucx") {
              r = RunUcx(c, f.bucket, d, *target);
            } else if (method == "http-body") {
              r = RunHttpBody(c, f.bucket, d, out);
            } else if (method == "http-object") {
              r = RunObjects(c, f.bucket, d, out, f.object_concurrency);
            } else if (method.starts_with("http-range")) {
              r = RunRanges(c, f.bucket, d, out, RangeConcurrency(method));
            }
            if (!r.has_value()) {
              std::cerr << fmt::format("{} G={} ctx={} hit={}: ", method, g, context, hit)
                        << r.error() << "\n";
              return 1;
            }
            if (timed) {
              cpu.Add(cpu0, &cpu_s, &faults);
              reps.push_back(*r);
              if (r->total_s < best.total_s) {
                best = *r;
              }
            }
          }
          if (reps.empty()) {
            continue;  // --repeat 0: warm-ups only
          }
          Json row = shape;
          row["method"] = method;
          if (method.starts_with("http-range")) {
            row["concurrency"] = RangeConcurrency(method);
            row["client"] =
                "liboc_client GetObject (SigV4, keep-alive connection pool), one thread per "
                "concurrent GET";
          } else if (method == "http-object") {
            row["concurrency"] = f.object_concurrency;
          }
          row["mode"] = best.mode;
          row["total_s"] = best.total_s;
          row["ttfl_s"] = best.ttfl_s;
          row["gbps"] = static_cast<double>(payload) / best.total_s / 1e9;
          std::vector<double> totals, ttfls;
          Json reps_json = Json::array();
          for (const Measure& m : reps) {
            totals.push_back(m.total_s);
            ttfls.push_back(m.ttfl_s);
            reps_json.push_back({{"total_s", m.total_s}, {"ttfl_s", m.ttfl_s}});
          }
          row["reps"] = reps_json;
          row["total_p50_s"] = Quantile(totals, 0.5);
          row["total_p99_s"] = Quantile(totals, 0.99);
          row["ttfl_p50_s"] = Quantile(ttfls, 0.5);
          row["ttfl_p99_s"] = Quantile(ttfls, 0.99);
          row["cpu_s"] = cpu_s;
          row["minor_faults"] = faults;
          std::cerr << fmt::format(
              "G={:3} ctx={:5} hit={:.3f} {:11} {:9} {:8.3f} GB/s total "
              "{:8.4f} s first layer {:8.4f} s\n",
              g, context, hit, method, best.mode, row["gbps"].get<double>(), best.total_s,
              best.ttfl_s);
          results.push_back(row);
        }
      }
    }
  }
  const std::string text = Json{{"results", results}, {"puts", puts}}.dump(2);
  if (!f.json.empty()) {
    std::ofstream(f.json) << text << "\n";
  } else {
    std::cout << text << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc || (i < argc && std::string(argv[i]) == "--no-put"); ++i) {
    const std::string name = argv[i];
    if (name == "--no-put") {
      f.put = false;
      continue;
    }
    const std::string value = argv[++i];
    if (name == "--endpoint") {
      f.endpoint = value;
    } else if (name == "--bucket") {
      f.bucket = value;
    } else if (name == "--groups") {
      f.groups = SplitList<uint64_t>(value);
    } else if (name == "--contexts") {
      f.contexts = SplitList<uint64_t>(value);
    } else if (name == "--hits") {
      f.hits = SplitList<double>(value);
    } else if (name == "--methods") {
      f.methods = SplitList<std::string>(value);
    } else if (name == "--range-concurrency") {
      f.range_concurrency = SplitList<uint64_t>(value);
      if (f.range_concurrency.empty() || f.range_concurrency[0] == 0) {
        std::cerr << "objectcache_bench: --range-concurrency wants positive counts\n";
        return 2;
      }
    } else if (name == "--object-concurrency" || name == "--put-concurrency") {
      const uint32_t n = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
      if (n == 0) {
        std::cerr << "objectcache_bench: " << name << " wants a positive count\n";
        return 2;
      }
      (name == "--put-concurrency" ? f.put_concurrency : f.object_concurrency) = n;
    } else if (name == "--desc-put-concurrency") {
      f.desc_put_concurrency = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
      if (f.desc_put_concurrency == 0) {
        std::cerr << "objectcache_bench: --desc-put-concurrency wants a positive count\n";
        return 2;
      }
    } else if (name == "--put-mode") {
      if (value != "descriptor" && value != "object") {
        std::cerr << "objectcache_bench: --put-mode is descriptor or object\n";
        return 2;
      }
      f.put_mode = value;
    } else if (name == "--repeat") {
      f.repeat = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (name == "--warmup") {
      f.warmup = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (name == "--cpu-pids") {
      for (const std::string& item : SplitList<std::string>(value)) {
        const size_t eq = item.find('=');
        const int pid = eq == std::string::npos ? 0 : std::atoi(item.c_str() + eq + 1);
        if (eq == 0 || pid <= 0) {
          std::cerr << "objectcache_bench: --cpu-pids wants name=pid,... not " << item << "\n";
          return 2;
        }
        f.cpu_pids.emplace_back(item.substr(0, eq), pid);
      }
    } else if (name == "--json") {
      f.json = value;
    } else if (name == "--label") {
      f.label = value;
    } else {
      std::cerr << "objectcache_bench: unknown flag " << name << "\n";
      return 2;
    }
  }
  // Every extra range concurrency is one more method, measured right after http-range.
  auto range = std::find(f.methods.begin(), f.methods.end(), "http-range");
  if (range != f.methods.end()) {
    std::vector<std::string> extra;
    for (size_t i = 1; i < f.range_concurrency.size(); ++i) {
      extra.push_back(fmt::format("http-range-c{}", f.range_concurrency[i]));
    }
    f.methods.insert(range + 1, extra.begin(), extra.end());
  }
  g_first_range_concurrency = static_cast<uint32_t>(f.range_concurrency[0]);
  return Run(f);
}
