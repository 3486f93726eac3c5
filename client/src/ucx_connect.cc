// UcxReceiver's connections to storage servers' data planes (oc/descriptor/data_plane_wire.h;
// docs/protocol.md, "Data plane: connecting"): the endpoint to a server's listener, the hello
// carrying this data plane's owner secret, the welcome carrying the connection id.

#include <fmt/core.h>

#include "oc/common/log.h"
#include "oc/descriptor/data_plane_wire.h"
#include "oc/ucx/socket_address.h"
#include "oc/ucx/transports.h"
#include "ucx_receiver.h"

namespace oc::client {
namespace {

const Logger kLog{"client.data_plane"};

using Hello = std::array<std::byte, descriptor::kHelloBytes>;

}  // namespace

Status UcxReceiver::StartConnection(ServerConnection& c, bool server_shared_memory) {
  OC_ASSIGN_OR_RETURN(const sockaddr_storage addr, ucx::ParseSocketAddress(c.address, "address"));
  const ucp_err_handling_mode_t mode =
      ucx::ErrorMode(shared_memory_, server_shared_memory,
                     ucx::IsLoopback(reinterpret_cast<const sockaddr*>(&addr)));
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  // The client id announces whether our transports allow shared memory (ErrorMode).
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = ucx::SocketAddressBytes(addr);
  params.err_mode = mode;
  params.err_handler.cb = &UcxReceiver::OnConnectionError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(worker_->worker(), &params, &ep);
  if (st != UCS_OK) {
    return Status::Unavailable(
        fmt::format("data plane at {}: ucp_ep_create: {}", c.address, ucs_status_string(st)));
  }
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    c.ep = ep;
    by_ep_[ep] = &c;
  }
  // Sent with the reply flag, so the server's handler learns the endpoint it came on.
  auto* hello = new Hello(descriptor::EncodeHello(secret_));
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  param.cb.send = [](void* request, ucs_status_t, void* user_data) {
    delete static_cast<Hello*>(user_data);
    ucp_request_free(request);
  };
  param.user_data = hello;
  ucs_status_ptr_t sp =
      ucp_am_send_nbx(ep, descriptor::kHelloAmId, hello->data(), hello->size(), nullptr, 0, &param);
  if (!UCS_PTR_IS_PTR(sp)) {
    delete hello;
    if (UCS_PTR_IS_ERR(sp)) {
      return Status::Unavailable(fmt::format("data plane at {}: hello: {}", c.address,
                                             ucs_status_string(UCS_PTR_STATUS(sp))));
    }
  }
  return Status::Ok();
}

Result<descriptor::ConnectionId> UcxReceiver::Connect(std::string_view address,
                                                      bool server_shared_memory) {
  std::shared_ptr<ServerConnection> c;
  std::vector<std::shared_ptr<ServerConnection>> doomed;
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    auto it = connections_.find(address);
    if (it != connections_.end() && it->second->failed) {
      doomed.push_back(std::move(it->second));
      connections_.erase(it);
      it = connections_.end();
    }
    if (it == connections_.end()) {
      c = std::make_shared<ServerConnection>();
      c->address = std::string(address);
      connections_.emplace(c->address, c);
      start = true;
    } else {
      c = it->second;
    }
  }
  CloseConnections(std::move(doomed));
  if (start) {
    Status started = worker_->Call([&] { return StartConnection(*c, server_shared_memory); });
    if (!started.ok()) {
      {
        std::lock_guard<std::mutex> lock(conn_mu_);
        c->failed = true;
        c->error = started;
      }
      conn_cv_.notify_all();
      return started;
    }
  }
  std::unique_lock<std::mutex> lock(conn_mu_);
  if (!conn_cv_.wait_for(lock, connect_timeout_, [&] { return c->welcomed || c->failed; })) {
    c->failed = true;
    c->error =
        Status::Unavailable(fmt::format("data plane at {} did not answer the handshake in {} ms",
                                        c->address, connect_timeout_.count()));
    auto it = connections_.find(address);
    if (it != connections_.end() && it->second == c) {
      connections_.erase(it);
    }
    lock.unlock();
    conn_cv_.notify_all();
    CloseConnections({c});
    return c->error;
  }
  if (c->failed) {
    return c->error;
  }
  return c->id;
}

void UcxReceiver::Disconnect(std::string_view address, const descriptor::ConnectionId& id) {
  std::shared_ptr<ServerConnection> c;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    auto it = connections_.find(address);
    if (it == connections_.end() || !it->second->welcomed || it->second->id != id) {
      return;
    }
    c = std::move(it->second);
    connections_.erase(it);
  }
  CloseConnections({std::move(c)});
}

void UcxReceiver::CloseConnections(std::vector<std::shared_ptr<ServerConnection>> doomed) {
  for (std::shared_ptr<ServerConnection>& c : doomed) {
    worker_->Submit([this, c = std::move(c)] {
      bool force = false;
      ucp_ep_h ep = nullptr;
      {
        std::lock_guard<std::mutex> lock(conn_mu_);
        ep = std::exchange(c->ep, nullptr);
        force = c->failed;
        by_ep_.erase(ep);
      }
      if (ep == nullptr) {
        return;
      }
      // A connection the server closed or that failed is released without a flush: a flush
      // towards a peer that is gone is what UCX logs as "error during flush: Endpoint
      // timeout" (docs/decisions/data-plane-who-connects-to-whom.md).
      ++closes_in_flight_;
      ucp_request_param_t param{};
      param.op_attr_mask =
          UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      param.cb.send = [](void* request, ucs_status_t, void* user_data) {
        --static_cast<UcxReceiver*>(user_data)->closes_in_flight_;
        ucp_request_free(request);
      };
      param.user_data = this;
      ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
      if (!UCS_PTR_IS_PTR(sp)) {
        --closes_in_flight_;
      }
    });
  }
}

ucs_status_t UcxReceiver::OnWelcome(void* arg, const void* header, size_t header_length, void*,
                                    size_t, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxReceiver*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0 || param->reply_ep == nullptr) {
    return UCS_OK;
  }
  Result<descriptor::ConnectionId> id =
      descriptor::DecodeWelcome(ByteSpan(static_cast<const std::byte*>(header), header_length));
  {
    std::lock_guard<std::mutex> lock(self->conn_mu_);
    auto it = self->by_ep_.find(param->reply_ep);
    if (it == self->by_ep_.end() || it->second->welcomed || it->second->failed) {
      return UCS_OK;
    }
    ServerConnection& c = *it->second;
    if (id.has_value()) {
      c.id = *id;
      c.welcomed = true;
    } else {
      kLog.Warn("data plane at {} sent a bad welcome: {}", c.address, id.error().ToString());
      c.failed = true;
      c.error = Status::Unavailable(fmt::format("data plane at {}: bad welcome", c.address));
    }
  }
  self->conn_cv_.notify_all();
  return UCS_OK;
}

void UcxReceiver::OnConnectionError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<UcxReceiver*>(arg);
  std::shared_ptr<ServerConnection> doomed;
  {
    std::lock_guard<std::mutex> lock(self->conn_mu_);
    auto it = self->by_ep_.find(ep);
    if (it == self->by_ep_.end()) {
      return;
    }
    ServerConnection& c = *it->second;
    if (!c.failed) {
      c.failed = true;
      c.error = Status::Unavailable(fmt::format("data-plane connection to {} failed: {}", c.address,
                                                ucs_status_string(status)));
      if (c.welcomed) {
        kLog.Info("data-plane connection to {} ended: {}", c.address, ucs_status_string(status));
      }
    }
    auto found = self->connections_.find(c.address);
    if (found != self->connections_.end() && found->second.get() == &c) {
      doomed = std::move(found->second);
      self->connections_.erase(found);
    }
  }
  self->conn_cv_.notify_all();
  if (doomed != nullptr) {
    // Closed outside this callback (an endpoint may not be closed from its own error
    // callback), by force since the peer is gone.
    self->worker_->Defer([self, doomed] { self->CloseConnections({doomed}); });
  }
}

}  // namespace oc::client
