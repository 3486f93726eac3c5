#include "oc/common/status.h"

#include <gtest/gtest.h>

#include "oc/common/result.h"

namespace oc {
namespace {

TEST(Status, OkIsDefaultAndCarriesNothing) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.field(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, ErrorKeepsCodeSubjectFieldAndMessage) {
  Status s = Status::InvalidArgument("x-oc-num-layers", "must be 1..1024")
                 .WithSubject(Subject::kDescriptor);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.subject(), Subject::kDescriptor);
  EXPECT_EQ(s.field(), "x-oc-num-layers");
  EXPECT_EQ(s.ToString(),
            "InvalidArgument subject=descriptor field=x-oc-num-layers: must be 1..1024");
  Status copy = s;
  EXPECT_EQ(copy.ToString(), s.ToString());
}

Result<int> Half(int x) {
  if (x % 2 != 0) {
    return Status::InvalidArgument("x", "odd");
  }
  return x / 2;
}

Result<int> Quarter(int x) {
  OC_ASSIGN_OR_RETURN(int h, Half(x));
  OC_ASSIGN_OR_RETURN(h, Half(h));
  return h;
}

TEST(Result, PropagatesValueOrFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field(), "x");
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.has_value());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace oc
