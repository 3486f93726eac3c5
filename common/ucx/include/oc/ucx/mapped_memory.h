#pragma once
// MappedMemory: a range of memory registered with a ucp context for RMA, with the packed rkey a
// peer needs to reach it; unmapped on destruction. Either the caller's memory (Map) or memory
// UCX allocates (Allocate), which starts with an owner page (owner_token.h).
// Thread safety: create and destroy it on the worker's owning thread (UcxWorker::Call,
// worker.h); the accessors may be read from any thread.

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/ucx/owner_token.h"

namespace oc::ucx {

class MappedMemory {
 public:
  // Maps [data, data + length) for RMA. The memory stays the caller's and must outlive the
  // mapping. UCX failures translated by FromUcs.
  static Result<std::unique_ptr<MappedMemory>> Map(ucp_context_h context, void* data,
                                                   uint64_t length);
  // Has UCX allocate `length` bytes for the data plane whose token is `owner` and map them: on
  // one host UCX takes shared memory (UCX_ALLOC_PRIO: System V first), which a peer's UCX
  // attaches when it unpacks the rkey, so a server on the same host can write it in place
  // (UcxDataPlane). The mapping starts with an owner page (OwnerToken) before the bytes.
  // Elsewhere UCX falls back to ordinary pages. The bytes are zeroed and live as long as the
  // mapping. kInternal if UCX allocated less than asked.
  static Result<std::unique_ptr<MappedMemory>> Allocate(ucp_context_h context, uint64_t length,
                                                        const OwnerToken& owner);
  ~MappedMemory();
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;

  ucp_mem_h memh() const { return memh_; }
  ByteSpan rkey() const { return rkey_; }
  // The mapped bytes (after the owner page, for Allocate).
  MutableByteSpan bytes() const { return bytes_; }

 private:
  explicit MappedMemory(ucp_context_h context) : context_(context) {}
  Status Pack();

  ucp_context_h context_;
  ucp_mem_h memh_ = nullptr;
  MutableByteSpan bytes_;
  std::vector<std::byte> rkey_;
};

}  // namespace oc::ucx
