// Descriptor decode + validate cost (descriptor/codec.h, limits.h): what the gateway spends
// on every descriptor request before any I/O. Run:
//   build/<dir>/bench/descriptor_bench --benchmark_format=json
// Benchmarks (each at N = 16, 224 and 3584 chunks: a 256-, 3.5K- and 57K-token prefix at
// G = 16):
//   BM_DecodeValidate/<carrier>/<form>/N  DecodeHeaders or DecodeBody of an encoded
//       descriptor, then Validate; carrier = headers | body, form = compact (prefix + hex
//       hashes) | explicit (LMCache-style names, ~70 bytes each). Counters: chunks/s and the
//       encoded size in bytes. Headers are decoded with max_header_bytes raised to 1 MiB so
//       the large cases can be compared with the body; real requests that big use the body.
//   BM_Encode/<carrier>/<form>/N  the client side: EncodeHeaders or EncodeBody.
//   BM_ObjectNames/<form>/N  building all N object names one by one (Descriptor::ObjectName),
//       what the storage server does per request.
//   BM_ChunkHashes/G  rolling XXH3-128 chunk keys over a 57344-token prefix with G = 16 and
//       G = 256 (client side, chunk_key.h). Counter: tokens/s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "oc/descriptor/chunk_key.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/limits.h"

namespace {

using oc::descriptor::Descriptor;

enum Carrier : int64_t { kHeaders = 0, kBody = 1 };
enum Form : int64_t { kCompact = 0, kExplicit = 1 };

Descriptor Make(int64_t n, int64_t form) {
  const std::vector<uint32_t> tokens(static_cast<size_t>(n) * 16, 7);
  std::vector<oc::descriptor::ChunkHash> hashes =
      *oc::descriptor::ChunkHashes(tokens, 16, "oc-kv-v1;model=bench;dtype=bfloat16;tp=0/1");
  Descriptor d;
  if (form == kCompact) {
    d.keys = oc::descriptor::CompactKeys{"kv/llama-3.1-8b/", std::move(hashes)};
  } else {
    oc::descriptor::ExplicitKeys keys;
    for (const auto& h : hashes) {
      keys.names.push_back(oc::descriptor::ChunkObjectName("meta-llama/Llama-3.1-8B@1@0@", h) +
                           "@bfloat16");
    }
    d.keys = std::move(keys);
  }
  d.num_layers = 32;
  d.chunk_tokens = 16;
  d.layer_bytes = 64 << 10;
  d.target = oc::descriptor::DataPlaneTarget{};
  d.target->connection.fill(std::byte{0x5a});
  d.target->rkey.assign(120, std::byte{0xa5});
  d.target->address = 0x7f0000000000ull;
  d.target->length = uint64_t(n) * 32 * (64 << 10);
  d.compute_window_us = 600;
  d.request_id = "bench-0001";
  return d;
}

oc::descriptor::Limits BenchLimits() {
  oc::descriptor::Limits limits;
  limits.max_header_bytes = 1 << 20;
  return limits;
}

void SetLabel(benchmark::State& state) {
  state.SetLabel(std::string(state.range(1) == kBody ? "body" : "headers") + "/" +
                 (state.range(2) == kCompact ? "compact" : "explicit"));
}

void BM_DecodeValidate(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Descriptor d = Make(n, state.range(2));
  const oc::descriptor::Limits limits = BenchLimits();
  const oc::descriptor::HeaderList list = oc::descriptor::EncodeHeaders(d);
  std::vector<oc::descriptor::HeaderField> headers;
  for (const auto& [name, value] : list) {
    headers.push_back({name, value});
  }
  const std::string body = oc::descriptor::EncodeBody(d);
  const bool use_body = state.range(1) == kBody;
  for (auto _ : state) {
    oc::Result<Descriptor> r = use_body ? oc::descriptor::DecodeBody(body, limits)
                                        : oc::descriptor::DecodeHeaders(headers, limits);
    if (!r.has_value() || !oc::descriptor::Validate(*r, limits).ok()) {
      state.SkipWithError("decode or validate failed");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["encoded_bytes"] =
      static_cast<double>(use_body ? body.size() : oc::descriptor::HeaderBytes(list));
  SetLabel(state);
}

void BM_Encode(benchmark::State& state) {
  const Descriptor d = Make(state.range(0), state.range(2));
  const bool use_body = state.range(1) == kBody;
  for (auto _ : state) {
    if (use_body) {
      benchmark::DoNotOptimize(oc::descriptor::EncodeBody(d));
    } else {
      benchmark::DoNotOptimize(oc::descriptor::EncodeHeaders(d));
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  SetLabel(state);
}

void BM_ObjectNames(benchmark::State& state) {
  const Descriptor d = Make(state.range(0), state.range(1));
  for (auto _ : state) {
    for (uint64_t j = 0; j < d.num_chunks(); ++j) {
      benchmark::DoNotOptimize(d.ObjectName(j));
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel(state.range(1) == kCompact ? "compact" : "explicit");
}

void BM_ChunkHashes(benchmark::State& state) {
  const uint32_t g = static_cast<uint32_t>(state.range(0));
  std::vector<uint32_t> tokens(57344);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<uint32_t>(i * 2654435761u);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(oc::descriptor::ChunkHashes(tokens, g, "bench"));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(tokens.size()));
}

void ChunkArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "body", "explicit"});
  for (const int64_t carrier : {kHeaders, kBody}) {
    for (const int64_t form : {kCompact, kExplicit}) {
      for (const int64_t n : {16, 224, 3584}) {
        b->Args({n, carrier, form});
      }
    }
  }
}

BENCHMARK(BM_DecodeValidate)->Apply(ChunkArgs);
BENCHMARK(BM_Encode)->Apply(ChunkArgs);
BENCHMARK(BM_ObjectNames)
    ->ArgNames({"n", "explicit"})
    ->Args({3584, kCompact})
    ->Args({3584, kExplicit});
BENCHMARK(BM_ChunkHashes)->ArgName("g")->Arg(16)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
