// The lifecycle worker (gateway/src/lifecycle/lifecycle_worker.h) over a real RocksDB store,
// with the pass time given: what is due goes, what is not stays, tag rules use the listed tags,
// a pass out of budget continues where it stopped, uploads under an abort rule are aborted.
// The integration tests (test_s3_lifecycle*.py) run it in the servers on both backends.
#include "lifecycle/lifecycle_worker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "lifecycle/lifecycle_configs.h"
#include "oc/common/bytes.h"
#include "oc/common/config.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"

namespace oc::gateway {
namespace {

constexpr int64_t kDayMs = 10'000;

class LifecycleWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions o;
    o.data_dir = dir_.path().string();
    Result<std::unique_ptr<storage::Store>> s = storage::OpenStore(o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "owner").ok());
  }
  storage::ObjectMeta Put(const std::string& key, const storage::Tags& tags = {}) {
    storage::PutOptions options;
    if (!tags.empty()) {
      options.tags = tags;
    }
    Result<std::unique_ptr<storage::ObjectWriter>> w = store_->Put({"bkt", key}, options);
    EXPECT_TRUE(w.has_value());
    EXPECT_TRUE((*w)->Append(AsBytes(std::string_view("bytes"))).ok());
    Result<storage::ObjectMeta> meta = (*w)->Commit();
    EXPECT_TRUE(meta.has_value());
    return *meta;
  }
  bool Exists(const std::string& key) { return store_->Head({"bkt", key}).has_value(); }
  void SetRules(std::vector<LifecycleRule> rules) {
    LifecycleConfigs configs(store_.get());
    LifecycleConfiguration config;
    config.rules = std::move(rules);
    ASSERT_TRUE(configs.Set("bkt", std::make_shared<const LifecycleConfiguration>(config)).ok());
  }
  LifecycleOptions Options(uint64_t budget) {
    LifecycleOptions o;
    o.day_seconds = kDayMs / 1000;
    o.max_objects_per_pass = budget;
    return o;
  }

  testutil::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
};

LifecycleRule ExpireRule(std::string id, std::string prefix, uint32_t days) {
  LifecycleRule r;
  r.id = std::move(id);
  r.enabled = true;
  r.form = LifecycleFilterForm::kPrefix;
  r.prefix = std::move(prefix);
  r.expiration_days = days;
  return r;
}

TEST_F(LifecycleWorkerTest, ExpiresWhatIsDueAndNothingElse) {
  LifecycleRule tagged = ExpireRule("tagged", "", 1);
  tagged.form = LifecycleFilterForm::kTag;
  tagged.tags = {{"class", "scratch"}};
  LifecycleRule disabled = ExpireRule("off", "keep/", 1);
  disabled.enabled = false;
  SetRules({ExpireRule("expire", "e/", 1), ExpireRule("later", "late/", 5), tagged, disabled});
  const storage::ObjectMeta first = Put("e/1");
  Put("e/2");
  Put("late/1");
  Put("keep/1");
  Put("t/scratch", {{"class", "scratch"}});
  Put("t/kept", {{"class", "keep"}});
  LifecycleWorker worker(store_.get(), Options(100000));

  // Before the due time (mtime + 1 day, rounded up to a whole day): nothing goes.
  const int64_t due = LifecycleDueMs(first.mtime_unix_ms, 1, kDayMs);
  LifecycleWorker::PassReport early = worker.RunPass(due - 1);
  EXPECT_EQ(early.expired, 0u);
  EXPECT_EQ(early.buckets, 1u);
  EXPECT_TRUE(early.complete);
  EXPECT_TRUE(Exists("e/1") && Exists("t/scratch"));

  // Three days on: the Days=1 prefix rule and the tag rule are due, Days=5 is not.
  LifecycleWorker::PassReport r = worker.RunPass(due + 2 * kDayMs);
  EXPECT_EQ(r.expired, 3u);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_FALSE(Exists("e/1") || Exists("e/2") || Exists("t/scratch"));
  EXPECT_TRUE(Exists("late/1") && Exists("keep/1") && Exists("t/kept"));
  EXPECT_EQ(worker.expired_objects(), 3u);
  // A second pass finds nothing more; the counter counts removals only.
  EXPECT_EQ(worker.RunPass(due + 2 * kDayMs).expired, 0u);
  EXPECT_EQ(worker.expired_objects(), 3u);
  EXPECT_EQ(worker.RunPass(due + 10 * kDayMs).expired, 1u);  // late/1 now
  EXPECT_FALSE(Exists("late/1"));
}

// A pass out of budget stops and the next one continues where it stopped, so every due object
// goes in ceil(N / budget) passes.
TEST_F(LifecycleWorkerTest, ABoundedPassContinuesWhereItStopped) {
  SetRules({ExpireRule("all", "", 1)});
  int64_t newest = 0;
  for (int i = 0; i < 7; ++i) {
    newest = Put("k" + std::to_string(i)).mtime_unix_ms;
  }
  LifecycleWorker worker(store_.get(), Options(3));
  const int64_t now = LifecycleDueMs(newest, 1, kDayMs);
  std::vector<uint64_t> expired;
  for (int pass = 0; pass < 5; ++pass) {
    LifecycleWorker::PassReport r = worker.RunPass(now);
    expired.push_back(r.expired);
    EXPECT_LE(r.examined, 3u);
    if (r.complete && r.expired == 0) {
      break;
    }
  }
  EXPECT_EQ(worker.expired_objects(), 7u);
  EXPECT_EQ(expired[0], 3u);
  EXPECT_EQ(expired[1], 3u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_FALSE(Exists("k" + std::to_string(i))) << i;
  }
}

TEST_F(LifecycleWorkerTest, AbortsDueUploadsUnderTheRulesPrefix) {
  LifecycleRule abort;
  abort.id = "abort";
  abort.enabled = true;
  abort.form = LifecycleFilterForm::kPrefix;
  abort.prefix = "u/";
  abort.abort_days = 1;
  SetRules({abort});
  Result<std::string> due_upload = store_->CreateMultipartUpload({"bkt", "u/x"}, {});
  ASSERT_TRUE(due_upload.has_value());
  Result<std::string> kept_upload = store_->CreateMultipartUpload({"bkt", "v/y"}, {});
  ASSERT_TRUE(kept_upload.has_value());
  Result<storage::ListUploadsResult> listed = store_->ListMultipartUploads("bkt", {});
  ASSERT_TRUE(listed.has_value());
  ASSERT_EQ(listed->uploads.size(), 2u);
  const int64_t initiated = listed->uploads[0].initiated_unix_ms;

  LifecycleWorker worker(store_.get(), Options(100000));
  EXPECT_EQ(worker.RunPass(initiated).aborted, 0u);
  LifecycleWorker::PassReport r = worker.RunPass(LifecycleDueMs(initiated, 1, kDayMs) + kDayMs);
  EXPECT_EQ(r.aborted, 1u);
  listed = store_->ListMultipartUploads("bkt", {});
  ASSERT_TRUE(listed.has_value());
  ASSERT_EQ(listed->uploads.size(), 1u);
  EXPECT_EQ(listed->uploads[0].key, "v/y");
  EXPECT_EQ(worker.aborted_uploads(), 1u);
}

// A bucket without a configuration, or whose configuration was removed, is left alone.
TEST_F(LifecycleWorkerTest, BucketsWithoutAConfigurationAreLeftAlone) {
  Put("e/1");
  LifecycleWorker worker(store_.get(), Options(100000));
  LifecycleWorker::PassReport r = worker.RunPass(INT64_MAX / 2);
  EXPECT_EQ(r.buckets, 0u);
  SetRules({ExpireRule("expire", "e/", 1)});
  LifecycleConfigs configs(store_.get());
  ASSERT_TRUE(configs.Set("bkt", nullptr).ok());
  EXPECT_EQ(worker.RunPass(INT64_MAX / 2).expired, 0u);
  EXPECT_TRUE(Exists("e/1"));
}

// The [lifecycle] table: the conf files list the defaults, a test's short day is read, the
// interval follows the day unless set, and out-of-range values are refused naming the key.
TEST(LifecycleOptionsTest, ConfigTableAndInterval) {
  for (const char* name : {"gateway.toml", "objectcache.toml"}) {
    Result<Config> file =
        Config::LoadFile((std::filesystem::path(OC_SOURCE_DIR) / "conf" / name).string());
    ASSERT_TRUE(file.has_value()) << file.error();
    GatewayOptions o;
    ASSERT_TRUE(ApplyConfig(*file, &o).ok());
    const LifecycleOptions defaults;
    EXPECT_EQ(o.lifecycle.day_seconds, defaults.day_seconds) << name;
    EXPECT_EQ(o.lifecycle.interval, defaults.interval) << name;
    EXPECT_EQ(o.lifecycle.max_objects_per_pass, defaults.max_objects_per_pass) << name;
  }
  EXPECT_EQ(LifecycleIntervalFor(LifecycleOptions{}), std::chrono::hours(1));
  Result<Config> config = Config::Parse("[lifecycle]\nday_seconds = 2\n");
  ASSERT_TRUE(config.has_value());
  GatewayOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_TRUE(config->CheckNoUnknownKeys().ok());
  EXPECT_EQ(o.lifecycle.day_seconds, 2u);
  EXPECT_EQ(LifecycleIntervalFor(o.lifecycle), std::chrono::milliseconds(250));
  o.lifecycle.interval = std::chrono::seconds(7);
  EXPECT_EQ(LifecycleIntervalFor(o.lifecycle), std::chrono::seconds(7));
  o.lifecycle.day_seconds = 0;
  EXPECT_EQ(o.Validate().field(), "lifecycle.day_seconds");
}

}  // namespace
}  // namespace oc::gateway
