// The descriptor encoder (codec.h): the fields in the order of codec_fields.h's Field, key
// names percent-encoded, key lists in one header value or kBodyKeysPerLine per body line.

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "codec_fields.h"
#include "oc/common/bytes.h"
#include "oc/descriptor/codec.h"

namespace oc::descriptor {
namespace {

using codec_internal::Field;
using codec_internal::Name;

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
  if (d.if_none_match) {
    add(Field::kIfNoneMatch, "*");
  }
  return h;
}

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

}  // namespace oc::descriptor
