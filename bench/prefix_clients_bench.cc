// prefix_clients_bench: many serving nodes loading the same warm prefix at once (issue 16,
// "Many serving nodes at once"), against a running gateway.
//
// Stores one prefix of --chunks chunks x --layers layers x --layer-bytes bytes (a descriptor
// PUT, unless --no-put), then for each client count in --clients (default 1,2,4,8,16) starts
// that many clients, each with its own liboc_client (own connections, own UCX worker and
// target buffer: separate serving nodes in one process), and has each load the whole prefix
// --requests times in a row (descriptor GETs into its buffer over UCX, or --via http into
// memory), every load byte-checked against the stored bytes. Before a load the first bytes of
// every slice in the buffer are overwritten, so a slice the server did not deliver fails the
// check.
//
// Reports per client count: aggregate GB/s (bytes delivered / wall time of the phase, checks
// included), per-request latency p50/p99 (send to Wait() returning), the requests that failed
// and each distinct error with its count, and how many SlowDown answers the clients retried
// (Client::slowdown_retries). --json writes the rows ("kind": "get"), after one "kind": "put"
// row timing the store (--put-repeat descriptor PUTs of the prefix, default 1, in a row).
// --endpoint may list several gateways (comma-separated, e.g. peers over one RADOS pool): client
// i talks to endpoint i mod n, and the prefix is stored through the first.
// Exit status: 0 when every load succeeded byte-exact, 1 when any failed, 2 for bad flags.

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "oc/client/client.h"

namespace {

namespace client = oc::client;
namespace descriptor = oc::descriptor;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Flags {
  std::vector<std::string> endpoints = {"http://127.0.0.1:9000"};
  std::string bucket = "prefix-bench";
  std::string prefix = "prefix-bench/";
  uint64_t chunks = 8;
  uint32_t layers = 32;
  uint64_t layer_bytes = 64 << 10;
  std::vector<uint32_t> clients = {1, 2, 4, 8, 16};
  uint32_t requests = 8;
  std::string via = "ucx";
  bool put = true;
  uint32_t put_repeat = 1;
  std::string json;
  std::string label;
};

uint8_t ByteAt(uint64_t chunk, uint32_t layer, uint64_t i) {
  return static_cast<uint8_t>((chunk * 131 + layer * 29 + i * 7 + (i >> 9)) % 251);
}

descriptor::Descriptor MakeDescriptor(const Flags& f) {
  descriptor::CompactKeys keys;
  keys.prefix = f.prefix;
  for (uint64_t j = 0; j < f.chunks; ++j) {
    descriptor::ChunkHash h{};
    for (int b = 0; b < 8; ++b) {
      h[15 - b] = static_cast<std::byte>((j >> (8 * b)) & 0xff);
    }
    h[0] = static_cast<std::byte>(0x5a);
    keys.hashes.push_back(h);
  }
  descriptor::Descriptor d;
  d.keys = std::move(keys);
  d.num_layers = f.layers;
  d.chunk_tokens = 16;
  d.layer_bytes = f.layer_bytes;
  return d;
}

// The N chunk objects back to back (kv_l2td: chunk j's layer l at l * S within it).
std::vector<std::byte> ChunkMajor(const Flags& f) {
  std::vector<std::byte> out(f.chunks * f.layers * f.layer_bytes);
  uint64_t o = 0;
  for (uint64_t j = 0; j < f.chunks; ++j) {
    for (uint32_t l = 0; l < f.layers; ++l) {
      for (uint64_t i = 0; i < f.layer_bytes; ++i) {
        out[o++] = static_cast<std::byte>(ByteAt(j, l, i));
      }
    }
  }
  return out;
}

// What a layer-major target holds after the load: slice (l, j) at (l * N + j) * S.
std::vector<std::byte> LayerMajor(const Flags& f) {
  std::vector<std::byte> out(f.chunks * f.layers * f.layer_bytes);
  for (uint32_t l = 0; l < f.layers; ++l) {
    for (uint64_t j = 0; j < f.chunks; ++j) {
      std::byte* p = out.data() + (l * f.chunks + j) * f.layer_bytes;
      for (uint64_t i = 0; i < f.layer_bytes; ++i) {
        p[i] = static_cast<std::byte>(ByteAt(j, l, i));
      }
    }
  }
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// User + system CPU seconds of this process, every thread.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// The options of client `i` (its endpoint: i mod the number given).
client::ClientOptions Options(const Flags& f, uint32_t i = 0) {
  client::ClientOptions o;
  client::ApplyEnvironment(&o);
  o.endpoint = f.endpoints[i % f.endpoints.size()];
  o.timeout = std::chrono::minutes(2);
  return o;
}

struct Outcome {
  std::mutex mu;
  std::vector<double> latencies_s;         // guarded by mu
  std::map<std::string, uint64_t> errors;  // guarded by mu
  uint64_t ok = 0;                         // guarded by mu
  uint64_t retried = 0;                    // guarded by mu
  void Fail(const std::string& what) {
    std::lock_guard lock(mu);
    ++errors[what];
  }
};

// One serving node: its own client and target; `requests` byte-checked loads.
void RunClient(const Flags& f, uint32_t index, const descriptor::Descriptor& d,
               const std::vector<std::byte>& want, std::barrier<>& start, Outcome& out) {
  oc::Result<std::unique_ptr<client::Client>> c = client::Client::Open(Options(f, index));
  std::unique_ptr<client::TargetBuffer> target;
  std::vector<std::byte> heap;
  oc::MutableByteSpan space;
  oc::Status setup = c.has_value() ? oc::Status::Ok() : c.error();
  if (setup.ok() && f.via == "ucx") {
    oc::Result<client::DataPlane*> plane = (*c)->data_plane();
    oc::Result<std::unique_ptr<client::TargetBuffer>> buf =
        plane.has_value() ? (*plane)->Allocate(want.size())
                          : oc::Result<std::unique_ptr<client::TargetBuffer>>(plane.error());
    if (buf.has_value()) {
      target = std::move(*buf);
      space = target->bytes();
    } else {
      setup = buf.error();
    }
  } else if (setup.ok()) {
    heap.resize(want.size());
    space = oc::MutableByteSpan(heap);
  }
  start.arrive_and_wait();
  if (!setup.ok()) {
    out.Fail("setup: " + setup.ToString());
    return;
  }
  for (uint32_t r = 0; r < f.requests; ++r) {
    for (uint64_t o = 0; o < space.size(); o += f.layer_bytes) {
      std::memset(space.data() + o, 0xee, std::min<uint64_t>(16, f.layer_bytes));
    }
    const Clock::time_point t0 = Clock::now();
    oc::Result<client::LayerHandle> h = f.via == "ucx" ? (*c)->GetLayers(f.bucket, d, *target)
                                                       : (*c)->GetLayersHttp(f.bucket, d, space);
    oc::Result<client::LayersResult> res =
        h.has_value() ? h->Wait() : oc::Result<client::LayersResult>(h.error());
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!res.has_value()) {
      out.Fail(res.error().ToString());
      continue;
    }
    if (res->summary.matched_chunks != f.chunks) {
      out.Fail(fmt::format("matched {} of {}", res->summary.matched_chunks, f.chunks));
      continue;
    }
    if (std::memcmp(space.data(), want.data(), want.size()) != 0) {
      out.Fail("bytes differ from the stored prefix");
      continue;
    }
    std::lock_guard lock(out.mu);
    ++out.ok;
    out.latencies_s.push_back(secs);
  }
  std::lock_guard lock(out.mu);
  out.retried += (*c)->slowdown_retries();
}

int Run(const Flags& f) {
  const descriptor::Descriptor d = MakeDescriptor(f);
  Json put_row;
  if (f.put) {
    oc::Result<std::unique_ptr<client::Client>> c = client::Client::Open(Options(f));
    if (!c.has_value()) {
      std::cerr << "prefix_clients_bench: " << c.error() << "\n";
      return 1;
    }
    oc::Status s = (*c)->CreateBucket(f.bucket);
    if (!s.ok() && s.code() != oc::Code::kAlreadyExists) {
      std::cerr << "prefix_clients_bench: create bucket: " << s << "\n";
      return 1;
    }
    const std::vector<std::byte> chunks = ChunkMajor(f);
    const Clock::time_point t0 = Clock::now();
    for (uint32_t i = 0; i < f.put_repeat; ++i) {
      oc::Result<client::PutChunksResult> p = (*c)->PutChunks(f.bucket, d, chunks);
      if (!p.has_value()) {
        std::cerr << "prefix_clients_bench: put: " << p.error() << "\n";
        return 1;
      }
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    put_row = {{"kind", "put"},
               {"label", f.label},
               {"requests", f.put_repeat},
               {"payload_bytes", chunks.size()},
               {"wall_s", wall},
               {"gbps", static_cast<double>(chunks.size()) * f.put_repeat / wall / 1e9}};
    std::cerr << fmt::format("put x{} {:.3f} GB/s\n", f.put_repeat, put_row["gbps"].get<double>());
  }
  const std::vector<std::byte> want = LayerMajor(f);
  Json rows = Json::array();
  if (!put_row.is_null()) {
    rows.push_back(put_row);
  }
  bool all_ok = true;
  for (uint32_t n : f.clients) {
    Outcome out;
    std::barrier<> start(static_cast<std::ptrdiff_t>(n) + 1);
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] { RunClient(f, i, d, want, start, out); });
    }
    start.arrive_and_wait();  // every client opened its data plane and buffer
    const Clock::time_point t0 = Clock::now();
    const double cpu0 = ProcessCpuSeconds();
    for (std::thread& t : threads) {
      t.join();
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    // This process's CPU over the same window as `wall` (the GETs and each client's teardown),
    // not its set-up: a per-GB figure from the whole process's CPU counts every client's data
    // plane and buffer opening too.
    const double phase_cpu = ProcessCpuSeconds() - cpu0;
    uint64_t failed = 0;
    Json errors = Json::object();
    for (const auto& [what, count] : out.errors) {
      failed += count;
      errors[what] = count;
    }
    all_ok = all_ok && failed == 0;
    const double gbps = static_cast<double>(out.ok * want.size()) / wall / 1e9;
    Json row = {{"kind", "get"},
                {"label", f.label},
                {"via", f.via},
                {"clients", n},
                {"requests", uint64_t{n} * f.requests},
                {"ok", out.ok},
                {"failed", failed},
                {"slowdown_retries", out.retried},
                {"payload_bytes", want.size()},
                {"wall_s", wall},
                {"cpu_s", phase_cpu},
                {"gbps", gbps},
                {"p50_s", Quantile(out.latencies_s, 0.5)},
                {"p99_s", Quantile(out.latencies_s, 0.99)},
                {"errors", errors}};
    std::cerr << fmt::format(
        "clients={:2} ok={} failed={} retried={} {:.3f} GB/s p50={:.1f} ms p99={:.1f} ms\n", n,
        out.ok, failed, out.retried, gbps, 1e3 * row["p50_s"].get<double>(),
        1e3 * row["p99_s"].get<double>());
    for (const auto& [what, count] : out.errors) {
      std::cerr << fmt::format("  {} x {}\n", count, what);
    }
    rows.push_back(row);
  }
  if (!f.json.empty()) {
    std::ofstream(f.json) << rows.dump(2) << "\n";
  }
  return all_ok ? 0 : 1;
}

template <typename T>
std::vector<T> SplitCounts(const std::string& text) {
  std::vector<T> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    out.push_back(
        static_cast<T>(std::strtoull(text.substr(pos, comma - pos).c_str(), nullptr, 10)));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--no-put") {
      f.put = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "prefix_clients_bench: " << name << " wants a value\n";
      return 2;
    }
    const std::string value = argv[++i];
    if (name == "--endpoint") {
      f.endpoints.clear();
      for (size_t pos = 0; pos <= value.size();) {
        const size_t comma = std::min(value.find(',', pos), value.size());
        f.endpoints.push_back(value.substr(pos, comma - pos));
        pos = comma + 1;
      }
    } else if (name == "--bucket") {
      f.bucket = value;
    } else if (name == "--prefix") {
      f.prefix = value;
    } else if (name == "--chunks") {
      f.chunks = std::strtoull(value.c_str(), nullptr, 10);
    } else if (name == "--layers") {
      f.layers = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (name == "--layer-bytes") {
      f.layer_bytes = std::strtoull(value.c_str(), nullptr, 10);
    } else if (name == "--clients") {
      f.clients = SplitCounts<uint32_t>(value);
    } else if (name == "--put-repeat") {
      f.put_repeat = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (name == "--requests") {
      f.requests = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (name == "--via") {
      f.via = value;
    } else if (name == "--json") {
      f.json = value;
    } else if (name == "--label") {
      f.label = value;
    } else {
      std::cerr << "prefix_clients_bench: unknown flag " << name << "\n";
      return 2;
    }
  }
  if (f.chunks == 0 || f.layers == 0 || f.layer_bytes == 0 || f.requests == 0 ||
      f.put_repeat == 0 || (f.via != "ucx" && f.via != "http") ||
      std::any_of(f.clients.begin(), f.clients.end(), [](uint32_t n) { return n == 0; }) ||
      std::any_of(f.endpoints.begin(), f.endpoints.end(),
                  [](const std::string& e) { return e.empty(); })) {
    std::cerr << "prefix_clients_bench: counts must be positive, --via ucx or http, endpoints "
                 "non-empty\n";
    return 2;
  }
  return Run(f);
}
