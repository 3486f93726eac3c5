#include "durability.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace oc::powercut {
namespace {

// The names in directory `dir_fd` but "." and ".."; the descriptor stays open.
std::vector<std::string> ListNames(int dir_fd) {
  std::vector<std::string> names;
  const int fd = ::dup(dir_fd);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0) {
      ::close(fd);
    }
    return names;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      names.push_back(name);
    }
  }
  ::closedir(d);
  return names;
}

// Removes `name` in `dir_fd`, with everything below it when it is a directory.
void RemoveTree(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    const int sub = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sub >= 0) {
      for (const std::string& child : ListNames(sub)) {
        RemoveTree(sub, child);
      }
      ::close(sub);
    }
    (void)::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);
    return;
  }
  (void)::unlinkat(dir_fd, name.c_str(), 0);
}

// Removes a shadow directory and the hard links in it.
void RemoveShadow(const std::string& shadow) {
  const int fd = ::open(shadow.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    for (const std::string& name : ListNames(fd)) {
      (void)::unlinkat(fd, name.c_str(), 0);
    }
    ::close(fd);
  }
  (void)::rmdir(shadow.c_str());
}

size_t Depth(const std::string& path) {
  return path == "." ? 0 : static_cast<size_t>(std::count(path.begin(), path.end(), '/')) + 1;
}

}  // namespace

Durability::Durability(int root_fd, std::string shadow_dir)
    : root_fd_(root_fd), shadow_dir_(std::move(shadow_dir)) {}

Durability::~Durability() {
  for (auto& [ino, undo] : files_) {
    ::close(undo.fd);
  }
}

int Durability::BeforeWrite(int fd, uint64_t offset, uint64_t length) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return -errno;
  }
  auto [it, inserted] = files_.try_emplace(st.st_ino);
  FileUndo& undo = it->second;
  if (inserted) {
    // Untracked: everything it holds now is durable.
    undo.fd = ::dup(fd);
    if (undo.fd < 0) {
      const int err = errno;
      files_.erase(it);
      return -err;
    }
    undo.durable_size = static_cast<uint64_t>(st.st_size);
  }
  const uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  return SaveRange(undo, offset, end);
}

int Durability::SaveRange(FileUndo& undo, uint64_t offset, uint64_t end) {
  end = std::min(end, undo.durable_size);  // bytes past it are dropped by the truncate
  uint64_t pos = offset;
  auto it = undo.saved.upper_bound(pos);
  if (it != undo.saved.begin()) {
    auto prev = std::prev(it);
    pos = std::max(pos, prev->first + prev->second.size());
  }
  while (pos < end) {
    it = undo.saved.lower_bound(pos);
    const uint64_t gap_end = it == undo.saved.end() ? end : std::min(end, it->first);
    if (gap_end > pos) {
      std::string bytes(gap_end - pos, '\0');
      uint64_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::pread(undo.fd, bytes.data() + done, bytes.size() - done,
                                  static_cast<off_t>(pos + done));
        if (n < 0 && errno == EINTR) {
          continue;
        }
        if (n <= 0) {
          return n < 0 ? -errno : -EIO;
        }
        done += static_cast<uint64_t>(n);
      }
      undo.saved.emplace(pos, std::move(bytes));
    }
    if (it == undo.saved.end()) {
      break;
    }
    pos = std::max(gap_end, it->first + it->second.size());
  }
  return 0;
}

void Durability::FileSynced(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return;
  }
  auto it = files_.find(st.st_ino);
  if (it != files_.end()) {
    ::close(it->second.fd);
    files_.erase(it);
  }
}

int Durability::BeforeDirChange(const std::string& dir) {
  const int dir_fd = ::openat(root_fd_, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return -errno;
  }
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0 || dirs_.contains(st.st_ino)) {
    ::close(dir_fd);
    return 0;
  }
  DirUndo undo;
  undo.path = dir;
  undo.shadow = shadow_dir_ + "/" + std::to_string(next_shadow_++);
  int rc = ::mkdir(undo.shadow.c_str(), 0700) == 0 ? 0 : -errno;
  for (const std::string& name : ListNames(dir_fd)) {
    if (rc != 0) {
      break;
    }
    struct stat est {};
    if (::fstatat(dir_fd, name.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;
    }
    Entry entry{est.st_ino, static_cast<mode_t>(est.st_mode & S_IFMT), {}};
    if (S_ISREG(est.st_mode)) {
      const std::string link = undo.shadow + "/" + name;
      if (::linkat(dir_fd, name.c_str(), AT_FDCWD, link.c_str(), 0) != 0) {
        rc = -errno;
      }
    } else if (S_ISLNK(est.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlinkat(dir_fd, name.c_str(), target, sizeof(target));
      entry.target.assign(target, n > 0 ? static_cast<size_t>(n) : 0);
    } else if (!S_ISDIR(est.st_mode)) {
      continue;  // devices, sockets, FIFOs: not modelled
    }
    undo.entries.emplace(name, std::move(entry));
  }
  ::close(dir_fd);
  if (rc == 0) {
    dirs_.emplace(st.st_ino, std::move(undo));
  }
  return rc;
}

void Durability::DirSynced(int dir_fd) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) {
    return;
  }
  auto it = dirs_.find(st.st_ino);
  if (it == dirs_.end()) {
    return;
  }
  RemoveShadow(it->second.shadow);
  dirs_.erase(it);
}

void Durability::RollBackFile(FileUndo& undo, CutStats& stats) {
  struct stat st {};
  if (::fstat(undo.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > undo.durable_size) {
    stats.bytes_dropped += static_cast<uint64_t>(st.st_size) - undo.durable_size;
  }
  for (const auto& [offset, bytes] : undo.saved) {
    stats.bytes_dropped += bytes.size();
    (void)::pwrite(undo.fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
  }
  (void)::ftruncate(undo.fd, static_cast<off_t>(undo.durable_size));
  ++stats.files_rolled_back;
}

void Durability::RollBackDir(const DirUndo& undo, CutStats& stats) {
  ++stats.dirs_rolled_back;
  const int dir_fd = ::openat(root_fd_, undo.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return;  // the directory itself was not durable: its parent's rollback removed it
  }
  for (const std::string& name : ListNames(dir_fd)) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;
    }
    auto it = undo.entries.find(name);
    if (it == undo.entries.end() || it->second.ino != st.st_ino) {
      RemoveTree(dir_fd, name);
      ++stats.entries_removed;
    }
  }
  for (const auto& [name, entry] : undo.entries) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      continue;
    }
    if (entry.type == S_IFREG) {
      const std::string link = undo.shadow + "/" + name;
      (void)::linkat(AT_FDCWD, link.c_str(), dir_fd, name.c_str(), 0);
    } else if (entry.type == S_IFDIR) {
      (void)::mkdirat(dir_fd, name.c_str(), 0755);  // an rmdir'ed directory was empty
    } else {
      (void)::symlinkat(entry.target.c_str(), dir_fd, name.c_str());
    }
    ++stats.entries_restored;
  }
  ::close(dir_fd);
}

CutStats Durability::PowerCut() {
  CutStats stats;
  for (auto& [ino, undo] : files_) {
    RollBackFile(undo, stats);
    ::close(undo.fd);
  }
  files_.clear();
  std::vector<const DirUndo*> dirs;
  for (const auto& [ino, undo] : dirs_) {
    dirs.push_back(&undo);
  }
  // Parents first: a directory whose own name was not durable is gone before its turn.
  std::sort(dirs.begin(), dirs.end(),
            [](const DirUndo* a, const DirUndo* b) { return Depth(a->path) < Depth(b->path); });
  for (const DirUndo* undo : dirs) {
    RollBackDir(*undo, stats);
  }
  for (const auto& [ino, undo] : dirs_) {
    RemoveShadow(undo.shadow);
  }
  dirs_.clear();
  return stats;
}

}  // namespace oc::powercut
