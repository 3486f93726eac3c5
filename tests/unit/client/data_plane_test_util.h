#pragma once
// Helpers shared by the data-plane tests (data_plane_*_test.cc):
// a server UcxDataPlane and a client DataPlane connected to it in one process, restricted to
// one transport so each row is deterministic.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "data_plane/ucx_data_plane.h"
#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/storage/layer_sink.h"

namespace oc::dptest {

using client::DataPlane;
using client::DataPlaneOptions;
using storage::LayerOrdering;
using storage::LayerSink;
using storage::StagingBuffer;
using storage::UcxDataPlane;

inline constexpr std::chrono::milliseconds kWait{20'000};

// The transports both ends are restricted to, so each row is deterministic whatever the
// environment sets: UCX's "shm" alias (posix/sysv shared memory for messages, CMA for puts)
// and "tcp".
struct Transport {
  const char* name;
  const char* tls;
};
inline constexpr Transport kTransports[] = {{"shm", "shm"}, {"tcp", "tcp"}};

struct Ends {
  std::unique_ptr<UcxDataPlane> server;
  std::unique_ptr<DataPlane> client;
  descriptor::ConnectionId connection{};  // the client's, to the server
};

// Connects `client` to `server`'s listener, as liboc_client does after discovery.
inline Result<descriptor::ConnectionId> ConnectTo(DataPlane& client, const UcxDataPlane& server) {
  return client.Connect(server.listen_address(), server.shared_memory());
}

// `in_place`: the server writes targets UCX attached in its process in place (the default
// of the product); off, every byte goes through UCX, which is what most rows test.
inline storage::DataPlaneOptions ServerOptions(const Transport& t, LayerOrdering ordering,
                                               storage::WriteMode mode = storage::WriteMode::kPut,
                                               bool in_place = false) {
  storage::DataPlaneOptions o;
  o.transports = t.tls;
  o.ordering = ordering;
  o.write_mode = mode;
  o.direct_writes = in_place;
  o.staging_buffers = 4;
  o.staging_buffer_bytes = 64 << 10;
  o.op_timeout = kWait;
  return o;
}

inline Ends MakeEnds(const Transport& t, LayerOrdering ordering,
                     storage::WriteMode mode = storage::WriteMode::kPut, bool in_place = false) {
  Ends e;
  auto server = UcxDataPlane::Create(ServerOptions(t, ordering, mode, in_place));
  EXPECT_TRUE(server.has_value()) << server.error();
  if (server.has_value()) {
    e.server = std::move(*server);
  }
  DataPlaneOptions copts;
  copts.transports = t.tls;
  auto client = DataPlane::Open(copts);
  EXPECT_TRUE(client.has_value()) << client.error();
  if (client.has_value()) {
    e.client = std::move(*client);
  }
  if (e.server != nullptr && e.client != nullptr) {
    auto connection = ConnectTo(*e.client, *e.server);
    EXPECT_TRUE(connection.has_value()) << connection.error();
    if (connection.has_value()) {
      e.connection = *connection;
    } else {
      e.client.reset();
    }
  }
  return e;
}

// Writes `bytes` at `offset` of the target, one staging buffer at a time.
inline Status WriteBytes(LayerSink& sink, uint64_t offset, ByteSpan bytes) {
  while (!bytes.empty()) {
    OC_ASSIGN_OR_RETURN(StagingBuffer buffer, sink.AcquireBuffer());
    const uint64_t n = std::min<uint64_t>(bytes.size(), buffer.bytes().size());
    std::memcpy(buffer.bytes().data(), bytes.data(), n);
    OC_RETURN_IF_ERROR(sink.Write(offset, std::move(buffer), n));
    offset += n;
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

inline bool AllZero(ByteSpan bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

}  // namespace oc::dptest
