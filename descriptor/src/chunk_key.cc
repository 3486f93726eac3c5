#include "oc/descriptor/chunk_key.h"

#include <bit>
#include <cstring>
#include <memory>

#include <fmt/core.h>
#include <xxhash.h>

#include "oc/common/bytes.h"
#include "oc/common/check.h"

namespace oc::descriptor {
namespace {

ChunkHash Canonical(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  ChunkHash out;
  static_assert(sizeof(canonical.digest) == out.size());
  std::memcpy(out.data(), canonical.digest, out.size());
  return out;
}

struct StateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};
using StatePtr = std::unique_ptr<XXH3_state_t, StateDeleter>;

StatePtr NewState() {
  StatePtr state(XXH3_createState());
  OC_CHECK(state != nullptr);
  return state;
}

// Feeds tokens as little-endian uint32 to `state`.
void UpdateTokens(XXH3_state_t* state, std::span<const uint32_t> tokens) {
  if constexpr (std::endian::native == std::endian::little) {
    OC_CHECK(XXH3_128bits_update(state, tokens.data(), tokens.size_bytes()) == XXH_OK);
  } else {
    std::byte le[4];
    for (const uint32_t t : tokens) {
      PutLittleEndian32(t, le);
      OC_CHECK(XXH3_128bits_update(state, le, sizeof(le)) == XXH_OK);
    }
  }
}

ChunkHash Next(XXH3_state_t* state, const ChunkHash& previous, std::span<const uint32_t> tokens) {
  OC_CHECK(XXH3_128bits_reset(state) == XXH_OK);
  OC_CHECK(XXH3_128bits_update(state, previous.data(), previous.size()) == XXH_OK);
  UpdateTokens(state, tokens);
  return Canonical(XXH3_128bits_digest(state));
}

}  // namespace

Result<std::string> NamespaceString(const KeyNamespace& ns) {
  if (ns.model_id.empty()) {
    return Status::InvalidArgument("model_id", "must not be empty");
  }
  for (const char c : ns.model_id) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      return Status::InvalidArgument("model_id", "must not contain control bytes");
    }
  }
  if (ns.dtype.empty()) {
    return Status::InvalidArgument("dtype", "must not be empty");
  }
  for (const char c : ns.dtype) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return Status::InvalidArgument("dtype", "must be [a-z0-9_]+");
    }
  }
  if (ns.tp_size == 0 || ns.tp_rank >= ns.tp_size) {
    return Status::InvalidArgument("tp_rank",
                                   fmt::format("rank {} of {} is not a valid tensor-parallel "
                                               "rank",
                                               ns.tp_rank, ns.tp_size));
  }
  return fmt::format("oc-kv-v1;model={};dtype={};tp={}/{}", ns.model_id, ns.dtype, ns.tp_rank,
                     ns.tp_size);
}

ChunkHash NamespaceHash(std::string_view namespace_string) {
  return Canonical(XXH3_128bits(namespace_string.data(), namespace_string.size()));
}

ChunkHash NextChunkHash(const ChunkHash& previous, std::span<const uint32_t> tokens) {
  StatePtr state = NewState();
  return Next(state.get(), previous, tokens);
}

Result<std::vector<ChunkHash>> ChunkHashes(std::span<const uint32_t> tokens, uint32_t chunk_tokens,
                                           std::string_view namespace_string) {
  if (chunk_tokens == 0) {
    return Status::InvalidArgument("chunk_tokens", "must be at least 1");
  }
  const size_t full = tokens.size() / chunk_tokens;
  std::vector<ChunkHash> out;
  out.reserve(full);
  StatePtr state = NewState();
  ChunkHash previous = NamespaceHash(namespace_string);
  for (size_t i = 0; i < full; ++i) {
    previous = Next(state.get(), previous, tokens.subspan(i * chunk_tokens, chunk_tokens));
    out.push_back(previous);
  }
  return out;
}

std::string ChunkObjectName(std::string_view prefix, const ChunkHash& hash) {
  std::string name;
  name.reserve(prefix.size() + kChunkHashHexChars);
  name.append(prefix);
  AppendHex(hash, name);
  return name;
}

}  // namespace oc::descriptor
