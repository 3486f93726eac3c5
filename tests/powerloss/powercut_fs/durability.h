#pragma once
// Durability: what powercut_fs would lose at a power cut, and the rollback that loses it
// (docs/design.md, "Power-loss test").
//
// Every change is applied to the backing tree at once (so reads are plain passthrough); this
// class keeps enough of the durable state to undo what was not made durable:
//
//  - file bytes: before bytes of a file are first overwritten or cut off after the file's
//    last fsync/fdatasync, the durable bytes are copied aside (only the part below the durable
//    size: appended bytes need no copy, the rollback truncates them). fsync or fdatasync of the
//    file forgets them: its data and size are durable.
//  - directory entries: before a directory is first changed (create, mkdir, link, rename into
//    or out of it, unlink, rmdir) after its last fsync, its entries are recorded, each regular
//    file as a hard link in the shadow directory (so an unlinked or replaced file survives).
//    fsync of the directory forgets them: its entries are durable.
//
// PowerCut() rolls every file back to its durable bytes and size, then every changed
// directory back to its recorded entries (parents before children). It is the model of POSIX
// fsync that RocksDB's own fault-injection file system uses: nothing unsynced survives, and a
// new file's name needs an fsync of its directory. Keyed by the backing inode, so a file keeps
// its undo record across renames and hard links. Not thread-safe: powercut_fs runs FUSE's
// single-threaded loop.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace oc::powercut {

// What a power cut dropped.
struct CutStats {
  uint64_t files_rolled_back = 0;  // files whose bytes or size changed since their last sync
  uint64_t bytes_dropped = 0;      // bytes past the durable size, plus durable bytes restored
  uint64_t dirs_rolled_back = 0;   // directories changed since their last fsync
  uint64_t entries_removed = 0;    // names created (or replaced) and not durable
  uint64_t entries_restored = 0;   // names removed (or replaced) and not durable
};

class Durability {
 public:
  // `root_fd`: the backing tree's root; `shadow_dir`: an empty directory on the same file
  // system, outside the tree (hard links to recorded files go there).
  Durability(int root_fd, std::string shadow_dir);
  ~Durability();
  Durability(const Durability&) = delete;
  Durability& operator=(const Durability&) = delete;

  // Before bytes [offset, offset + length) of the file open (read-write) as `fd` change
  // (write, truncate, hole punch); length UINT64_MAX reaches the end. 0 or -errno.
  int BeforeWrite(int fd, uint64_t offset, uint64_t length);
  // Before an entry of directory `dir` (relative to the root, "." for the root) changes.
  int BeforeDirChange(const std::string& dir);
  // fsync or fdatasync of the file open as `fd` / of the directory open as `dir_fd` returned.
  void FileSynced(int fd);
  void DirSynced(int dir_fd);

  // Drops every change not made durable (see above). Afterwards everything is durable again.
  CutStats PowerCut();

 private:
  struct FileUndo {
    int fd = -1;                            // read-write, on the inode
    uint64_t durable_size = 0;              // its size at the last sync
    std::map<uint64_t, std::string> saved;  // durable bytes by offset, non-overlapping
  };
  struct Entry {
    ino_t ino = 0;
    mode_t type = 0;     // S_IFREG, S_IFDIR or S_IFLNK
    std::string target;  // a symbolic link's
  };
  struct DirUndo {
    std::string path;  // relative to the root, when first changed
    std::string shadow;
    std::map<std::string, Entry> entries;
  };

  int SaveRange(FileUndo& undo, uint64_t offset, uint64_t end);
  void RollBackFile(FileUndo& undo, CutStats& stats);
  void RollBackDir(const DirUndo& undo, CutStats& stats);

  const int root_fd_;
  const std::string shadow_dir_;
  uint64_t next_shadow_ = 0;
  std::unordered_map<ino_t, FileUndo> files_;
  std::unordered_map<ino_t, DirUndo> dirs_;
};

}  // namespace oc::powercut
