#pragma once
// Parsers of single descriptor values (docs/protocol.md, "Encodings"), for the codec's decoder
// (codec_decode.cc) and response decoder (codec_response.cc). Each checks a value's length
// before decoding or allocating anything, and fails with Invalid() naming its field
// (codec_fields.h).
// Thread safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec_fields.h"
#include "oc/common/result.h"
#include "oc/descriptor/descriptor.h"

namespace oc::descriptor::codec_internal {

// A decimal of 1..kMaxDecimalChars digits that fits 64 (or 32) bits.
Result<uint64_t> ParseDecimal(Field f, std::string_view value);
Result<uint32_t> ParseDecimal32(Field f, std::string_view value);

// Percent-decoding (docs/protocol.md): %XX (either case) is any byte; visible ASCII other
// than ',' and '%' stands for itself; anything else is an error. `max_bytes` bounds the
// decoded length and is checked against the encoded length before anything is allocated.
// `index` is the position of an explicit name, for errors.
Result<std::string> PercentDecode(Field f, std::string_view encoded, uint64_t max_bytes,
                                  std::optional<uint64_t> index);

// An even number of hex digits, 2..2*max_bytes of them, as bytes.
Result<std::vector<std::byte>> ParseHexBlob(Field f, std::string_view value, uint64_t max_bytes);

// x-oc-target-connection: exactly 32 hex digits (docs/protocol.md).
Result<ConnectionId> ParseConnectionId(std::string_view value);

// x-oc-layout and x-oc-delivery: one of their names, in any case.
Result<StoredLayout> ParseLayout(std::string_view value);
Result<Delivery> ParseDelivery(std::string_view value);

// x-oc-request-id: 1..kMaxRequestIdBytes visible ASCII characters.
Status CheckRequestId(Field f, std::string_view value);

}  // namespace oc::descriptor::codec_internal
