#include "names.h"

#include <gtest/gtest.h>

#include <string>

#include "oc/storage/types.h"

namespace oc::storage {
namespace {

TEST(BucketName, FollowsS3Rules) {
  struct Row {
    std::string name;
    bool ok;
  };
  const Row rows[] = {
      {"abc", true},          {"my-bucket.data", true},
      {"0bucket9", true},     {std::string(63, 'a'), true},
      {"ab", false},          {std::string(64, 'a'), false},
      {"Bucket", false},      {"my_bucket", false},
      {"-abc", false},        {"abc-", false},
      {".abc", false},        {"a..b", false},
      {"192.168.1.1", false}, {"1.2.3.4", false},
      {"1.2.3", true},        {"xn--abc", false},
      {"sthree-abc", false},  {"abc-s3alias", false},
      {"abc--ol-s3", false},  {"a b", false},
      {"abc/d", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Status s = ValidateBucketName(row.name);
    EXPECT_EQ(s.ok(), row.ok) << s;
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Code::kInvalidArgument);
      EXPECT_EQ(s.subject(), Subject::kBucket);
    }
  }
}

TEST(ObjectKeyName, LimitsLengthAndRefusesNul) {
  EXPECT_TRUE(ValidateObjectKey("a").ok());
  EXPECT_TRUE(ValidateObjectKey(std::string(kMaxKeyBytes, 'k')).ok());
  EXPECT_TRUE(ValidateObjectKey("ключ/日本/🙂 +%&?#").ok());
  for (const std::string& bad :
       {std::string(), std::string(kMaxKeyBytes + 1, 'k'), std::string("a\0b", 3)}) {
    Status s = ValidateObjectKey(bad);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.subject(), Subject::kKey);
    EXPECT_EQ(s.field(), "key");
  }
}

}  // namespace
}  // namespace oc::storage
