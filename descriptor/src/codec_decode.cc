// The descriptor decoder (codec.h): version first, then one walk that records each field and
// counts the keys, the cheap fields parsed and checked, and the key lists decoded last, into
// vectors reserved to the counted size. Headers and body lines go through the same walk
// (codec_fields.h: ForEachHeader, ForEachBodyLine).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/core.h>

#include "codec_fields.h"
#include "codec_values.h"
#include "oc/common/bytes.h"
#include "oc/descriptor/codec.h"

namespace oc::descriptor {
namespace {

using codec_internal::CheckRequestId;
using codec_internal::CountItems;
using codec_internal::EchoName;
using codec_internal::EqualsIgnoreCase;
using codec_internal::Field;
using codec_internal::ForEachBodyLine;
using codec_internal::ForEachHeader;
using codec_internal::ForEachItem;
using codec_internal::HasOcPrefix;
using codec_internal::Invalid;
using codec_internal::kBodyField;
using codec_internal::kMaxDecimalChars;
using codec_internal::Lookup;
using codec_internal::Name;
using codec_internal::ParseConnectionId;
using codec_internal::ParseDecimal;
using codec_internal::ParseDecimal32;
using codec_internal::ParseDelivery;
using codec_internal::ParseHexBlob;
using codec_internal::ParseLayout;
using codec_internal::PercentDecode;

// What the first walk over the fields records: each single-valued field's value, and for the
// two repeatable key lists how many keys they hold.
struct Scan {
  std::array<std::optional<std::string_view>, static_cast<size_t>(Field::kCount)> single;
  uint64_t hash_count = 0;
  uint64_t name_count = 0;
  bool has_hashes = false;
  bool has_names = false;

  const std::optional<std::string_view>& Get(Field f) const {
    return single[static_cast<size_t>(f)];
  }
};

// The version is checked before anything else, so a request in a later version gets this
// error rather than one about a field this version does not know. Only the first
// x-oc-version counts here; a second one is refused by ScanFields in request order, like any
// repeated field (so an unknown field before it is named first).
template <typename ForEach>
Status CheckVersion(ForEach&& for_each) {
  std::optional<std::string_view> version;
  // Stops the walk at the first x-oc-version: a sentinel error, never returned.
  const Status found = Status::Internal("found");
  Status walked = for_each([&](std::string_view name, std::string_view value) {
    if (EqualsIgnoreCase(name, Name(Field::kVersion))) {
      version = value;
      return found;
    }
    return Status::Ok();
  });
  if (!version.has_value()) {
    OC_RETURN_IF_ERROR(walked);  // a malformed body line before any version
    return Invalid(Name(Field::kVersion), "required; this server speaks version 1");
  }
  if (*version != "1") {
    return Invalid(Name(Field::kVersion),
                   fmt::format("unsupported version '{}'; this server speaks version 1",
                               version->substr(0, kMaxDecimalChars)));
  }
  return Status::Ok();
}

bool IsTargetField(Field f) {
  return f == Field::kTargetConnection || f == Field::kTargetRkey || f == Field::kTargetAddress ||
         f == Field::kTargetLength;
}

template <typename ForEach>
Result<Scan> ScanFields(ForEach&& for_each, const Limits& limits, Purpose purpose) {
  Scan scan;
  OC_RETURN_IF_ERROR(for_each([&](std::string_view name, std::string_view value) -> Status {
    const std::optional<Field> f = Lookup(name);
    if (!f.has_value()) {
      return Invalid(EchoName(name), "unknown descriptor field");
    }
    if (purpose == Purpose::kProbe && IsTargetField(*f)) {
      return Status::Ok();
    }
    if (*f == Field::kChunkHashes || *f == Field::kChunkNames) {
      const bool hashes = *f == Field::kChunkHashes;
      uint64_t& count = hashes ? scan.hash_count : scan.name_count;
      (hashes ? scan.has_hashes : scan.has_names) = true;
      count += CountItems(value);
      if (count > limits.max_chunks) {
        return Invalid(Name(*f), fmt::format("more than {} chunk keys", limits.max_chunks));
      }
      return Status::Ok();
    }
    auto& slot = scan.single[static_cast<size_t>(*f)];
    if (slot.has_value()) {
      return Invalid(Name(*f), "given more than once");
    }
    slot = value;
    return Status::Ok();
  }));
  return scan;
}

template <typename ForEach>
Result<ChunkKeys> DecodeKeys(ForEach&& for_each, const Scan& scan, const Limits& limits) {
  if (scan.has_hashes && scan.has_names) {
    return Invalid(Name(Field::kChunkNames), "cannot be combined with x-oc-chunk-hashes");
  }
  if (!scan.has_hashes && !scan.has_names) {
    return Invalid(Name(Field::kChunkHashes), "required (or x-oc-chunk-names)");
  }
  if (scan.has_names) {
    if (scan.Get(Field::kKeyPrefix).has_value()) {
      return Invalid(Name(Field::kKeyPrefix), "applies only to x-oc-chunk-hashes");
    }
    if (scan.name_count == 0) {
      return Invalid(Name(Field::kChunkNames), "no chunk names");
    }
    ExplicitKeys keys;
    keys.names.reserve(scan.name_count);  // counted and bounded by ScanFields
    OC_RETURN_IF_ERROR(for_each([&](std::string_view name, std::string_view value) {
      if (!EqualsIgnoreCase(name, Name(Field::kChunkNames))) {
        return Status::Ok();
      }
      return ForEachItem(value, [&](std::string_view item) -> Status {
        OC_ASSIGN_OR_RETURN(
            std::string decoded,
            PercentDecode(Field::kChunkNames, item, limits.max_key_bytes, keys.names.size()));
        keys.names.push_back(std::move(decoded));
        return Status::Ok();
      });
    }));
    return keys;
  }
  if (scan.hash_count == 0) {
    return Invalid(Name(Field::kChunkHashes), "no chunk hashes");
  }
  CompactKeys keys;
  if (const auto& prefix = scan.Get(Field::kKeyPrefix)) {
    // Percent-decoding never needs more room than the encoded text, which the header or body
    // limit already bounds; the decoded length is checked against the key limit.
    OC_ASSIGN_OR_RETURN(keys.prefix, PercentDecode(Field::kKeyPrefix, *prefix,
                                                   limits.max_key_bytes > kChunkHashHexChars
                                                       ? limits.max_key_bytes - kChunkHashHexChars
                                                       : 0,
                                                   std::nullopt));
  }
  keys.hashes.reserve(scan.hash_count);  // counted and bounded by ScanFields
  OC_RETURN_IF_ERROR(for_each([&](std::string_view name, std::string_view value) {
    if (!EqualsIgnoreCase(name, Name(Field::kChunkHashes))) {
      return Status::Ok();
    }
    return ForEachItem(value, [&](std::string_view item) -> Status {
      ChunkHash h;
      if (!HexDecodeTo(item, h)) {
        return Invalid(Name(Field::kChunkHashes),
                       fmt::format("hash {}: expected 32 hex characters", keys.hashes.size()));
      }
      keys.hashes.push_back(h);
      return Status::Ok();
    });
  }));
  return keys;
}

Result<std::optional<DataPlaneTarget>> DecodeTarget(const Scan& scan, const Limits& limits) {
  constexpr std::array<Field, 4> kTargetFields = {Field::kTargetConnection, Field::kTargetRkey,
                                                  Field::kTargetAddress, Field::kTargetLength};
  bool any = false;
  for (const Field f : kTargetFields) {
    any = any || scan.Get(f).has_value();
  }
  if (!any) {
    return std::optional<DataPlaneTarget>();
  }
  for (const Field f : kTargetFields) {
    if (!scan.Get(f).has_value()) {
      return Invalid(Name(f), "required when any x-oc-target-* header is given");
    }
  }
  DataPlaneTarget t;
  OC_ASSIGN_OR_RETURN(t.connection, ParseConnectionId(*scan.Get(Field::kTargetConnection)));
  OC_ASSIGN_OR_RETURN(t.rkey, ParseHexBlob(Field::kTargetRkey, *scan.Get(Field::kTargetRkey),
                                           limits.max_target_blob_bytes));
  OC_ASSIGN_OR_RETURN(t.address,
                      ParseDecimal(Field::kTargetAddress, *scan.Get(Field::kTargetAddress)));
  OC_ASSIGN_OR_RETURN(t.length,
                      ParseDecimal(Field::kTargetLength, *scan.Get(Field::kTargetLength)));
  return std::optional<DataPlaneTarget>(std::move(t));
}

Result<uint64_t> Required64(const Scan& scan, Field f) {
  if (!scan.Get(f).has_value()) {
    return Invalid(Name(f), "required");
  }
  return ParseDecimal(f, *scan.Get(f));
}

Result<uint32_t> Required32(const Scan& scan, Field f) {
  if (!scan.Get(f).has_value()) {
    return Invalid(Name(f), "required");
  }
  return ParseDecimal32(f, *scan.Get(f));
}

template <typename ForEach>
Result<Descriptor> Decode(ForEach&& for_each, const Limits& limits, Purpose purpose) {
  OC_RETURN_IF_ERROR(CheckVersion(for_each));
  OC_ASSIGN_OR_RETURN(const Scan scan, ScanFields(for_each, limits, purpose));
  Descriptor d;
  OC_ASSIGN_OR_RETURN(d.num_layers, Required32(scan, Field::kNumLayers));
  OC_ASSIGN_OR_RETURN(d.chunk_tokens, Required32(scan, Field::kChunkTokens));
  OC_ASSIGN_OR_RETURN(d.layer_bytes, Required64(scan, Field::kLayerBytes));
  if (const auto& v = scan.Get(Field::kLayout)) {
    OC_ASSIGN_OR_RETURN(d.layout, ParseLayout(*v));
  } else if (purpose == Purpose::kPut) {
    // The bytes are stored in this order; a default would silently mislabel LMCache's
    // kv_2ltd chunks.
    return Invalid(Name(Field::kLayout), "required for a descriptor PUT (kv_l2td or kv_2ltd)");
  }
  if (const auto& v = scan.Get(Field::kDelivery)) {
    OC_ASSIGN_OR_RETURN(d.delivery, ParseDelivery(*v));
  }
  OC_ASSIGN_OR_RETURN(d.target, DecodeTarget(scan, limits));
  if (const auto& v = scan.Get(Field::kComputeWindow)) {
    OC_ASSIGN_OR_RETURN(d.compute_window_us, ParseDecimal(Field::kComputeWindow, *v));
  }
  if (const auto& v = scan.Get(Field::kRequestId)) {
    OC_RETURN_IF_ERROR(CheckRequestId(Field::kRequestId, *v));
    d.request_id = std::string(*v);
  }
  if (const auto& v = scan.Get(Field::kIfNoneMatch)) {
    // Create-if-absent is a write condition: a read has nothing to create.
    if (purpose != Purpose::kPut) {
      return Invalid(Name(Field::kIfNoneMatch), "applies only to a descriptor PUT");
    }
    if (*v != "*") {
      return Invalid(Name(Field::kIfNoneMatch), "takes only *");
    }
    d.if_none_match = true;
  }
  // Last: the only allocation proportional to N, after every cheap check has passed.
  OC_ASSIGN_OR_RETURN(d.keys, DecodeKeys(for_each, scan, limits));
  return d;
}

}  // namespace

Result<Descriptor> DecodeHeaders(std::span<const HeaderField> headers, const Limits& limits,
                                 Purpose purpose) {
  uint64_t bytes = 0;
  for (const HeaderField& h : headers) {
    if (!HasOcPrefix(h.name)) {
      continue;
    }
    bytes += h.name.size() + h.value.size() + 4;
    if (bytes > limits.max_header_bytes) {
      return Invalid(EchoName(h.name),
                     fmt::format("x-oc-* headers exceed {} bytes; send the descriptor as the "
                                 "body of POST /{{bucket}}?objectcache",
                                 limits.max_header_bytes));
    }
  }
  return Decode(
      [headers](auto&& fn) { return ForEachHeader(headers, std::forward<decltype(fn)>(fn)); },
      limits, purpose);
}

Result<Descriptor> DecodeBody(std::string_view body, const Limits& limits, Purpose purpose) {
  if (body.size() > limits.max_body_bytes) {
    return Invalid(kBodyField,
                   fmt::format("{} bytes; the limit is {}", body.size(), limits.max_body_bytes));
  }
  return Decode([body](auto&& fn) { return ForEachBodyLine(body, std::forward<decltype(fn)>(fn)); },
                limits, purpose);
}

}  // namespace oc::descriptor
