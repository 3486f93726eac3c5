#include "rpc/remote_pool.h"

#include <fmt/core.h>

namespace oc::storage::rpc {

std::string Endpoint::name() const { return fmt::format("{}:{}", address_.host, address_.port); }

Result<std::unique_ptr<ClientConn>> Endpoint::Acquire(uint64_t request_id, bool* reused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!idle_.empty()) {
      std::unique_ptr<ClientConn> c = std::move(idle_.back());
      idle_.pop_back();
      if (c->LooksAlive()) {
        *reused = true;
        return c;
      }
    }
  }
  *reused = false;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> c,
                      ClientConn::Connect(address_, kConnectTimeout));
  // The handshake is the server's to answer at once: a process that accepts and never
  // answers must not hold a caller (a starting gateway) for a whole call's timeout.
  c->set_io_timeout(kConnectTimeout);
  OC_RETURN_IF_ERROR(c->Handshake(secret_, request_id));
  c->set_io_timeout(kIoTimeout);
  return c;
}

void Endpoint::Release(std::unique_ptr<ClientConn> c) {
  if (c == nullptr || !c->healthy()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) {
    idle_.push_back(std::move(c));
  }
}

Lease& Lease::operator=(Lease&& other) {
  Return();
  endpoint_ = other.endpoint_;
  conn_ = std::move(other.conn_);
  clean_ = other.clean_;
  return *this;
}

void Lease::Return() {
  if (conn_ != nullptr && endpoint_ != nullptr && clean_) {
    endpoint_->Release(std::move(conn_));
  }
  conn_.reset();
  clean_ = false;
}

}  // namespace oc::storage::rpc
