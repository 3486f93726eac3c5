#pragma once
// Reads that must not wait for the disk. Inside a CachedReadsOnly scope, a Store whose
// SupportsCachedReads() is true answers Get, Head and HeadBucket, and its readers' Read, only
// from memory (RocksDB's memtables and block cache); where it would have to read the disk it
// notes a miss and fails the call instead. The gateway runs GET and HEAD handlers on its I/O
// thread inside this scope, which saves the two thread hand-offs of the Store pool, and
// reruns them on the pool after a miss (docs/decisions/gateway-cached-gets-on-io-thread.md).
// Thread safety: the scope is per thread; scopes do not nest.

namespace oc::storage {
namespace detail {

struct CachedReadsState {
  bool active = false;
  bool missed = false;
};
inline thread_local CachedReadsState cached_reads_state;

}  // namespace detail

class CachedReadsOnly {
 public:
  CachedReadsOnly() { detail::cached_reads_state = {true, false}; }
  ~CachedReadsOnly() { detail::cached_reads_state = {}; }
  CachedReadsOnly(const CachedReadsOnly&) = delete;
  CachedReadsOnly& operator=(const CachedReadsOnly&) = delete;

  // Whether a read in this scope would have had to wait for the disk.
  bool missed() const { return detail::cached_reads_state.missed; }

  // For stores: whether the calling thread is in a scope, and recording a miss in it.
  static bool Active() { return detail::cached_reads_state.active; }
  static void NoteMiss() { detail::cached_reads_state.missed = true; }
};

}  // namespace oc::storage
