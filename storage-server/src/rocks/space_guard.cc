#include "rocks/space_guard.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "oc/storage/no_space.h"

namespace oc::storage {

Result<SpaceGuard> SpaceGuard::Open(std::string dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) {
    return Status::IOError(fmt::format("statvfs {}: {}", dir, std::strerror(errno)));
  }
  const uint64_t fs_bytes = uint64_t{st.f_blocks} * st.f_frsize;
  const uint64_t reserve =
      std::clamp(fs_bytes / 1000 * kReservePerMille, kMinReserveBytes, kMaxReserveBytes);
  return SpaceGuard(std::move(dir), fs_bytes, reserve);
}

uint64_t SpaceGuard::Available() const {
  struct statvfs st {};
  if (::statvfs(dir_.c_str(), &st) != 0) {
    return UINT64_MAX;
  }
  return uint64_t{st.f_bavail} * st.f_frsize;
}

Status SpaceGuard::Admit(uint64_t incoming) {
  const uint64_t available = Available();
  if (available > reserve_ && available - reserve_ > incoming) {
    return Status::Ok();
  }
  NoteRefused();
  return NoSpace(fmt::format("{} bytes free in {}, {} kept in reserve, {} to write", available,
                             dir_, reserve_, incoming));
}

}  // namespace oc::storage
