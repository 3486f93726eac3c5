// Fuzzes the descriptor decoders (descriptor/codec.h) with arbitrary bytes: once as the
// body of POST /{bucket}?objectcache, once split into header lines ("name: value" at the
// first ':'), as the gateway would hand them over. Whatever decodes is validated; whatever
// also validates must survive an encode/decode round trip unchanged in both forms, and its
// layout arithmetic must stay inside the payload. Any other outcome aborts.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "oc/descriptor/codec.h"
#include "oc/descriptor/layout.h"
#include "oc/descriptor/limits.h"

namespace {

using oc::descriptor::Descriptor;
using oc::descriptor::HeaderField;

void Require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

std::vector<HeaderField> SplitHeaders(std::string_view input) {
  std::vector<HeaderField> headers;
  while (!input.empty()) {
    const size_t newline = input.find('\n');
    std::string_view line = input.substr(0, newline);
    input.remove_prefix(newline == std::string_view::npos ? input.size() : newline + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      headers.push_back({line, ""});
    } else {
      headers.push_back({line.substr(0, colon), line.substr(colon + 1)});
    }
  }
  return headers;
}

void Check(const oc::Result<Descriptor>& decoded, const oc::descriptor::Limits& limits) {
  if (!decoded.has_value()) {
    Require(!decoded.error().ok() && decoded.error().subject() == oc::Subject::kDescriptor);
    return;
  }
  const Descriptor& d = *decoded;
  if (!oc::descriptor::Validate(d, limits).ok()) {
    return;
  }
  // Round trips in both forms. Headers may exceed max_header_bytes when re-encoded (the
  // body form has no such limit), so they are decoded with a limit that fits.
  oc::descriptor::Limits roomy = limits;
  roomy.max_header_bytes = UINT64_MAX;
  roomy.max_body_bytes = UINT64_MAX;
  const oc::descriptor::HeaderList list = oc::descriptor::EncodeHeaders(d);
  std::vector<HeaderField> view;
  for (const auto& [name, value] : list) {
    view.push_back({name, value});
  }
  const oc::Result<Descriptor> from_headers = oc::descriptor::DecodeHeaders(view, roomy);
  Require(from_headers.has_value() && *from_headers == d);
  const oc::Result<Descriptor> from_body =
      oc::descriptor::DecodeBody(oc::descriptor::EncodeBody(d), roomy);
  Require(from_body.has_value() && *from_body == d);
  // Every slice of the validated request lands inside the payload.
  const oc::Result<oc::descriptor::ChunkGeometry> g =
      oc::descriptor::ChunkGeometry::Make(d.layout, d.num_chunks(), d.num_layers, d.layer_bytes);
  Require(g.has_value());
  const uint32_t last_layer = d.num_layers - 1;
  const uint64_t last_chunk = d.num_chunks() - 1;
  Require(g->DestinationOffset(d.delivery, last_layer, last_chunk) + d.layer_bytes <=
          g->total_bytes());
  const oc::descriptor::LayerSource source = g->Source(last_layer);
  for (const oc::descriptor::SliceCopy& c : source.view()) {
    Require(c.source_offset + c.length <= g->chunk_bytes());
    Require(c.slice_offset + c.length <= d.layer_bytes);
  }
  Require(!d.target.has_value() || d.target->length >= g->total_bytes());
  Require(!d.ObjectName(last_chunk).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Small limits reach the limit checks with small inputs; defaults for everything else.
  oc::descriptor::Limits limits;
  limits.max_chunks = 64;
  limits.max_header_bytes = 4096;
  limits.max_body_bytes = 16384;
  limits.max_layers = 128;
  Check(oc::descriptor::DecodeBody(input, limits), limits);
  Check(oc::descriptor::DecodeHeaders(SplitHeaders(input), limits), limits);
  Check(oc::descriptor::DecodeBody(input, oc::descriptor::Limits{}), oc::descriptor::Limits{});
  return 0;
}
