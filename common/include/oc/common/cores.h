#pragma once
// UsableCores: how many cores this process may run on, for the thread-count defaults that
// say "0 = from the cores" (gateway.io_threads, rpc.io_threads, kv.descriptor_threads...).
// It is the smaller of
//  - the CPU affinity mask (sched_getaffinity: taskset, numactl, a container's cpuset), and
//  - the CFS bandwidth quota of the process's cgroup and every ancestor (cgroup v2 cpu.max
//    "quota period", cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us), rounded up,
// and at least 1. std::thread::hardware_concurrency() counts the machine's CPUs, not these:
// on a 64-core host a container limited to 4 cores would start 64 I/O threads that then
// contend for 4 (docs/decisions/thread-defaults-usable-cores.md).
//
// It reads /proc/self/cgroup and files under /sys/fs/cgroup once per call: call it at
// startup, not per request. The parsers are separate so tests can give them text.
// Thread safety: every function may be called from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oc {

// The cores this process may use now (see above). At least 1.
uint32_t UsableCores();

// `per_core` x UsableCores(), clamped to [at_least, at_most]: the default of a thread count
// whose threads mostly wait. REQUIRES: at_least <= at_most.
uint32_t ThreadsPerCore(uint32_t per_core, uint32_t at_least, uint32_t at_most);

// CPUs in this process's affinity mask (sched_getaffinity); nullopt if it cannot be read.
std::optional<uint32_t> AffinityCores();

// A cgroup v2 cpu.max file: "max 100000" (no limit) or "<quota> <period>" in microseconds.
// The quota in cores (quota / period, not rounded), or nullopt for "max" or text that is not
// one of the two forms (a file we cannot read limits nothing).
std::optional<double> ParseCpuMax(std::string_view text);

// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us: the quota in cores, or nullopt when the
// quota is -1 (no limit) or either text is not a positive integer.
std::optional<double> ParseCfsQuota(std::string_view quota_us, std::string_view period_us);

// The tightest CFS quota, in cores, of the cgroups that /proc/self/cgroup text
// `proc_self_cgroup` names, looked up under the cgroup mount `cgroup_root` ("/sys/fs/cgroup"):
// for the v2 entry ("0::/path") cpu.max in <root>/<path> and each ancestor up to <root> (also
// under <root>/unified on hybrid hosts); for a v1 entry whose controllers include "cpu",
// cpu.cfs_quota_us and cpu.cfs_period_us in <root>/<controllers>/<path> (and <root>/cpu) and
// each ancestor. nullopt when none sets a quota.
std::optional<double> CgroupQuotaCores(const std::string& cgroup_root,
                                       std::string_view proc_self_cgroup);

// min(affinity, ceil(quota)) and at least 1; either may be absent.
uint32_t CombineCores(std::optional<uint32_t> affinity, std::optional<double> quota_cores);

}  // namespace oc
