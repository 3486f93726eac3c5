#pragma once
// ComposedStore: the Store OpenStore (open_store.h) returns: a Backend (backend.h) with ONE
// kv::KvEngine composed over its kv::SliceSource. The descriptor calls (ProbeChunks,
// GetLayers, PutChunks, DataPlane, descriptor_executor) are the engine's, and the engine's
// pacing figures follow the backend's in Stats; every other call is the backend's, forwarded
// unchanged (docs/decisions/kv-engine-composed-once.md). The RPC server and the gateway serve
// this store whichever backend is under it.
//
// Shutdown: the destructor first drains the engine (its descriptor executor refuses new tasks
// and waits for the running ones, which read the backend), destroys it (and with it the UCX
// data plane), and only then closes the backend.
// Thread safety: as Store (every method may be called concurrently).

#include <memory>

#include "backend.h"
#include "oc/storage/kv.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Composes the KV engine (options: the [kv] table) over `backend`. REQUIRES: backend != null.
std::unique_ptr<Store> ComposeKvEngine(std::unique_ptr<Backend> backend, const KvOptions& options);

// The backend under a store OpenStore returned, for tests' and benchmarks' hooks (RocksStore's
// CountExtents, RadosStore's RunScrubOnce, a SliceSource's ReadSlices), under a cache layer
// too; `store` itself when it is a bare Backend; null for any other store (a RemoteStore).
Backend* BackendOf(Store& store);

}  // namespace oc::storage
