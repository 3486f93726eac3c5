#include "oc/descriptor/limits.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "descriptor_samples.h"

namespace oc::descriptor {
namespace {

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();

TEST(Limits, DefaultsAreValidAndDocumentedValues) {
  const Limits l;
  EXPECT_TRUE(l.Validate().ok());
  EXPECT_EQ(l.max_key_bytes, 1024u);
  Limits bad;
  bad.max_chunks = 0;
  EXPECT_FALSE(bad.Validate().ok());
  Limits tiny_keys;
  tiny_keys.max_key_bytes = 32;
  EXPECT_FALSE(tiny_keys.Validate().ok());
}

TEST(Validate, AcceptsSamples) {
  for (const Descriptor& d : {samples::Compact(1), samples::Explicit(7), samples::Full(5)}) {
    EXPECT_TRUE(Validate(d, Limits{}).ok()) << Validate(d, Limits{});
  }
}

struct Row {
  std::string_view what;
  std::function<void(Descriptor&)> change;
  std::string_view field;
};

TEST(Validate, EveryFailureNamesItsField) {
  const std::vector<Row> rows = {
      {"no hashes", [](Descriptor& d) { std::get<CompactKeys>(d.keys).hashes.clear(); },
       "x-oc-chunk-hashes"},
      {"too many hashes", [](Descriptor& d) { std::get<CompactKeys>(d.keys).hashes.resize(65537); },
       "x-oc-chunk-hashes"},
      {"no names", [](Descriptor& d) { d.keys = ExplicitKeys{}; }, "x-oc-chunk-names"},
      {"too many names",
       [](Descriptor& d) { d.keys = ExplicitKeys{std::vector<std::string>(65537, "k")}; },
       "x-oc-chunk-names"},
      {"empty name",
       [](Descriptor& d) {
         d.keys = ExplicitKeys{{"a", ""}};
       },
       "x-oc-chunk-names"},
      {"long name", [](Descriptor& d) { d.keys = ExplicitKeys{{std::string(1025, 'n')}}; },
       "x-oc-chunk-names"},
      {"long prefix",
       [](Descriptor& d) { std::get<CompactKeys>(d.keys).prefix = std::string(993, 'p'); },
       "x-oc-key-prefix"},
      // S3 keys are UTF-8 and the store reserves NUL (docs/protocol.md, "Limits and
      // validation"): a surrogate, a stray byte, an overlong form or NUL is refused.
      {"name with a surrogate",
       [](Descriptor& d) {
         d.keys = ExplicitKeys{{"a", "k\xED\xA0\x80"}};
       },
       "x-oc-chunk-names"},
      {"name with 0xFF", [](Descriptor& d) { d.keys = ExplicitKeys{{"k\xFF"}}; },
       "x-oc-chunk-names"},
      {"name with NUL", [](Descriptor& d) { d.keys = ExplicitKeys{{std::string("k\0", 2)}}; },
       "x-oc-chunk-names"},
      {"overlong prefix",
       [](Descriptor& d) { std::get<CompactKeys>(d.keys).prefix = "m/\xC0\xAF"; },
       "x-oc-key-prefix"},
      {"zero layers", [](Descriptor& d) { d.num_layers = 0; }, "x-oc-num-layers"},
      {"too many layers", [](Descriptor& d) { d.num_layers = 1025; }, "x-oc-num-layers"},
      {"zero tokens", [](Descriptor& d) { d.chunk_tokens = 0; }, "x-oc-chunk-tokens"},
      {"too many tokens", [](Descriptor& d) { d.chunk_tokens = (1u << 20) + 1; },
       "x-oc-chunk-tokens"},
      {"zero layer bytes", [](Descriptor& d) { d.layer_bytes = 0; }, "x-oc-layer-bytes"},
      {"layer bytes over limit", [](Descriptor& d) { d.layer_bytes = (256ull << 20) + 2; },
       "x-oc-layer-bytes"},
      {"odd layer bytes for kv_2ltd",
       [](Descriptor& d) {
         d.layout = StoredLayout::k2LTD;
         d.layer_bytes = 1001;
       },
       "x-oc-layer-bytes"},
      {"unknown layout", [](Descriptor& d) { d.layout = static_cast<StoredLayout>(0); },
       "x-oc-layout"},
      {"unknown delivery", [](Descriptor& d) { d.delivery = static_cast<Delivery>(7); },
       "x-oc-delivery"},
      {"total over limit",
       [](Descriptor& d) {  // 2049 chunks x 32 layers x 1 MiB > 64 GiB
         std::get<CompactKeys>(d.keys).hashes.resize(2049);
         d.target.reset();
       },
       "x-oc-layer-bytes"},
      {"empty rkey", [](Descriptor& d) { d.target->rkey.clear(); }, "x-oc-target-rkey"},
      {"long rkey", [](Descriptor& d) { d.target->rkey.resize(8193); }, "x-oc-target-rkey"},
      {"target wraps", [](Descriptor& d) { d.target->address = kMax64 - d.target->length + 1; },
       "x-oc-target-address"},
      {"target too short", [](Descriptor& d) { d.target->length -= 1; }, "x-oc-target-length"},
      {"zero window", [](Descriptor& d) { d.compute_window_us = 0; }, "x-oc-compute-window-us"},
      {"window over limit", [](Descriptor& d) { d.compute_window_us = 60'000'001; },
       "x-oc-compute-window-us"},
      {"long request id", [](Descriptor& d) { d.request_id = std::string(129, 'r'); },
       "x-oc-request-id"},
      {"request id with newline", [](Descriptor& d) { d.request_id = "a\nb"; }, "x-oc-request-id"},
      {"request id with high byte", [](Descriptor& d) { d.request_id = "\xc3\xbc"; },
       "x-oc-request-id"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Descriptor d = samples::Full(4);
    row.change(d);
    const Status s = Validate(d, Limits{});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.subject(), Subject::kDescriptor);
    EXPECT_EQ(s.field(), row.field) << s;
    EXPECT_FALSE(s.message().empty());
  }
}

TEST(Validate, LimitsAreInclusive) {
  Limits l;
  l.max_chunks = 4;
  l.max_layers = 32;
  l.max_chunk_tokens = 256;
  l.max_layer_bytes = 1 << 20;
  l.max_total_bytes = 4ull * 32 * (1 << 20);
  l.max_compute_window_us = 850;
  Descriptor d = samples::Full(4);
  EXPECT_TRUE(Validate(d, l).ok()) << Validate(d, l);
  l.max_total_bytes -= 1;
  EXPECT_EQ(Validate(d, l).field(), "x-oc-layer-bytes");
}

TEST(Validate, ProductNear2To64) {
  // With every per-field limit lifted, only the 64-bit product guards N·L·S.
  Limits open;
  open.max_chunks = kMax64;
  open.max_layers = std::numeric_limits<uint32_t>::max();
  open.max_layer_bytes = kMax64;
  open.max_total_bytes = kMax64;
  Descriptor d = samples::Compact(4);
  d.num_layers = 1u << 30;
  struct Case {
    uint64_t layer_bytes;
    bool ok;
  };
  // 4 · 2^30 · S: S = 2^32 - 1 gives 2^64 - 2^32 (fits); S = 2^32 gives 2^64 (overflows).
  for (const Case c : {Case{(1ull << 32) - 1, true}, Case{1ull << 32, false},
                       Case{kMax64 / 2, false}, Case{kMax64, false}}) {
    SCOPED_TRACE(c.layer_bytes);
    d.layer_bytes = c.layer_bytes;
    const Status s = Validate(d, open);
    EXPECT_EQ(s.ok(), c.ok) << s;
    if (!c.ok) {
      EXPECT_EQ(s.field(), "x-oc-layer-bytes");
      EXPECT_NE(s.message().find("overflows"), std::string_view::npos);
    }
  }
  // A target whose length equals the 2^64 - 2^32 payload, at address 2^32 - 1: ends exactly
  // at 2^64 - 1, fits; one byte higher wraps.
  d.layer_bytes = (1ull << 32) - 1;
  d.target =
      DataPlaneTarget{{std::byte{1}}, {std::byte{2}}, (1ull << 32) - 1, kMax64 - (1ull << 32) + 1};
  EXPECT_TRUE(Validate(d, open).ok()) << Validate(d, open);
  d.target->address += 1;
  EXPECT_EQ(Validate(d, open).field(), "x-oc-target-address");
}

}  // namespace
}  // namespace oc::descriptor
