#pragma once
// UcxReceiver: the UCX implementation of oc::client::DataPlane (target_buffer.h). It owns a
// UcxWorker (ucp context + worker owned by its progress thread, shared code with the server
// in storage-server/src/data_plane/ucx_core.h), maps target buffers, and routes the
// data-plane active messages (wire format in ucx_core.h, docs/protocol.md "Data plane") to
// the Delivery registered for their request key.
// Thread safety: as DataPlane.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "oc/client/target_buffer.h"
#include "oc/common/thread_annotations.h"
#include "ucx_core.h"

namespace oc::client {

struct DeliveryState;
struct RecvOp;

class UcxReceiver final : public DataPlane {
 public:
  static Result<std::unique_ptr<UcxReceiver>> Create(const DataPlaneOptions& options);
  ~UcxReceiver() override;

  ByteSpan worker_address() const override { return worker_->address(); }
  Result<std::unique_ptr<TargetBuffer>> Allocate(uint64_t length) override;
  Result<std::unique_ptr<TargetBuffer>> Wrap(MutableByteSpan memory) override;
  Result<std::unique_ptr<Delivery>> Expect(uint64_t target_address, uint32_t num_layers,
                                           LayerCallback on_layer) override;

  // Drops the registration of `key` if it is still `state` (Delivery's destructor).
  void Forget(uint64_t key, const DeliveryState* state);
  // The mapped buffers, for bounds-checking rendezvous writes (TargetBuffer lifetime).
  void AddMapped(uint64_t address, uint64_t length);
  void RemoveMapped(uint64_t address);
  // Progresses the worker until no rendezvous receive into [address, address + length) is
  // in flight, up to the teardown timeout; false if some still are. Runs on the owning
  // thread (inside UcxWorker::Call), never from inside a UCX callback.
  bool DrainReceives(uint64_t address, uint64_t length);

 private:
  UcxReceiver() = default;
  // Active-message handler (progress thread).
  static ucs_status_t OnMessage(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  void Handle(ByteSpan header, ByteSpan data);
  // Rendezvous layer bytes (progress thread): received straight into the target.
  static ucs_status_t OnData(void* arg, const void* header, size_t header_length, void* data,
                             size_t length, const ucp_am_recv_param_t* param);
  // True if [address, address + length) lies inside one mapped buffer.
  bool InsideMapped(uint64_t address, uint64_t length);
  static void OnReceived(void* request, ucs_status_t status, size_t length, void* user_data);

  std::unique_ptr<data_plane::UcxWorker> worker_;
  std::chrono::milliseconds teardown_timeout_{5'000};
  // Owning thread only: set when teardown starts; rendezvous data arriving later is refused
  // (UCX answers the sender with an error instead of fetching the bytes).
  bool closing_ = false;
  // Owning thread only: rendezvous receives started and not completed.
  std::unordered_set<RecvOp*> receiving_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<DeliveryState>> deliveries_ OC_GUARDED_BY(mu_);
  std::map<uint64_t, uint64_t> mapped_ OC_GUARDED_BY(mu_);  // address -> length
};

}  // namespace oc::client
