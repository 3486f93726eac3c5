// `oc schedule`: what would the scheduler do? Reads a JSON array of layerwise requests and prints
// the rate each policy gives them under a cap (issue 6; docs/design.md: Scheduler).
//
//   oc schedule --policy P --cap-gbps B [--margin-gbps D] REQUESTS.json
//   oc schedule --config conf/scheduler.toml [--policy P ...] REQUESTS.json
//
// --config reads policy, cap_gbps and margin_gbps from the file's [scheduler] table (other tables
// are ignored); flags override it (precedence default < file < flag).
//
// REQUESTS.json (or - for stdin): [{"id": "a", "layer_bytes": s, "compute_us": c}, ...] with s in
// bytes (a non-negative integer), c in microseconds (a non-negative number; 0 = no compute window,
// the request can absorb the whole cap) and an optional "total_bytes" (W, kv-prop's weight;
// default layer_bytes, i.e. all requests have the same layer count).
// Output: {"policy": P, "cap_gbps": B, "rates_gbps": {"a": r, ...}} in input order, rates in Gbps
// (10^9 bit/s) rounded to 1e-6; with --policy all, an array of one such object per policy. Errors
// print one line on stderr: exit 2 for bad flags, 1 for bad input.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "oc/common/config.h"
#include "oc/common/result.h"
#include "oc/sched/allocator.h"
#include "oc/sched/options.h"
#include "oc/sched/policy.h"
#include "oc_flags.h"

namespace {

namespace sched = oc::sched;
using Json = nlohmann::ordered_json;

// Input files above this are refused before reading: a request list is a few KiB.
constexpr std::streamoff kMaxInputBytes = 64 << 20;
// Output rates are rounded to this many Gbps (1 kbit/s) so hand-computed figures print cleanly.
constexpr double kRateResolutionGbps = 1e-6;

// The flag table (oc_flags.h): it parses argv and prints --help.
const oc::cli::CommandSpec& Spec() {
  static const oc::cli::CommandSpec kSpec = {
      "schedule",
      "Prints the rate each bandwidth policy gives a set of layerwise requests under a cap.",
      "REQUESTS.json",
      {{"policy", "P", "",
        "equal | kv-prop | bw-prop | stall-opt | cal-stall-opt | shortest-first | all "
        "(required unless --config)"},
       {"cap-gbps", "B", "", "the shared cap, Gbps (10^9 bit/s) (required unless --config)"},
       {"margin-gbps", "D", "5", "cal-stall-opt's margin, Gbps"},
       {"config", "FILE", "",
        "a config whose [scheduler] table supplies P, B and D unless "
        "flags give them"}},
      {"oc schedule --policy all --cap-gbps 100 requests.json",
       "echo '[{\"id\": \"a\", \"layer_bytes\": 1048576, \"compute_us\": 8800}]' | "
       "oc schedule --policy stall-opt --cap-gbps 100 -"},
      "REQUESTS.json (- for stdin): [{\"id\": \"a\", \"layer_bytes\": 1048576, "
      "\"compute_us\": 8800}, ...];\noptional \"total_bytes\" per request (kv-prop's weight). "
      "Output: JSON rates in Gbps."};
  return kSpec;
}

struct Flags {
  std::vector<sched::Policy> policies;
  bool all = false;
  double cap_gbps = -1;
  double margin_gbps = sched::SchedulerOptions{}.margin_gbps;
  std::string input;
  std::string config;
  bool have_policy = false;
  bool have_cap = false;
  bool have_margin = false;
};

struct Request {
  std::string id;
  sched::Demand demand;
};

oc::Result<double> ParseGbps(std::string_view flag, std::string_view text) {
  double v = 0;
  const std::string s(text);
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) {
    return oc::Status::InvalidArgument(std::string(flag),
                                       fmt::format("{} wants a number >= 0, got '{}'", flag, text));
  }
  return v;
}

oc::Result<Flags> ParseFlags(const oc::cli::ParsedFlags& parsed) {
  Flags f;
  if (parsed.positional().size() > 1) {
    return oc::Status::InvalidArgument("input", "more than one REQUESTS.json given");
  }
  if (!parsed.positional().empty()) {
    f.input = parsed.positional().front();
  }
  if (const std::string* value = parsed.Given("policy")) {
    f.have_policy = true;
    if (*value == "all") {
      f.all = true;
      f.policies.assign(sched::kAllPolicies.begin(), sched::kAllPolicies.end());
    } else {
      OC_ASSIGN_OR_RETURN(sched::Policy p, sched::ParsePolicy(*value));
      f.policies = {p};
    }
  }
  if (const std::string* value = parsed.Given("cap-gbps")) {
    OC_ASSIGN_OR_RETURN(f.cap_gbps, ParseGbps("--cap-gbps", *value));
    f.have_cap = true;
  }
  OC_ASSIGN_OR_RETURN(f.margin_gbps, ParseGbps("--margin-gbps", parsed.Value("margin-gbps")));
  f.have_margin = parsed.Given("margin-gbps") != nullptr;
  f.config = parsed.Value("config");
  if (f.config.empty() && !f.have_policy) {
    return oc::Status::InvalidArgument("--policy", "--policy (or --config) is required");
  }
  if (f.config.empty() && !f.have_cap) {
    return oc::Status::InvalidArgument("--cap-gbps", "--cap-gbps (or --config) is required");
  }
  if (f.input.empty()) {
    return oc::Status::InvalidArgument("input", "REQUESTS.json is required (- for stdin)");
  }
  return f;
}

// Fills what the flags left unset from the config's [scheduler] table.
oc::Status ApplyConfigFile(Flags* f) {
  if (f->config.empty()) {
    return oc::Status::Ok();
  }
  OC_ASSIGN_OR_RETURN(oc::Config config, oc::Config::LoadFile(f->config));
  sched::SchedulerOptions options;
  oc::Status s = sched::ApplyConfig(config, &options);
  if (!s.ok()) {
    return oc::Status::InvalidArgument(
        "config", fmt::format("{}: {}: {}", f->config, s.field(), s.message()));
  }
  if (!f->have_policy) {
    f->policies = {options.policy};
  }
  if (!f->have_cap) {
    f->cap_gbps = options.cap_gbps;
  }
  if (!f->have_margin) {
    f->margin_gbps = options.margin_gbps;
  }
  return oc::Status::Ok();
}

oc::Result<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    std::string text;
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) {
      text.append(buf, n);
      if (static_cast<std::streamoff>(text.size()) > kMaxInputBytes) {
        return oc::Status::InvalidArgument("input", "stdin: more than 64 MiB");
      }
    }
    return text;
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return oc::Status::IOError(fmt::format("{}: cannot open", path));
  }
  const std::streamoff size = in.tellg();
  if (size < 0 || size > kMaxInputBytes) {
    return oc::Status::InvalidArgument("input", fmt::format("{}: larger than 64 MiB", path));
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), size)) {
    return oc::Status::IOError(fmt::format("{}: read failed", path));
  }
  return text;
}

oc::Status BadRequest(size_t index, std::string_view what) {
  return oc::Status::InvalidArgument("requests", fmt::format("request {}: {}", index, what));
}

// A non-negative JSON integer.
bool GetCount(const Json& v, uint64_t* out) {
  if (!v.is_number_unsigned()) {
    return false;
  }
  *out = v.get<uint64_t>();
  return true;
}

oc::Result<std::vector<Request>> ParseRequests(const std::string& text) {
  Json doc;
  try {  // nlohmann's parser reports positions only by exception; contained here
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return oc::Status::InvalidArgument("requests", fmt::format("not JSON: {}", e.what()));
  }
  if (!doc.is_array()) {
    return oc::Status::InvalidArgument("requests", "want a JSON array of requests");
  }
  std::vector<Request> out;
  std::set<std::string> ids;
  for (size_t i = 0; i < doc.size(); ++i) {
    const Json& r = doc[i];
    if (!r.is_object()) {
      return BadRequest(i, "not an object");
    }
    Request req;
    bool has_id = false, has_bytes = false, has_compute = false, has_total = false;
    for (const auto& [key, v] : r.items()) {
      if (key == "id") {
        if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
          return BadRequest(i, "id must be a non-empty string");
        }
        req.id = v.get<std::string>();
        has_id = true;
      } else if (key == "layer_bytes") {
        if (!GetCount(v, &req.demand.layer_bytes)) {
          return BadRequest(i, "layer_bytes must be a non-negative integer (bytes)");
        }
        has_bytes = true;
      } else if (key == "compute_us") {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
          return BadRequest(i, "compute_us must be a non-negative number (microseconds)");
        }
        req.demand.compute_us = v.get<double>();
        has_compute = true;
      } else if (key == "total_bytes") {
        if (!GetCount(v, &req.demand.total_bytes)) {
          return BadRequest(i, "total_bytes must be a non-negative integer (bytes)");
        }
        has_total = true;
      } else {
        return BadRequest(i, fmt::format("unknown field '{}'", key));
      }
    }
    if (!has_id || !has_bytes || !has_compute) {
      return BadRequest(i, "needs id, layer_bytes and compute_us");
    }
    if (!ids.insert(req.id).second) {
      return BadRequest(i, fmt::format("duplicate id '{}'", req.id));
    }
    if (!has_total) {
      req.demand.total_bytes = req.demand.layer_bytes;
    }
    out.push_back(std::move(req));
  }
  return out;
}

double RoundGbps(double gbps) {
  return std::round(gbps / kRateResolutionGbps) * kRateResolutionGbps;
}

oc::Result<Json> Schedule(sched::Policy policy, const std::vector<Request>& requests,
                          const Flags& flags) {
  std::vector<sched::Demand> demands;
  demands.reserve(requests.size());
  for (const Request& r : requests) {
    demands.push_back(r.demand);
  }
  OC_ASSIGN_OR_RETURN(std::vector<double> rates,
                      sched::Allocate(policy, demands, sched::GbpsToBytesPerSec(flags.cap_gbps),
                                      sched::GbpsToBytesPerSec(flags.margin_gbps)));
  Json out = Json::object();
  out["policy"] = std::string(sched::PolicyName(policy));
  out["cap_gbps"] = flags.cap_gbps;
  Json by_id = Json::object();
  for (size_t i = 0; i < requests.size(); ++i) {
    by_id[requests[i].id] = RoundGbps(sched::BytesPerSecToGbps(rates[i]));
  }
  out["rates_gbps"] = std::move(by_id);
  return out;
}

int Fail(int code, const oc::Status& status) {
  std::string msg(status.message());
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  std::cerr << "oc schedule: " << msg << "\n";
  return code;
}

}  // namespace

int RunScheduleCommand(int argc, char** argv) {
  oc::Result<oc::cli::ParsedFlags> parsed = oc::cli::ParseFlags(Spec(), argc, argv);
  if (parsed.has_value() && parsed->help()) {
    std::cout << oc::cli::HelpText(Spec());
    return 0;
  }
  oc::Result<Flags> flags =
      parsed.has_value() ? ParseFlags(*parsed) : oc::Result<Flags>(parsed.error());
  if (!flags.has_value()) {
    std::cerr << "oc schedule: " << flags.error().message() << " (oc schedule --help)\n";
    return 2;
  }
  if (oc::Status s = ApplyConfigFile(&*flags); !s.ok()) {
    return Fail(1, s);
  }
  oc::Result<std::string> text = ReadInput(flags->input);
  if (!text.has_value()) {
    return Fail(1, text.error());
  }
  oc::Result<std::vector<Request>> requests = ParseRequests(*text);
  if (!requests.has_value()) {
    return Fail(1, requests.error());
  }
  Json out = flags->all ? Json::array() : Json();
  for (sched::Policy p : flags->policies) {
    oc::Result<Json> one = Schedule(p, *requests, *flags);
    if (!one.has_value()) {
      return Fail(1, one.error());
    }
    if (flags->all) {
      out.push_back(std::move(*one));
    } else {
      out = std::move(*one);
    }
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
