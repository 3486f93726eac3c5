// The value codecs of the descriptor calls (wire.h, kKv*): the descriptor text's limits and
// check, the plan, the reports, the probe result and the data plane's address.
#include <algorithm>

#include "oc/descriptor/codec.h"
#include "oc/descriptor/limits.h"
#include "rpc/codec_util.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

using internal::DecodeVector;

descriptor::Limits WireDescriptorLimits() {
  descriptor::Limits limits;
  limits.max_body_bytes = kMaxKvRequestBodyBytes;
  return limits;
}

Result<descriptor::Descriptor> DecodeDescriptorText(std::string_view text, Op op) {
  const descriptor::Limits limits = WireDescriptorLimits();
  const descriptor::Purpose purpose =
      op == Op::kKvPutChunks ? descriptor::Purpose::kPut : descriptor::Purpose::kGet;
  OC_ASSIGN_OR_RETURN(descriptor::Descriptor d, descriptor::DecodeBody(text, limits, purpose));
  OC_RETURN_IF_ERROR(descriptor::Validate(d, limits));
  return d;
}

void Encode(WireWriter& w, const KvPlan& v) {
  w.U64(v.num_chunks);
  w.U64(v.matched);
  w.U8(static_cast<uint8_t>(v.mode));
  w.U64(v.payload_bytes);
  w.Str(v.request_id);
}

bool Decode(WireReader& r, KvPlan* v) {
  uint8_t mode = 0;
  if (!(r.U64(&v->num_chunks) && r.U64(&v->matched) && r.U8(&mode) && r.U64(&v->payload_bytes) &&
        r.Str(&v->request_id))) {
    return false;
  }
  if (v->matched > v->num_chunks) {
    return r.Fail("plan.matched", "more chunks matched than requested");
  }
  if (mode != static_cast<uint8_t>(descriptor::ServeMode::kChunkwise) &&
      mode != static_cast<uint8_t>(descriptor::ServeMode::kLayerwise)) {
    return r.Fail("plan.mode", "unknown serve mode");
  }
  v->mode = static_cast<descriptor::ServeMode>(mode);
  return true;
}

// Largest assigned rate on the wire, bit/s (a million Gbps). Below 2^53, so the rate
// survives the trip through a double exactly and a decoded report re-encodes to its bytes.
constexpr uint64_t kMaxWireRateBps = 1'000'000'000'000'000;

void Encode(WireWriter& w, const KvGetReport& v) {
  Encode(w, v.plan);
  w.U64(v.timings.plan_us);
  w.U64(v.timings.read_us);
  w.U64(v.timings.transfer_us);
  w.U64(v.timings.total_us);
  w.U32(v.layers_notified);
  w.U64(v.writes);
  // The rate in bit/s, rounded: a plain integer on the wire, no float encoding.
  const double gbps = std::min(v.assigned_rate_gbps, kMaxWireRateBps / 1e9);
  w.U64(gbps > 0 ? static_cast<uint64_t>(gbps * 1e9 + 0.5) : 0);
}

bool Decode(WireReader& r, KvGetReport* v) {
  uint64_t rate_bps = 0;
  if (!(Decode(r, &v->plan) && r.U64(&v->timings.plan_us) && r.U64(&v->timings.read_us) &&
        r.U64(&v->timings.transfer_us) && r.U64(&v->timings.total_us) &&
        r.U32(&v->layers_notified) && r.U64(&v->writes) && r.U64(&rate_bps))) {
    return false;
  }
  if (rate_bps > kMaxWireRateBps) {
    return r.Fail("report.assigned_rate", "rate above 10^15 bit/s");
  }
  v->assigned_rate_gbps = static_cast<double>(rate_bps) / 1e9;
  return true;
}

void Encode(WireWriter& w, const DataPlaneInfo& v) {
  w.Str(v.address);
  w.U8(v.shared_memory ? 1 : 0);
}

bool Decode(WireReader& r, DataPlaneInfo* v) {
  return r.Str(&v->address) && r.Bool(&v->shared_memory);
}

void Encode(WireWriter& w, const KvProbeResult& v) {
  w.U64(v.matched);
  w.U32(static_cast<uint32_t>(v.sizes.size()));
  for (const std::optional<uint64_t>& size : v.sizes) {
    w.U8(size.has_value() ? 1 : 0);
    if (size.has_value()) {
      w.U64(*size);
    }
  }
}

bool Decode(WireReader& r, KvProbeResult* v) {
  if (!r.U64(&v->matched)) {
    return false;
  }
  if (!DecodeVector(r, &v->sizes, 1, [](WireReader& rr, std::optional<uint64_t>* size) {
        bool present = false;
        uint64_t value = 0;
        if (!rr.Bool(&present) || (present && !rr.U64(&value))) {
          return false;
        }
        *size = present ? std::optional<uint64_t>(value) : std::nullopt;
        return true;
      })) {
    return false;
  }
  if (v->matched > v->sizes.size()) {
    return r.Fail("probe.matched", "more chunks matched than sizes given");
  }
  return true;
}

void Encode(WireWriter& w, const KvPutReport& v) {
  w.U64(v.chunks);
  w.U64(v.bytes);
  w.U64(v.receive_us);
  w.U64(v.commit_wait_us);
  w.U64(v.total_us);
  w.Str(v.request_id);
  w.U32(static_cast<uint32_t>(v.existed.size()));
  for (const bool existed : v.existed) {
    w.U8(existed ? 1 : 0);
  }
}

bool Decode(WireReader& r, KvPutReport* v) {
  if (!(r.U64(&v->chunks) && r.U64(&v->bytes) && r.U64(&v->receive_us) &&
        r.U64(&v->commit_wait_us) && r.U64(&v->total_us) && r.Str(&v->request_id) &&
        DecodeVector(r, &v->existed, 1, [](WireReader& rr, bool* b) { return rr.Bool(b); }))) {
    return false;
  }
  if (!v->existed.empty() && v->existed.size() != v->chunks) {
    return r.Fail("report.existed", "not one entry per chunk");
  }
  return true;
}

}  // namespace oc::storage::rpc
