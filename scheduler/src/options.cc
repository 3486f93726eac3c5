#include "oc/sched/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/core.h>

#include "oc/common/config_table.h"
#include "oc/common/text.h"
#include "oc/common/units.h"
#include "oc/sched/config_table.h"

namespace oc::sched {
namespace {

constexpr std::string_view kTableField = "scheduler.compute_table";

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(*out);
}

Status BadRow(std::string_view text, std::string_view why) {
  return Status::InvalidArgument(
      std::string(kTableField), fmt::format("row '{}': {} (want \"model, context_tokens, hit_rate, "
                                            "per_layer_compute_us\")",
                                            text, why));
}

// Linear interpolation of (x, y) points sorted by x at `x`, clamped to the end values.
double Interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
  if (x <= pts.front().first) {
    return pts.front().second;
  }
  if (x >= pts.back().first) {
    return pts.back().second;
  }
  auto hi =
      std::upper_bound(pts.begin(), pts.end(), x,
                       [](double v, const std::pair<double, double>& p) { return v < p.first; });
  auto lo = hi - 1;
  const double f = (x - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

}  // namespace

std::vector<ComputeTableRow> DefaultComputeTable() {
  // ObjectCache paper, Table A8: Llama 3.1 8B on an A100 80GB, 32 layers; the per-layer column
  // (total prefill compute / 32), in µs. The table itself is bench/data/objectcache-table-a8.csv;
  // keep it in step with this (a unit test compares them); the conf files are generated from it.
  const std::string model = "Llama-3.1-8B";
  return {
      {model, 4096, 0.500, 5790},    {model, 4096, 0.875, 1980},   {model, 16384, 0.500, 29870},
      {model, 16384, 0.875, 8800},   {model, 32768, 0.500, 80910}, {model, 32768, 0.875, 23850},
      {model, 65536, 0.500, 271020}, {model, 65536, 0.875, 75750},
  };
}

Result<ComputeTableRow> ParseComputeTableRow(std::string_view text) {
  std::vector<std::string_view> parts;
  std::string_view rest = text;
  for (;;) {
    const size_t comma = rest.find(',');
    parts.push_back(Trim(rest.substr(0, comma)));
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  if (parts.size() != 4) {
    return BadRow(text, fmt::format("{} fields", parts.size()));
  }
  ComputeTableRow row;
  row.model = std::string(parts[0]);
  Result<uint64_t> context = ParseUint64(parts[1], kTableField);
  if (!context.has_value()) {
    return BadRow(text, "context_tokens is not an unsigned integer");
  }
  row.context_tokens = *context;
  if (!ParseDouble(parts[2], &row.hit_rate)) {
    return BadRow(text, "hit_rate is not a number");
  }
  if (!ParseDouble(parts[3], &row.per_layer_compute_us)) {
    return BadRow(text, "per_layer_compute_us is not a number");
  }
  return row;
}

Status ValidateComputeTable(std::span<const ComputeTableRow> rows) {
  std::set<std::tuple<std::string_view, uint64_t, double>> seen;
  for (const ComputeTableRow& r : rows) {
    const std::string text = fmt::format("{}, {}, {}, {}", r.model, r.context_tokens, r.hit_rate,
                                         r.per_layer_compute_us);
    if (r.model.empty()) {
      return BadRow(text, "empty model");
    }
    if (r.context_tokens == 0) {
      return BadRow(text, "context_tokens must be > 0");
    }
    if (!(r.hit_rate >= 0.0 && r.hit_rate <= 1.0)) {
      return BadRow(text, "hit_rate must be in [0, 1]");
    }
    if (!(std::isfinite(r.per_layer_compute_us) && r.per_layer_compute_us > 0.0)) {
      return BadRow(text, "per_layer_compute_us must be finite and > 0");
    }
    if (!seen.emplace(r.model, r.context_tokens, r.hit_rate).second) {
      return BadRow(text, "repeats an earlier (model, context_tokens, hit_rate)");
    }
  }
  return Status::Ok();
}

Result<double> EstimateComputeUs(std::span<const ComputeTableRow> rows, std::string_view model,
                                 uint64_t context_tokens, uint64_t cached_tokens) {
  if (context_tokens == 0) {
    context_tokens = cached_tokens;
  }
  if (context_tokens == 0) {
    return Status::InvalidArgument("context_tokens", "no context and no cached tokens");
  }
  if (cached_tokens > context_tokens) {
    return Status::InvalidArgument(
        "cached_tokens",
        fmt::format("{} cached tokens exceed the context of {}", cached_tokens, context_tokens));
  }
  // Per listed context, the (hit rate, compute) points of this model.
  std::vector<std::pair<uint64_t, std::vector<std::pair<double, double>>>> by_context;
  for (const ComputeTableRow& r : rows) {
    if (r.model != model) {
      continue;
    }
    auto it = std::find_if(by_context.begin(), by_context.end(),
                           [&](const auto& e) { return e.first == r.context_tokens; });
    if (it == by_context.end()) {
      by_context.push_back({r.context_tokens, {}});
      it = by_context.end() - 1;
    }
    it->second.emplace_back(r.hit_rate, r.per_layer_compute_us);
  }
  if (by_context.empty()) {
    return Status::NotFound(Subject::kNone,
                            fmt::format("no compute table rows for model '{}'", model));
  }
  std::sort(by_context.begin(), by_context.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const double hit = static_cast<double>(cached_tokens) / static_cast<double>(context_tokens);
  std::vector<std::pair<double, double>> per_context;
  per_context.reserve(by_context.size());
  for (auto& [context, points] : by_context) {
    std::sort(points.begin(), points.end());
    per_context.emplace_back(static_cast<double>(context), Interpolate(points, hit));
  }
  return Interpolate(per_context, static_cast<double>(context_tokens));
}

Status SchedulerOptions::Validate() const {
  if (!(std::isfinite(cap_gbps) && cap_gbps > 0.0)) {
    return Status::InvalidArgument("scheduler.cap_gbps", "must be finite and > 0");
  }
  if (!(std::isfinite(margin_gbps) && margin_gbps >= 0.0)) {
    return Status::InvalidArgument("scheduler.margin_gbps", "must be finite and >= 0");
  }
  OC_RETURN_IF_ERROR(SchedulerConfigTable().Check(*this));  // epoch, drr_quantum, policy
  if (work_conserving && fixed_at_admission) {
    return Status::InvalidArgument("scheduler.fixed_at_admission",
                                   "cannot be combined with work_conserving");
  }
  return ValidateComputeTable(compute_table);
}

namespace {

std::vector<std::pair<std::string, Policy>> PolicyNames() {
  std::vector<std::pair<std::string, Policy>> names;
  for (const Policy p : kAllPolicies) {
    names.emplace_back(std::string(PolicyName(p)), p);
  }
  return names;
}

Status ReadComputeTable(const oc::Config& config, const std::string& key, SchedulerOptions* o) {
  if (!config.Has(key)) {
    return Status::Ok();
  }
  std::vector<std::string> texts;
  OC_RETURN_IF_ERROR(config.Read(key, &texts));
  std::vector<ComputeTableRow> rows;
  rows.reserve(texts.size());
  for (const std::string& text : texts) {
    OC_ASSIGN_OR_RETURN(ComputeTableRow row, ParseComputeTableRow(text));
    rows.push_back(std::move(row));
  }
  o->compute_table = std::move(rows);
  return Status::Ok();
}

std::string ComputeTableToml(const SchedulerOptions& o) {
  std::string out = "[\n";
  for (const ComputeTableRow& r : o.compute_table) {
    out += fmt::format("  \"{}, {}, {:.3f}, {}\",\n", r.model, r.context_tokens, r.hit_rate,
                       r.per_layer_compute_us);
  }
  return out + "]";
}

}  // namespace

const ConfigTable<SchedulerOptions>& SchedulerConfigTable() {
  static const ConfigTable<SchedulerOptions>* const table = [] {
    auto* t = new ConfigTable<SchedulerOptions>(
        "scheduler",
        "[scheduler]: bandwidth scheduling of layerwise KV-cache deliveries in the storage "
        "server (docs/design.md: Scheduler; scheduler/include/oc/sched/options.h).");
    (*t).Double("cap_gbps", &SchedulerOptions::cap_gbps,
                "B: bandwidth shared by all layerwise requests, Gbps (10^9 bit/s). Set it to what "
                "the data plane sustains on this host.")
        .Double("margin_gbps", &SchedulerOptions::margin_gbps,
                "δ: calibration margin cal-stall-opt adds to each request's zero-stall rate, "
                "Gbps.")
        .Duration("epoch", &SchedulerOptions::epoch,
                  "Rates are recomputed every epoch; a finished request's bandwidth returns at the "
                  "next one.",
                  std::chrono::microseconds(1))
        .Enum("policy", &SchedulerOptions::policy,
              "equal | kv-prop | bw-prop | stall-opt | cal-stall-opt | shortest-first",
              PolicyNames())
        .Bool("work_conserving", &SchedulerOptions::work_conserving,
              "true: reassign a finished request's bandwidth at once instead of at the next "
              "epoch.")
        .Bool("fixed_at_admission", &SchedulerOptions::fixed_at_admission,
              "true: the paper's admission rule - a request keeps the rate it was admitted with "
              "for its whole load, and a finished request's bandwidth goes only to later "
              "arrivals (requests admitted within one epoch share the cap together). Not with "
              "work_conserving.")
        .Bool("pace_first_layer", &SchedulerOptions::pace_first_layer,
              "A request's first layer also waits its rate's spacing, so the rate holds from the "
              "first byte (the paper's protocol); false: the first layer leaves at once, "
              "shortening every request's critical path by up to one layer's transfer.")
        .Size("drr_quantum", &SchedulerOptions::drr_quantum_bytes,
              "Pacer deficit-round-robin quantum for a request running at the whole cap; a "
              "request at rate r gets quantum * r / B per round.",
              1)
        .Size("pace_part", &SchedulerOptions::pace_part_bytes,
              "Layers leave in parts of at most this size, each paced on its own, so a request "
              "waits behind at most one part of another request, not its whole layer; \"0\": "
              "whole layers.")
        .Str("default_model", &SchedulerOptions::default_model,
             "Model assumed for compute estimates when a request does not name one.")
        .Custom("compute_table",
                "Per-layer compute windows used when a descriptor carries no "
                "x-oc-compute-window: rows of \"model, context_tokens, hit_rate, "
                "per_layer_compute_us\". Estimates interpolate linearly in hit rate at each "
                "listed context, then linearly in context, clamping outside the rows. Setting "
                "this key replaces the whole table. Default: the ObjectCache paper's Table A8, "
                "Llama-3.1-8B on an A100 80GB (per-layer compute = prefill compute / 32 layers).",
                &ReadComputeTable, &ComputeTableToml);
    return t;
  }();
  return *table;
}

Status ApplyConfig(const oc::Config& config, SchedulerOptions* options) {
  SchedulerOptions o = *options;
  OC_RETURN_IF_ERROR(SchedulerConfigTable().Apply(config, &o));
  OC_RETURN_IF_ERROR(o.Validate());
  *options = std::move(o);
  return Status::Ok();
}

}  // namespace oc::sched
