// The store calls of bucket lifecycle (docs/decisions/lifecycle.md): SetBucketLifecycle /
// GetBucketLifecycle and the conditional delete DeleteIf, on every store the gateway may sit
// on: RocksDB local, remote over the RPC (one and two servers), RADOS local and remote.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "served_store_fixture.h"

namespace oc::storage::test {
namespace {

class StoreLifecycle : public ServedStoreTest {};

INSTANTIATE_TEST_SUITE_P(Backends, StoreLifecycle,
                         ::testing::Values(Served::kLocal, Served::kRemote,
                                           Served::kRemoteTwoServers, Served::kRados,
                                           Served::kRemoteRados),
                         ServedName);

std::string Get(Store& store, std::string_view bucket) {
  Result<std::string> got = store.GetBucketLifecycle(bucket);
  EXPECT_TRUE(got.has_value()) << got.error();
  return got.has_value() ? *got : "<error>";
}

TEST_P(StoreLifecycle, ConfigurationIsSetReplacedRemovedAndGoesWithTheBucket) {
  EXPECT_EQ(Get(store(), "bkt"), "");
  const std::string first = "<LifecycleConfiguration><Rule>one</Rule></LifecycleConfiguration>";
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", first).ok());
  EXPECT_EQ(Get(store(), "bkt"), first);
  // Bytes are kept as given, whatever they hold (the gateway validates).
  const std::string second = std::string("two\0bytes\xff", 10);
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", second).ok());
  EXPECT_EQ(Get(store(), "bkt"), second);
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", "").ok());
  EXPECT_EQ(Get(store(), "bkt"), "");
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", "").ok());  // removing none is fine

  // The largest accepted, and one byte more refused with nothing changed.
  const std::string largest(kMaxLifecycleConfigBytes, 'x');
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", first).ok());
  const Status over = store().SetBucketLifecycle("bkt", largest + "x");
  EXPECT_EQ(over.code(), Code::kInvalidArgument);
  EXPECT_EQ(over.field(), "lifecycle");
  EXPECT_EQ(Get(store(), "bkt"), first);
  ASSERT_TRUE(store().SetBucketLifecycle("bkt", largest).ok());
  EXPECT_EQ(Get(store(), "bkt").size(), largest.size());

  // A missing bucket: kNotFound/kBucket both ways.
  const Status set_missing = store().SetBucketLifecycle("nobucket", first);
  EXPECT_EQ(set_missing.code(), Code::kNotFound);
  EXPECT_EQ(set_missing.subject(), Subject::kBucket);
  Result<std::string> get_missing = store().GetBucketLifecycle("nobucket");
  ASSERT_FALSE(get_missing.has_value());
  EXPECT_EQ(get_missing.error().code(), Code::kNotFound);
  EXPECT_EQ(get_missing.error().subject(), Subject::kBucket);

  // A configuration does not keep a bucket from being deleted, and a bucket created again under
  // the name starts without one.
  ASSERT_TRUE(store().CreateBucket("other", "me").ok());
  ASSERT_TRUE(store().SetBucketLifecycle("other", first).ok());
  EXPECT_EQ(Get(store(), "bkt").size(), largest.size());  // per bucket
  ASSERT_TRUE(store().DeleteBucket("other").ok());
  EXPECT_EQ(store().GetBucketLifecycle("other").error().subject(), Subject::kBucket);
  ASSERT_TRUE(store().CreateBucket("other", "me").ok());
  EXPECT_EQ(Get(store(), "other"), "");
}

// DeleteIf removes the object only while it is the version named: not after an overwrite, even
// one with the same bytes (same ETag, a later mtime).
TEST_P(StoreLifecycle, DeleteIfRemovesOnlyTheVersionItNames) {
  const ObjectKey key{"bkt", "k"};
  Result<ObjectMeta> v1 = PutString(store(), key, "same bytes");
  ASSERT_TRUE(v1.has_value()) << v1.error();
  const ObjectVersionMatch seen{v1->etag, v1->mtime_unix_ms};

  Status wrong_etag =
      store().DeleteIf(key, {"0123456789abcdef0123456789abcdef", v1->mtime_unix_ms});
  EXPECT_EQ(wrong_etag.code(), Code::kFailedPrecondition);
  EXPECT_EQ(wrong_etag.subject(), Subject::kKey);
  Status wrong_mtime = store().DeleteIf(key, {v1->etag, v1->mtime_unix_ms - 1});
  EXPECT_EQ(wrong_mtime.code(), Code::kFailedPrecondition);
  ASSERT_TRUE(store().Head(key).has_value());

  // The same bytes again, once the clock has moved past v1's millisecond.
  const auto until = std::chrono::system_clock::now() + std::chrono::milliseconds(5);
  while (std::chrono::system_clock::now() < until) {
    std::this_thread::yield();
  }
  Result<ObjectMeta> v2 = PutString(store(), key, "same bytes");
  ASSERT_TRUE(v2.has_value()) << v2.error();
  ASSERT_EQ(v2->etag, v1->etag);
  ASSERT_NE(v2->mtime_unix_ms, v1->mtime_unix_ms);
  const Status stale = store().DeleteIf(key, seen);
  EXPECT_EQ(stale.code(), Code::kFailedPrecondition);
  EXPECT_EQ(stale.subject(), Subject::kKey);
  Result<ObjectMeta> still = store().Head(key);
  ASSERT_TRUE(still.has_value()) << still.error();
  EXPECT_EQ(still->mtime_unix_ms, v2->mtime_unix_ms);

  // A tag change keeps ETag and mtime: the match still holds.
  ASSERT_TRUE(store().PutObjectTags(key, {{"a", "b"}}).has_value());
  ASSERT_TRUE(store().DeleteIf(key, {v2->etag, v2->mtime_unix_ms}).ok());
  EXPECT_EQ(store().Head(key).error().code(), Code::kNotFound);
  const Status absent = store().DeleteIf(key, {v2->etag, v2->mtime_unix_ms});
  EXPECT_EQ(absent.code(), Code::kNotFound);
  EXPECT_EQ(absent.subject(), Subject::kKey);
  const Status no_bucket = store().DeleteIf({"nobucket", "k"}, seen);
  EXPECT_EQ(no_bucket.code(), Code::kNotFound);
  EXPECT_EQ(no_bucket.subject(), Subject::kBucket);
  const Status bad_key = store().DeleteIf({"bkt", ""}, seen);
  EXPECT_EQ(bad_key.code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace oc::storage::test
