// powercut_fs: a FUSE passthrough file system that can lose power (docs/design.md,
// "Power-loss test"). Test tool only.
//
//   powercut_fs BACKING MOUNTPOINT [-f] [-o auto_unmount] [other FUSE options]
//
// Serves BACKING/tree at MOUNTPOINT. Every change reaches BACKING/tree at once; Durability
// (durability.h) remembers what was not yet made durable by fsync/fdatasync of a file or fsync
// of a directory. Unmounting is the power cut: when the mount goes away (fusermount3 -u, or
// the kernel's auto_unmount after the daemon dies) everything not durable is rolled back
// before the process exits, and one line on stderr and in BACKING/last-cut says what was
// dropped. A fresh mount of the same BACKING then shows exactly what survived the cut.
//
// The kernel holds no dirty data for it (no writeback cache: every write reaches the daemon
// before write(2) returns), so killing the writer and then unmounting loses nothing the model
// keeps. sync_file_range and the writer's own page cache never make anything durable, as on a
// real disk. Runs FUSE's single-threaded loop (-s is added): the model is not thread-safe.

#define FUSE_USE_VERSION 35

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "durability.h"

namespace {

using oc::powercut::CutStats;
using oc::powercut::Durability;

struct Fs {
  int root_fd = -1;
  std::unique_ptr<Durability> durability;
};
Fs* g_fs = nullptr;  // FUSE's high-level callbacks take no context of ours but fuse_get_context

// A FUSE path ("/a/b") relative to the backing root ("a/b"; "." for the root).
std::string Rel(const char* path) {
  return path == nullptr || path[0] == '\0' || std::strcmp(path, "/") == 0 ? "."
                                                                           : std::string(path + 1);
}

// The directory holding `path`, relative to the backing root.
std::string Parent(const char* path) {
  const std::string rel = Rel(path);
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "." : rel.substr(0, slash);
}

int Errno(int rc) { return rc < 0 ? -errno : 0; }

int GetAttr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) {
    return Errno(::fstat(static_cast<int>(fi->fh), st));
  }
  return Errno(::fstatat(g_fs->root_fd, Rel(path).c_str(), st, AT_SYMLINK_NOFOLLOW));
}

int ReadLink(const char* path, char* buf, size_t size) {
  const ssize_t n = ::readlinkat(g_fs->root_fd, Rel(path).c_str(), buf, size - 1);
  if (n < 0) {
    return -errno;
  }
  buf[n] = '\0';
  return 0;
}

int MkDir(const char* path, mode_t mode) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(path)); rc != 0) {
    return rc;
  }
  return Errno(::mkdirat(g_fs->root_fd, Rel(path).c_str(), mode));
}

int Unlink(const char* path) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(path)); rc != 0) {
    return rc;
  }
  return Errno(::unlinkat(g_fs->root_fd, Rel(path).c_str(), 0));
}

int RmDir(const char* path) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(path)); rc != 0) {
    return rc;
  }
  return Errno(::unlinkat(g_fs->root_fd, Rel(path).c_str(), AT_REMOVEDIR));
}

int SymLink(const char* target, const char* path) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(path)); rc != 0) {
    return rc;
  }
  return Errno(::symlinkat(target, g_fs->root_fd, Rel(path).c_str()));
}

int Rename(const char* from, const char* to, unsigned int flags) {
  for (const std::string& dir : {Parent(from), Parent(to)}) {
    if (int rc = g_fs->durability->BeforeDirChange(dir); rc != 0) {
      return rc;
    }
  }
  return Errno(
      ::renameat2(g_fs->root_fd, Rel(from).c_str(), g_fs->root_fd, Rel(to).c_str(), flags));
}

int Link(const char* from, const char* to) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(to)); rc != 0) {
    return rc;
  }
  return Errno(::linkat(g_fs->root_fd, Rel(from).c_str(), g_fs->root_fd, Rel(to).c_str(), 0));
}

int ChMod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (fi != nullptr) {
    return Errno(::fchmod(static_cast<int>(fi->fh), mode));
  }
  return Errno(::fchmodat(g_fs->root_fd, Rel(path).c_str(), mode, 0));
}

int ChOwn(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  if (fi != nullptr) {
    return Errno(::fchown(static_cast<int>(fi->fh), uid, gid));
  }
  return Errno(::fchownat(g_fs->root_fd, Rel(path).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW));
}

// Sets the size of the file open as `fd`, keeping the bytes it cuts off.
int TruncateFd(int fd, off_t size) {
  if (int rc = g_fs->durability->BeforeWrite(fd, static_cast<uint64_t>(size), UINT64_MAX);
      rc != 0) {
    return rc;
  }
  return Errno(::ftruncate(fd, size));
}

int Truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) {
    return TruncateFd(static_cast<int>(fi->fh), size);
  }
  const int fd = ::openat(g_fs->root_fd, Rel(path).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return -errno;
  }
  const int rc = TruncateFd(fd, size);
  ::close(fd);
  return rc;
}

// Opens the backing file read-write whatever the caller asked (the model reads the bytes it
// keeps through it); O_APPEND is dropped because the kernel sends every write's offset.
int OpenBacking(const char* path, int flags, mode_t mode, fuse_file_info* fi) {
  const bool truncate = (flags & O_TRUNC) != 0;
  flags &= ~(O_ACCMODE | O_APPEND | O_DIRECT | O_TRUNC);
  const int fd = ::openat(g_fs->root_fd, Rel(path).c_str(), flags | O_RDWR | O_CLOEXEC, mode);
  if (fd < 0) {
    return -errno;
  }
  if (truncate) {
    if (int rc = TruncateFd(fd, 0); rc != 0) {
      ::close(fd);
      return rc;
    }
  }
  fi->fh = static_cast<uint64_t>(fd);
  fi->direct_io = 0;
  fi->keep_cache = 0;
  return 0;
}

int Open(const char* path, fuse_file_info* fi) { return OpenBacking(path, fi->flags, 0, fi); }

int Create(const char* path, mode_t mode, fuse_file_info* fi) {
  if (int rc = g_fs->durability->BeforeDirChange(Parent(path)); rc != 0) {
    return rc;
  }
  return OpenBacking(path, fi->flags | O_CREAT, mode, fi);
}

int Read(const char*, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  const ssize_t n = ::pread(static_cast<int>(fi->fh), buf, size, offset);
  return n < 0 ? -errno : static_cast<int>(n);
}

int Write(const char*, const char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  const int fd = static_cast<int>(fi->fh);
  if (int rc = g_fs->durability->BeforeWrite(fd, static_cast<uint64_t>(offset), size); rc != 0) {
    return rc;
  }
  const ssize_t n = ::pwrite(fd, buf, size, offset);
  return n < 0 ? -errno : static_cast<int>(n);
}

int StatFs(const char*, struct statvfs* st) { return Errno(::fstatvfs(g_fs->root_fd, st)); }

int Flush(const char*, fuse_file_info*) { return 0; }

int Release(const char*, fuse_file_info* fi) { return Errno(::close(static_cast<int>(fi->fh))); }

// The backing file system's own sync is not needed: the backing tree never loses power.
int FSync(const char*, int /*datasync*/, fuse_file_info* fi) {
  g_fs->durability->FileSynced(static_cast<int>(fi->fh));
  return 0;
}

// A directory's descriptor: its path is not passed to fsyncdir once it may be stale
// (nullpath_ok).
int OpenDir(const char* path, fuse_file_info* fi) {
  const int fd = ::openat(g_fs->root_fd, Rel(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return -errno;
  }
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int ReleaseDir(const char*, fuse_file_info* fi) { return Errno(::close(static_cast<int>(fi->fh))); }

int FSyncDir(const char*, int /*datasync*/, fuse_file_info* fi) {
  g_fs->durability->DirSynced(static_cast<int>(fi->fh));
  return 0;
}

int ReadDir(const char*, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info* fi,
            fuse_readdir_flags) {
  const int fd = ::dup(static_cast<int>(fi->fh));  // closedir closes it; OpenDir's stays
  DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    return -err;
  }
  ::rewinddir(dir);
  while (const dirent* e = ::readdir(dir)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) {
      break;
    }
  }
  ::closedir(dir);
  return 0;
}

int UTimeNs(const char* path, const timespec tv[2], fuse_file_info* fi) {
  if (fi != nullptr) {
    return Errno(::futimens(static_cast<int>(fi->fh), tv));
  }
  return Errno(::utimensat(g_fs->root_fd, Rel(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}

int FAllocate(const char*, int mode, off_t offset, off_t length, fuse_file_info* fi) {
  const int fd = static_cast<int>(fi->fh);
  // Hole punching and zeroing change bytes in place; collapsing or inserting a range moves
  // everything after it. Plain allocation only extends the size (the rollback truncates).
  uint64_t changed = 0;
  if ((mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) != 0) {
    changed = static_cast<uint64_t>(length);
  } else if ((mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) != 0) {
    changed = UINT64_MAX;
  }
  if (changed != 0) {
    if (int rc = g_fs->durability->BeforeWrite(fd, static_cast<uint64_t>(offset), changed);
        rc != 0) {
      return rc;
    }
  }
  return Errno(::fallocate(fd, mode, offset, length));
}

void* Init(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->hard_remove = 1;  // an unlinked open file is reached through its descriptor
  cfg->nullpath_ok = 1;
  cfg->direct_io = 0;
  cfg->kernel_cache = 0;
  // Write-through: a write reaches the model before write(2) returns.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  return nullptr;
}

fuse_operations Operations() {
  fuse_operations ops{};
  ops.getattr = GetAttr;
  ops.readlink = ReadLink;
  ops.mkdir = MkDir;
  ops.unlink = Unlink;
  ops.rmdir = RmDir;
  ops.symlink = SymLink;
  ops.rename = Rename;
  ops.link = Link;
  ops.chmod = ChMod;
  ops.chown = ChOwn;
  ops.truncate = Truncate;
  ops.open = Open;
  ops.read = Read;
  ops.write = Write;
  ops.statfs = StatFs;
  ops.flush = Flush;
  ops.release = Release;
  ops.fsync = FSync;
  ops.opendir = OpenDir;
  ops.readdir = ReadDir;
  ops.releasedir = ReleaseDir;
  ops.fsyncdir = FSyncDir;
  ops.init = Init;
  ops.create = Create;
  ops.utimens = UTimeNs;
  ops.fallocate = FAllocate;
  return ops;
}

std::string Describe(const CutStats& s) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "power cut: files_rolled_back=%llu bytes_dropped=%llu dirs_rolled_back=%llu "
                "entries_removed=%llu entries_restored=%llu",
                static_cast<unsigned long long>(s.files_rolled_back),
                static_cast<unsigned long long>(s.bytes_dropped),
                static_cast<unsigned long long>(s.dirs_rolled_back),
                static_cast<unsigned long long>(s.entries_removed),
                static_cast<unsigned long long>(s.entries_restored));
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BACKING MOUNTPOINT [-f] [-o OPTIONS]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path backing = argv[1];
  const std::filesystem::path tree = backing / "tree";
  const std::filesystem::path shadow = backing / "shadow";
  std::error_code ec;
  std::filesystem::create_directories(tree, ec);
  std::filesystem::remove_all(shadow, ec);  // a previous run's records: all durable now
  std::filesystem::create_directories(shadow, ec);
  if (ec) {
    std::fprintf(stderr, "powercut_fs: cannot prepare %s: %s\n", argv[1], ec.message().c_str());
    return 1;
  }
  Fs fs;
  fs.root_fd = ::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fs.root_fd < 0) {
    std::perror("powercut_fs: open backing tree");
    return 1;
  }
  fs.durability = std::make_unique<Durability>(fs.root_fd, shadow.string());
  g_fs = &fs;

  std::vector<char*> args = {argv[0]};
  for (int i = 2; i < argc; ++i) {
    args.push_back(argv[i]);
  }
  std::string single = "-s";
  args.push_back(single.data());
  const fuse_operations ops = Operations();
  const int rc = fuse_main(static_cast<int>(args.size()), args.data(), &ops, nullptr);

  const std::string line = Describe(fs.durability->PowerCut());
  std::fprintf(stderr, "powercut_fs: %s\n", line.c_str());
  if (FILE* f = std::fopen((backing / "last-cut").c_str(), "w")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
  ::close(fs.root_fd);
  return rc;
}
