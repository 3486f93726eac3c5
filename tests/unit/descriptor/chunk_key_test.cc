#include "oc/descriptor/chunk_key.h"

#include <gtest/gtest.h>

#include "chunk_key_vectors.h"
#include "oc/common/bytes.h"

namespace oc::descriptor {
namespace {

std::string Hex(const ChunkHash& h) { return HexEncode(h); }

TEST(ChunkKey, MatchesPublishedVectors) {
  for (const vectors::ChunkKeyVector& v : vectors::ChunkKeyVectors()) {
    SCOPED_TRACE(v.namespace_string);
    EXPECT_EQ(Hex(NamespaceHash(v.namespace_string)), v.namespace_hash);
    Result<std::vector<ChunkHash>> hashes =
        ChunkHashes(v.tokens, v.chunk_tokens, v.namespace_string);
    ASSERT_TRUE(hashes.has_value()) << hashes.error();
    ASSERT_EQ(hashes->size(), v.chunk_hashes.size());
    for (size_t i = 0; i < hashes->size(); ++i) {
      EXPECT_EQ(Hex((*hashes)[i]), v.chunk_hashes[i]) << "chunk " << i;
    }
  }
}

TEST(ChunkKey, RollsFromThePreviousHash) {
  const std::vector<uint32_t> tokens = vectors::GoldenTokens(48);
  Result<std::vector<ChunkHash>> all = ChunkHashes(tokens, 16, "ns");
  ASSERT_TRUE(all.has_value());
  ChunkHash h = NamespaceHash("ns");
  for (size_t i = 0; i < 3; ++i) {
    h = NextChunkHash(h, std::span(tokens).subspan(i * 16, 16));
    EXPECT_EQ(h, (*all)[i]) << "chunk " << i;
  }
  // A chunk's key depends on every earlier chunk: changing token 0 changes all keys.
  std::vector<uint32_t> changed = tokens;
  changed[0] ^= 1;
  Result<std::vector<ChunkHash>> other = ChunkHashes(changed, 16, "ns");
  ASSERT_TRUE(other.has_value());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE((*other)[i], (*all)[i]) << "chunk " << i;
  }
}

TEST(ChunkKey, TrailingPartialChunkGetsNoKey) {
  struct Row {
    uint32_t tokens, g;
    size_t keys;
  };
  for (const Row& row :
       {Row{0, 4, 0}, Row{3, 4, 0}, Row{4, 4, 1}, Row{7, 4, 1}, Row{8, 4, 2}, Row{100, 1, 100}}) {
    SCOPED_TRACE(row.tokens);
    Result<std::vector<ChunkHash>> r = ChunkHashes(vectors::Iota(row.tokens), row.g, "ns");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->size(), row.keys);
  }
  EXPECT_FALSE(ChunkHashes(vectors::Iota(8), 0, "ns").has_value());
}

TEST(ChunkKey, NamespaceStringFormatAndChecks) {
  Result<std::string> s = NamespaceString({"meta-llama/Llama-3.1-8B", "bfloat16", 0, 1});
  ASSERT_TRUE(s.has_value()) << s.error();
  EXPECT_EQ(*s, "oc-kv-v1;model=meta-llama/Llama-3.1-8B;dtype=bfloat16;tp=0/1");
  EXPECT_EQ(*NamespaceString({"m;x", "fp8_e4m3", 3, 4}),
            "oc-kv-v1;model=m;x;dtype=fp8_e4m3;tp=3/4");
  struct Row {
    KeyNamespace ns;
    std::string_view field;
  };
  for (const Row& row :
       {Row{{"", "bfloat16", 0, 1}, "model_id"}, Row{{"m\n", "bfloat16", 0, 1}, "model_id"},
        Row{{"m", "", 0, 1}, "dtype"}, Row{{"m", "BF16", 0, 1}, "dtype"},
        Row{{"m", "bf16;tp=1", 0, 1}, "dtype"}, Row{{"m", "bf16", 0, 0}, "tp_rank"},
        Row{{"m", "bf16", 2, 2}, "tp_rank"}}) {
    SCOPED_TRACE(row.ns.model_id + "/" + row.ns.dtype);
    Result<std::string> r = NamespaceString(row.ns);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.error().field(), row.field);
  }
}

TEST(ChunkKey, ObjectNameIsPrefixPlusLowercaseHex) {
  ChunkHash h{};
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<std::byte>(0xa0 + i);
  }
  EXPECT_EQ(ChunkObjectName("kv/llama/", h), "kv/llama/a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(ChunkObjectName("", h).size(), kChunkHashHexChars);
}

}  // namespace
}  // namespace oc::descriptor
