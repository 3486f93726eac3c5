// The KV-cache subcommands of `oc` (issue 5), each a thin layer over liboc_client:
//
//   oc keys       --tokens FILE [--binary] --chunk-tokens G [namespace flags] [--prefix P]
//   oc put-chunks KEYS SHAPE --bucket B --data FILE [--via http|ucx] [--if-none-match]
//   oc get-layers KEYS SHAPE --bucket B [--out FILE] [--via ucx|http]
//   oc probe      KEYS SHAPE --bucket B
//
// Token file: whitespace-separated decimal uint32 tokens; with --binary, raw little-endian
// uint32 (4 bytes per token). Namespace flags (docs/protocol.md, chunk keys): --model ID
// (default "model"), --dtype D (default "bfloat16"), --tp RANK/SIZE (default 0/1).
// KEYS, one of: --tokens FILE (+ --chunk-tokens, namespace flags, --prefix: compact keys
// computed as `oc keys` prints them), --hashes H0,H1,... with --prefix (compact), or
// --names FILE (explicit keys, one object name per line).
// SHAPE: --layers L --layer-bytes S [--chunk-tokens G] [--layout kv_l2td|kv_2ltd]
// [--delivery layer-major|chunk-major] [--request-id ID] [--compute-window-us C].
// Connection: --endpoint URL --access-key K --secret-key S --region R, or the environment
// (OC_ENDPOINT; AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else OC_ACCESS_KEY/OC_SECRET_KEY).
//
// Output on stdout: `keys` one object name per line; `get-layers` one line per layer,
// "layer <l> <microseconds since the request started>", then one summary line
// "matched=<M> mode=<m> request_id=<id> bytes=<M·L·S> total_us=<t> gbps=<GB/s> gateway_us=..
// storage_us=.. transfer_us=.."; `put-chunks` "chunks=<N> bytes=<n> request_id=<id>", with
// --if-none-match (create-if-absent) " existing=<K>", then " put_us=<t>" (the PUT call alone,
// connection included), then with --if-none-match one line per chunk, existing or written;
// `probe` "matched=<M>" then one line per chunk: its size, or "-" when absent. Progress goes to
// stderr. Exit 0 on success, 1 on a request error (the S3 error printed), 2 on bad flags.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "oc/client/client.h"
#include "oc/common/bytes.h"
#include "oc/common/units.h"
#include "oc/descriptor/chunk_key.h"
#include "oc/descriptor/descriptor.h"
#include "oc_flags.h"
#include "oc_mapped_file.h"

namespace {

namespace client = oc::client;
namespace descriptor = oc::descriptor;
using Clock = std::chrono::steady_clock;

using Flags = oc::cli::ParsedFlags;
using oc::cli::FlagSpec;

// The flag tables (oc_flags.h): each command's rows parse its argv and print its --help.
const std::vector<FlagSpec> kNamespaceFlags = {
    {"model", "ID", "model", "model id of the chunk-key namespace (docs/protocol.md, chunk keys)"},
    {"dtype", "D", "bfloat16", "dtype of the namespace, [a-z0-9_]+"},
    {"tp", "RANK/SIZE", "0/1", "tensor-parallel rank and size of the namespace"},
    {"prefix", "P", "", "key prefix of every compact object name"},
};
const std::vector<FlagSpec> kKeyFlags = {
    {"tokens", "FILE", "", "token file: compact keys computed as `oc keys` prints them"},
    {"binary", "", "", "the token file is raw little-endian uint32, not decimal text"},
    {"hashes", "H0,H1,...", "", "compact keys given as 32-hex-digit hashes (with --prefix)"},
    {"names", "FILE", "", "explicit keys: one full object name per line"},
};
const std::vector<FlagSpec> kShapeFlags = {
    {"bucket", "B", "", "bucket of the chunks (required)"},
    {"layers", "L", "", "layers per chunk (required)"},
    {"layer-bytes", "S", "", "bytes of one layer of one chunk, K and V together (required)"},
    {"chunk-tokens", "G", "16", "tokens per chunk (required with --tokens)"},
    {"layout", "kv_l2td|kv_2ltd", "kv_l2td", "how each stored chunk object orders its bytes"},
    {"delivery", "layer-major|chunk-major", "layer-major", "how the payload is ordered"},
    {"request-id", "ID", "", "tracing id; the gateway assigns one when absent"},
    {"compute-window-us", "C", "", "per-layer compute time in microseconds (scheduler input)"},
};
const std::vector<FlagSpec> kConnectionFlags = {
    {"endpoint", "URL", "",
     "gateway, http://host:port (else $OC_ENDPOINT, else "
     "http://127.0.0.1:9000)"},
    {"access-key", "K", "", "SigV4 access key (else $AWS_ACCESS_KEY_ID or $OC_ACCESS_KEY)"},
    {"secret-key", "S", "", "SigV4 secret key (else $AWS_SECRET_ACCESS_KEY or $OC_SECRET_KEY)"},
    {"region", "R", "", "region requests are signed for (else $AWS_REGION, else us-east-1)"},
    {"timeout", "DURATION", "60s", "bound on every socket read or write and data-plane wait"},
    {"ucx-transports", "TLS", "", "UCX transports in UCX_TLS syntax (else UCX's own choice)"},
};

std::vector<FlagSpec> Concat(std::initializer_list<const std::vector<FlagSpec>*> groups,
                             std::vector<FlagSpec> own = {}) {
  std::vector<FlagSpec> out;
  for (const std::vector<FlagSpec>* g : groups) {
    out.insert(out.end(), g->begin(), g->end());
  }
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

constexpr std::string_view kKeysNotes =
    "KEYS: one of --tokens FILE (compact keys from tokens), --hashes with --prefix (compact),\n"
    "or --names FILE (explicit keys). Output on stdout as described in each command.";

const std::vector<oc::cli::CommandSpec>& Commands() {
  static const std::vector<oc::cli::CommandSpec> kCommands = {
      {"keys",
       "Prints the chunk keys (object names) of a token file, one per line.",
       "",
       Concat({&kNamespaceFlags}, {{"tokens", "FILE", "",
                                    "token file, whitespace-separated decimal uint32 "
                                    "(required)"},
                                   {"binary", "", "", "the token file is raw little-endian uint32"},
                                   {"chunk-tokens", "G", "", "tokens per chunk (required)"}}),
       {"oc keys --tokens prompt.txt --chunk-tokens 16 --model meta-llama/Llama-3.1-8B "
        "--prefix llama/"},
       ""},
      {"put-chunks",
       "Stores N chunks in one descriptor PUT; prints \"chunks=<N> bytes=<n> request_id=<id> "
       "put_us=<t>\", t the PUT call alone (request sent to answer read).",
       "",
       Concat({&kKeyFlags, &kNamespaceFlags, &kShapeFlags, &kConnectionFlags},
              {{"data", "FILE", "", "the N chunk objects back to back, chunk-major (required)"},
               {"via", "http|ucx", "http", "body in the PUT, or pulled by the server over UCX"},
               {"if-none-match", "", "",
                "create if absent: chunks already stored stay as they are (first writer wins); "
                "adds \" existing=<K>\" before put_us and one line per chunk, existing or "
                "written"}}),
       {"oc put-chunks --bucket kv --tokens prompt.txt --chunk-tokens 16 --layers 32 "
        "--layer-bytes 65536 --data chunks.bin",
        "oc put-chunks --bucket kv --tokens prompt.txt --chunk-tokens 16 --layers 32 "
        "--layer-bytes 65536 --data chunks.bin --if-none-match"},
       kKeysNotes},
      {"get-layers",
       "Descriptor GET into a buffer (UCX) or from the body (HTTP); prints \"layer <l> <us>\" "
       "per layer, then a summary line.",
       "",
       Concat({&kKeyFlags, &kNamespaceFlags, &kShapeFlags, &kConnectionFlags},
              {{"via", "ucx|http", "ucx", "data-plane target, or the HTTP response body"},
               {"out", "FILE", "", "write the N*L*S payload buffer to FILE"},
               {"quiet", "", "", "no progress lines on stderr for large requests"},
               {"buffer-bytes", "N", "", "target buffer size (tests; default N*L*S)"},
               {"repeat", "N", "1",
                "send the request N times into the same buffer; each after the first prints "
                "\"repeat <i> total_us=<wall> matched=<m> cpu_us=<process CPU> "
                "thread_cpu_us=<calling thread's CPU>\""}}),
       {"oc get-layers --bucket kv --tokens prompt.txt --chunk-tokens 16 --layers 32 "
        "--layer-bytes 65536 --out payload.bin"},
       kKeysNotes},
      {"probe",
       "How many leading chunks are present: prints \"matched=<M>\", then each chunk's size "
       "or \"-\".",
       "",
       Concat({&kKeyFlags, &kNamespaceFlags, &kShapeFlags, &kConnectionFlags}),
       {"oc probe --bucket kv --tokens prompt.txt --chunk-tokens 16 --layers 32 "
        "--layer-bytes 65536"},
       kKeysNotes},
  };
  return kCommands;
}

oc::Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return oc::Status::NotFound(oc::Subject::kNone, "cannot open " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

oc::Result<std::vector<uint32_t>> ReadTokens(const std::string& path, bool binary) {
  OC_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  std::vector<uint32_t> tokens;
  if (binary) {
    if (data.size() % 4 != 0) {
      return oc::Status::InvalidArgument("tokens", "binary token file size is not a multiple of 4");
    }
    tokens.reserve(data.size() / 4);
    for (size_t i = 0; i < data.size(); i += 4) {
      tokens.push_back(oc::GetLittleEndian32(reinterpret_cast<const std::byte*>(data.data() + i)));
    }
    return tokens;
  }
  std::istringstream in(data);
  std::string word;
  while (in >> word) {
    OC_ASSIGN_OR_RETURN(uint64_t v, oc::ParseUint64(word, "tokens"));
    if (v > UINT32_MAX) {
      return oc::Status::InvalidArgument("tokens", "token " + word + " exceeds 32 bits");
    }
    tokens.push_back(static_cast<uint32_t>(v));
  }
  return tokens;
}

oc::Result<uint64_t> Number(const Flags& f, const std::string& name, uint64_t fallback,
                            bool required) {
  const std::string* v = f.Given(name);
  if (v == nullptr) {
    if (required) {
      return oc::Status::InvalidArgument("--" + name, "is required");
    }
    return fallback;
  }
  return oc::ParseSize(*v, "--" + name);
}

oc::Result<std::vector<descriptor::ChunkHash>> HashesFromTokens(const Flags& f) {
  OC_ASSIGN_OR_RETURN(std::vector<uint32_t> tokens,
                      ReadTokens(*f.Given("tokens"), f.Switch("binary")));
  OC_ASSIGN_OR_RETURN(uint64_t g, Number(f, "chunk-tokens", 0, true));
  descriptor::KeyNamespace ns;
  ns.model_id = f.Value("model");
  ns.dtype = f.Value("dtype");
  const std::string tp = f.Value("tp");
  const size_t slash = tp.find('/');
  if (slash == std::string::npos) {
    return oc::Status::InvalidArgument("--tp", "must be RANK/SIZE");
  }
  OC_ASSIGN_OR_RETURN(uint64_t rank, oc::ParseUint64(tp.substr(0, slash), "--tp"));
  OC_ASSIGN_OR_RETURN(uint64_t size, oc::ParseUint64(tp.substr(slash + 1), "--tp"));
  ns.tp_rank = static_cast<uint32_t>(rank);
  ns.tp_size = static_cast<uint32_t>(size);
  OC_ASSIGN_OR_RETURN(std::string ns_string, descriptor::NamespaceString(ns));
  return descriptor::ChunkHashes(tokens, static_cast<uint32_t>(g), ns_string);
}

oc::Result<descriptor::Descriptor> BuildDescriptor(const Flags& f) {
  descriptor::Descriptor d;
  const std::string prefix = f.Value("prefix");
  if (f.Given("tokens") != nullptr) {
    OC_ASSIGN_OR_RETURN(std::vector<descriptor::ChunkHash> hashes, HashesFromTokens(f));
    d.keys = descriptor::CompactKeys{prefix, std::move(hashes)};
  } else if (const std::string* list = f.Given("hashes")) {
    descriptor::CompactKeys keys{prefix, {}};
    std::string_view rest = *list;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view hex = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      descriptor::ChunkHash h;
      if (hex.size() != 32 || !oc::HexDecodeTo(hex, oc::MutableByteSpan(h))) {
        return oc::Status::InvalidArgument("--hashes", "each hash is 32 hex digits");
      }
      keys.hashes.push_back(h);
    }
    d.keys = std::move(keys);
  } else if (const std::string* path = f.Given("names")) {
    OC_ASSIGN_OR_RETURN(std::string text, ReadFile(*path));
    descriptor::ExplicitKeys keys;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      if (!line.empty()) {
        keys.names.push_back(line);
      }
    }
    d.keys = std::move(keys);
  } else {
    return oc::Status::InvalidArgument("--tokens", "give --tokens, --hashes or --names");
  }
  OC_ASSIGN_OR_RETURN(uint64_t layers, Number(f, "layers", 0, true));
  OC_ASSIGN_OR_RETURN(d.layer_bytes, Number(f, "layer-bytes", 0, true));
  OC_ASSIGN_OR_RETURN(uint64_t g, oc::ParseSize(f.Value("chunk-tokens"), "--chunk-tokens"));
  if (layers > UINT32_MAX || g > UINT32_MAX) {
    return oc::Status::InvalidArgument("--layers", "out of range");
  }
  d.num_layers = static_cast<uint32_t>(layers);
  d.chunk_tokens = static_cast<uint32_t>(g);
  const std::string layout = f.Value("layout");
  if (layout == "kv_l2td") {
    d.layout = descriptor::StoredLayout::kL2TD;
  } else if (layout == "kv_2ltd") {
    d.layout = descriptor::StoredLayout::k2LTD;
  } else {
    return oc::Status::InvalidArgument("--layout", "kv_l2td or kv_2ltd");
  }
  const std::string delivery = f.Value("delivery");
  if (delivery == "layer-major") {
    d.delivery = descriptor::Delivery::kLayerMajor;
  } else if (delivery == "chunk-major") {
    d.delivery = descriptor::Delivery::kChunkMajor;
  } else {
    return oc::Status::InvalidArgument("--delivery", "layer-major or chunk-major");
  }
  d.request_id = f.Value("request-id");
  if (f.Given("compute-window-us") != nullptr) {
    OC_ASSIGN_OR_RETURN(uint64_t c, Number(f, "compute-window-us", 0, true));
    d.compute_window_us = c;
  }
  return d;
}

oc::Result<std::unique_ptr<client::Client>> OpenClient(const Flags& f) {
  client::ClientOptions options;
  client::ApplyEnvironment(&options);
  auto given_or = [&](std::string_view name, const std::string& fallback) {
    const std::string* v = f.Given(name);
    return v != nullptr ? *v : fallback;
  };
  options.endpoint = given_or("endpoint", options.endpoint);
  options.access_key = given_or("access-key", options.access_key);
  options.secret_key = given_or("secret-key", options.secret_key);
  options.region = given_or("region", options.region);
  OC_ASSIGN_OR_RETURN(std::chrono::nanoseconds ns,
                      oc::ParseDuration(f.Value("timeout"), "--timeout"));
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(ns);
  options.data_plane.transports = f.Value("ucx-transports");
  return client::Client::Open(options);
}

int Fail(const oc::Status& s, int code) {
  std::cerr << "oc: " << s.ToString() << "\n";
  return code;
}

int RunKeys(const Flags& f) {
  if (f.Given("tokens") == nullptr) {
    return Fail(oc::Status::InvalidArgument("--tokens", "is required"), 2);
  }
  oc::Result<std::vector<descriptor::ChunkHash>> hashes = HashesFromTokens(f);
  if (!hashes.has_value()) {
    return Fail(hashes.error(), 2);
  }
  const std::string prefix = f.Value("prefix");
  for (const descriptor::ChunkHash& h : *hashes) {
    std::cout << descriptor::ChunkObjectName(prefix, h) << "\n";
  }
  return 0;
}

int RunPutChunks(const Flags& f, client::Client& c, descriptor::Descriptor d,
                 const std::string& bucket) {
  d.if_none_match = f.Switch("if-none-match");
  const std::string* path = f.Given("data");
  if (path == nullptr) {
    return Fail(oc::Status::InvalidArgument("--data", "is required"), 2);
  }
  // Mapped, not read: the HTTP body goes from the page cache to the socket
  // (docs/decisions/cli-put-chunks-maps-the-file.md).
  oc::Result<oc::cli::MappedFile> file = oc::cli::MappedFile::Open(*path);
  if (!file.has_value()) {
    return Fail(file.error(), 2);
  }
  const oc::ByteSpan data = file->bytes();
  const std::string via = f.Value("via");
  oc::Result<client::PutChunksResult> r = oc::Status::Internal("unset");
  Clock::time_point put_start;  // put_us (header comment)
  if (via == "http") {
    put_start = Clock::now();
    r = c.PutChunks(bucket, d, data);
  } else if (via == "ucx") {
    oc::Result<client::DataPlane*> plane = c.data_plane();
    if (!plane.has_value()) {
      return Fail(plane.error(), 1);
    }
    // The server reads a buffer our UCX allocated in place (shared memory on one host): one
    // copy into it, as a serving node's KV pages already sit in registered memory.
    auto buffer = (*plane)->Allocate(std::max<uint64_t>(data.size(), 1));
    if (!buffer.has_value()) {
      return Fail(buffer.error(), 1);
    }
    if (!data.empty()) {
      std::memcpy((*buffer)->bytes().data(), data.data(), data.size());
    }
    put_start = Clock::now();
    r = c.PutChunks(bucket, d, **buffer);
  } else {
    return Fail(oc::Status::InvalidArgument("--via", "http or ucx"), 2);
  }
  const int64_t put_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - put_start).count();
  if (!r.has_value()) {
    return Fail(r.error(), 1);
  }
  std::cout << fmt::format("chunks={} bytes={} request_id={}", r->chunks, r->bytes, r->request_id);
  if (d.if_none_match) {
    std::cout << " existing=" << std::count(r->existed.begin(), r->existed.end(), true);
  }
  std::cout << " put_us=" << put_us << "\n";
  if (!d.if_none_match) {
    return 0;
  }
  for (const bool existed : r->existed) {
    std::cout << (existed ? "existing" : "written") << "\n";
  }
  return 0;
}

// CPU time used so far, user + system, in nanoseconds, by this process (every thread) or by
// the calling thread: the clocks Python's time.process_time() and time.thread_time() read, so
// bench/pyclient_bench.py compares like with like.
int64_t CpuNs(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) {
    return 0;
  }
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int RunGetLayers(const Flags& f, client::Client& c, const descriptor::Descriptor& d,
                 const std::string& bucket) {
  const uint64_t total = d.num_chunks() * d.num_layers * d.layer_bytes;
  const std::string via = f.Value("via");
  const bool quiet = f.Switch("quiet");
  std::mutex mu;
  std::vector<std::pair<uint32_t, int64_t>> arrivals;  // guarded by mu
  const Clock::time_point start = Clock::now();
  auto on_layer = [&](uint32_t layer) {
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    std::lock_guard lock(mu);
    arrivals.emplace_back(layer, us);
  };
  std::unique_ptr<client::TargetBuffer> target;
  std::vector<std::byte> heap;
  oc::MutableByteSpan out;
  oc::Result<client::LayerHandle> h = oc::Status::Internal("unset");
  if (via == "ucx") {
    oc::Result<client::DataPlane*> plane = c.data_plane();
    if (!plane.has_value()) {
      return Fail(plane.error(), 1);
    }
    // --target-bytes (tests): a buffer of another size than the payload, to see the server
    // refuse a target that is too small.
    oc::Result<uint64_t> size = Number(f, "buffer-bytes", total, false);
    if (!size.has_value()) {
      return Fail(size.error(), 2);
    }
    auto buffer = (*plane)->Allocate(std::max<uint64_t>(*size, 1));
    if (!buffer.has_value()) {
      return Fail(buffer.error(), 1);
    }
    target = std::move(*buffer);
    out = target->bytes();
    h = c.GetLayers(bucket, d, *target, on_layer);
  } else if (via == "http") {
    heap.resize(total);
    out = oc::MutableByteSpan(heap);
    h = c.GetLayersHttp(bucket, d, out, on_layer);
  } else {
    return Fail(oc::Status::InvalidArgument("--via", "ucx or http"), 2);
  }
  if (!h.has_value()) {
    return Fail(h.error(), 1);
  }
  // Progress on stderr for long requests: layers as they land.
  uint32_t shown = 0;
  for (uint32_t l = 0; l < d.num_layers; ++l) {
    oc::Status s = h->WaitLayer(l);
    if (!s.ok()) {
      break;  // partial hit or error: Wait() tells which
    }
    if (!quiet && total >= (64u << 20) &&
        l + 1 - shown >= std::max<uint32_t>(1, d.num_layers / 8)) {
      std::cerr << fmt::format("oc: {}/{} layers\n", l + 1, d.num_layers);
      shown = l + 1;
    }
  }
  oc::Result<client::LayersResult> r = h->Wait();
  const int64_t total_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  {
    std::lock_guard lock(mu);
    for (const auto& [layer, us] : arrivals) {
      std::cout << fmt::format("layer {} {}\n", layer, us);
    }
  }
  if (!r.has_value()) {
    std::cout.flush();
    return Fail(r.error(), 1);
  }
  const uint64_t bytes = r->summary.matched_chunks * d.num_layers * d.layer_bytes;
  if (const std::string* path = f.Given("out")) {
    std::ofstream file(*path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(total));
    if (!file) {
      return Fail(oc::Status::IOError("cannot write " + *path), 1);
    }
  }
  std::cout << fmt::format(
      "matched={} mode={} request_id={} bytes={} total_us={} gbps={:.3f} gateway_us={} "
      "storage_us={} transfer_us={} rate_gbps={} slowdown_retries={}\n",
      r->summary.matched_chunks, descriptor::ServeModeName(r->summary.mode), r->summary.request_id,
      bytes, total_us,
      total_us > 0 ? static_cast<double>(bytes) / static_cast<double>(total_us) / 1e3 : 0.0,
      r->summary.gateway_us.value_or(0), r->summary.storage_us.value_or(0),
      r->summary.transfer_us.value_or(0), r->assigned_rate_gbps, c.slowdown_retries());
  // --repeat N: N-1 more requests into the same buffer, in this process (connections, data
  // plane and buffer warm), each timed from the call to the end of Wait(), layers waited in
  // order: "repeat <i> total_us=<t> matched=<m> cpu_us=<c> thread_cpu_us=<ct>", c being the CPU
  // time of the whole process over that request (every thread: the caller, the HTTP I/O and
  // UCX progress threads), ct that of the calling thread alone (what bench/pyclient_bench.py
  // compares).
  oc::Result<uint64_t> repeat = oc::ParseSize(f.Value("repeat"), "--repeat");
  if (!repeat.has_value()) {
    return Fail(repeat.error(), 2);
  }
  h = oc::Status::Cancelled("ended");  // frees the target's address for the next request
  for (uint64_t i = 1; i < *repeat; ++i) {
    const Clock::time_point t0 = Clock::now();
    const int64_t cpu0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
    const int64_t thread_cpu0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    oc::Result<client::LayerHandle> again =
        via == "ucx" ? c.GetLayers(bucket, d, *target) : c.GetLayersHttp(bucket, d, out);
    if (!again.has_value()) {
      return Fail(again.error(), 1);
    }
    for (uint32_t l = 0; l < d.num_layers && again->WaitLayer(l).ok(); ++l) {
    }
    oc::Result<client::LayersResult> done = again->Wait();
    if (!done.has_value()) {
      return Fail(done.error(), 1);
    }
    const uint64_t matched = done->summary.matched_chunks;
    // Freed inside the timed span, as Python's Transfer.wait() releases its handle.
    again = oc::Status::Cancelled("ended");
    done = oc::Status::Cancelled("ended");
    const int64_t thread_cpu_ns = CpuNs(CLOCK_THREAD_CPUTIME_ID) - thread_cpu0;
    const int64_t cpu_ns = CpuNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    std::cout << fmt::format(
        "repeat {} total_us={} matched={} cpu_us={:.1f} thread_cpu_us={:.1f}\n", i, us, matched,
        static_cast<double>(cpu_ns) / 1e3, static_cast<double>(thread_cpu_ns) / 1e3);
  }
  return 0;
}

int RunProbe(client::Client& c, const descriptor::Descriptor& d, const std::string& bucket) {
  oc::Result<client::ProbeResult> r = c.ProbeChunks(bucket, d);
  if (!r.has_value()) {
    return Fail(r.error(), 1);
  }
  std::cout << "matched=" << r->matched << "\n";
  for (const auto& size : r->sizes) {
    std::cout << (size ? std::to_string(*size) : std::string("-")) << "\n";
  }
  return 0;
}

}  // namespace

// argv[0] is the subcommand name: keys, put-chunks, get-layers or probe.
int RunKvCommand(int argc, char** argv) {
  const std::string_view command = argv[0];
  const oc::cli::CommandSpec* spec = nullptr;
  for (const oc::cli::CommandSpec& c : Commands()) {
    if (c.name == command) {
      spec = &c;
    }
  }
  if (spec == nullptr) {
    std::cerr << "oc: unknown command\n";
    return 2;
  }
  oc::Result<Flags> flags = oc::cli::ParseFlags(*spec, argc, argv);
  if (!flags.has_value()) {
    return Fail(flags.error(), 2);
  }
  const Flags& f = *flags;
  if (f.help()) {
    std::cout << oc::cli::HelpText(*spec);
    return 0;
  }
  if (command == "keys") {
    return RunKeys(f);
  }
  const std::string* bucket = f.Given("bucket");
  if (bucket == nullptr) {
    return Fail(oc::Status::InvalidArgument("--bucket", "is required"), 2);
  }
  oc::Result<descriptor::Descriptor> d = BuildDescriptor(f);
  if (!d.has_value()) {
    return Fail(d.error(), 2);
  }
  oc::Result<std::unique_ptr<client::Client>> c = OpenClient(f);
  if (!c.has_value()) {
    return Fail(c.error(), 2);
  }
  if (command == "put-chunks") {
    return RunPutChunks(f, **c, *d, *bucket);
  }
  if (command == "get-layers") {
    return RunGetLayers(f, **c, *d, *bucket);
  }
  if (command == "probe") {
    return RunProbe(**c, *d, *bucket);
  }
  std::cerr << "oc: unknown command\n";
  return 2;
}
