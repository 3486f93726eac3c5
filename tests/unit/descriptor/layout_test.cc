#include "oc/descriptor/layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace oc::descriptor {
namespace {

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();

TEST(Layout, L2tdLayerIsOneRange) {
  Result<ChunkGeometry> g = ChunkGeometry::Make(StoredLayout::kL2TD, 3, 4, 1000);
  ASSERT_TRUE(g.has_value()) << g.error();
  EXPECT_EQ(g->chunk_bytes(), 4000u);
  EXPECT_EQ(g->total_bytes(), 12000u);
  for (uint32_t l = 0; l < 4; ++l) {
    SCOPED_TRACE(l);
    const LayerSource s = g->Source(l);
    ASSERT_EQ(s.count, 1u);
    EXPECT_EQ(s.copies[0], (SliceCopy{l * 1000ull, 0, 1000}));
  }
}

TEST(Layout, TwoLtdLayerIsKThenVHalves) {
  // L = 4, S = 1000: K of layer l at l*500, V at (4 + l)*500; K lands first in the slice.
  Result<ChunkGeometry> g = ChunkGeometry::Make(StoredLayout::k2LTD, 2, 4, 1000);
  ASSERT_TRUE(g.has_value()) << g.error();
  struct Row {
    uint32_t layer;
    uint64_t k_source, v_source;
  };
  for (const Row& row :
       {Row{0, 0, 2000}, Row{1, 500, 2500}, Row{2, 1000, 3000}, Row{3, 1500, 3500}}) {
    SCOPED_TRACE(row.layer);
    const LayerSource s = g->Source(row.layer);
    ASSERT_EQ(s.count, 2u);
    EXPECT_EQ(s.copies[0], (SliceCopy{row.k_source, 0, 500}));
    EXPECT_EQ(s.copies[1], (SliceCopy{row.v_source, 500, 500}));
    EXPECT_EQ(s.view().size(), 2u);
  }
}

TEST(Layout, EveryByteOfAChunkIsCopiedExactlyOnce) {
  for (const StoredLayout layout : {StoredLayout::kL2TD, StoredLayout::k2LTD}) {
    SCOPED_TRACE(StoredLayoutName(layout));
    Result<ChunkGeometry> g = ChunkGeometry::Make(layout, 1, 5, 6);
    ASSERT_TRUE(g.has_value());
    std::vector<int> hits(g->chunk_bytes(), 0);
    for (uint32_t l = 0; l < 5; ++l) {
      const LayerSource source = g->Source(l);
      for (const SliceCopy& c : source.view()) {
        for (uint64_t b = 0; b < c.length; ++b) {
          ++hits[c.source_offset + b];
        }
      }
    }
    for (size_t b = 0; b < hits.size(); ++b) {
      EXPECT_EQ(hits[b], 1) << "byte " << b;
    }
  }
}

TEST(Layout, DestinationOffsetsLayerMajorAndChunkMajor) {
  // N = 3 chunks, L = 2 layers, S = 100 bytes.
  Result<ChunkGeometry> g = ChunkGeometry::Make(StoredLayout::kL2TD, 3, 2, 100);
  ASSERT_TRUE(g.has_value());
  struct Row {
    uint32_t layer;
    uint64_t chunk;
    uint64_t layer_major, chunk_major;
  };
  for (const Row& row : {Row{0, 0, 0, 0}, Row{0, 1, 100, 200}, Row{0, 2, 200, 400},
                         Row{1, 0, 300, 100}, Row{1, 1, 400, 300}, Row{1, 2, 500, 500}}) {
    SCOPED_TRACE(testing::Message() << "layer " << row.layer << " chunk " << row.chunk);
    EXPECT_EQ(g->DestinationOffset(Delivery::kLayerMajor, row.layer, row.chunk), row.layer_major);
    EXPECT_EQ(g->DestinationOffset(Delivery::kChunkMajor, row.layer, row.chunk), row.chunk_major);
  }
}

TEST(Layout, DestinationsTileTheTargetExactly) {
  for (const Delivery d : {Delivery::kLayerMajor, Delivery::kChunkMajor}) {
    SCOPED_TRACE(DeliveryName(d));
    Result<ChunkGeometry> g = ChunkGeometry::Make(StoredLayout::k2LTD, 7, 3, 4);
    ASSERT_TRUE(g.has_value());
    std::vector<int> hits(g->total_bytes(), 0);
    for (uint32_t l = 0; l < 3; ++l) {
      for (uint64_t j = 0; j < 7; ++j) {
        const uint64_t at = g->DestinationOffset(d, l, j);
        for (uint64_t b = 0; b < 4; ++b) {
          ++hits[at + b];
        }
      }
    }
    for (size_t b = 0; b < hits.size(); ++b) {
      EXPECT_EQ(hits[b], 1) << "byte " << b;
    }
  }
}

TEST(Layout, LargestOffsetsNear2To64DoNotOverflow) {
  // N·L·S = 2^64 - 2^32 ... the largest representable shapes still compute exact offsets.
  const uint64_t n = (1ull << 32) - 1;
  const uint32_t l = 1u << 16;
  const uint64_t s = 1ull << 16;  // n * l * s = 2^64 - 2^32
  Result<ChunkGeometry> g = ChunkGeometry::Make(StoredLayout::k2LTD, n, l, s);
  ASSERT_TRUE(g.has_value()) << g.error();
  EXPECT_EQ(g->total_bytes(), kMax64 - (1ull << 32) + 1);
  EXPECT_EQ(g->DestinationOffset(Delivery::kLayerMajor, l - 1, n - 1), g->total_bytes() - s);
  EXPECT_EQ(g->DestinationOffset(Delivery::kChunkMajor, l - 1, n - 1), g->total_bytes() - s);
  const LayerSource last = g->Source(l - 1);
  EXPECT_EQ(last.copies[1].source_offset + last.copies[1].length, g->chunk_bytes());
}

TEST(Layout, MakeRejectsOverflowAndBadShapes) {
  struct Row {
    StoredLayout layout;
    uint64_t n;
    uint32_t l;
    uint64_t s;
    std::string_view field;
  };
  for (const Row& row : {
           Row{StoredLayout::kL2TD, 1ull << 32, 1u << 16, 1ull << 16, "x-oc-layer-bytes"},
           Row{StoredLayout::kL2TD, 2, 1, 1ull << 63, "x-oc-layer-bytes"},
           Row{StoredLayout::kL2TD, 1, 2, 1ull << 63, "x-oc-layer-bytes"},
           Row{StoredLayout::kL2TD, kMax64, 0xffffffffu, kMax64, "x-oc-layer-bytes"},
           Row{StoredLayout::kL2TD, 0, 1, 1, ""},
           Row{StoredLayout::kL2TD, 1, 0, 1, "x-oc-num-layers"},
           Row{StoredLayout::kL2TD, 1, 1, 0, "x-oc-layer-bytes"},
           Row{StoredLayout::k2LTD, 1, 1, 3, "x-oc-layer-bytes"},
           Row{static_cast<StoredLayout>(9), 1, 1, 2, "x-oc-layout"},
       }) {
    SCOPED_TRACE(testing::Message() << row.n << " x " << row.l << " x " << row.s);
    Result<ChunkGeometry> g = ChunkGeometry::Make(row.layout, row.n, row.l, row.s);
    ASSERT_FALSE(g.has_value());
    EXPECT_EQ(g.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(g.error().subject(), Subject::kDescriptor);
    EXPECT_EQ(g.error().field(), row.field);
  }
  EXPECT_EQ(*PayloadBytes(kMax64, 1, 1), kMax64);
  EXPECT_EQ(*PayloadBytes(1, 1, kMax64), kMax64);
  EXPECT_FALSE(PayloadBytes(kMax64, 1, 2).has_value());
  EXPECT_FALSE(PayloadBytes(2, 2, kMax64 / 4 + 1).has_value());
  EXPECT_EQ(*PayloadBytes(2, 2, kMax64 / 4), kMax64 - 3);
}

TEST(Layout, KvBytesFollowEquationOne) {
  struct Row {
    std::string_view model;
    KvShape shape;
    uint64_t tokens;
    uint32_t layers;
    uint64_t per_token, slice, chunk;
  };
  for (const Row& row : {
           // Llama-3.1-8B: 8 KV heads x 128 x fp16 = 4096 B/token/layer; 32 layers.
           Row{"llama-3.1-8b G=256", {8, 128, 2}, 256, 32, 4096, 1u << 20, 32u << 20},
           Row{"llama-3.1-8b G=16", {8, 128, 2}, 16, 32, 4096, 64u << 10, 2u << 20},
           // Llama-3.1-70B on TP=2: 4 KV heads per rank, 80 layers.
           Row{"llama-3.1-70b tp2 G=256", {4, 128, 2}, 256, 80, 2048, 512u << 10, 40u << 20},
           // fp8 halves it.
           Row{"llama-3.1-8b fp8 G=256", {8, 128, 1}, 256, 32, 2048, 512u << 10, 16u << 20},
       }) {
    SCOPED_TRACE(row.model);
    EXPECT_EQ(*KvBytesPerTokenPerLayer(row.shape), row.per_token);
    EXPECT_EQ(*LayerSliceBytes(row.shape, row.tokens), row.slice);
    EXPECT_EQ(*ChunkObjectBytes(row.shape, row.tokens, row.layers), row.chunk);
  }
  EXPECT_FALSE(KvBytesPerTokenPerLayer({0, 128, 2}).has_value());
  EXPECT_FALSE(LayerSliceBytes({8, 128, 2}, 0).has_value());
  EXPECT_FALSE(ChunkObjectBytes({8, 128, 2}, 16, 0).has_value());
  // Near 2^64: 2 · (2^31 - 1) · (2^32 - 1) fits, 2 · (2^32 - 1)^2 does not.
  EXPECT_EQ(*KvBytesPerTokenPerLayer({0x7fffffffu, 0xffffffffu, 1}),
            2 * uint64_t{0x7fffffffu} * 0xffffffffu);
  EXPECT_FALSE(KvBytesPerTokenPerLayer({0xffffffffu, 0xffffffffu, 1}).has_value());
  EXPECT_FALSE(KvBytesPerTokenPerLayer({0xffffffffu, 0xffffffffu, 0xffffffffu}).has_value());
  EXPECT_FALSE(LayerSliceBytes({0x7fffffffu, 0xffffffffu, 1}, 2).has_value());
  EXPECT_FALSE(ChunkObjectBytes({0xffffu, 0xffffu, 0xffffu}, 0xffffu, 0xffffu).has_value());
}

TEST(Layout, WireNames) {
  EXPECT_EQ(StoredLayoutName(StoredLayout::kL2TD), "kv_l2td");
  EXPECT_EQ(StoredLayoutName(StoredLayout::k2LTD), "kv_2ltd");
  EXPECT_EQ(DeliveryName(Delivery::kLayerMajor), "layer-major");
  EXPECT_EQ(DeliveryName(Delivery::kChunkMajor), "chunk-major");
  EXPECT_FALSE(IsKnownLayout(static_cast<StoredLayout>(0)));
  EXPECT_FALSE(IsKnownDelivery(static_cast<Delivery>(3)));
}

}  // namespace
}  // namespace oc::descriptor
