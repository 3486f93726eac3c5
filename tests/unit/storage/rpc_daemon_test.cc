// The oc-storage-server binary as a real process: serves puts and gets through
// ConnectRemoteStore, exits 0 on SIGTERM, keeps its data across a restart, and refuses to
// start without a secret or with a bad config (exit 2).

#include <gtest/gtest.h>

#include <tuple>

#include <sstream>

#include <fmt/core.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "rpc_test_util.h"

#ifndef OC_STORAGE_SERVER_BIN
#error \
    "OC_STORAGE_SERVER_BIN (path of oc-storage-server) is set by storage-server/bin/CMakeLists.txt"
#endif

namespace oc::storage::test {
namespace {

constexpr std::string_view kDaemonSecret = "daemon-test-secret";

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) {
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::unique_ptr<testutil::ChildProcess> StartDaemon(const std::vector<std::string>& args) {
  ScopedEnv secret("OC_RPC_SECRET", std::string(kDaemonSecret).c_str());
  return std::make_unique<testutil::ChildProcess>(OC_STORAGE_SERVER_BIN, args);
}

// Waits until the daemon answers (it binds and opens RocksDB first); false if it never does.
bool WaitUntilServing(Store& store) {
  for (int attempt = 0; attempt < 400; ++attempt) {
    if (store.ListBuckets().has_value()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int ExitCodeOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

TEST(RpcDaemon, ServesStopsOnSigtermWithZeroAndKeepsDataAcrossRestart) {
  testutil::TempDir dir;
  const std::string data_dir = (dir.path() / "data").string();
  const std::string big = Bytes(5, (5 << 20) + 17);
  {
    const std::string listen = "127.0.0.1:" + std::to_string(testutil::FreePort());
    auto daemon = StartDaemon({"--data-dir", data_dir, "--listen", listen});
    std::unique_ptr<Store> store = Connect({listen}, kDaemonSecret);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(WaitUntilServing(*store)) << "daemon never answered on " << listen;
    ASSERT_TRUE(store->CreateBucket("bkt", "me").ok());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(
          PutString(*store, {"bkt", "k" + std::to_string(i)}, Bytes(i, 1000 + i)).has_value());
    }
    ASSERT_TRUE(PutString(*store, {"bkt", "big"}, big, {}, 1 << 20).has_value());
    EXPECT_TRUE(*GetString(*store, {"bkt", "big"}, ByteRange::All(), 1 << 20) == big);
    EXPECT_EQ(ExitCodeOf(daemon->Stop(SIGTERM)), 0);
    EXPECT_EQ(store->HeadBucket("bkt").error().code(), Code::kUnavailable);
  }
  {
    // Restarted on another port over the same directory: everything is there.
    const std::string listen = "127.0.0.1:" + std::to_string(testutil::FreePort());
    auto daemon = StartDaemon({"--data-dir", data_dir, "--listen", listen});
    std::unique_ptr<Store> store = Connect({listen}, kDaemonSecret);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(WaitUntilServing(*store));
    for (int i = 0; i < 20; ++i) {
      Result<std::string> got = GetString(*store, {"bkt", "k" + std::to_string(i)});
      ASSERT_TRUE(got.has_value()) << got.error();
      EXPECT_TRUE(*got == Bytes(i, 1000 + i));
    }
    EXPECT_TRUE(*GetString(*store, {"bkt", "big"}, ByteRange::All(), 1 << 20) == big);
    EXPECT_EQ(ExitCodeOf(daemon->Stop(SIGTERM)), 0);
  }
}

TEST(RpcDaemon, ConfigFileAppliesAndFlagsOverrideIt) {
  testutil::TempDir dir;
  const std::string config = (dir.path() / "storage-server.toml").string();
  const std::string file_listen = "127.0.0.1:" + std::to_string(testutil::FreePort());
  {
    std::ofstream out(config);
    out << "[storage]\ndata_dir = \"" << (dir.path() / "from-file").string() << "\"\n"
        << "[rpc]\nlisten = \"" << file_listen << "\"\nio_threads = 1\nio_timeout = \"5s\"\n";
  }
  {
    auto daemon = StartDaemon({"--config", config});
    std::unique_ptr<Store> store = Connect({file_listen}, kDaemonSecret);
    ASSERT_TRUE(WaitUntilServing(*store)) << "the [rpc] listen address was not used";
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "from-file"));
    EXPECT_EQ(ExitCodeOf(daemon->Stop(SIGTERM)), 0);
  }
  {
    const std::string flag_listen = "127.0.0.1:" + std::to_string(testutil::FreePort());
    auto daemon = StartDaemon({"--config", config, "--listen", flag_listen, "--data-dir",
                               (dir.path() / "from-flag").string()});
    std::unique_ptr<Store> store = Connect({flag_listen}, kDaemonSecret);
    ASSERT_TRUE(WaitUntilServing(*store)) << "--listen did not override the file";
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "from-flag"));
    EXPECT_EQ(ExitCodeOf(daemon->Stop(SIGTERM)), 0);
  }
}

TEST(RpcDaemon, RefusesToStartWithoutSecretOrWithABadConfig) {
  testutil::TempDir dir;
  const std::string data_dir = (dir.path() / "data").string();
  const std::string listen = "127.0.0.1:" + std::to_string(testutil::FreePort());
  {
    ScopedEnv no_secret("OC_RPC_SECRET", nullptr);
    testutil::ChildProcess daemon(OC_STORAGE_SERVER_BIN,
                                  {"--data-dir", data_dir, "--listen", listen});
    EXPECT_EQ(ExitCodeOf(daemon.Stop(0)), 2);  // signal 0: just wait for it to exit
  }
  struct Row {
    std::string_view name;
    std::string toml;
  };
  for (const Row& row :
       {Row{"unknown key", "[rpc]\nlisten_addr = \"127.0.0.1:1\"\n"},
        Row{"bad value", "[rpc]\nio_threads = 257\n"},
        Row{"bad type", "[rpc]\nmax_frame_bytes = true\n"},
        Row{"bad duration", "[rpc]\nidle_timeout = \"soon\"\n"}, Row{"syntax", "[rpc\n"}}) {
    SCOPED_TRACE(row.name);
    const std::string config = (dir.path() / "bad.toml").string();
    std::ofstream(config) << row.toml;
    auto daemon = StartDaemon({"--config", config, "--data-dir", data_dir, "--listen", listen});
    EXPECT_EQ(ExitCodeOf(daemon->Stop(0)), 2);
  }
  auto daemon = StartDaemon({"--no-such-flag"});
  EXPECT_EQ(ExitCodeOf(daemon->Stop(0)), 2);
}

// Runs the daemon with `config` until it exits (it must not start serving); its exit code and
// its stderr.
// The daemon's error lines ("oc-storage-server: ..."; the log's own lines are not errors).
std::vector<std::string> ErrorLines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("oc-storage-server: ")) {
      out.push_back(line);
    }
  }
  return out;
}

std::pair<int, std::string> RunToExit(const testutil::TempDir& dir, const std::string& config) {
  const std::string err = (dir.path() / "stderr.txt").string();
  ScopedEnv secret("OC_RPC_SECRET", std::string(kDaemonSecret).c_str());
  testutil::ChildProcess daemon(
      "/bin/sh", {"-c", fmt::format("exec '{}' --config '{}' --listen 127.0.0.1:{} 2>'{}'",
                                    OC_STORAGE_SERVER_BIN, config, testutil::FreePort(), err)});
  const int code = ExitCodeOf(daemon.Stop(0));
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {code, text};
}

// A RADOS backend whose cluster or pool is missing is a startup error: exit 2 and one line
// naming what is missing (docs/design.md, "RADOS mapping").
TEST(RpcDaemonRados, AMissingPoolOrClusterExitsTwoWithOneLineNamingIt) {
  testutil::TempDir dir;
  Result<StoreOptions> cluster = RadosTestOptions(StoreOptions{}, "unused");
  ASSERT_TRUE(cluster.has_value()) << cluster.error();
  const std::string config = (dir.path() / "rados.toml").string();
  {
    std::ofstream(config) << fmt::format(
        "[storage]\nbackend = \"rados\"\n[rados]\nconf_file = \"{}\"\n"
        "client_name = \"client.admin\"\npool = \"no-such-pool-{}\"\n",
        cluster->rados.conf_file, testutil::FreePort());
  }
  auto [code, err] = RunToExit(dir, config);
  EXPECT_EQ(code, 2) << err;
  std::vector<std::string> lines = ErrorLines(err);
  ASSERT_EQ(lines.size(), 1u) << err;
  EXPECT_NE(lines[0].find("rados.pool"), std::string::npos) << err;
  EXPECT_NE(lines[0].find("does not exist"), std::string::npos) << err;

  // No monitor answers at this address: given up after connect_timeout.
  const std::string dead_conf = (dir.path() / "dead.conf").string();
  std::ofstream(dead_conf) << fmt::format(
      "[global]\nmon host = 127.0.0.1:{}\nauth client required = none\n", testutil::FreePort());
  {
    std::ofstream(config) << fmt::format(
        "[storage]\nbackend = \"rados\"\n[rados]\nconf_file = \"{}\"\n"
        "connect_timeout = \"1s\"\n",
        dead_conf);
  }
  std::tie(code, err) = RunToExit(dir, config);
  EXPECT_EQ(code, 2) << err;
  lines = ErrorLines(err);
  ASSERT_EQ(lines.size(), 1u) << err;
  EXPECT_NE(lines[0].find("cannot reach the Ceph cluster"), std::string::npos) << err;
}

}  // namespace
}  // namespace oc::storage::test
