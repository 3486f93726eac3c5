#include "oc/common/cores.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

#include "oc/common/text.h"

namespace oc {
namespace {

// More CPUs than any affinity mask we ask for (CPU_ALLOC grows to it, doubling).
constexpr int kMaxCpus = 1 << 16;
// cgroup files are a line; anything longer is not one we understand.
constexpr size_t kMaxCgroupFileBytes = 4096;

std::optional<uint64_t> ParsePositive(std::string_view text) {
  text = Trim(text, kXmlWhitespace);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0) {
    return std::nullopt;
  }
  return value;
}

// The file's text, or nullopt if it cannot be read (absent: no such controller or cgroup).
std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::string text(kMaxCgroupFileBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

void TakeMin(std::optional<double> q, std::optional<double>* best) {
  if (q.has_value() && (!best->has_value() || *q < **best)) {
    *best = q;
  }
}

// `dir` and each ancestor down to `root` (a cgroup path is absolute under its mount).
std::vector<std::string> SelfAndAncestors(const std::string& root, std::string_view path) {
  std::vector<std::string> dirs;
  std::string p(path);
  while (!p.empty() && p.back() == '/') {
    p.pop_back();
  }
  for (;;) {
    dirs.push_back(root + p);
    const size_t slash = p.rfind('/');
    if (p.empty() || slash == std::string::npos) {
      break;
    }
    p.resize(slash);
  }
  return dirs;
}

}  // namespace

std::optional<double> ParseCpuMax(std::string_view text) {
  text = Trim(text, kXmlWhitespace);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view quota = text.substr(0, space);
  const std::optional<uint64_t> period = ParsePositive(text.substr(space + 1));
  if (quota == "max" || !period.has_value()) {
    return std::nullopt;
  }
  const std::optional<uint64_t> q = ParsePositive(quota);
  if (!q.has_value()) {
    return std::nullopt;
  }
  return static_cast<double>(*q) / static_cast<double>(*period);
}

std::optional<double> ParseCfsQuota(std::string_view quota_us, std::string_view period_us) {
  const std::optional<uint64_t> q = ParsePositive(quota_us);  // "-1": no limit
  const std::optional<uint64_t> period = ParsePositive(period_us);
  if (!q.has_value() || !period.has_value()) {
    return std::nullopt;
  }
  return static_cast<double>(*q) / static_cast<double>(*period);
}

std::optional<double> CgroupQuotaCores(const std::string& cgroup_root,
                                       std::string_view proc_self_cgroup) {
  std::optional<double> best;
  std::string_view rest = proc_self_cgroup;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    // "hierarchy-id:controller-list:path"; the path may itself hold ':'.
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      continue;
    }
    const std::string_view id = line.substr(0, c1);
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);
    if (path.empty() || path.front() != '/') {
      continue;
    }
    if (id == "0" && controllers.empty()) {
      for (const std::string& mount : {cgroup_root, cgroup_root + "/unified"}) {
        for (const std::string& dir : SelfAndAncestors(mount, path)) {
          if (std::optional<std::string> text = ReadSmallFile(dir + "/cpu.max")) {
            TakeMin(ParseCpuMax(*text), &best);
          }
        }
      }
      continue;
    }
    bool has_cpu = false;
    for (std::string_view list = controllers; !list.empty();) {
      const size_t comma = list.find(',');
      has_cpu = has_cpu || list.substr(0, comma) == "cpu";
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    if (!has_cpu) {
      continue;
    }
    std::vector<std::string> mounts = {cgroup_root + "/" + std::string(controllers)};
    if (controllers != "cpu") {
      mounts.push_back(cgroup_root + "/cpu");
    }
    for (const std::string& mount : mounts) {
      for (const std::string& dir : SelfAndAncestors(mount, path)) {
        std::optional<std::string> quota = ReadSmallFile(dir + "/cpu.cfs_quota_us");
        std::optional<std::string> period = ReadSmallFile(dir + "/cpu.cfs_period_us");
        if (quota.has_value() && period.has_value()) {
          TakeMin(ParseCfsQuota(*quota, *period), &best);
        }
      }
    }
  }
  return best;
}

std::optional<uint32_t> AffinityCores() {
  for (int cpus = 1024; cpus <= kMaxCpus; cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) {
      return std::nullopt;
    }
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      const int count = CPU_COUNT_S(bytes, set);
      CPU_FREE(set);
      return count > 0 ? std::optional<uint32_t>(static_cast<uint32_t>(count)) : std::nullopt;
    }
    CPU_FREE(set);
    if (errno != EINVAL) {
      return std::nullopt;  // EINVAL: the kernel's mask is larger than ours; grow it
    }
  }
  return std::nullopt;
}

uint32_t CombineCores(std::optional<uint32_t> affinity, std::optional<double> quota_cores) {
  uint32_t cores = affinity.value_or(0);
  if (cores == 0) {
    cores = std::max(1u, std::thread::hardware_concurrency());
  }
  if (quota_cores.has_value() && std::isfinite(*quota_cores) && *quota_cores > 0) {
    const double rounded = std::ceil(*quota_cores - 1e-9);  // 2.0000000001 is 2 cores
    if (rounded < static_cast<double>(cores)) {
      cores = static_cast<uint32_t>(std::max(1.0, rounded));
    }
  }
  return std::max(1u, cores);
}

uint32_t UsableCores() {
  std::optional<double> quota;
  if (std::optional<std::string> self = ReadSmallFile("/proc/self/cgroup")) {
    quota = CgroupQuotaCores("/sys/fs/cgroup", *self);
  }
  return CombineCores(AffinityCores(), quota);
}

uint32_t ThreadsPerCore(uint32_t per_core, uint32_t at_least, uint32_t at_most) {
  const uint64_t n = uint64_t{per_core} * UsableCores();
  return static_cast<uint32_t>(std::clamp<uint64_t>(n, at_least, at_most));
}

}  // namespace oc
