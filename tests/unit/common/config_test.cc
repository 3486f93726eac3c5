#include "oc/common/config.h"

#include <gtest/gtest.h>

namespace oc {
namespace {

TEST(Config, ReadsTypedValuesAndKeepsDefaultsForAbsentKeys) {
  Result<Config> config = Config::Parse(R"(
[gateway]
listen = "127.0.0.1:9000"
io_threads = 2
tls = false
public_buckets = ["a", "b"]
max_body = "64MiB"
idle_timeout = "30s"
ratio = 0.5
)");
  ASSERT_TRUE(config.has_value()) << config.error();
  std::string listen;
  uint32_t threads = 0;
  bool tls = true;
  std::vector<std::string> buckets;
  uint64_t max_body = 0;
  std::chrono::milliseconds idle{0};
  double ratio = 0;
  std::string absent = "default";
  EXPECT_TRUE(config->Read("gateway.listen", &listen).ok());
  EXPECT_TRUE(config->Read("gateway.io_threads", &threads).ok());
  EXPECT_TRUE(config->Read("gateway.tls", &tls).ok());
  EXPECT_TRUE(config->Read("gateway.public_buckets", &buckets).ok());
  EXPECT_TRUE(config->ReadSize("gateway.max_body", &max_body).ok());
  EXPECT_TRUE(config->ReadDuration("gateway.idle_timeout", &idle).ok());
  EXPECT_TRUE(config->Read("gateway.ratio", &ratio).ok());
  EXPECT_TRUE(config->Read("gateway.absent", &absent).ok());
  EXPECT_EQ(listen, "127.0.0.1:9000");
  EXPECT_EQ(threads, 2u);
  EXPECT_FALSE(tls);
  EXPECT_EQ(buckets, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(max_body, 64ull << 20);
  EXPECT_EQ(idle, std::chrono::seconds(30));
  EXPECT_EQ(ratio, 0.5);
  EXPECT_EQ(absent, "default");
  EXPECT_TRUE(config->CheckNoUnknownKeys().ok());
}

TEST(Config, WrongTypesAndUnknownKeysNameTheKey) {
  Result<Config> config = Config::Parse("[storage]\nsync_writes = \"yes\"\ntypo_key = 1\n");
  ASSERT_TRUE(config.has_value());
  bool sync = true;
  Status s = config->Read("storage.sync_writes", &sync);
  EXPECT_EQ(s.field(), "storage.sync_writes");
  Status unknown = config->CheckNoUnknownKeys();
  EXPECT_EQ(unknown.field(), "storage.typo_key");
}

// A table keyed by data (bucket names, which may hold dots): Names lists it, SubKey quotes a
// name that is not a bare TOML key, and reads and unknown-key errors spell keys that way.
TEST(Config, TablesKeyedByDataWithQuotedNames) {
  Result<Config> config = Config::Parse(
      "[quota]\nbuckets = { photos = { max_objects = 3 }, \"my.logs\" = { max_objects = 5, "
      "typo = 1 } }\nscalar = 1\n");
  ASSERT_TRUE(config.has_value()) << config.error();
  Result<std::vector<std::string>> names = config->Names("quota.buckets");
  ASSERT_TRUE(names.has_value()) << names.error();
  EXPECT_EQ(*names, (std::vector<std::string>{"my.logs", "photos"}));
  EXPECT_EQ(Config::SubKey("quota.buckets", "photos"), "quota.buckets.photos");
  EXPECT_EQ(Config::SubKey("quota.buckets", "my.logs"), "quota.buckets.\"my.logs\"");
  uint64_t photos = 0;
  uint64_t logs = 0;
  EXPECT_TRUE(config->Read(Config::SubKey("quota.buckets.photos", "max_objects"), &photos).ok());
  EXPECT_TRUE(config->Read(Config::SubKey("quota.buckets.\"my.logs\"", "max_objects"), &logs).ok());
  EXPECT_EQ(photos, 3u);
  EXPECT_EQ(logs, 5u);
  uint64_t scalar = 0;
  EXPECT_TRUE(config->Read("quota.scalar", &scalar).ok());
  EXPECT_EQ(config->CheckNoUnknownKeys().field(), "quota.buckets.\"my.logs\".typo");
  Result<std::vector<std::string>> not_table = config->Names("quota.scalar");
  ASSERT_FALSE(not_table.has_value());
  EXPECT_EQ(not_table.error().field(), "quota.scalar");
  EXPECT_TRUE(config->Names("quota.absent")->empty());
}

TEST(Config, SyntaxErrorsAreInvalidArgument) {
  Result<Config> config = Config::Parse("[gateway\nlisten = 1", "bad.toml");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(config.error().field(), "bad.toml");
}

}  // namespace
}  // namespace oc
