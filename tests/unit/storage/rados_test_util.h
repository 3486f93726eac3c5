#pragma once
// The throw-away Ceph cluster that RADOS tests run against. CTest's `rados_cluster` fixture
// (cmake/OcTesting.cmake) starts one per ctest run with tools/ceph-test-cluster and gives
// every test whose name contains `Rados` its ceph.conf and pool through the environment. A
// test without them FAILS, naming the variable and the script: it never skips, so CI cannot
// pass with the RADOS tests silently missing (docs/decisions/rados-test-cluster.md).
// Each test works in its own random namespace of the shared pool.

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>

#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::storage::test {

// Variables the fixture sets; their absence is an error message, never a skip.
inline constexpr std::string_view kCephConfEnv = "OC_TEST_CEPH_CONF";
inline constexpr std::string_view kRadosPoolEnv = "OC_TEST_RADOS_POOL";

struct RadosTestCluster {
  std::string conf_file;  // a ceph.conf usable as is (auth none)
  std::string pool;       // shared by every test; tests separate by namespace
};

// How to get a cluster when there is none, appended to every failure message.
inline constexpr std::string_view kRadosClusterHint =
    "run through ctest (the rados_cluster fixture starts one), or start one with "
    "`tools/ceph-test-cluster up DIR` and set OC_TEST_CEPH_CONF=DIR/ceph.conf "
    "OC_TEST_RADOS_POOL=oc-test";

// The cluster named by the environment; kFailedPrecondition naming the variable if it is
// unset or the file is missing.
inline Result<RadosTestCluster> RadosTestClusterFromEnv() {
  const char* conf = std::getenv(std::string(kCephConfEnv).c_str());
  if (conf == nullptr || *conf == '\0') {
    return Status::FailedPrecondition(Subject::kNone, std::string(kCephConfEnv) + " is not set: " +
                                                          std::string(kRadosClusterHint));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(conf, ec)) {
    return Status::FailedPrecondition(
        Subject::kNone,
        std::string(kCephConfEnv) + "=" + conf +
            " does not exist (is the cluster down?): " + std::string(kRadosClusterHint));
  }
  const char* pool = std::getenv(std::string(kRadosPoolEnv).c_str());
  if (pool == nullptr || *pool == '\0') {
    return Status::FailedPrecondition(Subject::kNone, std::string(kRadosPoolEnv) + " is not set: " +
                                                          std::string(kRadosClusterHint));
  }
  return RadosTestCluster{conf, pool};
}

// A namespace no other test (or earlier run) uses: `prefix` plus 64 random bits in hex.
inline std::string RandomRadosNamespace(std::string_view prefix) {
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) | rd();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string ns(prefix);
  ns += '-';
  for (int shift = 60; shift >= 0; shift -= 4) {
    ns += kHex[(r >> shift) & 0xf];
  }
  return ns;
}

}  // namespace oc::storage::test
