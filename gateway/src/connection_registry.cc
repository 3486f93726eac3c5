#include "connection_registry.h"

#include <boost/asio/post.hpp>

namespace oc::gateway {

namespace asio = boost::asio;

void ConnectionRegistry::Add(uint64_t id, SessionBase* session, asio::io_context* ioc) {
  std::lock_guard lock(mu_);
  sessions_[id] = Entry{session, ioc};
}

void ConnectionRegistry::Remove(uint64_t id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

void ConnectionRegistry::PostCloseIfIdle(uint64_t id, asio::io_context& ioc) {
  asio::post(ioc, [this, id] {
    SessionBase* session = nullptr;
    {
      std::lock_guard inner(mu_);
      auto it = sessions_.find(id);
      if (it != sessions_.end()) {
        session = it->second.session;
      }
    }
    // Same thread as the session: it cannot be destroyed between the lookup and the call.
    if (session != nullptr && !session->CloseIfIdle()) {
      // It began a request meanwhile: it may be picked again once it waits for another.
      std::lock_guard inner(mu_);
      auto it = sessions_.find(id);
      if (it != sessions_.end()) {
        it->second.shed = false;
      }
    }
  });
}

void ConnectionRegistry::PostClose(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) {
    PostCloseNow(id, *it->second.ioc);
  }
}

void ConnectionRegistry::PostCloseNow(uint64_t id, asio::io_context& ioc) {
  asio::post(ioc, [this, id] {
    SessionBase* session = nullptr;
    {
      std::lock_guard inner(mu_);
      auto found = sessions_.find(id);
      if (found != sessions_.end()) {
        session = found->second.session;
      }
    }
    // Same thread as the session: it cannot be destroyed between the lookup and the call.
    if (session != nullptr) {
      session->CloseNow();
    }
  });
}

void ConnectionRegistry::CloseIdle() {
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : sessions_) {
    PostCloseIfIdle(id, *entry.ioc);
  }
}

void ConnectionRegistry::CloseAll() {
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : sessions_) {
    PostCloseNow(id, *entry.ioc);
  }
}

bool ConnectionRegistry::ShedOne() {
  std::lock_guard lock(mu_);
  // One pass, oldest first: the first kFresh wins at once; otherwise the first kHeader, then
  // the first kWaiting. A session reads its state under no lock, but it cannot be destroyed
  // while we hold mu_ (its destructor calls Remove first).
  Entry* header = nullptr;
  uint64_t header_id = 0;
  Entry* waiting = nullptr;
  uint64_t waiting_id = 0;
  for (auto& [id, entry] : sessions_) {
    if (entry.shed) {
      continue;
    }
    const ConnectionState state = entry.session->state();
    if (state == ConnectionState::kFresh) {
      entry.shed = true;
      PostCloseIfIdle(id, *entry.ioc);
      return true;
    }
    if (state == ConnectionState::kHeader && header == nullptr) {
      header = &entry;
      header_id = id;
    } else if (state == ConnectionState::kWaiting && waiting == nullptr) {
      waiting = &entry;
      waiting_id = id;
    }
  }
  Entry* victim = header != nullptr ? header : waiting;
  if (victim == nullptr) {
    return false;
  }
  victim->shed = true;
  PostCloseIfIdle(header != nullptr ? header_id : waiting_id, *victim->ioc);
  return true;
}

}  // namespace oc::gateway
