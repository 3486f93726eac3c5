#pragma once
// UcxReceiver: the UCX implementation of oc::client::DataPlane (target_buffer.h). It owns a
// UcxWorker (ucp context + worker owned by its progress thread: oc_ucx, oc/ucx/worker.h, the
// code the server's data plane uses too), connects to storage servers' data planes (its
// endpoint to their listener, hello, welcome with the connection id), maps target buffers, and
// routes the data-plane active messages to the Delivery registered for their request key,
// whichever connection they came on. Every byte format it sends or receives is in
// oc/descriptor/data_plane_wire.h (docs/protocol.md, "Data plane").
// Thread safety: as DataPlane.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "oc/client/target_buffer.h"
#include "oc/common/thread_annotations.h"
#include "oc/ucx/owner_token.h"
#include "oc/ucx/worker.h"

namespace oc::client {

struct DeliveryState;
struct RecvOp;

// One connection to a storage server's data plane (the handshake of data_plane_wire.h).
struct ServerConnection {
  std::string address;    // as given to Connect
  ucp_ep_h ep = nullptr;  // owning thread only; null once closed
  // Guarded by UcxReceiver::conn_mu_.
  bool welcomed = false;
  bool failed = false;
  descriptor::ConnectionId id{};
  Status error;  // why it failed
};

class UcxReceiver final : public DataPlane {
 public:
  static Result<std::unique_ptr<UcxReceiver>> Create(const DataPlaneOptions& options);
  ~UcxReceiver() override;

  Result<descriptor::ConnectionId> Connect(std::string_view address,
                                           bool server_shared_memory) override;
  void Disconnect(std::string_view address, const descriptor::ConnectionId& id) override;
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
  // The server's welcome (progress thread): completes the connection it came on.
  static ucs_status_t OnWelcome(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  // UCX error handler of a connection's endpoint (progress thread).
  static void OnConnectionError(void* arg, ucp_ep_h ep, ucs_status_t status);
  // Creates the endpoint to `address` and sends the hello. REQUIRES: on the owning thread.
  Status StartConnection(ServerConnection& c, bool server_shared_memory);
  // Closes the UCX endpoints of `doomed` (force if failed) on the owning thread.
  void CloseConnections(std::vector<std::shared_ptr<ServerConnection>> doomed);

  std::unique_ptr<ucx::UcxWorker> worker_;
  std::chrono::milliseconds teardown_timeout_{5'000};
  std::chrono::milliseconds connect_timeout_{10'000};
  bool shared_memory_ = true;  // our transports allow shared memory (transports.h)
  ucx::OwnerSecret secret_{};  // sent in every hello; its token heads every Allocate
  ucx::OwnerToken owner_{};
  // Endpoint closes posted and not completed (owning thread only).
  uint64_t closes_in_flight_ = 0;
  std::mutex conn_mu_;
  std::condition_variable conn_cv_;
  // By server address; an entry is replaced once it failed.
  std::map<std::string, std::shared_ptr<ServerConnection>, std::less<>> connections_
      OC_GUARDED_BY(conn_mu_);
  std::unordered_map<ucp_ep_h, ServerConnection*> by_ep_ OC_GUARDED_BY(conn_mu_);
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
