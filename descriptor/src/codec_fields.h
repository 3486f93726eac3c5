#pragma once
// The descriptor codec's shared vocabulary (codec.h is the public contract): the fields of
// version 1 and their wire names, the error every decode failure becomes, and the two field
// sources, header list and body lines, walked the same way. Used by codec_decode.cc,
// codec_encode.cc and codec_response.cc; codec_values.h parses single values.
// Thread safety: constants and pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "oc/common/status.h"
#include "oc/common/text.h"
#include "oc/descriptor/codec.h"

namespace oc::descriptor::codec_internal {

// The fields of version 1, in the order the encoders write them.
enum class Field : uint8_t {
  kVersion,
  kKeyPrefix,
  kChunkHashes,
  kChunkNames,
  kNumLayers,
  kChunkTokens,
  kLayerBytes,
  kLayout,
  kDelivery,
  kTargetConnection,
  kTargetRkey,
  kTargetAddress,
  kTargetLength,
  kComputeWindow,
  kRequestId,
  kIfNoneMatch,
  kCount,
};

inline constexpr std::array<std::string_view, static_cast<size_t>(Field::kCount)> kFieldNames = {
    "x-oc-version",       "x-oc-key-prefix",        "x-oc-chunk-hashes", "x-oc-chunk-names",
    "x-oc-num-layers",    "x-oc-chunk-tokens",      "x-oc-layer-bytes",  "x-oc-layout",
    "x-oc-delivery",      "x-oc-target-connection", "x-oc-target-rkey",  "x-oc-target-address",
    "x-oc-target-length", "x-oc-compute-window-us", "x-oc-request-id",   "x-oc-if-none-match",
};

inline constexpr std::string_view kPrefix = "x-oc-";
inline constexpr std::string_view kBodyField = "body";
// Longest decimal accepted: 2^64-1 has 20 digits. Longer values are refused before parsing.
inline constexpr size_t kMaxDecimalChars = 20;
// Longest unknown field name echoed back in an error.
inline constexpr size_t kMaxEchoedNameChars = 64;

inline std::string_view Name(Field f) { return kFieldNames[static_cast<size_t>(f)]; }

// The error of every decode failure: kInvalidArgument, Subject kDescriptor, naming `field`.
Status Invalid(std::string_view field, std::string message);

using oc::EqualsIgnoreCase;
using oc::Trim;

// True if `name` starts with "x-oc-", in any case.
bool HasOcPrefix(std::string_view name);

// The field `name` names, in any case; nullopt for an unknown name.
std::optional<Field> Lookup(std::string_view name);

// An unknown name, made safe to echo: at most kMaxEchoedNameChars, lowercase.
std::string EchoName(std::string_view name);

// Calls fn(item) for every non-empty, OWS-trimmed element of a comma-separated list, stopping
// at the first error fn returns.
template <typename Fn>
Status ForEachItem(std::string_view list, Fn&& fn) {
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view item = Trim(list.substr(0, comma));
    if (!item.empty()) {
      OC_RETURN_IF_ERROR(fn(item));
    }
    if (comma == std::string_view::npos) {
      return Status::Ok();
    }
    list.remove_prefix(comma + 1);
  }
}

// The number of items ForEachItem would visit.
uint64_t CountItems(std::string_view list);

// --- Field sources: the header list and the body lines, walked the same way -------------

// Calls fn(name, value) for every `x-oc-*` header, value OWS-trimmed.
template <typename Fn>
Status ForEachHeader(std::span<const HeaderField> headers, Fn&& fn) {
  for (const HeaderField& h : headers) {
    if (HasOcPrefix(h.name)) {
      OC_RETURN_IF_ERROR(fn(h.name, Trim(h.value)));
    }
  }
  return Status::Ok();
}

// Calls fn(name, value) for every non-blank body line; a line without ':' is an error.
template <typename Fn>
Status ForEachBodyLine(std::string_view body, Fn&& fn) {
  uint64_t line_number = 0;
  while (!body.empty()) {
    ++line_number;
    const size_t newline = body.find('\n');
    std::string_view line = body.substr(0, newline);
    body.remove_prefix(newline == std::string_view::npos ? body.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    line = Trim(line);
    if (line.empty()) {
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Invalid(kBodyField, fmt::format("line {}: expected 'name: value'", line_number));
    }
    OC_RETURN_IF_ERROR(fn(Trim(line.substr(0, colon)), Trim(line.substr(colon + 1))));
  }
  return Status::Ok();
}

}  // namespace oc::descriptor::codec_internal
