// Every file in conf/ loads, and the tables the gateway's binaries read accept all its keys:
// objectcache.toml and gateway.toml completely (no unknown keys), the others' [gateway]
// table if they have one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "oc/common/config.h"
#include "oc/common/cores.h"
#include "oc/gateway/conf_files.h"
#include "oc/gateway/options.h"
#include "oc/sched/options.h"
#include "oc/storage/options.h"

namespace oc::gateway {
namespace {

// Every file in conf/ is one the config tables generate (oc-conf-gen), and says what they say:
// a key added, renamed or re-defaulted in a table without `oc-conf-gen conf`, or a hand-written
// file added to conf/, fails here.
TEST(ConfFiles, ShippedFilesAreWhatTheTablesGenerate) {
  const std::vector<ConfFile> files = ShippedConfFiles();
  std::vector<std::string> generated;
  for (const ConfFile& f : files) {
    generated.push_back(f.name);
  }
  std::vector<std::string> shipped;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(OC_SOURCE_DIR) / "conf")) {
    shipped.push_back(entry.path().filename().string());
  }
  std::sort(generated.begin(), generated.end());
  std::sort(shipped.begin(), shipped.end());
  EXPECT_EQ(shipped, generated) << "every file in conf/ comes from oc-conf-gen";
  EXPECT_EQ(generated, (std::vector<std::string>{"gateway.toml", "objectcache.toml",
                                                 "scheduler.toml", "storage-server.toml"}));
  for (const ConfFile& f : files) {
    SCOPED_TRACE(f.name);
    std::ifstream in(std::filesystem::path(OC_SOURCE_DIR) / "conf" / f.name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), f.text) << "run oc-conf-gen conf (build/release/gateway/oc-conf-gen)";
    // What the file says is what its readers read, and they know every key in it.
    Result<Config> config = Config::Parse(f.text, f.name);
    ASSERT_TRUE(config.has_value()) << config.error();
    const bool has_storage = f.text.find("\n[storage]\n") != std::string::npos;
    const bool has_scheduler = f.text.find("\n[scheduler]\n") != std::string::npos;
    const bool has_gateway = f.text.find("\n[gateway]\n") != std::string::npos;
    EXPECT_TRUE(has_storage || has_scheduler || has_gateway);
    storage::StoreOptions store;
    store.sync_writes = false;  // changed, so the file must set it back
    ASSERT_TRUE(storage::ApplyConfig(*config, &store).ok());
    EXPECT_EQ(store.sync_writes, has_storage);
    EXPECT_TRUE(store.Validate().ok());
    sched::SchedulerOptions scheduler;
    scheduler.pace_first_layer = true;
    ASSERT_TRUE(sched::ApplyConfig(*config, &scheduler).ok());
    EXPECT_EQ(scheduler.pace_first_layer, !has_scheduler) << "[scheduler] is listed in full";
    GatewayOptions gateway;
    gateway.access_log = false;
    ASSERT_TRUE(ApplyConfig(*config, &gateway).ok());
    EXPECT_EQ(gateway.access_log, has_gateway) << "[gateway] is listed in full";
    if (f.name != "storage-server.toml") {  // its [rpc] table is the storage server's to read
      EXPECT_TRUE(config->CheckNoUnknownKeys().ok()) << config->CheckNoUnknownKeys();
    }
  }
}

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
      sched::SchedulerOptions scheduler;
      ASSERT_TRUE(sched::ApplyConfig(*config, &scheduler).ok());
      EXPECT_TRUE(config->CheckNoUnknownKeys().ok()) << config->CheckNoUnknownKeys();
    }
  }
  EXPECT_GE(seen, 2);
}

// The [kv] table (KvOptions) in both files that configure a store: the listed values are the
// code's defaults, and with the storage server's other tables the file has no unknown keys.
TEST(ConfFiles, KvTableListsEveryKeyAtItsDefault) {
  for (const char* name : {"storage-server.toml", "objectcache.toml"}) {
    SCOPED_TRACE(name);
    Result<Config> config =
        Config::LoadFile((std::filesystem::path(OC_SOURCE_DIR) / "conf" / name).string());
    ASSERT_TRUE(config.has_value()) << config.error();
    storage::StoreOptions store;
    store.kv.layerwise_threshold_bytes = 1;  // changed, so the file must set it back
    store.kv.data_plane_staging_buffers = 1;
    store.kv.data_plane_direct_writes = false;
    ASSERT_TRUE(storage::ApplyConfig(*config, &store).ok());
    ASSERT_TRUE(store.Validate().ok());
    const storage::KvOptions defaults;
    EXPECT_EQ(store.kv.layerwise_threshold_bytes, defaults.layerwise_threshold_bytes);
    EXPECT_EQ(store.kv.data_plane_transports, defaults.data_plane_transports);
    EXPECT_EQ(store.kv.data_plane_staging_buffers, defaults.data_plane_staging_buffers);
    EXPECT_EQ(store.kv.data_plane_staging_buffer_bytes, defaults.data_plane_staging_buffer_bytes);
    EXPECT_EQ(store.kv.data_plane_timeout, defaults.data_plane_timeout);
    EXPECT_EQ(store.kv.data_plane_direct_writes, defaults.data_plane_direct_writes);
    EXPECT_EQ(store.kv.put_read_bytes, defaults.put_read_bytes);
    EXPECT_EQ(store.kv.descriptor_threads, defaults.descriptor_threads);
    EXPECT_EQ(store.kv.admission_queue, defaults.admission_queue);
    EXPECT_EQ(store.kv.admission_timeout, defaults.admission_timeout);
  }
}

TEST(ConfFiles, KvTableSetsEveryField) {
  Result<Config> config = Config::Parse(
      "[kv]\nlayerwise_threshold = \"1\"\ndata_plane_transports = \"tcp\"\n"
      "data_plane_staging_buffers = 3\ndata_plane_staging_buffer_bytes = \"64KiB\"\n"
      "data_plane_timeout = \"2s\"\ndata_plane_direct_writes = false\n"
      "put_read_bytes = \"256KiB\"\ndescriptor_threads = 3\nadmission_queue = 7\n"
      "admission_timeout = \"3s\"\n");
  ASSERT_TRUE(config.has_value()) << config.error();
  storage::StoreOptions store;
  ASSERT_TRUE(storage::ApplyConfig(*config, &store).ok());
  EXPECT_TRUE(store.Validate().ok());
  EXPECT_TRUE(config->CheckNoUnknownKeys().ok());
  EXPECT_EQ(store.kv.layerwise_threshold_bytes, 1u);  // every request layerwise
  EXPECT_EQ(store.kv.data_plane_transports, "tcp");
  EXPECT_EQ(store.kv.data_plane_staging_buffers, 3u);
  EXPECT_EQ(store.kv.data_plane_staging_buffer_bytes, 64u << 10);
  EXPECT_EQ(store.kv.data_plane_timeout, std::chrono::milliseconds(2'000));
  EXPECT_FALSE(store.kv.data_plane_direct_writes);
  EXPECT_EQ(store.kv.put_read_bytes, 256u << 10);
  EXPECT_EQ(store.kv.descriptor_threads, 3u);
  EXPECT_EQ(storage::DescriptorThreadsFor(store.kv.descriptor_threads), 3u);
  EXPECT_EQ(store.kv.admission_queue, 7u);
  EXPECT_EQ(store.kv.admission_timeout, std::chrono::milliseconds(3'000));
}

// kv.descriptor_threads = 0 (the default) sizes the executor from the cores this process may
// use, and so do the gateway's thread counts.
TEST(ConfFiles, ThreadDefaultsComeFromTheUsableCores) {
  const uint32_t cores = UsableCores();
  EXPECT_EQ(storage::DescriptorThreadsFor(0),
            std::clamp(cores * storage::kDescriptorThreadsPerCore, storage::kMinDescriptorThreads,
                       storage::kMaxDescriptorThreads));
  EXPECT_GE(storage::DescriptorThreadsFor(0), storage::kMinDescriptorThreads);
  const GatewayOptions defaults;
  EXPECT_EQ(IoThreadsFor(defaults.io_threads), cores);
  EXPECT_EQ(StoreThreadsFor(defaults.store_threads),
            std::clamp(cores * kStoreThreadsPerCore, kMinStoreThreads, kMaxStoreThreads));
  EXPECT_EQ(IoThreadsFor(3), 3u);  // an explicit count is an override
  EXPECT_EQ(StoreThreadsFor(5), 5u);
}

TEST(ConfFiles, BadAdmissionValuesAreRefused) {
  for (std::string_view text :
       {"[kv]\nadmission_queue = 70000\n", "[kv]\nadmission_timeout = \"0s\"\n"}) {
    SCOPED_TRACE(text);
    Result<Config> config = Config::Parse(text);
    ASSERT_TRUE(config.has_value());
    storage::StoreOptions store;
    Status s = storage::ApplyConfig(*config, &store);
    if (s.ok()) {
      s = store.Validate();
    }
    EXPECT_FALSE(s.ok());
  }
}

TEST(ConfFiles, BadKvValuesAndUnknownKvKeysAreRefused) {
  struct Row {
    std::string_view text;
    std::string_view field;
  };
  for (const Row& row : {
           Row{"[kv]\nlayerwise_threshold = 0\n", "kv.layerwise_threshold"},
           Row{"[kv]\nlayerwise_threshold = \"lots\"\n", "kv.layerwise_threshold"},
           Row{"[kv]\ndata_plane_staging_buffers = 0\n", "kv.data_plane_staging_buffers"},
           Row{"[kv]\ndata_plane_staging_buffers = 5000\n", "kv.data_plane_staging_buffers"},
           Row{"[kv]\ndata_plane_staging_buffer_bytes = \"1GiB\"\n",
               "kv.data_plane_staging_buffer_bytes"},
           Row{"[kv]\ndata_plane_timeout = 5\n", "kv.data_plane_timeout"},
           Row{"[kv]\nput_read_bytes = \"1GiB\"\n", "kv.put_read_bytes"},
           Row{"[kv]\ndescriptor_threads = 5000\n", "kv.descriptor_threads"},
           Row{"[kv]\ndescriptor_threads = -1\n", "kv.descriptor_threads"},
           Row{"[kv]\ndata_plane_transports = 3\n", "kv.data_plane_transports"},
           Row{"[kv]\ndata_plane_direct_writes = \"yes\"\n", "kv.data_plane_direct_writes"},
       }) {
    SCOPED_TRACE(row.text);
    Result<Config> config = Config::Parse(row.text);
    ASSERT_TRUE(config.has_value());
    storage::StoreOptions store;
    Status s = storage::ApplyConfig(*config, &store);
    if (s.ok()) {
      s = store.Validate();
    }
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.field(), row.field) << s;
  }
  Result<Config> typo = Config::Parse("[kv]\nlayerwise_treshold = \"1MiB\"\n");
  ASSERT_TRUE(typo.has_value());
  storage::StoreOptions store;
  ASSERT_TRUE(storage::ApplyConfig(*typo, &store).ok());
  EXPECT_FALSE(typo->CheckNoUnknownKeys().ok());
}

TEST(ConfFiles, BadValuesAreRefused) {
  for (std::string_view text :
       {"[gateway]\nio_threads = 257\n", "[gateway]\nlisten = \"nope\"\n",
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
