#pragma once
// SpaceGuard: the free-space reserve of a RocksStore's file system
// (docs/decisions/full-disk.md). Ordinary writes (a new object, part, bucket or group; every
// data-file append and every early flush of a writer) are admitted only while more than the
// reserve plus what they bring stays free; deletes and the store's own recovery (RocksDB's
// Resume and its flush, retiring dead data files) are never checked, so they still find room
// when the disk is otherwise full. Without it the first refusal comes from the file system
// itself, at any write, and RocksDB then stops all writes, deletes included.
//
// A refusal is noted (short_of_space): the next delete wakes the store's space recovery.
// Thread-safe: statvfs per check, an atomic flag.

#include <atomic>
#include <cstdint>
#include <string>

#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::storage {

class SpaceGuard {
 public:
  // The reserve: this share of the file system's size...
  static constexpr uint64_t kReservePerMille = 20;
  // ...clamped to this range: enough for a few RocksDB flushes and WAL switches on a small
  // file system, and no more than a few memtables' worth on a large one.
  static constexpr uint64_t kMinReserveBytes = 1ull << 20;
  static constexpr uint64_t kMaxReserveBytes = 256ull << 20;

  // The reserve for `dir`'s file system (statvfs); kIOError if it cannot be read.
  static Result<SpaceGuard> Open(std::string dir);

  SpaceGuard(const SpaceGuard& other)
      : dir_(other.dir_), fs_bytes_(other.fs_bytes_), reserve_(other.reserve_) {}

  // OK while more than reserve() + `incoming` bytes are free (available to this user);
  // else kResourceExhausted/storage.space (oc/storage/no_space.h), noted as a refusal.
  // A failed statvfs admits (the write then meets the file system's own answer).
  Status Admit(uint64_t incoming);
  // Bytes free now (available to this user); UINT64_MAX if statvfs fails.
  uint64_t Available() const;
  // Notes that a write was refused for lack of space (here or by the file system).
  void NoteRefused() { short_of_space_.store(true, std::memory_order_relaxed); }
  // Whether a write was refused since the last ClearRefused.
  bool short_of_space() const { return short_of_space_.load(std::memory_order_relaxed); }
  void ClearRefused() { short_of_space_.store(false, std::memory_order_relaxed); }

  uint64_t reserve() const { return reserve_; }
  uint64_t fs_bytes() const { return fs_bytes_; }

 private:
  SpaceGuard(std::string dir, uint64_t fs_bytes, uint64_t reserve)
      : dir_(std::move(dir)), fs_bytes_(fs_bytes), reserve_(reserve) {}

  std::string dir_;
  uint64_t fs_bytes_ = 0;
  uint64_t reserve_ = 0;
  std::atomic<bool> short_of_space_{false};
};

}  // namespace oc::storage
