// The worked examples of docs/protocol.md, checked: if one of these fails, the document and
// the code disagree.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chunk_key_vectors.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/layout.h"
#include "oc/descriptor/limits.h"

namespace oc::descriptor {
namespace {

// Assembles the payload of `d` from stored chunk objects, using only layout.h: what the
// storage server does, in miniature.
std::string Assemble(const Descriptor& d, const std::vector<std::string>& objects) {
  Result<ChunkGeometry> g =
      ChunkGeometry::Make(d.layout, d.num_chunks(), d.num_layers, d.layer_bytes);
  EXPECT_TRUE(g.has_value());
  std::string payload(g->total_bytes(), '?');
  for (uint32_t l = 0; l < d.num_layers; ++l) {
    const LayerSource source = g->Source(l);
    for (uint64_t j = 0; j < d.num_chunks(); ++j) {
      const uint64_t at = g->DestinationOffset(d.delivery, l, j);
      for (const SliceCopy& c : source.view()) {
        payload.replace(at + c.slice_offset, c.length, objects[j], c.source_offset, c.length);
      }
    }
  }
  return payload;
}

constexpr std::string_view kWalkThroughBody =
    "x-oc-version: 1\n"
    "x-oc-key-prefix: llama-3.1-8b/\n"
    "x-oc-chunk-hashes: 73915cab52f8c56eb1816a3a2513692d\n"
    "x-oc-chunk-hashes: a5e3d64f612716482e00d38104516b19\n"
    "x-oc-num-layers: 2\n"
    "x-oc-chunk-tokens: 4\n"
    "x-oc-layer-bytes: 6\n"
    "x-oc-layout: kv_l2td\n"
    "x-oc-delivery: layer-major\n";

TEST(ProtocolDoc, WalkThroughKeysAreTheFirstTestVector) {
  const vectors::ChunkKeyVector v = vectors::ChunkKeyVectors()[0];
  Result<std::vector<ChunkHash>> h = ChunkHashes(vectors::Iota(8), 4, v.namespace_string);
  ASSERT_TRUE(h.has_value());
  Result<Descriptor> d = DecodeBody(kWalkThroughBody, Limits{});
  ASSERT_TRUE(d.has_value()) << d.error();
  ASSERT_TRUE(Validate(*d, Limits{}).ok());
  EXPECT_EQ(d->ObjectName(0), ChunkObjectName("llama-3.1-8b/", (*h)[0]));
  EXPECT_EQ(d->ObjectName(0), "llama-3.1-8b/73915cab52f8c56eb1816a3a2513692d");
  EXPECT_EQ(d->ObjectName(1), "llama-3.1-8b/a5e3d64f612716482e00d38104516b19");
}

TEST(ProtocolDoc, WalkThroughPayloads) {
  Result<Descriptor> d = DecodeBody(kWalkThroughBody, Limits{});
  ASSERT_TRUE(d.has_value());
  const std::vector<std::string> l2td = {"a0Ka0Va1Ka1V", "b0Kb0Vb1Kb1V"};
  const std::vector<std::string> two_ltd = {"a0Ka1Ka0Va1V", "b0Kb1Kb0Vb1V"};
  EXPECT_EQ(Assemble(*d, l2td), "a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V");
  d->delivery = Delivery::kChunkMajor;
  EXPECT_EQ(Assemble(*d, l2td), "a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V");
  d->layout = StoredLayout::k2LTD;
  EXPECT_EQ(Assemble(*d, two_ltd), "a0Ka0Va1Ka1Vb0Kb0Vb1Kb1V");
  d->delivery = Delivery::kLayerMajor;
  EXPECT_EQ(Assemble(*d, two_ltd), "a0Ka0Vb0Kb0Va1Ka1Vb1Kb1V");
  // Only the first chunk matched: the dense HTTP body over M = 1.
  std::get<CompactKeys>(d->keys).hashes.resize(1);
  EXPECT_EQ(Assemble(*d, two_ltd), "a0Ka0Va1Ka1V");
}

TEST(ProtocolDoc, LlamaLayoutNumbers) {
  Result<uint64_t> s = LayerSliceBytes({8, 128, 2}, 256);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, 1048576u);
  Result<ChunkGeometry> l2td = ChunkGeometry::Make(StoredLayout::kL2TD, 4, 32, *s);
  Result<ChunkGeometry> two_ltd = ChunkGeometry::Make(StoredLayout::k2LTD, 4, 32, *s);
  ASSERT_TRUE(l2td.has_value() && two_ltd.has_value());
  EXPECT_EQ(l2td->total_bytes(), 134217728u);
  EXPECT_EQ(l2td->Source(3).copies[0], (SliceCopy{3145728, 0, 1048576}));
  EXPECT_EQ(two_ltd->Source(3).copies[0], (SliceCopy{1572864, 0, 524288}));
  EXPECT_EQ(two_ltd->Source(3).copies[1], (SliceCopy{18350080, 524288, 524288}));
  EXPECT_EQ(two_ltd->Source(31).copies[0].source_offset, 16252928u);
  EXPECT_EQ(two_ltd->Source(31).copies[1].source_offset, 33030144u);
  EXPECT_EQ(l2td->DestinationOffset(Delivery::kLayerMajor, 3, 2), 14680064u);
  EXPECT_EQ(l2td->DestinationOffset(Delivery::kChunkMajor, 3, 2), 70254592u);

  Result<ChunkGeometry> long_prefix = ChunkGeometry::Make(StoredLayout::kL2TD, 3584, 32, 65536);
  ASSERT_TRUE(long_prefix.has_value());
  EXPECT_EQ(long_prefix->total_bytes(), 7516192768u);
  EXPECT_EQ(long_prefix->DestinationOffset(Delivery::kLayerMajor, 31, 3583), 7516127232u);
  EXPECT_EQ(long_prefix->DestinationOffset(Delivery::kChunkMajor, 31, 3583), 7516127232u);
  EXPECT_EQ(*ChunkObjectBytes({4, 128, 2}, 256, 80), 41943040u);
}

TEST(ProtocolDoc, OverflowExample) {
  Limits open;
  open.max_layers = 1u << 30;
  open.max_layer_bytes = ~0ull;
  open.max_total_bytes = ~0ull;
  Descriptor d;
  d.keys = CompactKeys{"", std::vector<ChunkHash>(4)};
  d.num_layers = 1u << 30;
  d.chunk_tokens = 1;
  d.layer_bytes = (1ull << 32) - 1;
  EXPECT_TRUE(Validate(d, open).ok());
  d.layer_bytes = 1ull << 32;
  const Status s = Validate(d, open);
  EXPECT_EQ(s.field(), "x-oc-layer-bytes");
  EXPECT_EQ(s.message(),
            "chunks x layers x layer bytes (4 x 1073741824 x 4294967296) overflows 64 bits");
  d.layer_bytes = 1;
  d.num_layers = 4096;
  EXPECT_EQ(Validate(d, Limits{}).message(), "4096 is out of range 1..1024");
}

TEST(ProtocolDoc, PercentEncodingExamples) {
  Descriptor d;
  d.keys = ExplicitKeys{{"a b,c%", "\xc3\xbc", "meta-llama/Llama-3.1-8B@1@0@ab@bfloat16"}};
  d.num_layers = 1;
  d.chunk_tokens = 1;
  d.layer_bytes = 1;
  const HeaderList h = EncodeHeaders(d);
  ASSERT_EQ(h[1].first, "x-oc-chunk-names");
  EXPECT_EQ(h[1].second, "a%20b%2Cc%25,%C3%BC,meta-llama/Llama-3.1-8B@1@0@ab@bfloat16");
}

TEST(ProtocolDoc, FirstChunkHashInputBytes) {
  const vectors::ChunkKeyVector v = vectors::ChunkKeyVectors()[0];
  const ChunkHash ns = NamespaceHash(v.namespace_string);
  const std::vector<uint32_t> tokens = {0, 1, 2, 3};
  // H_0 is XXH3_128 of ns ‖ tokens LE; the rolling function must agree with that reading.
  EXPECT_EQ(NextChunkHash(ns, tokens), (*ChunkHashes(vectors::Iota(4), 4, v.namespace_string))[0]);
}

}  // namespace
}  // namespace oc::descriptor
