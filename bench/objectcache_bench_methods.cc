// objectcache_bench's measurements: objectcache_bench_methods.h.
#include "objectcache_bench_methods.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <tuple>

#include <unistd.h>

#include <fmt/core.h>

namespace oc::bench::objectcache {
namespace {

// Chunks per descriptor PUT: the whole descriptor travels in headers (docs/protocol.md).
constexpr uint64_t kPutBatchChunks = 128;
// Bytes per descriptor PUT body at most.
constexpr uint64_t kPutBatchBytes = 256ull << 20;

// Times one descriptor GET that `start` begins with the given layer callback: total time, time
// to the first layer-ready (chunkwise: the whole request) and the mode served. A partial hit
// is an error: the benchmark's store holds every chunk it asks for.
oc::Result<Measure> TimeGet(
    const descriptor::Descriptor& d,
    const std::function<oc::Result<client::LayerHandle>(client::LayerCallback)>& start) {
  std::atomic<int64_t> first_ns{-1};
  const Clock::time_point t0 = Clock::now();
  OC_ASSIGN_OR_RETURN(client::LayerHandle h, start([&](uint32_t) {
                        int64_t expected = -1;
                        first_ns.compare_exchange_strong(expected, (Clock::now() - t0).count());
                      }));
  OC_ASSIGN_OR_RETURN(client::LayersResult r, h.Wait());
  Measure m;
  m.total_s = Seconds(Clock::now() - t0);
  m.ttfl_s = first_ns.load() < 0 ? m.total_s : static_cast<double>(first_ns.load()) / 1e9;
  m.mode = std::string(descriptor::ServeModeName(r.summary.mode));
  if (r.summary.matched_chunks != d.num_chunks()) {
    return oc::Status::Internal(
        fmt::format("matched {} of {}", r.summary.matched_chunks, d.num_chunks()));
  }
  return m;
}

// Runs work(i) for i in [0, n) on `concurrency` threads (the caller's included), each taking
// the next index; the first error stops the rest and is returned.
oc::Status ParallelFor(uint64_t n, uint32_t concurrency,
                       const std::function<oc::Status(uint64_t)>& work) {
  std::atomic<uint64_t> next{0};
  std::mutex error_mu;
  oc::Status error;
  auto loop = [&] {
    for (uint64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      if (oc::Status s = work(i); !s.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) {
          error = s;
        }
        next.store(n);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 1; t < concurrency; ++t) {
    threads.emplace_back(loop);
  }
  loop();
  for (std::thread& t : threads) {
    t.join();
  }
  return error;
}

}  // namespace

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

namespace {

// CPU seconds (utime + stime) and minor page faults of a process (0: this one), or -1 each.
std::pair<double, double> ProcessCounters(int pid) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/stat") : fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) {
    return {-1, -1};
  }
  std::vector<std::string> fields;
  size_t pos = paren + 1;
  while (fields.size() < 13 && pos < text.size()) {
    const size_t start = text.find_first_not_of(' ', pos);
    if (start == std::string::npos) {
      break;
    }
    const size_t end = text.find(' ', start);
    fields.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    pos = end == std::string::npos ? text.size() : end;
  }
  if (fields.size() < 13) {  // [7] minflt, [11] utime, [12] stime (stat fields 10, 14, 15)
    return {-1, -1};
  }
  const auto field = [&](size_t i) {
    return static_cast<double>(std::strtoull(fields[i].c_str(), nullptr, 10));
  };
  return {(field(11) + field(12)) / static_cast<double>(sysconf(_SC_CLK_TCK)), field(7)};
}

}  // namespace

CpuMeter::CpuMeter(const std::vector<std::pair<std::string, int>>& pids) : pids_(pids) {
  pids_.emplace_back("client", 0);
}

std::vector<double> CpuMeter::Sample() const {
  std::vector<double> v(2 * pids_.size());
  for (size_t i = 0; i < pids_.size(); ++i) {
    std::tie(v[i], v[pids_.size() + i]) = ProcessCounters(pids_[i].second);
  }
  return v;
}

void CpuMeter::Add(const std::vector<double>& before, Json* cpu_total, Json* faults_total) const {
  const std::vector<double> after = Sample();
  const auto add = [&](size_t i, const std::string& name, Json* total) {
    const double d = before[i] < 0 || after[i] < 0 ? 0 : after[i] - before[i];
    (*total)[name] = (total->contains(name) ? (*total)[name].get<double>() : 0.0) + d;
  };
  for (size_t i = 0; i < pids_.size(); ++i) {
    add(i, pids_[i].first, cpu_total);
    add(pids_.size() + i, pids_[i].first, faults_total);
  }
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

descriptor::Descriptor MakeDescriptor(uint64_t g, uint64_t first, uint64_t count) {
  descriptor::CompactKeys keys;
  keys.prefix = fmt::format("bench/g{}/", g);
  for (uint64_t j = first; j < first + count; ++j) {
    descriptor::ChunkHash h{};
    for (int b = 0; b < 8; ++b) {
      h[15 - b] = static_cast<std::byte>((j >> (8 * b)) & 0xff);
    }
    h[0] = static_cast<std::byte>(g & 0xff);
    keys.hashes.push_back(h);
  }
  descriptor::Descriptor d;
  d.keys = std::move(keys);
  d.num_layers = kLayers;
  d.chunk_tokens = static_cast<uint32_t>(g);
  d.layer_bytes = kBytesPerTokenLayer * g;
  return d;
}

oc::Result<Measure> RunUcx(client::Client& c, const std::string& bucket,
                           const descriptor::Descriptor& d, const client::TargetBuffer& buf) {
  return TimeGet(d, [&](client::LayerCallback on_layer) {
    return c.GetLayers(bucket, d, buf, std::move(on_layer));
  });
}

oc::Result<Measure> RunHttpBody(client::Client& c, const std::string& bucket,
                                const descriptor::Descriptor& d, oc::MutableByteSpan out) {
  return TimeGet(d, [&](client::LayerCallback on_layer) {
    return c.GetLayersHttp(bucket, d, out, std::move(on_layer));
  });
}

oc::Result<Measure> RunObjects(client::Client& c, const std::string& bucket,
                               const descriptor::Descriptor& d, oc::MutableByteSpan out,
                               uint32_t concurrency) {
  const uint64_t object = uint64_t{d.num_layers} * d.layer_bytes;
  const Clock::time_point start = Clock::now();
  OC_RETURN_IF_ERROR(ParallelFor(d.num_chunks(), concurrency, [&](uint64_t j) -> oc::Status {
    OC_ASSIGN_OR_RETURN(uint64_t n,
                        c.GetObject(bucket, d.ObjectName(j), out.subspan(j * object, object)));
    return n == object ? oc::Status::Ok() : oc::Status::Internal("short object");
  }));
  Measure m;
  m.total_s = Seconds(Clock::now() - start);
  m.ttfl_s = m.total_s;
  m.mode = "-";
  return m;
}

oc::Result<Measure> RunRanges(client::Client& c, const std::string& bucket,
                              const descriptor::Descriptor& d, oc::MutableByteSpan out,
                              uint32_t concurrency) {
  const uint64_t s = d.layer_bytes;
  const uint64_t n = d.num_chunks();
  const uint64_t total = n * d.num_layers;
  std::vector<std::string> names;
  for (uint64_t j = 0; j < n; ++j) {
    names.push_back(d.ObjectName(j));
  }
  std::atomic<uint64_t> layer0_left{n};
  std::atomic<int64_t> first_ns{-1};
  const Clock::time_point start = Clock::now();
  OC_RETURN_IF_ERROR(ParallelFor(total, concurrency, [&](uint64_t i) -> oc::Status {
    const uint64_t l = i / n;
    const uint64_t j = i % n;
    OC_ASSIGN_OR_RETURN(uint64_t got,
                        c.GetObject(bucket, names[j], out.subspan(i * s, s), l * s, s));
    if (got != s) {
      return oc::Status::Internal("short range");
    }
    if (l == 0 && layer0_left.fetch_sub(1) == 1) {
      first_ns.store((Clock::now() - start).count());
    }
    return oc::Status::Ok();
  }));
  Measure m;
  m.total_s = Seconds(Clock::now() - start);
  m.ttfl_s = static_cast<double>(first_ns.load()) / 1e9;
  m.mode = "-";
  return m;
}

PutBuffers::PutBuffers(const Flags& f, uint64_t g, uint64_t count) {
  const uint64_t object = kLayers * kBytesPerTokenLayer * g;
  uint64_t bytes = object;
  uint64_t senders = f.put_concurrency;
  if (f.put_mode != "object") {
    batch_chunks = std::max<uint64_t>(1, std::min(kPutBatchChunks, kPutBatchBytes / object));
    bytes = batch_chunks * object;
    senders = std::min<uint64_t>(f.desc_put_concurrency, (count + batch_chunks - 1) / batch_chunks);
  }
  for (uint64_t t = 0; t < std::max<uint64_t>(1, senders); ++t) {
    per_sender.emplace_back(bytes, std::byte{0});  // zeroed: every page touched now
  }
}

oc::Status Store(client::Client& c, const Flags& f, uint64_t g, uint64_t count,
                 PutBuffers& buffers) {
  const uint64_t object = kLayers * kBytesPerTokenLayer * g;
  const bool by_object = f.put_mode == "object";
  const uint64_t batch = by_object ? 1 : buffers.batch_chunks;
  const uint64_t batches = (count + batch - 1) / batch;
  // Each sender thread fills its own buffer and takes the next batch (one chunk per S3 PUT).
  std::atomic<uint64_t> next{0};
  std::mutex error_mu;
  oc::Status error;
  auto sender = [&](std::vector<std::byte>& data) {
    for (uint64_t b = next.fetch_add(1); b < batches; b = next.fetch_add(1)) {
      const uint64_t first = b * batch;
      const uint64_t n = std::min(batch, count - first);
      for (uint64_t j = 0; j < n; ++j) {
        std::memset(data.data() + j * object, static_cast<int>((first + j + g) & 0xff), object);
      }
      oc::Status s = by_object ? c.PutObject(f.bucket, MakeDescriptor(g, first, 1).ObjectName(0),
                                             oc::ByteSpan(data.data(), object))
                               : c.PutChunks(f.bucket, MakeDescriptor(g, first, n),
                                             oc::ByteSpan(data.data(), n * object))
                                     .status();
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) {
          error = s;
        }
        next.store(batches);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < buffers.per_sender.size(); ++t) {
    threads.emplace_back(sender, std::ref(buffers.per_sender[t]));
  }
  sender(buffers.per_sender[0]);
  for (std::thread& t : threads) {
    t.join();
  }
  return error;
}

}  // namespace oc::bench::objectcache
