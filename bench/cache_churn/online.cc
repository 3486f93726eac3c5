// cache_churn_online_bench: the online half of issue 31's churn benchmark. Replays the churn
// workload (workload.h: the same generator, seed and sizes as cache_churn_bench, so the offline
// simulation's figures are for the very same trace) against a running gateway, as serving nodes
// would: each request is one descriptor GET of its whole chain over HTTP (the gateway answers the
// longest present prefix M, and a cache bucket counts it as the prefix hit), then, when M < N,
// one descriptor PUT of chunks M..N-1 (the PUT cannot name chunk M-1: the offline
// `chain-aware-nolink` policy is its exact model). --clients threads take the requests in trace
// order, each with its own liboc_client. Chunk sizes are the trace's (256 KiB / 512 KiB / 1 MiB
// by tenant) divided by --byte-scale, as L = --layers slices each; scaling every size and the
// capacity by one factor leaves the hit ratios of a byte-counted cache unchanged.
//
// Every delivered slice is checked: a PUT writes (chunk id, layer) into the first 16 bytes of
// each slice, a GET clears those bytes in its buffer first and compares them for chunks < M,
// so a slice the gateway did not deliver, or delivered from the wrong object, is counted.
//
// JSON (--json FILE, else stdout): the workload (scaled bytes), wall time, requests/s, the
// client's prefix hit ratio (chunks served / chunks asked, whole run and after the first drift
// period), per operation (get, put) count, bytes, ops/s, MB/s, p50/p99/max latency, failures by
// error, SlowDown retries, byte-check failures, a timeline (every 250 ms: seconds, requests
// done, chunks asked, chunks served), and the bucket's listing at the end against the trace's
// chains (objects, bytes, dead bytes). One progress line per 10% on stderr.
//
//   cache_churn_online_bench --endpoint URL [--bucket B] [--seed N] [--requests N]
//       [--documents N] [--byte-scale K] [--layers L] [--clients C] [--json FILE]
// Exit status 0 when the run completed (failures are in the JSON), 1 when it could not start
// (no gateway, bucket not creatable), 2 for bad flags.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "oc/client/client.h"
#include "workload.h"

namespace {

namespace churn = oc::bench::churn;
namespace client = oc::client;
namespace descriptor = oc::descriptor;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

constexpr uint64_t kTagBytes = 16;     // (chunk id, layer) at the start of every slice
constexpr size_t kMaxErrorKinds = 16;  // distinct error texts kept; the rest count as "other"

struct Flags {
  std::string endpoint = "http://127.0.0.1:9000";
  std::string bucket = "churn";
  churn::WorkloadOptions workload;
  uint64_t byte_scale = 64;
  uint32_t layers = 4;
  uint32_t clients = 4;
  std::string json;
};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

descriptor::ChunkHash HashOf(const std::string& key) {  // "kv/" + 32 hex digits
  descriptor::ChunkHash h{};
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<std::byte>(std::stoul(key.substr(3 + 2 * i, 2), nullptr, 16));
  }
  return h;
}

void WriteTag(std::byte* at, uint32_t chunk, uint32_t layer) {
  const uint64_t words[2] = {0x43485552'4e000000ull | chunk, layer};  // "CHURN" | id
  std::memcpy(at, words, kTagBytes);
}

bool HasTag(const std::byte* at, uint32_t chunk, uint32_t layer) {
  std::byte want[kTagBytes];
  WriteTag(want, chunk, layer);
  return std::memcmp(at, want, kTagBytes) == 0;
}

struct OpStats {
  std::vector<double> latencies_s;
  uint64_t bytes = 0;
  Json Summary(double wall_s) const {
    return {{"ops", latencies_s.size()},
            {"bytes", bytes},
            {"ops_per_s", static_cast<double>(latencies_s.size()) / wall_s},
            {"mb_per_s", static_cast<double>(bytes) / wall_s / 1e6},
            {"p50_ms", 1e3 * Quantile(latencies_s, 0.5)},
            {"p99_ms", 1e3 * Quantile(latencies_s, 0.99)},
            {"max_ms", 1e3 * Quantile(latencies_s, 1.0)}};
  }
};

// Shared by the client threads: the next request to run and what they measured.
struct Run {
  Run(const Flags& f, const churn::Trace& t) : flags(f), trace(t) {}

  const Flags& flags;
  const churn::Trace& trace;
  std::vector<descriptor::ChunkHash> hashes;  // by chunk id
  std::atomic<uint32_t> next{0};
  std::atomic<uint32_t> done{0};
  std::atomic<uint64_t> asked{0}, served{0}, asked_steady{0}, served_steady{0};
  std::atomic<uint64_t> check_failures{0};
  std::mutex mu;
  OpStats get, put;                        // guarded by mu
  std::map<std::string, uint64_t> errors;  // guarded by mu
  uint64_t failed = 0;                     // guarded by mu
  uint64_t slowdown_retries = 0;           // guarded by mu

  void Fail(const std::string& op, const oc::Status& s) {
    std::string what = op + ": " + s.WithDetail(nullptr).ToString();
    std::lock_guard lock(mu);
    ++failed;
    if (errors.size() >= kMaxErrorKinds && errors.count(what) == 0) {
      what = op + ": other";
    }
    ++errors[what];
  }
};

uint64_t SliceBytes(const Flags& f, const churn::Chunk& c) {
  return c.bytes / f.byte_scale / f.layers;
}

descriptor::Descriptor MakeDescriptor(const Run& run, std::span<const uint32_t> ids) {
  descriptor::CompactKeys keys;
  keys.prefix = "kv/";
  for (uint32_t id : ids) {
    keys.hashes.push_back(run.hashes[id]);
  }
  descriptor::Descriptor d;
  d.keys = std::move(keys);
  d.num_layers = run.flags.layers;
  d.chunk_tokens = run.flags.workload.tokens_per_chunk;
  d.layer_bytes = SliceBytes(run.flags, run.trace.chunks[ids[0]]);
  return d;
}

void RunClient(Run& run, client::Client& c, uint64_t max_request_bytes) {
  const Flags& f = run.flags;
  std::vector<std::byte> get_buffer(max_request_bytes);
  std::vector<std::byte> put_buffer(max_request_bytes);
  OpStats get, put;
  const auto requests = static_cast<uint32_t>(run.trace.path_offsets.size() - 1);
  for (uint32_t r = run.next++; r < requests; r = run.next++) {
    const std::span<const uint32_t> path(run.trace.path_ids.data() + run.trace.path_offsets[r],
                                         run.trace.path_offsets[r + 1] - run.trace.path_offsets[r]);
    const uint64_t n = path.size();
    const descriptor::Descriptor d = MakeDescriptor(run, path);
    const uint64_t s = d.layer_bytes;
    for (uint64_t o = 0; o < n * f.layers * s; o += s) {
      std::memset(get_buffer.data() + o, 0, kTagBytes);
    }
    Clock::time_point t0 = Clock::now();
    oc::Result<client::LayerHandle> h =
        c.GetLayersHttp(f.bucket, d, oc::MutableByteSpan(get_buffer.data(), n * f.layers * s));
    oc::Result<client::LayersResult> got =
        h.has_value() ? h->Wait() : oc::Result<client::LayersResult>(h.error());
    if (!got.has_value()) {
      run.Fail("get", got.error());
    } else {
      get.latencies_s.push_back(Since(t0));
      const uint64_t m = got->summary.matched_chunks;
      get.bytes += got->payload_bytes;
      for (uint32_t l = 0; l < f.layers; ++l) {  // layer-major: slice (l, j) at (l·N + j)·S
        for (uint64_t j = 0; j < m; ++j) {
          if (!HasTag(get_buffer.data() + (l * n + j) * s, path[j], l)) {
            run.check_failures.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
      run.asked += n;
      run.served += m;
      if (r >= run.trace.period_requests) {
        run.asked_steady += n;
        run.served_steady += m;
      }
      if (m < n) {
        const std::span<const uint32_t> rest = path.subspan(m);
        const uint64_t bytes = rest.size() * f.layers * s;
        for (uint64_t j = 0; j < rest.size(); ++j) {  // chunk-major: (j·L + l)·S
          for (uint32_t l = 0; l < f.layers; ++l) {
            WriteTag(put_buffer.data() + (j * f.layers + l) * s, rest[j], l);
          }
        }
        t0 = Clock::now();
        oc::Result<client::PutChunksResult> p = c.PutChunks(f.bucket, MakeDescriptor(run, rest),
                                                            oc::ByteSpan(put_buffer.data(), bytes));
        if (p.has_value()) {
          put.latencies_s.push_back(Since(t0));
          put.bytes += bytes;
        } else {
          run.Fail("put", p.error());
        }
      }
    }
    run.done.fetch_add(1, std::memory_order_relaxed);
  }
  std::lock_guard lock(run.mu);
  for (auto [mine, all] : {std::pair{&get, &run.get}, std::pair{&put, &run.put}}) {
    all->latencies_s.insert(all->latencies_s.end(), mine->latencies_s.begin(),
                            mine->latencies_s.end());
    all->bytes += mine->bytes;
  }
  run.slowdown_retries += c.slowdown_retries();
}

// After the run: the bucket's listing against the trace's chains. Dead bytes are present chunks
// some predecessor of which is absent (never hit again); the index sees only chains a PUT or a
// hit linked, so this, not /stats' dead_bytes, is the figure for PUTs that cannot name their
// predecessor.
Json ListedFigures(client::Client& c, const Flags& f, const churn::Trace& trace) {
  std::unordered_map<std::string, uint32_t> ids;
  for (uint32_t i = 0; i < trace.chunks.size(); ++i) {
    ids.emplace(trace.chunks[i].key, i);
  }
  std::vector<bool> present(trace.chunks.size(), false);
  uint64_t objects = 0, bytes = 0, unknown = 0;
  std::string token;
  do {
    oc::Result<client::ListPage> page = c.ListObjects(f.bucket, "kv/", token);
    if (!page.has_value()) {
      return {{"error", page.error().ToString()}};
    }
    for (const client::ObjectEntry& o : page->objects) {
      ++objects;
      bytes += o.size;
      const auto it = ids.find(o.key);
      if (it == ids.end()) {
        ++unknown;
      } else {
        present[it->second] = true;
      }
    }
    token = page->truncated ? page->next_continuation_token : "";
  } while (!token.empty());
  uint64_t dead = 0, dead_chunks = 0;
  for (uint32_t i = 0; i < trace.chunks.size(); ++i) {
    if (!present[i]) {
      continue;
    }
    for (uint32_t a = trace.chunks[i].parent; a != churn::kRoot; a = trace.chunks[a].parent) {
      if (!present[a]) {
        dead += trace.chunks[i].bytes / f.byte_scale;
        ++dead_chunks;
        break;
      }
    }
  }
  return {{"objects", objects},
          {"bytes", bytes},
          {"dead_bytes", dead},
          {"dead_chunks", dead_chunks},
          {"unknown_objects", unknown}};
}

int Main(const Flags& f) {
  const churn::Trace trace = churn::Generate(f.workload);
  Run run(f, trace);
  uint64_t max_request_bytes = 0;
  for (const churn::Chunk& c : trace.chunks) {
    run.hashes.push_back(HashOf(c.key));
  }
  for (size_t r = 0; r + 1 < trace.path_offsets.size(); ++r) {
    const uint64_t n = trace.path_offsets[r + 1] - trace.path_offsets[r];
    const churn::Chunk& c = trace.chunks[trace.path_ids[trace.path_offsets[r]]];
    max_request_bytes = std::max(max_request_bytes, n * f.layers * SliceBytes(f, c));
  }
  std::vector<std::unique_ptr<client::Client>> clients;
  for (uint32_t i = 0; i < f.clients; ++i) {
    client::ClientOptions o;
    client::ApplyEnvironment(&o);
    o.endpoint = f.endpoint;
    oc::Result<std::unique_ptr<client::Client>> c = client::Client::Open(o);
    if (!c.has_value()) {
      std::cerr << "cache_churn_online_bench: " << c.error() << "\n";
      return 1;
    }
    clients.push_back(std::move(*c));
  }
  if (oc::Status s = clients[0]->CreateBucket(f.bucket);
      !s.ok() && s.code() != oc::Code::kAlreadyExists) {
    std::cerr << "cache_churn_online_bench: create bucket: " << s << "\n";
    return 1;
  }
  const auto requests = static_cast<uint32_t>(trace.path_offsets.size() - 1);
  const double started_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Clock::time_point t0 = Clock::now();
  std::vector<std::thread> threads;
  for (auto& c : clients) {
    threads.emplace_back([&run, &c, max_request_bytes] { RunClient(run, *c, max_request_bytes); });
  }
  Json timeline = Json::array();
  uint32_t said = 0;
  while (run.done.load() < requests) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const uint32_t done = run.done.load();
    timeline.push_back({Since(t0), done, run.asked.load(), run.served.load()});
    if (done * 10 / requests > said) {
      said = done * 10 / requests;
      std::cerr << fmt::format("cache_churn_online: {}/{} requests {:.1f} s hit {:.3f}\n", done,
                               requests, Since(t0),
                               static_cast<double>(run.served) / std::max<uint64_t>(1, run.asked));
    }
  }
  for (std::thread& t : threads) {
    t.join();
  }
  const double wall = Since(t0);
  const Json listed = ListedFigures(*clients[0], f, trace);
  const auto ratio = [](uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / b : 0.0; };
  Json out;
  out["bench"] = "cache_churn_online";
  const auto& w = f.workload;
  out["config"] = {
      {"endpoint", f.endpoint}, {"bucket", f.bucket},       {"seed", w.seed},
      {"requests", w.requests}, {"documents", w.documents}, {"byte_scale", f.byte_scale},
      {"layers", f.layers},     {"clients", f.clients},     {"via", "http"}};
  out["workload"] = {{"chunks", trace.chunks.size()},
                     {"asked_chunks", trace.asked_chunks},
                     {"period_requests", trace.period_requests},
                     {"working_set_bytes", trace.working_set_bytes / f.byte_scale},
                     {"footprint_bytes", trace.footprint_bytes / f.byte_scale},
                     {"max_request_bytes", max_request_bytes}};
  out["started_unix_s"] = started_unix_s;
  out["wall_s"] = wall;
  out["requests_per_s"] = requests / wall;
  out["hit"] = {{"asked_chunks", run.asked.load()},
                {"served_chunks", run.served.load()},
                {"hit_ratio", ratio(run.served, run.asked)},
                {"hit_ratio_steady", ratio(run.served_steady, run.asked_steady)}};
  out["get"] = run.get.Summary(wall);
  out["put"] = run.put.Summary(wall);
  out["failed"] = run.failed;
  out["errors"] = run.errors;
  out["slowdown_retries"] = run.slowdown_retries;
  out["check_failures"] = run.check_failures.load();
  out["listed_at_end"] = listed;
  out["timeline"] = timeline;
  std::cerr << fmt::format(
      "cache_churn_online: {} requests in {:.1f} s ({:.0f}/s) hit {:.3f} steady {:.3f} "
      "failed {} check_failures {} get p99 {:.1f} ms put p99 {:.1f} ms\n",
      requests, wall, requests / wall, out["hit"]["hit_ratio"].get<double>(),
      out["hit"]["hit_ratio_steady"].get<double>(), run.failed, run.check_failures.load(),
      out["get"]["p99_ms"].get<double>(), out["put"]["p99_ms"].get<double>());
  const std::string text = out.dump(1) + "\n";
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
  for (int i = 1; i < argc; i += 2) {
    const std::string name = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "cache_churn_online_bench: " << name << " wants a value\n";
      return 2;
    }
    const std::string value = argv[i + 1];
    const uint64_t n = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "--endpoint") {
      f.endpoint = value;
    } else if (name == "--bucket") {
      f.bucket = value;
    } else if (name == "--seed") {
      f.workload.seed = n;
    } else if (name == "--requests") {
      f.workload.requests = static_cast<uint32_t>(n);
    } else if (name == "--documents") {
      f.workload.documents = static_cast<uint32_t>(n);
    } else if (name == "--byte-scale") {
      f.byte_scale = n;
    } else if (name == "--layers") {
      f.layers = static_cast<uint32_t>(n);
    } else if (name == "--clients") {
      f.clients = static_cast<uint32_t>(n);
    } else if (name == "--json") {
      f.json = value;
    } else {
      std::cerr << "cache_churn_online_bench: unknown flag " << name << "\n";
      return 2;
    }
  }
  // The smallest trace chunk (256 KiB) must split into L slices of whole, tag-sized bytes.
  constexpr uint64_t kSmallestChunk = 256 << 10;
  const bool sizes_ok = f.byte_scale > 0 && f.layers > 0 && kSmallestChunk % f.byte_scale == 0 &&
                        (kSmallestChunk / f.byte_scale) % f.layers == 0 &&
                        kSmallestChunk / f.byte_scale / f.layers >= kTagBytes;
  if (!sizes_ok || f.clients == 0 || f.workload.requests < 10 || f.workload.documents == 0) {
    std::cerr << "cache_churn_online_bench: 256 KiB / --byte-scale must split into --layers "
                 "slices of >= 16 bytes; --clients >= 1, --requests >= 10, --documents >= 1\n";
    return 2;
  }
  return Main(f);
}
