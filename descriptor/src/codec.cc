#include "oc/descriptor/codec.h"

#include <array>
#include <limits>
#include <tuple>

#include <fmt/core.h>

#include "oc/common/bytes.h"
#include "oc/common/text.h"
#include "oc/common/units.h"

namespace oc::descriptor {
namespace {

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
  kCount,
};

constexpr std::array<std::string_view, static_cast<size_t>(Field::kCount)> kFieldNames = {
    "x-oc-version",       "x-oc-key-prefix",        "x-oc-chunk-hashes", "x-oc-chunk-names",
    "x-oc-num-layers",    "x-oc-chunk-tokens",      "x-oc-layer-bytes",  "x-oc-layout",
    "x-oc-delivery",      "x-oc-target-connection", "x-oc-target-rkey",  "x-oc-target-address",
    "x-oc-target-length", "x-oc-compute-window-us", "x-oc-request-id",
};

constexpr std::string_view kPrefix = "x-oc-";
constexpr std::string_view kBodyField = "body";
// Longest decimal accepted: 2^64-1 has 20 digits. Longer values are refused before parsing.
constexpr size_t kMaxDecimalChars = 20;
// Longest unknown field name echoed back in an error.
constexpr size_t kMaxEchoedNameChars = 64;

std::string_view Name(Field f) { return kFieldNames[static_cast<size_t>(f)]; }

Status Invalid(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(field),
                std::move(message));
}

bool HasOcPrefix(std::string_view name) {
  return name.size() >= kPrefix.size() && EqualsIgnoreCase(name.substr(0, kPrefix.size()), kPrefix);
}

std::optional<Field> Lookup(std::string_view name) {
  for (size_t i = 0; i < kFieldNames.size(); ++i) {
    if (EqualsIgnoreCase(name, kFieldNames[i])) {
      return static_cast<Field>(i);
    }
  }
  return std::nullopt;
}

// An unknown name, made safe to echo: at most kMaxEchoedNameChars, lowercase.
std::string EchoName(std::string_view name) {
  std::string out;
  for (const char c : name.substr(0, kMaxEchoedNameChars)) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(b >= 0x21 && b <= 0x7e ? AsciiLower(c) : '?');
  }
  return out;
}

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

uint64_t CountItems(std::string_view list) {
  uint64_t n = 0;
  (void)ForEachItem(list, [&n](std::string_view) {
    ++n;
    return Status::Ok();
  });
  return n;
}

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

// --- Value parsers ---------------------------------------------------------------------

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

// Visible ASCII other than ',' and '%' stands for itself in a percent-encoded value.
bool IsRawEncoded(unsigned char b) { return b >= 0x21 && b <= 0x7e && b != ',' && b != '%'; }

// Names the value in an error: "name 7" for the eighth explicit name, else "value".
std::string What(std::optional<uint64_t> index) {
  return index.has_value() ? fmt::format("name {}", *index) : std::string("value");
}

// Percent-decoding (docs/protocol.md): %XX (either case) is any byte; visible ASCII other
// than ',' and '%' stands for itself; anything else is an error. `max_bytes` bounds the
// decoded length and is checked against the encoded length before anything is allocated.
// `index` is the position of an explicit name, for errors.
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

// x-oc-target-connection: exactly 32 hex digits (docs/protocol.md).
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

// --- The decoder ------------------------------------------------------------------------

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
  // Last: the only allocation proportional to N, after every cheap check has passed.
  OC_ASSIGN_OR_RETURN(d.keys, DecodeKeys(for_each, scan, limits));
  return d;
}

// --- The encoder ------------------------------------------------------------------------

// Bytes the encoder writes as themselves; every other byte becomes %XX. A subset of what the
// decoder accepts raw, chosen so LMCache-style names ("org/model@1@0@<hex>@bfloat16") stay
// readable.
bool EncodesRaw(unsigned char b) {
  return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' ||
         b == '.' || b == '_' || b == '~' || b == '/' || b == '@' || b == ':' || b == '=' ||
         b == '+';
}

void AppendPercentEncoded(std::string_view raw, std::string& out) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  for (const char c : raw) {
    const auto b = static_cast<unsigned char>(c);
    if (EncodesRaw(b)) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kDigits[b >> 4]);
      out.push_back(kDigits[b & 0xf]);
    }
  }
}

// Key list values: all keys in one value (headers) or kBodyKeysPerLine per value (body).
std::vector<std::string> EncodeKeyLists(const Descriptor& d, size_t per_value) {
  std::vector<std::string> values;
  const uint64_t n = d.num_chunks();
  const auto* compact = std::get_if<CompactKeys>(&d.keys);
  const auto* names = std::get_if<ExplicitKeys>(&d.keys);
  for (uint64_t first = 0; first < n; first += per_value) {
    const uint64_t last = std::min<uint64_t>(n, first + per_value);
    std::string v;
    if (compact != nullptr) {
      v.reserve((last - first) * (kChunkHashHexChars + 1));
    }
    for (uint64_t j = first; j < last; ++j) {
      if (j != first) {
        v.push_back(',');
      }
      if (compact != nullptr) {
        AppendHex(compact->hashes[j], v);
      } else {
        AppendPercentEncoded(names->names[j], v);
      }
    }
    values.push_back(std::move(v));
  }
  return values;
}

HeaderList Encode(const Descriptor& d, size_t keys_per_value) {
  HeaderList h;
  auto add = [&h](Field f, std::string value) { h.emplace_back(Name(f), std::move(value)); };
  add(Field::kVersion, std::to_string(kProtocolVersion));
  const auto* compact = std::get_if<CompactKeys>(&d.keys);
  if (compact != nullptr && !compact->prefix.empty()) {
    std::string prefix;
    AppendPercentEncoded(compact->prefix, prefix);
    add(Field::kKeyPrefix, std::move(prefix));
  }
  const Field list_field = compact != nullptr ? Field::kChunkHashes : Field::kChunkNames;
  for (std::string& v : EncodeKeyLists(d, keys_per_value)) {
    add(list_field, std::move(v));
  }
  add(Field::kNumLayers, std::to_string(d.num_layers));
  add(Field::kChunkTokens, std::to_string(d.chunk_tokens));
  add(Field::kLayerBytes, std::to_string(d.layer_bytes));
  add(Field::kLayout, std::string(StoredLayoutName(d.layout)));
  add(Field::kDelivery, std::string(DeliveryName(d.delivery)));
  if (d.target.has_value()) {
    add(Field::kTargetConnection, HexEncode(d.target->connection));
    add(Field::kTargetRkey, HexEncode(d.target->rkey));
    add(Field::kTargetAddress, std::to_string(d.target->address));
    add(Field::kTargetLength, std::to_string(d.target->length));
  }
  if (d.compute_window_us.has_value()) {
    add(Field::kComputeWindow, std::to_string(*d.compute_window_us));
  }
  if (!d.request_id.empty()) {
    add(Field::kRequestId, d.request_id);
  }
  return h;
}

constexpr std::string_view kMatchedChunks = "x-oc-matched-chunks";
constexpr std::string_view kMode = "x-oc-mode";
constexpr std::string_view kGatewayUs = "x-oc-gateway-us";
constexpr std::string_view kStorageUs = "x-oc-storage-us";
constexpr std::string_view kTransferUs = "x-oc-transfer-us";

}  // namespace

uint64_t HeaderBytes(const HeaderList& headers) {
  uint64_t n = 0;
  for (const auto& [name, value] : headers) {
    n += name.size() + value.size() + 4;
  }
  return n;
}

HeaderList EncodeHeaders(const Descriptor& d) {
  return Encode(d, std::numeric_limits<size_t>::max());
}

std::string EncodeBody(const Descriptor& d) {
  const HeaderList h = Encode(d, kBodyKeysPerLine);
  std::string body;
  body.reserve(HeaderBytes(h));
  for (const auto& [name, value] : h) {
    body.append(name).append(": ").append(value).push_back('\n');
  }
  return body;
}

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
