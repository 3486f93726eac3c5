// Every file in conf/ loads, and the tables the gateway's binaries read accept all its keys:
// objectcache.toml and gateway.toml completely (no unknown keys), the others' [gateway]
// table if they have one.
#include <gtest/gtest.h>

#include <filesystem>

#include "oc/common/config.h"
#include "oc/gateway/options.h"
#include "oc/storage/options.h"
#if __has_include("oc/sched/options.h")
#include "oc/sched/options.h"
#define OC_HAVE_SCHED 1
#endif

namespace oc::gateway {
namespace {

TEST(ConfFiles, EveryFileLoadsAndGatewayFilesHaveNoUnknownKeys) {
  const std::filesystem::path dir = std::filesystem::path(OC_SOURCE_DIR) / "conf";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    ++seen;
    Result<Config> config = Config::LoadFile(entry.path().string());
    ASSERT_TRUE(config.has_value()) << config.error();
    GatewayOptions gateway;
    ASSERT_TRUE(ApplyConfig(*config, &gateway).ok());
    EXPECT_TRUE(gateway.Validate().ok());
    const std::string name = entry.path().filename().string();
    if (name == "gateway.toml" || name == "objectcache.toml") {
      // The defaults in the file are the defaults in the code.
      const GatewayOptions defaults;
      EXPECT_EQ(ToJson(gateway), ToJson(defaults));
      storage::StoreOptions store;
      ASSERT_TRUE(storage::ApplyConfig(*config, &store).ok());
#ifdef OC_HAVE_SCHED
      sched::SchedulerOptions scheduler;
      ASSERT_TRUE(sched::ApplyConfig(*config, &scheduler).ok());
#endif
      EXPECT_TRUE(config->CheckNoUnknownKeys().ok()) << config->CheckNoUnknownKeys();
    }
  }
  EXPECT_GE(seen, 2);
}

TEST(ConfFiles, BadValuesAreRefused) {
  for (std::string_view text :
       {"[gateway]\nio_threads = 0\n", "[gateway]\nlisten = \"nope\"\n",
        "[gateway]\ngrants = [\"nobucket\"]\n", "[gateway]\ntls_cert_file = \"a.pem\"\n",
        "[gateway]\nidle_timeout = 5\n"}) {
    SCOPED_TRACE(text);
    Result<Config> config = Config::Parse(text);
    ASSERT_TRUE(config.has_value());
    GatewayOptions o;
    Status s = ApplyConfig(*config, &o);
    if (s.ok()) {
      s = o.Validate();
    }
    EXPECT_FALSE(s.ok());
  }
}

}  // namespace
}  // namespace oc::gateway
