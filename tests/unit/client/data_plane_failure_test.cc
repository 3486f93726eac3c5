// Clients that go away: a target of a client that has shut down gives an error, not a hang,
// and a client process (the data_plane_peer helper, tests/unit/client/data_plane_peer.cc)
// killed mid-transfer is dropped, its staging buffers come back and the next client is served
// in full, over shared memory and TCP in each write mode. Every wait is bounded (kWait).

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "data_plane/ucx_data_plane.h"
#include "data_plane_test_util.h"
#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/storage/layer_sink.h"
#include "oc/testutil/testutil.h"

namespace oc {
namespace {

using client::DataPlane;
using client::DataPlaneOptions;
using descriptor::DataPlaneTarget;
using storage::LayerOrdering;
using storage::UcxDataPlane;
using testutil::PatternBytes;

using dptest::ConnectTo;
using dptest::Ends;
using dptest::kTransports;
using dptest::kWait;
using dptest::MakeEnds;
using dptest::ServerOptions;
using dptest::Transport;
using dptest::WriteBytes;

TEST(DataPlane, ClientThatIsGoneGivesAnErrorNotAHang) {
  for (const Transport& t : kTransports) {
    SCOPED_TRACE(t.name);
    Ends e = MakeEnds(t, LayerOrdering::kFlush);
    ASSERT_TRUE(e.server && e.client);
    // A well-formed target of a client that has shut down: its connection and memory are gone.
    DataPlaneTarget stale;
    {
      DataPlaneOptions copts;
      copts.transports = t.tls;
      auto gone = DataPlane::Open(copts);
      ASSERT_TRUE(gone.has_value());
      auto connection = ConnectTo(**gone, *e.server);
      ASSERT_TRUE(connection.has_value()) << connection.error();
      auto buffer = (*gone)->Allocate(64 << 10);
      ASSERT_TRUE(buffer.has_value());
      stale = (*buffer)->Target(*connection);
    }
    auto sink = e.server->OpenSink(stale);
    if (!sink.has_value()) {
      EXPECT_NE(sink.error().code(), Code::kOk);
      continue;  // refused at connect: a clean error
    }
    // Accepted at connect (UCX connects lazily): the transfer must fail, not hang.
    Status s = WriteBytes(**sink, 0, PatternBytes(1, 64 << 10));
    if (s.ok()) {
      s = (*sink)->LayerReady(0);
    }
    Status finished = (*sink)->Finish(Status::Ok());
    EXPECT_FALSE(s.ok() && finished.ok()) << "a transfer to a vanished client succeeded";
  }
}

// --------------------------------------------------------------------------------------
// Across processes.

// Waits until `path` exists; false after kWait.
bool WaitForFile(const std::filesystem::path& path) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

DataPlaneTarget ReadTarget(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string connection, rkey;
  DataPlaneTarget t;
  in >> connection >> rkey >> t.address >> t.length;
  const std::vector<std::byte> id = HexDecode(connection).value_or(std::vector<std::byte>{});
  if (id.size() == t.connection.size()) {
    std::copy(id.begin(), id.end(), t.connection.begin());
  }
  t.rkey = HexDecode(rkey).value_or(std::vector<std::byte>{});
  return t;
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(DataPlane, ClientThatDiesMidTransferIsDroppedAndTheNextClientIsServed) {
  constexpr uint32_t kLayers = 16;
  constexpr uint64_t kLayerBytes = 256 << 10;
  struct Row {
    Transport t;
    storage::WriteMode write;
    bool in_place;
    const char* name;
  };
  for (const Row& row : {Row{kTransports[0], storage::WriteMode::kPut, false, "shm/put"},
                         Row{kTransports[0], storage::WriteMode::kRendezvous, false, "shm/rndv"},
                         Row{kTransports[0], storage::WriteMode::kRendezvous, true, "shm/in-place"},
                         Row{kTransports[1], storage::WriteMode::kPut, false, "tcp/put"},
                         Row{kTransports[1], storage::WriteMode::kRendezvous, false, "tcp/rndv"}}) {
    {
      // shm: no UCX peer error handling, so the stalled writes (in place: the notifications)
      // time out; tcp: UCX's keepalive.
      const Transport& t = row.t;
      SCOPED_TRACE(row.name);
      storage::DataPlaneOptions options =
          ServerOptions(t, LayerOrdering::kFlush, row.write, row.in_place);
      options.keepalive_interval = "200ms";
      options.op_timeout = std::chrono::milliseconds(2000);  // how long a stalled write may take
      auto server = UcxDataPlane::Create(options);
      ASSERT_TRUE(server.has_value()) << server.error();
      const std::vector<std::string> args = {std::to_string(kLayers), std::to_string(kLayerBytes),
                                             (*server)->listen_address(),
                                             (*server)->shared_memory() ? "1" : "0"};

      // 1. A client that is killed after layer 0 has landed.
      {
        testutil::TempDir dir;
        testutil::ChildProcess peer(OC_DATA_PLANE_PEER, {dir.path().string(), t.tls, args[0],
                                                         args[1], "die", args[2], args[3]});
        ASSERT_TRUE(WaitForFile(dir.path() / "target")) << ReadText(dir.path() / "failed");
        const DataPlaneTarget target = ReadTarget(dir.path() / "target");
        auto sink = (*server)->OpenSink(target);
        ASSERT_TRUE(sink.has_value()) << sink.error();
        EXPECT_EQ((*sink)->writes_in_place(), row.in_place);
        ASSERT_TRUE(WriteBytes(**sink, 0, PatternBytes(0, kLayerBytes)).ok());
        ASSERT_TRUE((*sink)->LayerReady(0).ok());
        ASSERT_TRUE(WaitForFile(dir.path() / "layer0")) << ReadText(dir.path() / "failed");
        peer.Stop(SIGKILL);

        // Keep writing into the dead client until the data plane notices (a failed put, flush
        // or keepalive); every step is bounded by the sink's timeout.
        Status s;
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        for (uint32_t l = 1; s.ok() && std::chrono::steady_clock::now() < deadline; ++l) {
          s = WriteBytes(**sink, (l % kLayers) * kLayerBytes, PatternBytes(l, kLayerBytes));
          if (s.ok()) {
            s = (*sink)->LayerReady(l % kLayers);
          }
        }
        EXPECT_FALSE(s.ok()) << "writes into a dead client kept succeeding";
        EXPECT_FALSE((*sink)->Finish(Status::Ok()).ok());
        // The endpoint was dropped from the cache.
        EXPECT_GE((*server)->endpoints().failures(), 1u);
        EXPECT_EQ((*server)->endpoints().size(), 0u);
      }
      // Every staging buffer comes back (the stuck puts complete as cancelled).
      const auto deadline = std::chrono::steady_clock::now() + kWait;
      while ((*server)->staging().free_count() != (*server)->staging().count() &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_EQ((*server)->staging().free_count(), (*server)->staging().count());

      // 2. A new client is served in full.
      {
        testutil::TempDir dir;
        testutil::ChildProcess peer(OC_DATA_PLANE_PEER, {dir.path().string(), t.tls, args[0],
                                                         args[1], "verify", args[2], args[3]});
        ASSERT_TRUE(WaitForFile(dir.path() / "target")) << ReadText(dir.path() / "failed");
        auto sink = (*server)->OpenSink(ReadTarget(dir.path() / "target"));
        ASSERT_TRUE(sink.has_value()) << sink.error();
        for (uint32_t l = 0; l < kLayers; ++l) {
          ASSERT_TRUE(WriteBytes(**sink, l * kLayerBytes, PatternBytes(l, kLayerBytes)).ok());
          ASSERT_TRUE((*sink)->LayerReady(l).ok());
        }
        EXPECT_TRUE((*sink)->Finish(Status::Ok()).ok());
        EXPECT_TRUE(WaitForFile(dir.path() / "ok")) << ReadText(dir.path() / "failed");
        peer.Stop(SIGTERM);
      }
    }
  }
}

}  // namespace
}  // namespace oc
