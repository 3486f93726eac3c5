#pragma once
// SchedulerOptions: the [scheduler] table of the storage server's config (conf/scheduler.toml lists
// every key with its default), and the per-layer compute table used when a descriptor carries no
// compute window (docs/design.md: Scheduler; issue 6).
//
// The compute table maps (model, context tokens, hit rate) to the per-layer compute window. Prefill
// compute depends on how many tokens are NOT cached, so the table is keyed by the hit rate as well
// as the context (the paper's Table A8 gives 5.79 ms per layer at 4K tokens and 50% hits, 1.98 ms
// at 87.5%). Estimates interpolate linearly in hit rate at each listed context, then linearly in
// context, and clamp outside the listed ranges. Pure values and functions; thread-safe.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/config.h"
#include "oc/common/result.h"
#include "oc/sched/policy.h"

namespace oc::sched {

struct ComputeTableRow {
  std::string model;
  uint64_t context_tokens = 0;
  double hit_rate = 0;  // cached tokens / context tokens, in [0, 1]
  double per_layer_compute_us = 0;
};

// The shipped default: Llama-3.1-8B on an A100 80GB, the ObjectCache paper's Table A8
// (its per-layer compute column, in ms there, µs here).
std::vector<ComputeTableRow> DefaultComputeTable();

// Parses one config row "model, context_tokens, hit_rate, per_layer_compute_us" (spaces around
// commas optional). kInvalidArgument (field "compute_table") otherwise.
Result<ComputeTableRow> ParseComputeTableRow(std::string_view text);

// kInvalidArgument (field "compute_table") if a row has an empty model, zero context, a hit rate
// outside [0, 1], a compute window not finite or <= 0, or repeats another row's (model, context,
// hit rate).
Status ValidateComputeTable(std::span<const ComputeTableRow> rows);

// The per-layer compute window, µs, for `model` at `context_tokens` with `cached_tokens` of them
// cached. context_tokens == 0 means unknown and is taken as cached_tokens (the storage server knows
// only the matched prefix). kNotFound if no row names `model`; kInvalidArgument if cached_tokens >
// context_tokens or both are 0. REQUIRES: ValidateComputeTable(rows).ok().
Result<double> EstimateComputeUs(std::span<const ComputeTableRow> rows, std::string_view model,
                                 uint64_t context_tokens, uint64_t cached_tokens);

struct SchedulerOptions {
  // B: the bandwidth all layerwise requests share, Gbps (10^9 bit/s). Set it to what the data plane
  // sustains.
  // Default: 100 (the paper's 100 Gbps link)
  double cap_gbps = 100;
  // δ: calibration margin added to every zero-stall rate by cal-stall-opt, Gbps.
  // Default: 5 (the paper's prototype)
  double margin_gbps = 5;
  // Rates are fixed for an epoch; bandwidth released by a finished request returns at the next
  // epoch (ignored when work_conserving).
  // Default: 10 ms
  std::chrono::microseconds epoch{10'000};
  // Θ: a request with W = N*L*S >= Θ is delivered layerwise and shares B; smaller ones run
  // chunkwise outside the scheduler. Not a config key: the storage server sets it from the KV
  // engine's Θ (`[kv] layerwise_threshold`, KvOptions), so one Θ decides both the delivery
  // mode and admission.
  // Default: 512 MiB (the paper's Θ ≈ 512 MB at 100 Gbps)
  uint64_t layerwise_threshold_bytes = uint64_t{512} << 20;
  // The allocation policy.
  // Default: kCalStallOpt
  Policy policy = Policy::kCalStallOpt;
  // Reallocate at once whenever a request arrives or leaves, instead of per epoch.
  // Default: false
  bool work_conserving = false;
  // The paper's admission rule: a request's rate is fixed when it is admitted and held for its
  // whole load; bandwidth a finished request frees goes only to requests admitted later.
  // Requests admitted within one epoch of the first of them form one batch that the policy
  // shares out together (grant.h). Cannot be combined with work_conserving.
  // Default: false
  bool fixed_at_admission = false;
  // A request's first layer also waits its rate's spacing, so the rate holds from the first byte
  // (layer l leaves (l + 1) * layer bytes / rate after admission, as the paper's protocol and its
  // Equation 3 assume; PacerOptions::pace_first_payload). False: the first layer leaves at once,
  // which shortens every request's critical path by up to one layer's transfer at its rate.
  // Default: false
  bool pace_first_layer = false;
  // Pacer DRR quantum for a flow at the full cap (see PacerOptions).
  // Default: 1 MiB
  uint64_t drr_quantum_bytes = uint64_t{1} << 20;
  // Layers leave in parts of at most this many bytes, each paced on its own, so a request waits
  // behind at most one part of each other request (part / B), not a whole layer (a 224 MiB layer
  // is ~19 ms at 100 Gbps, a 1 MiB part 84 µs); the delivery thread writes a part's bytes once the
  // part is dispatched and notifies a layer after its last part
  // (docs/decisions/pacer-sub-layer-parts.md). 0: whole layers. Parts are the default since a
  // quiet-machine run (2026-12-02) had calibrated stall-opt closer to Eq. 3 in parts than in
  // whole layers in all three workloads (A +13.8% / +16.8%, B +3.2% / +7.4%, C +0.9% / +1.8%).
  // Default: 1 MiB
  uint64_t pace_part_bytes = uint64_t{1} << 20;
  // Model assumed for compute estimates when a request names none.
  // Default: "Llama-3.1-8B"
  std::string default_model = "Llama-3.1-8B";
  // Per-layer compute windows for requests whose descriptor has none.
  // Default: DefaultComputeTable() (Llama-3.1-8B, Table A8)
  std::vector<ComputeTableRow> compute_table = DefaultComputeTable();

  // kInvalidArgument naming the key at fault: cap not finite or <= 0, margin not finite or < 0,
  // epoch < 1 µs, quantum 0, work_conserving together with fixed_at_admission, or an invalid
  // compute table.
  Status Validate() const;
};

// Reads the [scheduler] table: scheduler.cap_gbps, margin_gbps, epoch, policy, work_conserving,
// fixed_at_admission, pace_first_layer, drr_quantum, pace_part, default_model, compute_table (an
// array of row strings that replaces the default table). Absent keys keep *options' values. Returns
// the first read or validation error (kInvalidArgument naming the key).
Status ApplyConfig(const oc::Config& config, SchedulerOptions* options);

}  // namespace oc::sched
