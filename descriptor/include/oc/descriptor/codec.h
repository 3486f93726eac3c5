#pragma once
// The descriptor on the wire (docs/protocol.md is the normative text): `x-oc-*` request
// headers on `GET /{bucket}?objectcache`, or the same `name: value` lines, one per line, as
// the body of `POST /{bucket}?objectcache` when the key list is too large for headers. One
// parser serves both. Version 1 (`x-oc-version: 1`); any other version is refused.
//
// Encodings: numbers in decimal; hashes, the data-plane connection id (exactly 32 digits)
// and the rkey in hex (either case on input, lowercase on output); the key prefix and explicit
// names percent-encoded
// (%XX for any byte, so every byte an S3 key can hold is expressible); lists comma-separated
// and, for the two key lists, repeatable (values of repeated lines are appended in order,
// as HTTP list headers combine).
//
// Decoding takes untrusted input: the total size is checked first, the key count is counted
// and checked before any vector is built, every element's length is checked before it is
// decoded, and nothing is trusted to be as long as it says. Decoders check syntax and these
// size limits only; call Validate() (limits.h) on the result before using it.
// Every decode failure is kInvalidArgument with Subject kDescriptor; the field is the header
// at fault ("x-oc-num-layers"...), or "body" for a malformed body line or an oversized body.
// Thread safety: pure functions.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/headers.h"
#include "oc/common/result.h"
#include "oc/descriptor/descriptor.h"
#include "oc/descriptor/limits.h"

namespace oc::descriptor {

// A received header, viewed (names compare case-insensitively): the one header view
// (oc/common/headers.h), so the gateway hands its parsed request headers over as they are.
using HeaderField = oc::HeaderField;

// Headers to send: lowercase names, values ready for the wire.
using HeaderList = oc::HeaderList;

// Bytes `headers` occupy on the wire as counted against Limits::max_header_bytes:
// name + value + 4 (": " and CRLF) per header.
uint64_t HeaderBytes(const HeaderList& headers);

// The descriptor as `x-oc-*` headers, each key list as one header. Encodes what it is given;
// REQUIRES (not checked): Validate(d, limits).ok() for the receiver's limits, or the
// receiver refuses it.
HeaderList EncodeHeaders(const Descriptor& d);

// The descriptor as a POST body: the same lines as EncodeHeaders, "name: value\n", with each
// key list split over lines of at most kBodyKeysPerLine keys.
inline constexpr size_t kBodyKeysPerLine = 64;
std::string EncodeBody(const Descriptor& d);

// What a descriptor is decoded for: the requests differ in the fields they require or ignore
// (docs/protocol.md, "Requests").
enum class Purpose : uint8_t {
  kGet,    // GET or POST /{bucket}?objectcache: the fields as documented
  kProbe,  // the batch existence query: x-oc-target-* fields are ignored (neither parsed nor
           // checked), so a client may send the header set it will use for the GET
  kPut,    // PUT /{bucket}?objectcache: x-oc-layout is required
};

// Decodes the `x-oc-*` headers among `headers`; other headers are ignored, an unknown
// `x-oc-*` header is an error. kInvalidArgument/kDescriptor naming the field on any failure:
// after the version (the first x-oc-version must be present and 1), the first offending
// field in request order (unknown, or a single-valued field given again).
Result<Descriptor> DecodeHeaders(std::span<const HeaderField> headers, const Limits& limits,
                                 Purpose purpose = Purpose::kGet);

// Decodes a POST body: "name: value" lines separated by LF or CRLF; blank lines and spaces
// or tabs around names and values are ignored; every name must be a known `x-oc-*` field.
// Errors as for DecodeHeaders, lines taken in order (a line without ':' names "body").
Result<Descriptor> DecodeBody(std::string_view body, const Limits& limits,
                              Purpose purpose = Purpose::kGet);

// How the server delivered the payload (docs/design.md, Delivery): one batch and one completion
// below the threshold Θ, layer by layer at or above it.
enum class ServeMode : uint8_t { kChunkwise = 1, kLayerwise = 2 };
std::string_view ServeModeName(ServeMode mode);

// What the server answers beside (or instead of) the payload: response headers
// x-oc-version, x-oc-matched-chunks, x-oc-mode, x-oc-request-id and the optional timings.
struct ResponseSummary {
  uint64_t matched_chunks = 0;  // M: chunks 0..M-1 were present and delivered
  ServeMode mode = ServeMode::kChunkwise;
  std::string request_id;
  std::optional<uint64_t> gateway_us;   // time spent in the gateway
  std::optional<uint64_t> storage_us;   // reading and assembling in the storage server
  std::optional<uint64_t> transfer_us;  // data-plane writes (or streaming the body)

  bool operator==(const ResponseSummary&) const = default;
};

HeaderList EncodeResponse(const ResponseSummary& summary);
// Decodes the response headers above (others are ignored). kInvalidArgument/kDescriptor
// naming the field when one is missing or malformed.
Result<ResponseSummary> DecodeResponse(std::span<const HeaderField> headers);

}  // namespace oc::descriptor
