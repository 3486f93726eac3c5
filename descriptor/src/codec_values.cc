#include "codec_values.h"

#include <limits>

#include <fmt/core.h>

#include "oc/common/bytes.h"
#include "oc/common/text.h"
#include "oc/common/units.h"
#include "oc/descriptor/limits.h"

namespace oc::descriptor::codec_internal {
namespace {

// Visible ASCII other than ',' and '%' stands for itself in a percent-encoded value.
bool IsRawEncoded(unsigned char b) { return b >= 0x21 && b <= 0x7e && b != ',' && b != '%'; }

// Names the value in an error: "name 7" for the eighth explicit name, else "value".
std::string What(std::optional<uint64_t> index) {
  return index.has_value() ? fmt::format("name {}", *index) : std::string("value");
}

}  // namespace

Result<uint64_t> ParseDecimal(Field f, std::string_view value) {
  if (value.empty() || value.size() > kMaxDecimalChars) {
    return Invalid(Name(f), "expected a decimal number");
  }
  Result<uint64_t> v = ParseUint64(value, Name(f));
  if (!v.has_value()) {
    return v.error().WithSubject(Subject::kDescriptor);
  }
  return v;
}

Result<uint32_t> ParseDecimal32(Field f, std::string_view value) {
  OC_ASSIGN_OR_RETURN(const uint64_t v, ParseDecimal(f, value));
  if (v > std::numeric_limits<uint32_t>::max()) {
    return Invalid(Name(f), fmt::format("{} does not fit in 32 bits", v));
  }
  return static_cast<uint32_t>(v);
}

Result<std::string> PercentDecode(Field f, std::string_view encoded, uint64_t max_bytes,
                                  std::optional<uint64_t> index) {
  // Every decoded byte takes 1..3 encoded characters.
  if (encoded.size() > 3 * max_bytes) {
    return Invalid(Name(f), fmt::format("{} is longer than {} bytes", What(index), max_bytes));
  }
  // Every byte outside the escapes must stand for itself; a wrong one is reported where it
  // comes before any malformed escape (so errors name the first fault either way).
  size_t bad_byte = 0;
  while (
      bad_byte < encoded.size() &&
      (encoded[bad_byte] == '%' || IsRawEncoded(static_cast<unsigned char>(encoded[bad_byte])))) {
    ++bad_byte;
  }
  std::string out;
  const size_t bad_escape = PercentDecodeAppend(encoded.substr(0, bad_byte), out);
  if (bad_escape != kPercentDecodeOk) {
    return Invalid(Name(f), fmt::format("{}: '%' at offset {} is not followed by two hex "
                                        "digits",
                                        What(index), bad_escape));
  }
  if (bad_byte < encoded.size()) {
    return Invalid(
        Name(f), fmt::format("{}: byte 0x{:02x} at offset {} must be "
                             "percent-encoded",
                             What(index), static_cast<unsigned char>(encoded[bad_byte]), bad_byte));
  }
  if (out.size() > max_bytes) {
    return Invalid(
        Name(f), fmt::format("{} is {} bytes, longer than {}", What(index), out.size(), max_bytes));
  }
  return out;
}

Result<std::vector<std::byte>> ParseHexBlob(Field f, std::string_view value, uint64_t max_bytes) {
  if (value.empty() || value.size() % 2 != 0 || value.size() / 2 > max_bytes) {
    return Invalid(Name(f),
                   fmt::format("expected 2..{} hex characters, an even number", 2 * max_bytes));
  }
  std::vector<std::byte> out(value.size() / 2);
  if (!HexDecodeTo(value, out)) {
    return Invalid(Name(f), "not hex");
  }
  return out;
}

Result<ConnectionId> ParseConnectionId(std::string_view value) {
  ConnectionId id{};
  if (value.size() != 2 * id.size() || !HexDecodeTo(value, id)) {
    return Invalid(Name(Field::kTargetConnection),
                   fmt::format("expected {} hex digits", 2 * id.size()));
  }
  return id;
}

Result<StoredLayout> ParseLayout(std::string_view value) {
  for (const StoredLayout l : {StoredLayout::kL2TD, StoredLayout::k2LTD}) {
    if (EqualsIgnoreCase(value, StoredLayoutName(l))) {
      return l;
    }
  }
  return Invalid(Name(Field::kLayout), "expected kv_l2td or kv_2ltd");
}

Result<Delivery> ParseDelivery(std::string_view value) {
  for (const Delivery d : {Delivery::kLayerMajor, Delivery::kChunkMajor}) {
    if (EqualsIgnoreCase(value, DeliveryName(d))) {
      return d;
    }
  }
  return Invalid(Name(Field::kDelivery), "expected layer-major or chunk-major");
}

Status CheckRequestId(Field f, std::string_view value) {
  if (value.empty() || value.size() > kMaxRequestIdBytes) {
    return Invalid(Name(f),
                   fmt::format("must be 1..{} visible ASCII characters", kMaxRequestIdBytes));
  }
  for (const char c : value) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x21 || b > 0x7e) {
      return Invalid(Name(f), "must be visible ASCII (0x21..0x7e)");
    }
  }
  return Status::Ok();
}

}  // namespace oc::descriptor::codec_internal
