#include "oc/common/units.h"

#include <gtest/gtest.h>

namespace oc {
namespace {

TEST(ParseSize, AcceptsDecimalAndBinaryUnits) {
  struct Row {
    std::string_view text;
    uint64_t bytes;
  };
  for (const Row& row :
       {Row{"0", 0}, Row{"512", 512}, Row{"512B", 512}, Row{"4KiB", 4096},
        Row{"64MiB", 64ull << 20}, Row{"1.5 MiB", 3ull << 19}, Row{"2GB", 2000000000ull},
        Row{"1TiB", 1ull << 40}, Row{"18446744073709551615", ~0ull}}) {
    SCOPED_TRACE(row.text);
    Result<uint64_t> r = ParseSize(row.text);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(*r, row.bytes);
  }
}

TEST(ParseSize, RejectsBadSyntaxAndOverflowNamingTheField) {
  for (std::string_view text :
       {"", "MiB", "-1", "1.", ".5", "1 XB", "18446744073709551616", "20000000TiB", "1e3"}) {
    SCOPED_TRACE(text);
    Result<uint64_t> r = ParseSize(text, "storage.block_cache");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), "storage.block_cache");
  }
}

TEST(ParseDuration, RequiresAUnit) {
  EXPECT_EQ(*ParseDuration("30s"), std::chrono::seconds(30));
  EXPECT_EQ(*ParseDuration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*ParseDuration("1.5us"), std::chrono::nanoseconds(1500));
  EXPECT_EQ(*ParseDuration("2m"), std::chrono::minutes(2));
  EXPECT_FALSE(ParseDuration("30").has_value());
  EXPECT_FALSE(ParseDuration("30 fortnights").has_value());
}

TEST(FormatSize, UsesBinaryUnits) {
  EXPECT_EQ(FormatSize(12), "12 B");
  EXPECT_EQ(FormatSize(3 << 19), "1.50 MiB");
}

}  // namespace
}  // namespace oc
