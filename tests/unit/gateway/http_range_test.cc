// Range header parsing and resolution (RFC 7233 as S3 applies it).
#include "s3/http_range.h"

#include <gtest/gtest.h>

namespace oc::gateway {
namespace {

TEST(HttpRange, ResolvesAgainstObjectSize) {
  struct Row {
    std::string_view header;
    uint64_t size;
    bool satisfiable;
    uint64_t offset, length;
  };
  const Row rows[] = {
      {"bytes=0-", 10, true, 0, 10},  {"bytes=0-0", 10, true, 0, 1},
      {"bytes=4-99", 10, true, 4, 6}, {"bytes=-3", 10, true, 7, 3},
      {"bytes=-30", 10, true, 0, 10}, {"bytes=9-9", 10, true, 9, 1},
      {"bytes=10-", 10, false, 0, 0}, {"bytes=10-20", 10, false, 0, 0},
      {"bytes=-0", 10, false, 0, 0},  {"bytes=0-", 0, false, 0, 0},
      {"bytes=-1", 0, false, 0, 0},   {"bytes=18446744073709551614-", 10, false, 0, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.header);
    std::optional<HttpRange> r = ParseRangeHeader(row.header);
    ASSERT_TRUE(r.has_value());
    const ResolvedRange res = ResolveRange(*r, row.size);
    EXPECT_EQ(res.satisfiable, row.satisfiable);
    if (row.satisfiable) {
      EXPECT_EQ(res.offset, row.offset);
      EXPECT_EQ(res.length, row.length);
    }
  }
}

TEST(HttpRange, IgnoresWhatIsNotOneByteRange) {
  for (std::string_view h : {"", "bytes", "bytes=", "bytes=-", "items=0-1", "bytes=5-1",
                             "bytes=0-1,3-4", "bytes=a-", "bytes= 0-1", "bytes=0-1 ", "bytes=+1-2",
                             "bytes=-+1", "bytes=99999999999999999999-", "Bytes=0-1"}) {
    SCOPED_TRACE(h);
    EXPECT_FALSE(ParseRangeHeader(h).has_value());
  }
}

}  // namespace
}  // namespace oc::gateway
