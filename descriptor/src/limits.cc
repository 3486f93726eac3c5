#include "oc/descriptor/limits.h"

#include <fmt/core.h>

#include "oc/common/utf8.h"

namespace oc::descriptor {
namespace {

Status Invalid(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(field),
                std::move(message));
}

Status CheckRange(std::string_view field, uint64_t value, uint64_t max) {
  if (value == 0 || value > max) {
    return Invalid(field, fmt::format("{} is out of range 1..{}", value, max));
  }
  return Status::Ok();
}

// S3 keys are UTF-8, and the store's key encoding reserves NUL: the gateway refuses any other
// key on every route, so such a chunk could be neither listed nor read back by name.
bool IsValidKeyText(std::string_view key) {
  return key.find('\0') == std::string_view::npos && IsValidUtf8(key);
}

Status CheckKeys(const Descriptor& d, const Limits& limits) {
  if (const auto* compact = std::get_if<CompactKeys>(&d.keys)) {
    OC_RETURN_IF_ERROR(CheckRange("x-oc-chunk-hashes", compact->hashes.size(), limits.max_chunks));
    if (compact->prefix.size() + kChunkHashHexChars > limits.max_key_bytes) {
      return Invalid("x-oc-key-prefix",
                     fmt::format("{} bytes; with 32 hex characters the key exceeds {} bytes",
                                 compact->prefix.size(), limits.max_key_bytes));
    }
    // Hex digits appended keep a valid prefix valid.
    if (!IsValidKeyText(compact->prefix)) {
      return Invalid("x-oc-key-prefix", "not well-formed UTF-8, or holds NUL");
    }
    return Status::Ok();
  }
  const auto& names = std::get<ExplicitKeys>(d.keys).names;
  OC_RETURN_IF_ERROR(CheckRange("x-oc-chunk-names", names.size(), limits.max_chunks));
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty() || names[i].size() > limits.max_key_bytes) {
      return Invalid("x-oc-chunk-names", fmt::format("name {} is {} bytes; must be 1..{}", i,
                                                     names[i].size(), limits.max_key_bytes));
    }
    if (!IsValidKeyText(names[i])) {
      return Invalid("x-oc-chunk-names",
                     fmt::format("name {} is not well-formed UTF-8, or holds NUL", i));
    }
  }
  return Status::Ok();
}

Status CheckTarget(const DataPlaneTarget& t, const Limits& limits, uint64_t payload) {
  OC_RETURN_IF_ERROR(CheckRange("x-oc-target-rkey", t.rkey.size(), limits.max_target_blob_bytes));
  uint64_t end = 0;
  if (__builtin_add_overflow(t.address, t.length, &end)) {
    return Invalid("x-oc-target-address",
                   fmt::format("address {} + length {} overflows 64 bits", t.address, t.length));
  }
  if (t.length < payload) {
    return Invalid(
        "x-oc-target-length",
        fmt::format("{} bytes cannot hold chunks x layers x layer bytes = {}", t.length, payload));
  }
  return Status::Ok();
}

}  // namespace

Status Limits::Validate() const {
  if (max_chunks == 0 || max_layers == 0 || max_chunk_tokens == 0 || max_layer_bytes == 0 ||
      max_total_bytes == 0 || max_header_bytes == 0 || max_body_bytes == 0 ||
      max_target_blob_bytes == 0 || max_compute_window_us == 0) {
    return Status::InvalidArgument("limits", "every maximum must be at least 1");
  }
  if (max_key_bytes <= kChunkHashHexChars) {
    return Status::InvalidArgument("max_key_bytes",
                                   "must exceed the 32 hex characters of a compact key");
  }
  return Status::Ok();
}

Status Validate(const Descriptor& d, const Limits& limits) {
  OC_RETURN_IF_ERROR(CheckKeys(d, limits));
  OC_RETURN_IF_ERROR(CheckRange("x-oc-num-layers", d.num_layers, limits.max_layers));
  OC_RETURN_IF_ERROR(CheckRange("x-oc-chunk-tokens", d.chunk_tokens, limits.max_chunk_tokens));
  OC_RETURN_IF_ERROR(CheckRange("x-oc-layer-bytes", d.layer_bytes, limits.max_layer_bytes));
  if (!IsKnownLayout(d.layout)) {
    return Invalid("x-oc-layout",
                   fmt::format("unknown stored layout {}", static_cast<int>(d.layout)));
  }
  if (d.layout == StoredLayout::k2LTD && d.layer_bytes % 2 != 0) {
    return Invalid("x-oc-layer-bytes",
                   fmt::format("{} is odd; kv_2ltd needs equal K and V halves", d.layer_bytes));
  }
  if (!IsKnownDelivery(d.delivery)) {
    return Invalid("x-oc-delivery",
                   fmt::format("unknown delivery order {}", static_cast<int>(d.delivery)));
  }
  OC_ASSIGN_OR_RETURN(const uint64_t payload,
                      PayloadBytes(d.num_chunks(), d.num_layers, d.layer_bytes));
  if (payload > limits.max_total_bytes) {
    return Invalid("x-oc-layer-bytes",
                   fmt::format("chunks x layers x layer bytes = {} exceeds the limit of {}",
                               payload, limits.max_total_bytes));
  }
  if (d.target.has_value()) {
    OC_RETURN_IF_ERROR(CheckTarget(*d.target, limits, payload));
  }
  if (d.compute_window_us.has_value()) {
    OC_RETURN_IF_ERROR(
        CheckRange("x-oc-compute-window-us", *d.compute_window_us, limits.max_compute_window_us));
  }
  if (d.request_id.size() > kMaxRequestIdBytes) {
    return Invalid("x-oc-request-id", fmt::format("{} bytes; the limit is {}", d.request_id.size(),
                                                  kMaxRequestIdBytes));
  }
  for (const char c : d.request_id) {
    if (c < 0x21 || c > 0x7e) {
      return Invalid("x-oc-request-id", "must be visible ASCII (0x21..0x7e)");
    }
  }
  return Status::Ok();
}

}  // namespace oc::descriptor
