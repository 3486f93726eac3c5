// The churn workload's generator (workload.h).
#include "workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace oc::bench::churn {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser: the stand-in for XXH3 of a prefix
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Zipf {
 public:
  Zipf(uint32_t n, double s) : cdf_(n) {
    double sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
      sum += 1.0 / std::pow(i + 1.0, s);
      cdf_[i] = sum;
    }
    for (double& c : cdf_) {
      c /= sum;
    }
  }
  uint32_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<uint32_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

class Builder {
 public:
  explicit Builder(Trace& trace) : trace_(trace) {}

  // The chunk that follows `parent` with content `content` (one trie edge).
  uint32_t Child(uint32_t parent, uint64_t content, uint32_t bytes) {
    const uint64_t parent_hash = parent == kRoot ? 0x51ED270Bull : hashes_[parent];
    const uint64_t h = Mix(parent_hash ^ Mix(content));
    auto [it, fresh] = ids_.try_emplace(h, static_cast<uint32_t>(trace_.chunks.size()));
    if (fresh) {
      char hex[40];
      std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(h),
                    static_cast<unsigned long long>(Mix(h)));
      const uint16_t depth = parent == kRoot ? 0 : trace_.chunks[parent].depth + 1;
      trace_.chunks.push_back({parent, depth, bytes, std::string("kv/") + hex});
      hashes_.push_back(h);
    }
    return it->second;
  }

 private:
  Trace& trace_;
  std::vector<uint64_t> hashes_;
  std::unordered_map<uint64_t, uint32_t> ids_;
};

struct Conversation {
  uint32_t tenant;
  std::vector<uint64_t> contents;  // the history, as chunk contents
};

}  // namespace

Trace Generate(const WorkloadOptions& o) {
  Trace trace;
  Builder builder(trace);
  std::mt19937_64 rng(o.seed);
  auto uniform = [&rng](uint32_t lo, uint32_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  const uint32_t chunk_bytes[3] = {256u << 10, 512u << 10, 1u << 20};
  const Zipf doc_rank(o.documents, o.zipf);
  const Zipf prompt_rank(o.prompts_per_tenant, o.zipf);
  uint64_t next_content = 1;
  // Contents: a system prompt version and a document are fixed sequences of chunk contents.
  std::vector<std::vector<std::vector<uint64_t>>> prompts(o.tenants);
  auto new_sequence = [&](uint32_t lo, uint32_t hi) {
    std::vector<uint64_t> seq(uniform(lo, hi));
    for (uint64_t& c : seq) {
      c = next_content++;
    }
    return seq;
  };
  for (auto& p : prompts) {
    for (uint32_t i = 0; i < o.prompts_per_tenant; ++i) {
      p.push_back(new_sequence(2, 6));
    }
  }
  std::vector<std::vector<uint64_t>> documents;
  std::vector<uint32_t> ranking(o.documents);
  for (uint32_t r = 0; r < o.documents; ++r) {
    documents.push_back(new_sequence(4, 24));
    ranking[r] = r;
  }
  std::vector<Conversation> conversations;
  trace.period_requests = std::max<uint32_t>(1, o.requests / std::max<uint32_t>(1, o.periods));
  trace.path_offsets.push_back(0);
  std::vector<uint64_t> contents;
  for (uint32_t r = 0; r < o.requests; ++r) {
    if (r > 0 && r % trace.period_requests == 0) {  // drift: new documents, a new prompt
      const auto n = static_cast<uint32_t>(o.new_documents * o.documents);
      for (uint32_t i = 0; i < n; ++i) {
        documents.push_back(new_sequence(4, 24));
        ranking[uniform(0, o.documents - 1)] = static_cast<uint32_t>(documents.size() - 1);
      }
      const uint32_t t = uniform(0, o.tenants - 1);
      prompts[t][prompt_rank(rng)] = new_sequence(2, 6);
    }
    contents.clear();
    uint32_t tenant;
    const bool conversation =
        std::uniform_real_distribution<double>(0, 1)(rng) < o.conversation_share;
    if (conversation) {
      const bool start = conversations.size() < o.active_conversations && uniform(0, 9) < 3;
      if (start || conversations.empty()) {
        Conversation c{uniform(0, o.tenants - 1), {}};
        c.contents = prompts[c.tenant][prompt_rank(rng)];
        if (uniform(0, 9) < 3) {
          const auto& doc = documents[ranking[doc_rank(rng)]];
          c.contents.insert(c.contents.end(), doc.begin(), doc.end());
        }
        conversations.push_back(std::move(c));
      }
      const size_t pick = start ? conversations.size() - 1 : uniform(0, conversations.size() - 1);
      Conversation& c = conversations[pick];
      const std::vector<uint64_t> turn = new_sequence(2, 4);
      c.contents.insert(c.contents.end(), turn.begin(), turn.end());
      tenant = c.tenant;
      contents = c.contents;
      if (uniform(0, 5) == 0) {  // the conversation ends
        conversations[pick] = std::move(conversations.back());
        conversations.pop_back();
      }
    } else {
      tenant = uniform(0, o.tenants - 1);
      contents = prompts[tenant][prompt_rank(rng)];
      const auto& doc = documents[ranking[doc_rank(rng)]];
      contents.insert(contents.end(), doc.begin(), doc.end());
      const std::vector<uint64_t> question = new_sequence(1, 2);
      contents.insert(contents.end(), question.begin(), question.end());
    }
    uint32_t parent = kRoot;
    for (uint64_t content : contents) {
      parent = builder.Child(parent, content * 64 + tenant, chunk_bytes[tenant % 3]);
      trace.path_ids.push_back(parent);
    }
    trace.path_offsets.push_back(static_cast<uint32_t>(trace.path_ids.size()));
  }
  // Footprint and working set (distinct bytes per period, mean over the periods).
  trace.asked_chunks = trace.path_ids.size();
  std::vector<uint32_t> seen_in(trace.chunks.size(), kRoot);
  std::vector<bool> seen(trace.chunks.size(), false);
  uint64_t window_sum = 0;
  uint32_t windows = 0;
  uint64_t window = 0;
  for (uint32_t r = 0; r < o.requests; ++r) {
    const uint32_t period = r / trace.period_requests;
    for (uint32_t i = trace.path_offsets[r]; i < trace.path_offsets[r + 1]; ++i) {
      const uint32_t c = trace.path_ids[i];
      if (!seen[c]) {
        seen[c] = true;
        trace.footprint_bytes += trace.chunks[c].bytes;
      }
      if (seen_in[c] != period) {
        seen_in[c] = period;
        window += trace.chunks[c].bytes;
      }
    }
    if ((r + 1) % trace.period_requests == 0 || r + 1 == o.requests) {
      window_sum += window;
      ++windows;
      window = 0;
    }
  }
  trace.working_set_bytes = windows == 0 ? 0 : window_sum / windows;
  return trace;
}

}  // namespace oc::bench::churn
