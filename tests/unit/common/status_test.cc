#include "oc/common/status.h"

#include <memory>
#include <string>

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

// A detail of the test's own: what a module attaches to its errors (liboc_client: ErrorInfo).
struct Tag final : StatusDetail {
  explicit Tag(int v) : value(v) {}
  std::unique_ptr<StatusDetail> Clone() const override { return std::make_unique<Tag>(value); }
  std::string ToString() const override { return "tag " + std::to_string(value); }
  int value;
};

int TagOf(const Status& s) {
  const auto* tag = dynamic_cast<const Tag*>(s.detail());
  return tag == nullptr ? -1 : tag->value;
}

TEST(Status, DetailTravelsWithCopiesAndSubjectChanges) {
  const Status plain = Status::NotFound(Subject::kKey, "no such key");
  EXPECT_EQ(plain.detail(), nullptr);
  Status s = plain.WithDetail(std::make_unique<Tag>(7));
  EXPECT_EQ(TagOf(plain), -1);  // the original is untouched
  EXPECT_EQ(TagOf(s), 7);
  EXPECT_EQ(s.ToString(), "NotFound subject=key: no such key [tag 7]");
  Status copy = s;
  EXPECT_EQ(TagOf(copy), 7);
  EXPECT_NE(copy.detail(), s.detail());  // cloned, not shared
  Status assigned;
  assigned = copy;
  EXPECT_EQ(TagOf(assigned), 7);
  EXPECT_EQ(TagOf(s.WithSubject(Subject::kBucket)), 7);
  EXPECT_EQ(TagOf(s.WithDetail(std::make_unique<Tag>(8))), 8);  // replaced
  Status moved = std::move(copy);
  EXPECT_EQ(TagOf(moved), 7);
  EXPECT_TRUE(Status::Ok().WithDetail(std::make_unique<Tag>(1)).ok());  // OK stays detail-free
  EXPECT_EQ(Status::Ok().WithDetail(std::make_unique<Tag>(1)).detail(), nullptr);
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
