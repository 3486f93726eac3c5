#pragma once
// The churn benchmark's synthetic multi-tenant prefix workload (bench/cache_churn/main.cc):
// a trace of requests, each the ordered chunk chain of one prompt prefix, generated from a seed.
//
// Tenants each have a few system prompts (new versions appear as the run drifts) and their own
// chunk size (a model of their own). Requests are document questions (system prompt, a
// document drawn by Zipf popularity from a ranking that drifts: new documents enter at random
// ranks each period, then a question of 1-2 chunks nobody asks again) or conversation turns
// (system prompt, sometimes a document, then the whole history so far plus 2-4 new chunks;
// conversations end after ~6 turns on average). Chunks are nodes of one global trie, so equal
// prefixes share chunks exactly as hash-chained keys do (docs/protocol.md, "Chunk keys").
#include <cstdint>
#include <string>
#include <vector>

namespace oc::bench::churn {

struct WorkloadOptions {
  uint64_t seed = 1;
  uint32_t requests = 40000;
  uint32_t tenants = 8;
  uint32_t prompts_per_tenant = 3;
  uint32_t documents = 600;     // documents ranked at any time
  double zipf = 0.9;            // document and prompt popularity exponent
  uint32_t periods = 10;        // drift periods over the run
  double new_documents = 0.15;  // share of ranks that get a new document per period
  double conversation_share = 0.55;
  uint32_t active_conversations = 300;
  uint32_t tokens_per_chunk = 256;
};

struct Chunk {
  uint32_t parent;  // kRoot for a chain's first chunk
  uint16_t depth;
  uint32_t bytes;
  std::string key;  // "kv/" + 32 hex digits, as a client's hash-chained key
};
inline constexpr uint32_t kRoot = 0xFFFFFFFFu;

struct Trace {
  std::vector<Chunk> chunks;           // every chunk the trace names, by id
  std::vector<uint32_t> path_offsets;  // request r asks path_ids[offsets[r] .. offsets[r+1])
  std::vector<uint32_t> path_ids;
  uint32_t period_requests = 0;    // requests per drift period
  uint64_t footprint_bytes = 0;    // distinct bytes the whole trace asks for
  uint64_t working_set_bytes = 0;  // distinct bytes asked within one period, mean
  uint64_t asked_chunks = 0;
};

Trace Generate(const WorkloadOptions& options);

}  // namespace oc::bench::churn
