#pragma once
// RpcServer::Impl (oc/storage/rpc_server.h): the state one RpcServer shares with its
// connections (server_connection.h). Private to oc_storage_rpc_server: server_lifecycle.cc
// accepts and shuts down, the connections count calls and bytes here.
//
// Thread safety: the counters are atomics; `connections` and `stopping_locked` are guarded
// by mu; the acceptor and the signal set are used only on the `control` strand.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "oc/common/thread_annotations.h"
#include "oc/storage/rpc_server.h"
#include "oc/storage/store.h"

namespace oc::storage::rpc {

class Connection;

struct RpcServer::Impl {
  Impl(Store* s, RpcServerOptions o, std::string sec)
      : store(s),
        options(std::move(o)),
        secret(std::move(sec)),
        store_pool(RpcStoreThreadsFor(options.store_threads)),
        control(boost::asio::make_strand(io)),
        acceptor(control),
        signals(control) {}

  boost::asio::awaitable<void> Accept();
  void BeginShutdown();
  bool Register(const std::shared_ptr<Connection>& c);
  void Unregister(const std::shared_ptr<Connection>& c);
  bool stopping() const { return stopping_flag.load(std::memory_order_acquire); }
  void NotePeak(uint64_t bytes) {
    uint64_t prev = peak_connection_bytes.load(std::memory_order_relaxed);
    while (bytes > prev && !peak_connection_bytes.compare_exchange_weak(prev, bytes)) {
    }
  }

  Store* store;
  const RpcServerOptions options;
  const std::string secret;
  boost::asio::io_context io;
  boost::asio::thread_pool store_pool;
  // The acceptor and the signal set live on this strand.
  boost::asio::strand<boost::asio::io_context::executor_type> control;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::signal_set signals;
  std::string host;
  uint16_t port = 0;
  std::vector<std::thread> io_threads;

  std::mutex mu;
  std::set<std::shared_ptr<Connection>> connections OC_GUARDED_BY(mu);
  bool stopping_locked OC_GUARDED_BY(mu) = false;
  std::once_flag joined;
  std::atomic<bool> stopping_flag{false};
  std::atomic<uint64_t> next_connection_id{1};
  std::atomic<uint64_t> connections_active{0};
  std::atomic<uint64_t> connections_total{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> peak_connection_bytes{0};
  // Descriptor calls: how many, and the bytes this server moved itself — into data-plane
  // targets with its own UCX data plane (writes = the sink's put count), pulled from them,
  // or streamed in frames to and from the caller.
  std::atomic<uint64_t> kv_probes{0};
  std::atomic<uint64_t> kv_gets{0};
  std::atomic<uint64_t> kv_get_target_bytes{0};
  std::atomic<uint64_t> kv_get_target_writes{0};
  std::atomic<uint64_t> kv_get_stream_bytes{0};
  std::atomic<uint64_t> kv_puts{0};
  std::atomic<uint64_t> kv_put_pulled_bytes{0};
  std::atomic<uint64_t> kv_put_stream_bytes{0};

  std::vector<std::pair<std::string, uint64_t>> Figures() const {
    return {{"rpc_connections_active", connections_active.load()},
            {"rpc_connections_total", connections_total.load()},
            {"rpc_protocol_errors", protocol_errors.load()},
            {"rpc_peak_connection_bytes", peak_connection_bytes.load()},
            {"rpc_kv_probes", kv_probes.load()},
            {"rpc_kv_gets", kv_gets.load()},
            {"rpc_kv_get_target_bytes", kv_get_target_bytes.load()},
            {"rpc_kv_get_target_writes", kv_get_target_writes.load()},
            {"rpc_kv_get_stream_bytes", kv_get_stream_bytes.load()},
            {"rpc_kv_puts", kv_puts.load()},
            {"rpc_kv_put_pulled_bytes", kv_put_pulled_bytes.load()},
            {"rpc_kv_put_stream_bytes", kv_put_stream_bytes.load()}};
  }
};

}  // namespace oc::storage::rpc
