// The UCX data plane end to end, real UCX, no mocks: the server's UcxDataPlane / UcxLayerSink
// (storage-server/src/data_plane) writing into a client DataPlane's TargetBuffer
// (client/src/ucx_receiver.cc). In one process (two ucp contexts and workers) over shared
// memory and over TCP loopback, and across processes with the data_plane_peer helper.
// Every wait is bounded (kWait), so a broken transfer fails the test instead of hanging it.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
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
using client::Delivery;
using client::TargetBuffer;
using descriptor::DataPlaneTarget;
using storage::LayerOrdering;
using storage::LayerSink;
using storage::StagingBuffer;
using storage::UcxDataPlane;
using testutil::PatternBytes;

using dptest::AllZero;
using dptest::ConnectTo;
using dptest::Ends;
using dptest::kTransports;
using dptest::kWait;
using dptest::MakeEnds;
using dptest::ServerOptions;
using dptest::Transport;
using dptest::WriteBytes;

// --------------------------------------------------------------------------------------
// In one process.

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

TEST(DataPlane, WritesOutsideTheTargetAreRefusedBeforeAnyPut) {
  constexpr uint64_t kGuard = 4096;
  constexpr uint64_t kTargetBytes = 1000;
  for (const auto& [t, write] : {std::pair{kTransports[0], storage::WriteMode::kPut},
                                 std::pair{kTransports[1], storage::WriteMode::kPut},
                                 std::pair{kTransports[0], storage::WriteMode::kRendezvous}}) {
    SCOPED_TRACE(std::string(t.name) + (write == storage::WriteMode::kPut ? "/put" : "/rndv"));
    Ends e = MakeEnds(t, LayerOrdering::kFlush, write);
    ASSERT_TRUE(e.server && e.client);
    // The target is a window in the middle of a mapped buffer: guard bytes either side
    // are reachable through the rkey, so only the sink's check keeps them untouched.
    auto buffer = e.client->Allocate(kGuard + kTargetBytes + kGuard);
    ASSERT_TRUE(buffer.has_value()) << buffer.error();
    auto target = (*buffer)->Target(e.connection, kGuard, kTargetBytes);
    ASSERT_TRUE(target.has_value());
    auto sink = e.server->OpenSink(*target);
    ASSERT_TRUE(sink.has_value()) << sink.error();

    struct Row {
      const char* what;
      uint64_t offset;
      uint64_t length;
    };
    for (const Row& row :
         {Row{"tail past the end", 900, 101}, Row{"at the end", 1000, 1},
          Row{"offset past the end", 5000, 10}, Row{"offset + length wraps", ~0ull - 4, 10}}) {
      SCOPED_TRACE(row.what);
      auto staging = (*sink)->AcquireBuffer();
      ASSERT_TRUE(staging.has_value());
      std::memset(staging->bytes().data(), 0xAB, staging->bytes().size());
      Status s = (*sink)->Write(row.offset, std::move(*staging), row.length);
      EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
    }
    // A write of more bytes than the buffer holds is refused too.
    {
      auto staging = (*sink)->AcquireBuffer();
      ASSERT_TRUE(staging.has_value());
      const uint64_t too_many = staging->bytes().size() + 1;
      EXPECT_EQ((*sink)->Write(0, std::move(*staging), too_many).code(), Code::kInvalidArgument);
    }
    // Refused writes gave their buffers back, and the request still completes.
    EXPECT_EQ(e.server->staging().free_count(), e.server->staging().count());
    auto delivery = e.client->Expect(target->address, 1);
    ASSERT_TRUE(delivery.has_value());
    const std::vector<std::byte> last = PatternBytes(7, 100);
    ASSERT_TRUE(WriteBytes(**sink, kTargetBytes - 100, last).ok());
    ASSERT_TRUE((*sink)->LayerReady(0).ok());
    ASSERT_TRUE((*sink)->Finish(Status::Ok()).ok());
    ASSERT_TRUE((*delivery)->Wait(kWait).ok());

    const ByteSpan all = (*buffer)->bytes();
    EXPECT_TRUE(AllZero(all.subspan(0, kGuard))) << "bytes before the target were written";
    EXPECT_TRUE(AllZero(all.subspan(kGuard + kTargetBytes))) << "bytes after it were written";
    EXPECT_TRUE(AllZero(all.subspan(kGuard, kTargetBytes - 100)));
    EXPECT_EQ(std::memcmp(all.data() + kGuard + kTargetBytes - 100, last.data(), 100), 0);
  }
}

// This process's System V shared-memory mappings (/proc/self/maps: a mapping named /SYSV<key>
// has the segment id as its inode).
struct SysvMapping {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  long id = -1;
};
std::vector<SysvMapping> SysvMappings() {
  std::vector<SysvMapping> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    SysvMapping m;
    if (line.find("/SYSV") != std::string::npos &&
        std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %ld", &m.lo, &m.hi,
                    &m.id) == 3) {
      out.push_back(m);
    }
  }
  return out;
}
// The segment mapped at `address`, -1 if none.
long SysvSegmentAt(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (const SysvMapping& m : SysvMappings()) {
    if (at >= m.lo && at < m.hi) {
      return m.id;
    }
  }
  return -1;
}
// True if segment `id` is mapped anywhere in this process.
bool SysvSegmentMapped(long id) {
  const std::vector<SysvMapping> all = SysvMappings();
  return std::any_of(all.begin(), all.end(), [&](const SysvMapping& m) { return m.id == id; });
}

TEST(DataPlane, InPlaceTargetsAreBoundedByTheClientsSegmentAndReusedAcrossRequests) {
  Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, storage::WriteMode::kRendezvous,
                    /*in_place=*/true);
  ASSERT_TRUE(e.server && e.client);
  constexpr uint64_t kBytes = 1 << 20;
  auto buffer = e.client->Allocate(kBytes);
  ASSERT_TRUE(buffer.has_value()) << buffer.error();
  // A length past the client's segment: the server does not take the client's word for it.
  DataPlaneTarget too_long = (*buffer)->Target(e.connection);
  too_long.length = kBytes + (64 << 20);
  auto refused = e.server->OpenSink(too_long);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(refused.error().field(), "x-oc-target-length") << refused.error();

  // Two requests into windows of the same buffer (the second finds the segment attached),
  // each byte-exact, nothing outside its window written.
  for (uint64_t offset : {uint64_t{4096}, uint64_t{300'000}}) {
    SCOPED_TRACE(offset);
    auto target = (*buffer)->Target(e.connection, offset, 100'000);
    ASSERT_TRUE(target.has_value());
    auto delivery = e.client->Expect(target->address, 1);
    ASSERT_TRUE(delivery.has_value());
    auto sink = e.server->OpenSink(*target);
    ASSERT_TRUE(sink.has_value()) << sink.error();
    EXPECT_TRUE((*sink)->writes_in_place());
    EXPECT_EQ((*sink)->Write(99'999, std::move(*(*sink)->AcquireBuffer()), 2).code(),
              Code::kOutOfRange);
    const std::vector<std::byte> bytes = PatternBytes(offset, 100'000);
    ASSERT_TRUE(WriteBytes(**sink, 0, bytes).ok());
    ASSERT_TRUE((*sink)->LayerReady(0).ok());
    ASSERT_TRUE((*sink)->Finish(Status::Ok()).ok());
    ASSERT_TRUE((*delivery)->Wait(kWait).ok());
    EXPECT_EQ(std::memcmp((*buffer)->bytes().data() + offset, bytes.data(), bytes.size()), 0);
  }
  const ByteSpan all = (*buffer)->bytes();
  EXPECT_TRUE(AllZero(all.subspan(0, 4096)));
  EXPECT_TRUE(AllZero(all.subspan(104'096, 300'000 - 104'096)));
  EXPECT_TRUE(AllZero(all.subspan(400'000)));

  // Another client naming this buffer's rkey with its own connection is refused: the
  // segment's owner page names this client's data plane (StolenRkeyIsRefusedInEveryWriteMode).
  {
    DataPlaneOptions copts;
    copts.transports = "shm";
    auto other = DataPlane::Open(copts);
    ASSERT_TRUE(other.has_value()) << other.error();
    auto other_connection = ConnectTo(**other, *e.server);
    ASSERT_TRUE(other_connection.has_value()) << other_connection.error();
    DataPlaneTarget stolen = (*buffer)->Target(*other_connection);
    auto sink = e.server->OpenSink(stolen);
    ASSERT_FALSE(sink.has_value());
    EXPECT_EQ(sink.error().code(), Code::kPermissionDenied);
    EXPECT_EQ(sink.error().field(), "x-oc-target-rkey");
  }

  // A buffer the client frees is let go by the server at its next request (it keeps the
  // attachments of buffers in use only): the segment is mapped nowhere here any more.
  {
    const long freed = SysvSegmentAt((*buffer)->bytes().data());
    ASSERT_GE(freed, 0) << "the target is not in System V shared memory";
    buffer->reset();
    auto next = e.client->Allocate(4096);
    ASSERT_TRUE(next.has_value());
    {
      auto sink = e.server->OpenSink((*next)->Target(e.connection));
      ASSERT_TRUE(sink.has_value()) << sink.error();
      EXPECT_TRUE((*sink)->writes_in_place());
      EXPECT_EQ((*sink)->Finish(Status::Cancelled("not needed")).code(), Code::kCancelled);
    }  // the request is over: only the server's cache of attachments holds `next` now
    EXPECT_FALSE(SysvSegmentMapped(freed));

    // And with no next request: an idle server lets it go too (a sweep every second).
    const long idle = SysvSegmentAt((*next)->bytes().data());
    ASSERT_GE(idle, 0);
    next->reset();
    auto still_mapped = [&] { return SysvSegmentMapped(idle); };
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (still_mapped() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_FALSE(still_mapped()) << "the server kept a freed buffer attached while idle";
  }

  // Caller memory the client only registered is not shared: it goes over UCX.
  std::vector<std::byte> own(4096);
  auto wrapped = e.client->Wrap(MutableByteSpan(own));
  ASSERT_TRUE(wrapped.has_value());
  auto sink = e.server->OpenSink((*wrapped)->Target(e.connection));
  ASSERT_TRUE(sink.has_value()) << sink.error();
  EXPECT_FALSE((*sink)->writes_in_place());
  EXPECT_TRUE((*sink)->Finish(Status::Cancelled("not needed")).code() == Code::kCancelled);
}

// A client that sends another client's rkey (System V shared memory on this host) with its
// own connection gets nothing written into, or read out of, the other client's memory,
// whatever the write mode: UCX attaches the segment here while unpacking the rkey, so its own
// puts (WriteMode::kPut) and gets would reach that memory as plain copies. Before, only writes
// in place checked the owner page, and a kPut went through.
TEST(DataPlane, StolenRkeyIsRefusedInEveryWriteMode) {
  for (storage::WriteMode mode : {storage::WriteMode::kPut, storage::WriteMode::kRendezvous}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(mode == storage::WriteMode::kPut ? "put" : "rendezvous") +
                   (in_place ? " in place" : ""));
      Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, mode, in_place);
      ASSERT_TRUE(e.server && e.client);
      auto victim = e.client->Allocate(64 << 10);
      ASSERT_TRUE(victim.has_value()) << victim.error();
      DataPlaneOptions copts;
      copts.transports = "shm";
      auto thief = DataPlane::Open(copts);
      ASSERT_TRUE(thief.has_value()) << thief.error();
      auto thief_connection = ConnectTo(**thief, *e.server);
      ASSERT_TRUE(thief_connection.has_value()) << thief_connection.error();
      DataPlaneTarget stolen = (*victim)->Target(*thief_connection);

      auto sink = e.server->OpenSink(stolen);
      if (sink.has_value()) {  // the old behaviour: show what it let through
        (void)WriteBytes(**sink, 0, PatternBytes(7, 64 << 10));
        (void)(*sink)->Finish(Status::Ok());
      }
      EXPECT_FALSE(sink.has_value()) << "a request with another client's rkey was served";
      if (!sink.has_value()) {
        EXPECT_EQ(sink.error().code(), Code::kPermissionDenied) << sink.error();
        EXPECT_EQ(sink.error().field(), "x-oc-target-rkey");
      }
      EXPECT_TRUE(AllZero((*victim)->bytes())) << "the other client's memory was written";

      // A descriptor PUT pulling from it is refused too (its bytes would be stored).
      (*victim)->bytes()[0] = std::byte{42};
      auto staging = e.server->AcquireStaging();
      ASSERT_TRUE(staging.has_value());
      const Status read = e.server->ReadRemote(stolen, 0, *staging, 4096);
      EXPECT_EQ(read.code(), Code::kPermissionDenied) << read;
      EXPECT_NE(staging->bytes()[0], std::byte{42}) << "the other client's memory was read";

      // The owner itself is still served.
      auto own = e.server->OpenSink((*victim)->Target(e.connection));
      ASSERT_TRUE(own.has_value()) << own.error();
      EXPECT_EQ((*own)->Finish(Status::Cancelled("not needed")).code(), Code::kCancelled);
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

TEST(DataPlane, BadTargetsGiveCleanErrorsBeforeAnyWrite) {
  for (const Transport& t : kTransports) {
    SCOPED_TRACE(t.name);
    Ends e = MakeEnds(t, LayerOrdering::kFlush);
    ASSERT_TRUE(e.server && e.client);
    auto buffer = e.client->Allocate(4096);
    ASSERT_TRUE(buffer.has_value());
    const DataPlaneTarget good = (*buffer)->Target(e.connection);

    struct Row {
      const char* what;
      DataPlaneTarget target;
      const char* field;
    };
    std::vector<Row> rows;
    rows.push_back({"unknown connection", good, "x-oc-target-connection"});
    rows.back().target.connection[15] ^= std::byte{1};
    rows.push_back({"no connection", good, "x-oc-target-connection"});
    rows.back().target.connection = {};
    rows.push_back({"empty rkey", good, "x-oc-target-rkey"});
    rows.back().target.rkey.clear();
    rows.push_back({"oversized rkey", good, "x-oc-target-rkey"});
    rows.back().target.rkey.resize(64 << 10);
    rows.push_back({"address + length overflows", good, "x-oc-target-address"});
    rows.back().target.address = ~0ull - 10;
    rows.push_back({"zero length", good, "x-oc-target-address"});
    rows.back().target.length = 0;
    for (const Row& row : rows) {
      SCOPED_TRACE(row.what);
      auto sink = e.server->OpenSink(row.target);
      ASSERT_FALSE(sink.has_value());
      EXPECT_EQ(sink.error().code(), Code::kInvalidArgument) << sink.error();
      EXPECT_EQ(sink.error().field(), row.field);
    }
    EXPECT_TRUE(AllZero((*buffer)->bytes()));
  }
}

TEST(DataPlane, MalformedRkeysAreRefusedBeforeUcxParsesThem) {
  for (const Transport& t : kTransports) {
    SCOPED_TRACE(t.name);
    Ends e = MakeEnds(t, LayerOrdering::kFlush);
    ASSERT_TRUE(e.server && e.client);
    auto buffer = e.client->Allocate(4096);
    ASSERT_TRUE(buffer.has_value());
    const DataPlaneTarget good = (*buffer)->Target(e.connection);
    struct Row {
      const char* what;
      std::vector<std::byte> rkey;
    };
    std::vector<Row> rows = {
        {"one byte", {std::byte{0x04}}},
        {"memory-domain map only", std::vector<std::byte>(8, std::byte{0})},
        {"cut before its last entry", {good.rkey.begin(), good.rkey.end() - 1}},
        {"map naming 64 domains", std::vector<std::byte>(good.rkey.size(), std::byte{0xff})},
    };
    for (const Row& row : rows) {
      SCOPED_TRACE(row.what);
      DataPlaneTarget bad = good;
      bad.rkey = row.rkey;
      auto sink = e.server->OpenSink(bad);
      ASSERT_FALSE(sink.has_value());
      EXPECT_EQ(sink.error().code(), Code::kInvalidArgument) << sink.error();
      EXPECT_EQ(sink.error().field(), "x-oc-target-rkey");
    }
    EXPECT_TRUE(AllZero((*buffer)->bytes()));
    EXPECT_TRUE(e.server->OpenSink(good).has_value());  // the real key still works
  }
}

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

TEST(DataPlaneOptions, ValidateNamesTheFieldAtFault) {
  struct Row {
    const char* field;
    void (*mutate)(storage::DataPlaneOptions&);
  };
  for (const Row& row : {
           Row{"data_plane.max_endpoints",
               [](storage::DataPlaneOptions& o) { o.max_endpoints = 0; }},
           Row{"data_plane.staging_buffers",
               [](storage::DataPlaneOptions& o) { o.staging_buffers = 0; }},
           Row{"data_plane.staging_buffers",
               [](storage::DataPlaneOptions& o) { o.staging_buffers = 1025; }},
           Row{"data_plane.staging_buffer_bytes",
               [](storage::DataPlaneOptions& o) { o.staging_buffer_bytes = 4095; }},
           Row{"data_plane.staging_buffer_bytes",
               [](storage::DataPlaneOptions& o) { o.staging_buffer_bytes = (1ull << 30) + 1; }},
           Row{"data_plane.op_timeout",
               [](storage::DataPlaneOptions& o) { o.op_timeout = std::chrono::milliseconds(0); }},
       }) {
    SCOPED_TRACE(row.field);
    storage::DataPlaneOptions o;
    ASSERT_TRUE(o.Validate().ok());
    row.mutate(o);
    Status s = o.Validate();
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.field(), row.field);
    EXPECT_FALSE(UcxDataPlane::Create(o).has_value());
  }
}

TEST(StagingPool, LendsBoundedBuffersAndReplacesRetiredOnes) {
  storage::DataPlaneOptions o = ServerOptions(kTransports[0], LayerOrdering::kFlush);
  o.staging_buffers = 2;
  o.op_timeout = std::chrono::milliseconds(50);
  auto plane = UcxDataPlane::Create(o);
  ASSERT_TRUE(plane.has_value()) << plane.error();
  storage::StagingPool& pool = (*plane)->staging();
  auto a = pool.Acquire(o.op_timeout);
  auto b = pool.Acquire(o.op_timeout);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(pool.free_count(), 0u);
  auto none = pool.Acquire(o.op_timeout);  // all lent: bounded wait, then kUnavailable
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Code::kUnavailable);
  b->Reset();  // given back unused
  EXPECT_EQ(pool.free_count(), 1u);

  // Retiring a lent slot frees it with new memory; the old handle is no longer the pool's.
  const uint32_t slot = a->Detach();
  std::byte* old_memory = a->bytes().data();
  ASSERT_TRUE(pool.Retire(slot).ok());
  EXPECT_EQ(pool.retired(), 1u);
  EXPECT_EQ(pool.free_count(), 2u);
  auto c = pool.Acquire(o.op_timeout);
  auto d = pool.Acquire(o.op_timeout);
  ASSERT_TRUE(c.has_value() && d.has_value());
  EXPECT_NE(c->bytes().data(), old_memory);
  EXPECT_NE(d->bytes().data(), old_memory);
  EXPECT_TRUE(pool.Owns(*c));
  StagingBuffer foreign;  // empty handle
  EXPECT_FALSE(pool.Owns(foreign));
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
