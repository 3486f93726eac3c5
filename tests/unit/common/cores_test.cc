// UsableCores (oc/common/cores.h): the cgroup quota parsers given text, the lookup of a
// process's cgroups in a directory tree laid out like /sys/fs/cgroup, how affinity and quota
// combine, and that a child whose affinity is one CPU counts 1 core.
#include "oc/common/cores.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "oc/testutil/testutil.h"

namespace oc {
namespace {

TEST(Cores, ParsesCgroupV2CpuMax) {
  struct Row {
    std::string_view text;
    std::optional<double> cores;
  };
  for (const Row& row :
       {Row{"max 100000\n", std::nullopt}, Row{"200000 100000\n", 2.0}, Row{"150000 100000", 1.5},
        Row{"50000 100000\n", 0.5}, Row{"  400000 100000  \n", 4.0}, Row{"", std::nullopt},
        Row{"max", std::nullopt}, Row{"100000", std::nullopt}, Row{"abc 100000", std::nullopt},
        Row{"100000 0", std::nullopt}, Row{"0 100000", std::nullopt},
        Row{"-1 100000", std::nullopt}}) {
    SCOPED_TRACE(row.text);
    EXPECT_EQ(ParseCpuMax(row.text), row.cores);
  }
}

TEST(Cores, ParsesCgroupV1CfsQuota) {
  struct Row {
    std::string_view quota, period;
    std::optional<double> cores;
  };
  for (const Row& row : {Row{"-1\n", "100000\n", std::nullopt}, Row{"300000\n", "100000\n", 3.0},
                         Row{"25000", "100000", 0.25}, Row{"100000", "0", std::nullopt},
                         Row{"", "100000", std::nullopt}, Row{"x", "100000", std::nullopt}}) {
    SCOPED_TRACE(row.quota);
    EXPECT_EQ(ParseCfsQuota(row.quota, row.period), row.cores);
  }
}

TEST(Cores, CombinesAffinityAndQuotaRoundingUp) {
  struct Row {
    std::optional<uint32_t> affinity;
    std::optional<double> quota;
    uint32_t cores;
  };
  for (const Row& row :
       {Row{16, std::nullopt, 16}, Row{16, 4.0, 4}, Row{16, 1.5, 2}, Row{16, 0.25, 1},
        Row{2, 8.0, 2}, Row{1, std::nullopt, 1}, Row{16, 4.0000000001, 4}, Row{16, 0.0, 16}}) {
    SCOPED_TRACE(row.cores);
    EXPECT_EQ(CombineCores(row.affinity, row.quota), row.cores);
  }
  EXPECT_GE(CombineCores(std::nullopt, std::nullopt), 1u);  // hardware_concurrency then
}

void WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A v2 quota on an ancestor of the process's cgroup limits it; the tightest one wins.
TEST(Cores, FindsTheTightestV2QuotaOnTheCgroupAndItsAncestors) {
  testutil::TempDir root;
  const std::filesystem::path r = root.path();
  WriteFile(r / "cpu.max", "max 100000\n");
  WriteFile(r / "kubepods" / "cpu.max", "600000 100000\n");
  WriteFile(r / "kubepods" / "pod1" / "cpu.max", "250000 100000\n");
  WriteFile(r / "kubepods" / "pod1" / "app" / "cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupQuotaCores(r.string(), "0::/kubepods/pod1/app\n"), 2.5);
  EXPECT_EQ(CgroupQuotaCores(r.string(), "0::/kubepods\n"), 6.0);
  EXPECT_EQ(CgroupQuotaCores(r.string(), "0::/\n"), std::nullopt);
  // A namespaced cgroup path that is not below the mount (the container's root is the
  // mount): the mount's own file still counts.
  WriteFile(r / "cpu.max", "300000 100000\n");
  EXPECT_EQ(CgroupQuotaCores(r.string(), "0::/docker/abc\n"), 3.0);
}

TEST(Cores, FindsTheV1QuotaUnderTheCpuController) {
  testutil::TempDir root;
  const std::filesystem::path r = root.path();
  WriteFile(r / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n");
  WriteFile(r / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n");
  WriteFile(r / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us", "150000\n");
  WriteFile(r / "cpu,cpuacct" / "job" / "cpu.cfs_period_us", "100000\n");
  const std::string self = "12:memory:/job\n4:cpu,cpuacct:/job\n1:name=systemd:/job\n0::/job\n";
  EXPECT_EQ(CgroupQuotaCores(r.string(), self), 1.5);
  EXPECT_EQ(CombineCores(8, CgroupQuotaCores(r.string(), self)), 2u);
  EXPECT_EQ(CgroupQuotaCores(r.string(), "4:cpu,cpuacct:/\n"), std::nullopt);
  EXPECT_EQ(CgroupQuotaCores(r.string(), "4:cpuacct:/job\n"), std::nullopt);  // no cpu
  EXPECT_EQ(CgroupQuotaCores(r.string(), "garbage\n\n"), std::nullopt);
}

// A forked child pinned to one CPU counts one usable core, whatever the machine has.
TEST(Cores, AffinityOfOneCpuCountsOneCore) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
      _exit(10);
    }
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) {
      ++first;
    }
    CPU_ZERO(&set);
    CPU_SET(first, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      _exit(11);
    }
    _exit(AffinityCores() == std::optional<uint32_t>(1) && UsableCores() == 1 ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GE(UsableCores(), 1u);
  EXPECT_LE(UsableCores(), AffinityCores().value_or(UsableCores()));
}

TEST(Cores, ThreadsPerCoreIsClamped) {
  const uint32_t cores = UsableCores();
  EXPECT_EQ(ThreadsPerCore(4, 1, 1u << 20), 4 * cores);
  EXPECT_EQ(ThreadsPerCore(1, cores + 5, cores + 10), cores + 5);
  EXPECT_EQ(ThreadsPerCore(100, 1, 3), 3u);
}

}  // namespace
}  // namespace oc
