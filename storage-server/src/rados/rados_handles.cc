// RadosStore's read handles ([rados] cluster_handles): the cluster handles after the first,
// each a rados_t with its own messenger, so its own connection and receive thread per OSD.
// ReadSlices sends its data reads round-robin over all of them; a handle whose session dies
// (blocklisted, shut down) is left out until the process restarts, and the reads it failed go
// again on a live one (rados_slices.cc; docs/decisions/rados-read-handles.md).

#include <algorithm>
#include <string>
#include <thread>

#include "oc/common/log.h"
#include "rados/rados_store.h"

namespace oc::storage {
namespace {

const Logger kLog{"rados"};

}  // namespace

Status RadosStore::ConnectReadHandles() {
  const uint32_t handles = RadosClusterHandlesFor(options_.rados.cluster_handles);
  // The others connect together: each waits for a monitor session and the OSD map.
  std::vector<Result<std::unique_ptr<rados::Cluster>>> connected;
  connected.reserve(handles - 1);
  for (uint32_t k = 1; k < handles; ++k) {
    connected.emplace_back(Status::Internal("not connected"));
  }
  RadosOptions extra = options_.rados;
  extra.create_pool = false;  // the first handle found or created it
  std::vector<std::thread> threads;
  for (uint32_t k = 1; k < handles; ++k) {
    threads.emplace_back([&, k] { connected[k - 1] = rados::Cluster::Connect(extra); });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  read_ios_.push_back(cluster_->io());
  for (Result<std::unique_ptr<rados::Cluster>>& c : connected) {
    if (!c.has_value()) {
      return c.error();
    }
    read_ios_.push_back((*c)->io());
    extra_clusters_.push_back(std::move(*c));
  }
  read_dead_ = std::make_unique<std::atomic<bool>[]>(read_ios_.size());
  return Status::Ok();
}

size_t RadosStore::PickReadHandle() {
  const size_t n = read_ios_.size();
  const size_t start = next_read_.fetch_add(1, std::memory_order_relaxed) % n;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = (start + i) % n;
    if (!read_dead_[k].load(std::memory_order_relaxed)) {
      return k;
    }
  }
  return 0;
}

bool RadosStore::ReadHandleFailed(size_t handle) {
  if (!read_dead_[handle].exchange(true, std::memory_order_relaxed)) {
    kLog.Warn("read handle {} of {}: its session died; its reads go to the others", handle,
              read_ios_.size());
  }
  for (size_t k = 0; k < read_ios_.size(); ++k) {
    if (!read_dead_[k].load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

Status RadosStore::BlocklistReadHandleForTest(size_t handle) {
  if (handle == 0 || handle >= read_ios_.size()) {
    return Status::Internal("only a handle other than the first can be blocklisted");
  }
  OC_ASSIGN_OR_RETURN(std::string addrs, extra_clusters_[handle - 1]->Addrs());
  // A client has one address; a vector of them prints as "[a,b]": blocklist each.
  if (!addrs.empty() && addrs.front() == '[' && addrs.back() == ']') {
    addrs = addrs.substr(1, addrs.size() - 2);
  }
  size_t from = 0;
  while (from <= addrs.size()) {
    const size_t comma = std::min(addrs.find(',', from), addrs.size());
    OC_RETURN_IF_ERROR(cluster_->Blocklist(addrs.substr(from, comma - from), 3600));
    from = comma + 1;
  }
  return Status::Ok();
}

void RadosStore::AddReadHandleFigures(StoreStats& stats) const {
  stats.figures.emplace_back("rados_slice_read_retries",
                             read_retries_.load(std::memory_order_relaxed));
  uint64_t live = 0;
  for (size_t k = 0; k < read_ios_.size(); ++k) {
    live += read_dead_[k].load(std::memory_order_relaxed) ? 0 : 1;
  }
  stats.figures.emplace_back("rados_read_handles_live", live);
}

}  // namespace oc::storage
