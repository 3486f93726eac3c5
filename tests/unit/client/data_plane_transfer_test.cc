// Transfers through the UCX data plane in one process (two ucp contexts and workers) over
// shared memory and over TCP loopback: the server's UcxDataPlane / UcxLayerSink
// (storage-server/src/data_plane) writing into a client DataPlane's TargetBuffer
// (client/src/ucx_receiver.cc). Every layer lands byte-exact before its notification in each
// ordering and write mode; a server error and a short Finish reach the client's waits;
// ReadRemote pulls the client's bytes; Expect keys requests. Real UCX, no mocks; every wait is
// bounded (kWait), so a broken transfer fails the test instead of hanging it.

#include <cstring>
#include <mutex>
#include <string>
#include <utility>
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
using client::TargetBuffer;
using storage::LayerOrdering;
using testutil::PatternBytes;

using dptest::Ends;
using dptest::kTransports;
using dptest::kWait;
using dptest::MakeEnds;
using dptest::Transport;
using dptest::WriteBytes;

TEST(DataPlane, LayersLandByteExactInOrderAndBeforeTheirNotification) {
  constexpr uint32_t kLayers = 6;
  constexpr uint64_t kLayerBytes = 150'001;  // odd, and more than two staging buffers
  struct Mode {
    LayerOrdering ordering;
    storage::WriteMode write;
    bool in_place;
    const char* name;
  };
  constexpr Mode kModes[] = {
      {LayerOrdering::kFlush, storage::WriteMode::kPut, false, "put/flush"},
      {LayerOrdering::kFence, storage::WriteMode::kPut, false, "put/fence"},
      {LayerOrdering::kFlush, storage::WriteMode::kRendezvous, false, "rndv"},
      {LayerOrdering::kFlush, storage::WriteMode::kRendezvous, true, "in-place"}};
  for (const Transport& t : kTransports) {
    for (const Mode& mode : kModes) {
      SCOPED_TRACE(std::string(t.name) + "/" + mode.name);
      Ends e = MakeEnds(t, mode.ordering, mode.write, mode.in_place);
      ASSERT_TRUE(e.server && e.client);
      auto buffer = e.client->Allocate(kLayers * kLayerBytes);
      ASSERT_TRUE(buffer.has_value()) << buffer.error();
      TargetBuffer& target = **buffer;

      // The callback checks the layer's bytes when its notification arrives: a layer-ready
      // that overtook its bytes shows up as a mismatch.
      std::mutex mu;
      std::vector<uint32_t> order;
      std::vector<uint32_t> early;  // layers whose bytes were not all there yet
      auto on_layer = [&](uint32_t l) {
        const std::vector<std::byte> want = PatternBytes(l, kLayerBytes);
        const bool landed =
            std::memcmp(target.bytes().data() + l * kLayerBytes, want.data(), kLayerBytes) == 0;
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(l);
        if (!landed) {
          early.push_back(l);
        }
      };
      auto delivery = e.client->Expect(target.address(), kLayers, on_layer);
      ASSERT_TRUE(delivery.has_value()) << delivery.error();

      auto sink = e.server->OpenSink(target.Target(e.connection));
      ASSERT_TRUE(sink.has_value()) << sink.error();
      // Only a shared-memory target UCX allocated (System V) is written in place.
      EXPECT_EQ((*sink)->writes_in_place(), mode.in_place && std::string(t.name) == "shm");
      for (uint32_t l = 0; l < kLayers; ++l) {
        const std::vector<std::byte> bytes = PatternBytes(l, kLayerBytes);
        ASSERT_TRUE(WriteBytes(**sink, l * kLayerBytes, bytes).ok());
        ASSERT_TRUE((*sink)->LayerReady(l).ok());
      }
      EXPECT_TRUE((*sink)->Finish(Status::Ok()).ok());

      ASSERT_TRUE((*delivery)->Wait(kWait).ok());
      for (uint32_t l = 0; l < kLayers; ++l) {
        EXPECT_TRUE((*delivery)->WaitLayer(l, kWait).ok()) << l;
      }
      EXPECT_EQ((*delivery)->layers_ready(), kLayers);
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
      EXPECT_TRUE(early.empty()) << "layer " << early.front() << " notified before its bytes";
      for (uint32_t l = 0; l < kLayers; ++l) {
        const std::vector<std::byte> want = PatternBytes(l, kLayerBytes);
        EXPECT_EQ(std::memcmp(target.bytes().data() + l * kLayerBytes, want.data(), kLayerBytes), 0)
            << "layer " << l;
      }
      EXPECT_EQ(e.server->staging().free_count(), e.server->staging().count());
    }
  }
}

TEST(DataPlane, ServerErrorReachesTheClientWithItsCodeAndMessage) {
  for (const Transport& t : kTransports) {
    SCOPED_TRACE(t.name);
    Ends e = MakeEnds(t, LayerOrdering::kFlush);
    ASSERT_TRUE(e.server && e.client);
    auto buffer = e.client->Allocate(2 * 4096);
    ASSERT_TRUE(buffer.has_value());
    auto delivery = e.client->Expect((*buffer)->address(), 2);
    ASSERT_TRUE(delivery.has_value());
    auto sink = e.server->OpenSink((*buffer)->Target(e.connection));
    ASSERT_TRUE(sink.has_value()) << sink.error();
    ASSERT_TRUE(WriteBytes(**sink, 0, PatternBytes(0, 4096)).ok());
    ASSERT_TRUE((*sink)->LayerReady(0).ok());
    const Status failure = Status::NotFound(Subject::kKey, "chunk 3 is missing");
    EXPECT_EQ((*sink)->Finish(failure).code(), Code::kNotFound);

    EXPECT_TRUE((*delivery)->WaitLayer(0, kWait).ok());
    Status layer1 = (*delivery)->WaitLayer(1, kWait);
    EXPECT_EQ(layer1.code(), Code::kNotFound) << layer1;
    Status all = (*delivery)->Wait(kWait);
    EXPECT_EQ(all.code(), Code::kNotFound);
    EXPECT_EQ(all.message(), "chunk 3 is missing");
  }
}

TEST(DataPlane, FinishWithFewerLayersLeavesTheRestOutOfRange) {
  const Transport& t = kTransports[0];
  Ends e = MakeEnds(t, LayerOrdering::kFlush);
  ASSERT_TRUE(e.server && e.client);
  auto buffer = e.client->Allocate(3 * 4096);
  ASSERT_TRUE(buffer.has_value());
  auto delivery = e.client->Expect((*buffer)->address(), 3);
  ASSERT_TRUE(delivery.has_value());
  auto sink = e.server->OpenSink((*buffer)->Target(e.connection));
  ASSERT_TRUE(sink.has_value());
  ASSERT_TRUE(WriteBytes(**sink, 0, PatternBytes(0, 4096)).ok());
  ASSERT_TRUE((*sink)->LayerReady(0).ok());
  ASSERT_TRUE((*sink)->Finish(Status::Ok()).ok());
  EXPECT_TRUE((*delivery)->Wait(kWait).ok());
  EXPECT_TRUE((*delivery)->WaitLayer(0, kWait).ok());
  EXPECT_EQ((*delivery)->WaitLayer(2, kWait).code(), Code::kOutOfRange);
  EXPECT_EQ((*delivery)->WaitLayer(3, kWait).code(), Code::kOutOfRange);
}

TEST(DataPlane, ReadRemotePullsTheClientsBytes) {
  for (const auto& [t, in_place] :
       {std::pair{kTransports[0], false}, std::pair{kTransports[1], false},
        std::pair{kTransports[0], true}}) {
    SCOPED_TRACE(std::string(t.name) + (in_place ? "/in-place" : ""));
    Ends e = MakeEnds(t, LayerOrdering::kFlush, storage::WriteMode::kPut, in_place);
    ASSERT_TRUE(e.server && e.client);
    constexpr uint64_t kBytes = 50'000;
    auto buffer = e.client->Allocate(kBytes);
    ASSERT_TRUE(buffer.has_value());
    const std::vector<std::byte> source = PatternBytes(42, kBytes);
    std::memcpy((*buffer)->bytes().data(), source.data(), kBytes);

    auto staging = e.server->AcquireStaging();
    ASSERT_TRUE(staging.has_value());
    ASSERT_TRUE(e.server->ReadRemote((*buffer)->Target(e.connection), 1000, *staging, 40'000).ok());
    EXPECT_EQ(std::memcmp(staging->bytes().data(), source.data() + 1000, 40'000), 0);

    EXPECT_EQ(
        e.server->ReadRemote((*buffer)->Target(e.connection), 20'000, *staging, 40'000).code(),
        Code::kOutOfRange);
    EXPECT_EQ(e.server->ReadRemote((*buffer)->Target(e.connection), 0, *staging, 0).code(),
              Code::kOutOfRange);
  }
}

TEST(DataPlane, ExpectRefusesADuplicateRequestKey) {
  DataPlaneOptions copts;
  copts.transports = "shm,tcp";
  auto client = DataPlane::Open(copts);
  ASSERT_TRUE(client.has_value());
  auto first = (*client)->Expect(0x1000, 4);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*client)->Expect(0x1000, 4).error().code(), Code::kAlreadyExists);
  EXPECT_EQ((*client)->Expect(0x2000, 0).error().code(), Code::kInvalidArgument);
  first->reset();
  EXPECT_TRUE((*client)->Expect(0x1000, 4).has_value());
}

}  // namespace
}  // namespace oc
