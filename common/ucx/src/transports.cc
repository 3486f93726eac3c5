#include "oc/ucx/transports.h"

#include <cstdlib>

namespace oc::ucx {
namespace {

// True if `f` holds for any element of the comma-separated `list`.
template <typename F>
bool AnyToken(std::string_view list, F&& f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (f(list.substr(0, comma))) {
      return true;
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

}  // namespace

std::string EffectiveTransports(std::string_view configured) {
  if (!configured.empty()) {
    return std::string(configured);
  }
  const char* env = std::getenv("UCX_TLS");
  return env != nullptr ? std::string(env) : std::string();
}

bool AllowsSharedMemory(std::string_view tls) {
  if (tls.empty()) {
    return true;
  }
  auto is_shm = [](std::string_view t) {
    return t == "shm" || t == "sm" || t == "mm" || t == "sysv" || t == "posix" || t == "all";
  };
  if (tls.front() == '^') {
    return !AnyToken(tls.substr(1), is_shm);
  }
  return AnyToken(tls, is_shm);
}

std::string WithConnectionManager(std::string_view tls) {
  if (tls.empty() || tls.front() == '^' ||
      AnyToken(tls, [](std::string_view t) { return t == "tcp" || t == "all"; })) {
    return std::string(tls);
  }
  return std::string(tls) + ",tcp";
}

ucp_err_handling_mode_t ErrorMode(bool client_shared_memory, bool server_shared_memory,
                                  bool loopback) {
  return client_shared_memory && server_shared_memory && loopback ? UCP_ERR_HANDLING_MODE_NONE
                                                                  : UCP_ERR_HANDLING_MODE_PEER;
}

}  // namespace oc::ucx
