// The RADOS test cluster itself (tools/ceph-test-cluster, the `rados_cluster` CTest fixture):
// a client connects with the ceph.conf the fixture names, writes an object into its own
// namespace of the shared pool and reads it back, through librados' C API directly (no code
// of ours in between). Without the fixture's environment or a running cluster this FAILS
// with a message naming OC_TEST_CEPH_CONF and tools/ceph-test-cluster; it never skips.

#include <gtest/gtest.h>
#include <rados/librados.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "oc/testutil/testutil.h"
#include "rados_test_util.h"

namespace oc::storage::test {
namespace {

struct ClusterDeleter {
  void operator()(rados_t cluster) const { rados_shutdown(cluster); }
};
using ClusterHandle = std::unique_ptr<std::remove_pointer_t<rados_t>, ClusterDeleter>;

struct IoctxDeleter {
  void operator()(rados_ioctx_t io) const { rados_ioctx_destroy(io); }
};
using IoctxHandle = std::unique_ptr<std::remove_pointer_t<rados_ioctx_t>, IoctxDeleter>;

std::string Errno(int rc) { return std::string(strerror(-rc)) + " (" + std::to_string(rc) + ")"; }

// Connects as client.admin with short timeouts (librados' defaults wait forever when no
// monitor answers). Returns the connected handle, or fails the test naming the cluster.
ClusterHandle Connect(const RadosTestCluster& target) {
  rados_t raw = nullptr;
  int rc = rados_create2(&raw, "ceph", "client.admin", 0);
  if (rc < 0) {
    ADD_FAILURE() << "rados_create2: " << Errno(rc);
    return nullptr;
  }
  ClusterHandle cluster(raw);
  rc = rados_conf_read_file(raw, target.conf_file.c_str());
  if (rc < 0) {
    ADD_FAILURE() << "reading " << target.conf_file << " (" << kCephConfEnv << "): " << Errno(rc)
                  << "; " << kRadosClusterHint;
    return nullptr;
  }
  for (const auto& [name, value] :
       {std::pair{"client_mount_timeout", "10"}, std::pair{"rados_mon_op_timeout", "10"},
        std::pair{"rados_osd_op_timeout", "10"}, std::pair{"log_to_stderr", "false"},
        std::pair{"err_to_stderr", "false"}}) {
    rc = rados_conf_set(raw, name, value);
    if (rc < 0) {
      ADD_FAILURE() << "rados_conf_set " << name << ": " << Errno(rc);
      return nullptr;
    }
  }
  rc = rados_connect(raw);
  if (rc < 0) {
    ADD_FAILURE() << "cannot connect to the cluster of " << kCephConfEnv << "=" << target.conf_file
                  << ": " << Errno(rc) << " (is it down?); " << kRadosClusterHint;
    return nullptr;
  }
  return cluster;
}

TEST(RadosClusterTest, PutReadBack) {
  Result<RadosTestCluster> target = RadosTestClusterFromEnv();
  ASSERT_TRUE(target.has_value()) << target.error().message();
  ClusterHandle cluster = Connect(*target);
  ASSERT_NE(cluster, nullptr);

  rados_ioctx_t raw_io = nullptr;
  int rc = rados_ioctx_create(cluster.get(), target->pool.c_str(), &raw_io);
  ASSERT_EQ(rc, 0) << "pool " << target->pool << " (" << kRadosPoolEnv << "): " << Errno(rc);
  IoctxHandle io(raw_io);
  const std::string ns = RandomRadosNamespace("RadosClusterTest");
  rados_ioctx_set_namespace(io.get(), ns.c_str());

  // 1 MiB of known bytes: several messenger frames, byte-exact round trip.
  const std::vector<std::byte> data = testutil::PatternBytes(15, 1 << 20);
  rc =
      rados_write_full(io.get(), "object", reinterpret_cast<const char*>(data.data()), data.size());
  ASSERT_EQ(rc, 0) << "rados_write_full: " << Errno(rc);

  uint64_t size = 0;
  time_t mtime = 0;
  ASSERT_EQ(rados_stat(io.get(), "object", &size, &mtime), 0);
  EXPECT_EQ(size, data.size());

  std::vector<std::byte> back(data.size() + 1);
  rc = rados_read(io.get(), "object", reinterpret_cast<char*>(back.data()), back.size(), 0);
  ASSERT_EQ(rc, static_cast<int>(data.size())) << "rados_read: " << Errno(rc);
  back.resize(data.size());
  EXPECT_EQ(back, data);

  // The object lives in this test's namespace only.
  rados_ioctx_set_namespace(io.get(), "");
  EXPECT_EQ(rados_stat(io.get(), "object", &size, &mtime), -ENOENT);
  rados_ioctx_set_namespace(io.get(), ns.c_str());
  EXPECT_EQ(rados_remove(io.get(), "object"), 0);
}

}  // namespace
}  // namespace oc::storage::test
