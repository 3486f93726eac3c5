#pragma once
// Backend: what a storage backend (src/rocks/, src/rados/) implements. It is a Store for the
// bucket, object and multipart calls and the KV engine's kv::SliceSource (kv/slice_source.h)
// for the descriptor calls, which it does not answer itself: OpenStore (open_store.h) composes
// ONE kv::KvEngine over the backend's SliceSource and returns the composed store
// (composed_store.h), which answers the descriptor calls with the engine and forwards the rest
// to the backend (docs/decisions/kv-engine-composed-once.md). A backend opened on its own (a
// test of its internals) answers the descriptor calls kUnimplemented.
// Thread safety: as Store and SliceSource (every method may be called concurrently).

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/slice_source.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

class Backend : public Store, public kv::SliceSource {
 public:
  // Store's and SliceSource's HeadMany and PutGroup (the same contract): one override answers
  // both.
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override = 0;
  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view bucket) override = 0;

  // Whether this process should run the pool-wide maintenance now: the cache layer's eviction
  // (src/cache/cache_store.h) runs only where this is true. A backend of its own data (RocksDB)
  // always is; one shared by several servers (RADOS) answers whether it holds the lead it
  // already elects for its GC, so one server at a time evicts. Cheap: asked before each pass.
  virtual bool IsMaintenanceLeader() const { return true; }

  // The descriptor calls are the composed store's (composed_store.h), never a backend's.
  Result<KvProbeResult> ProbeChunks(std::string_view /*bucket*/,
                                    const descriptor::Descriptor& /*d*/) final {
    return NotComposed();
  }
  Result<KvGetReport> GetLayers(std::string_view /*bucket*/, const descriptor::Descriptor& /*d*/,
                                LayerSink* /*body_sink*/,
                                const std::function<Status(const KvPlan&)>& /*on_plan*/) final {
    return NotComposed();
  }
  Result<KvPutReport> PutChunks(std::string_view /*bucket*/, const descriptor::Descriptor& /*d*/,
                                ChunkSource* /*body*/) final {
    return NotComposed();
  }
  Result<DataPlaneInfo> DataPlane(std::string_view /*bucket*/) final { return NotComposed(); }
  BoundedExecutor* descriptor_executor() final { return nullptr; }

 private:
  static Status NotComposed() {
    return Status::Unimplemented(
        "a backend's descriptor calls are its composed store's (OpenStore)");
  }
};

// The backends' openers, one per row of backends.def (Open<Id>Backend, defined in the
// backend's folder), OpenStore's (open_store.cc) to call. Errors as open_store.h says.
#define OC_BACKEND(id, name, folder, placement, options, summary) \
  Result<std::unique_ptr<Backend>> Open##id##Backend(const StoreOptions&);
#include "backends.def"
#undef OC_BACKEND

}  // namespace oc::storage
