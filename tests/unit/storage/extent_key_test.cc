#include "rocks/extent_key.h"

#include <gtest/gtest.h>

#include <string_view>

namespace oc::storage {
namespace {

std::string_view View(const ExtentKey& k) { return {k.data(), k.size()}; }

TEST(ExtentKey, RoundTripsAndIsBigEndian) {
  struct Row {
    uint64_t id, index;
    std::string_view hex_prefix;
  };
  for (const Row& row : {Row{0, 0, "\0\0\0\0\0\0\0\0"}, Row{1, 2, "\0\0\0\0\0\0\0\1"},
                         Row{0x0102030405060708, UINT64_MAX, "\1\2\3\4\5\6\7\x08"}}) {
    SCOPED_TRACE(row.id);
    const ExtentKey key = EncodeExtentKey(row.id, row.index);
    EXPECT_EQ(View(key).substr(0, 8), std::string_view(row.hex_prefix.data(), 8));
    std::optional<ExtentId> back = DecodeExtentKey(View(key));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->data_id, row.id);
    EXPECT_EQ(back->index, row.index);
  }
}

TEST(ExtentKey, SortsByDataIdThenIndexNumerically) {
  const std::pair<uint64_t, uint64_t> ordered[] = {
      {1, 0}, {1, 1}, {1, 255}, {1, 256}, {1, 1ull << 40}, {2, 0}, {256, 0}, {1ull << 63, 7}};
  for (size_t i = 1; i < std::size(ordered); ++i) {
    EXPECT_LT(View(EncodeExtentKey(ordered[i - 1].first, ordered[i - 1].second)),
              View(EncodeExtentKey(ordered[i].first, ordered[i].second)))
        << i;
  }
}

TEST(ExtentKey, RangeCoversExactlyOneDataId) {
  const uint64_t id = 41;
  const std::string begin(View(ExtentRangeBegin(id)));
  const std::string end(View(ExtentRangeEnd(id)));
  for (uint64_t index : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{UINT64_MAX}}) {
    const std::string k(View(EncodeExtentKey(id, index)));
    EXPECT_LE(begin, k);
    EXPECT_LT(k, end);
  }
  EXPECT_GE(std::string(View(EncodeExtentKey(id + 1, 0))), end);
  EXPECT_LT(std::string(View(EncodeExtentKey(id - 1, UINT64_MAX))), begin);
}

TEST(ExtentKey, DecodeRefusesWrongLength) {
  EXPECT_FALSE(DecodeExtentKey("").has_value());
  EXPECT_FALSE(DecodeExtentKey(std::string(15, 'a')).has_value());
  EXPECT_FALSE(DecodeExtentKey(std::string(17, 'a')).has_value());
}

}  // namespace
}  // namespace oc::storage
