// The descriptor response headers (codec.h, ResponseSummary): x-oc-version,
// x-oc-matched-chunks, x-oc-mode, x-oc-request-id and the optional timings.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "codec_fields.h"
#include "codec_values.h"
#include "oc/common/units.h"
#include "oc/descriptor/codec.h"

namespace oc::descriptor {
namespace {

using codec_internal::CheckRequestId;
using codec_internal::EqualsIgnoreCase;
using codec_internal::Field;
using codec_internal::Invalid;
using codec_internal::kMaxDecimalChars;
using codec_internal::Name;
using codec_internal::Trim;

constexpr std::string_view kMatchedChunks = "x-oc-matched-chunks";
constexpr std::string_view kMode = "x-oc-mode";
constexpr std::string_view kGatewayUs = "x-oc-gateway-us";
constexpr std::string_view kStorageUs = "x-oc-storage-us";
constexpr std::string_view kTransferUs = "x-oc-transfer-us";

}  // namespace

std::string_view ServeModeName(ServeMode mode) {
  switch (mode) {
    case ServeMode::kChunkwise:
      return "chunkwise";
    case ServeMode::kLayerwise:
      return "layerwise";
  }
  return "unknown";
}

HeaderList EncodeResponse(const ResponseSummary& s) {
  HeaderList h;
  h.emplace_back(Name(Field::kVersion), std::to_string(kProtocolVersion));
  h.emplace_back(kMatchedChunks, std::to_string(s.matched_chunks));
  h.emplace_back(kMode, std::string(ServeModeName(s.mode)));
  if (!s.request_id.empty()) {
    h.emplace_back(Name(Field::kRequestId), s.request_id);
  }
  const std::array<std::pair<std::string_view, const std::optional<uint64_t>*>, 3> timings = {
      {{kGatewayUs, &s.gateway_us}, {kStorageUs, &s.storage_us}, {kTransferUs, &s.transfer_us}}};
  for (const auto& [name, value] : timings) {
    if (value->has_value()) {
      h.emplace_back(name, std::to_string(**value));
    }
  }
  return h;
}

Result<ResponseSummary> DecodeResponse(std::span<const HeaderField> headers) {
  std::optional<std::string_view> version, matched, mode, request_id, gateway, storage, transfer;
  const std::array<std::pair<std::string_view, std::optional<std::string_view>*>, 7> slots = {{
      {Name(Field::kVersion), &version},
      {kMatchedChunks, &matched},
      {kMode, &mode},
      {Name(Field::kRequestId), &request_id},
      {kGatewayUs, &gateway},
      {kStorageUs, &storage},
      {kTransferUs, &transfer},
  }};
  for (const HeaderField& h : headers) {
    for (const auto& [name, slot] : slots) {
      if (EqualsIgnoreCase(h.name, name)) {
        *slot = Trim(h.value);
      }
    }
  }
  if (!version.has_value() || *version != "1") {
    return Invalid(Name(Field::kVersion), "missing or not 1");
  }
  if (!matched.has_value()) {
    return Invalid(kMatchedChunks, "required");
  }
  if (!mode.has_value()) {
    return Invalid(kMode, "required");
  }
  ResponseSummary s;
  auto parse = [](std::string_view field, std::string_view v) -> Result<uint64_t> {
    if (v.empty() || v.size() > kMaxDecimalChars) {
      return Invalid(field, "expected a decimal number");
    }
    Result<uint64_t> r = ParseUint64(v, field);
    if (!r.has_value()) {
      return r.error().WithSubject(Subject::kDescriptor);
    }
    return r;
  };
  OC_ASSIGN_OR_RETURN(s.matched_chunks, parse(kMatchedChunks, *matched));
  if (EqualsIgnoreCase(*mode, ServeModeName(ServeMode::kChunkwise))) {
    s.mode = ServeMode::kChunkwise;
  } else if (EqualsIgnoreCase(*mode, ServeModeName(ServeMode::kLayerwise))) {
    s.mode = ServeMode::kLayerwise;
  } else {
    return Invalid(kMode, "expected chunkwise or layerwise");
  }
  if (request_id.has_value()) {
    OC_RETURN_IF_ERROR(CheckRequestId(Field::kRequestId, *request_id));
    s.request_id = std::string(*request_id);
  }
  const std::array<
      std::tuple<std::string_view, std::optional<std::string_view>*, std::optional<uint64_t>*>, 3>
      timings = {{{kGatewayUs, &gateway, &s.gateway_us},
                  {kStorageUs, &storage, &s.storage_us},
                  {kTransferUs, &transfer, &s.transfer_us}}};
  for (const auto& [name, text, out] : timings) {
    if (text->has_value()) {
      OC_ASSIGN_OR_RETURN(*out, parse(name, **text));
    }
  }
  return s;
}

}  // namespace oc::descriptor
