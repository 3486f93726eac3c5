// The data-plane handshake and what the server checks before UCX sees client bytes
// (docs/protocol.md, "Data plane: connecting"; docs/decisions/data-plane-who-connects-to-whom.md):
// connection ids issued by the server's listener, refused when unknown or named by another
// principal; rkeys checked entry by entry against the endpoint's own view of the client's memory
// domains (posix refused, System V segments checked before UCX attaches them). Real UCX, one
// process. The byte formats are tested in tests/unit/descriptor/data_plane_wire_test.cc, the
// transport rules in tests/unit/ucx.

#include <sys/ipc.h>
#include <sys/shm.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data_plane/rkey_check.h"
#include "data_plane_test_util.h"
#include "oc/testutil/testutil.h"
#include "oc/ucx/owner_token.h"

namespace oc {
namespace {

using client::DataPlane;
using client::DataPlaneOptions;
using descriptor::ConnectionId;
using descriptor::DataPlaneTarget;
using dptest::AllZero;
using dptest::ConnectTo;
using dptest::Ends;
using dptest::kTransports;
using dptest::kWait;
using dptest::MakeEnds;
using dptest::ServerOptions;
using dptest::WriteBytes;
using storage::LayerOrdering;
using storage::UcxDataPlane;
using testutil::PatternBytes;

// --------------------------------------------------------------------------------------
// Connections.

TEST(DataPlaneConnect, TheServerIssuesOneIdPerConnectionAndRefusesUnknownOnesBeforeAnyIo) {
  for (const auto& t : kTransports) {
    SCOPED_TRACE(t.name);
    Ends e = MakeEnds(t, LayerOrdering::kFlush, storage::WriteMode::kRendezvous);
    ASSERT_TRUE(e.server && e.client);
    EXPECT_NE(e.connection, ConnectionId{});
    // The same server again: the connection is reused.
    auto again = ConnectTo(*e.client, *e.server);
    ASSERT_TRUE(again.has_value()) << again.error();
    EXPECT_EQ(*again, e.connection);
    // Another client gets its own id.
    DataPlaneOptions copts;
    copts.transports = t.tls;
    auto other = DataPlane::Open(copts);
    ASSERT_TRUE(other.has_value()) << other.error();
    auto other_connection = ConnectTo(**other, *e.server);
    ASSERT_TRUE(other_connection.has_value()) << other_connection.error();
    EXPECT_NE(*other_connection, e.connection);
    EXPECT_EQ(e.server->endpoints().size(), 2u);

    auto buffer = e.client->Allocate(4096);
    ASSERT_TRUE(buffer.has_value()) << buffer.error();
    // Ids the server never issued: refused naming the field, nothing written.
    for (ConnectionId id : {ConnectionId{}, [&] {
                              ConnectionId flipped = e.connection;
                              flipped[0] ^= std::byte{0x80};
                              return flipped;
                            }()}) {
      DataPlaneTarget bad = (*buffer)->Target(id);
      auto sink = e.server->OpenSink(bad);
      ASSERT_FALSE(sink.has_value());
      EXPECT_EQ(sink.error().code(), Code::kInvalidArgument) << sink.error();
      EXPECT_EQ(sink.error().field(), "x-oc-target-connection");
      auto staging = e.server->AcquireStaging();
      ASSERT_TRUE(staging.has_value());
      EXPECT_EQ(e.server->ReadRemote(bad, 0, *staging, 16).code(), Code::kInvalidArgument);
    }
    EXPECT_TRUE(AllZero((*buffer)->bytes()));
    // The issued one works, byte-exact.
    auto delivery = e.client->Expect((*buffer)->address(), 1);
    ASSERT_TRUE(delivery.has_value());
    auto sink = e.server->OpenSink((*buffer)->Target(e.connection));
    ASSERT_TRUE(sink.has_value()) << sink.error();
    const std::vector<std::byte> bytes = PatternBytes(3, 4096);
    ASSERT_TRUE(WriteBytes(**sink, 0, bytes).ok());
    ASSERT_TRUE((*sink)->LayerReady(0).ok());
    ASSERT_TRUE((*sink)->Finish(Status::Ok()).ok());
    ASSERT_TRUE((*delivery)->Wait(kWait).ok());
    EXPECT_EQ(std::memcmp((*buffer)->bytes().data(), bytes.data(), bytes.size()), 0);
  }
}

TEST(DataPlaneConnect, AConnectionBelongsToTheFirstPrincipalThatNamesIt) {
  Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, storage::WriteMode::kRendezvous);
  ASSERT_TRUE(e.server && e.client);
  auto buffer = e.client->Allocate(4096);
  ASSERT_TRUE(buffer.has_value()) << buffer.error();
  DataPlaneTarget alice = (*buffer)->Target(e.connection);
  alice.principal = "AKIDALICE";
  {
    auto sink = e.server->OpenSink(alice);
    ASSERT_TRUE(sink.has_value()) << sink.error();
    EXPECT_EQ((*sink)->Finish(Status::Cancelled("not needed")).code(), Code::kCancelled);
  }
  // Bob copied alice's connection id (it travels in her signed headers): refused.
  DataPlaneTarget bob = alice;
  bob.principal = "AKIDBOB";
  auto stolen = e.server->OpenSink(bob);
  ASSERT_FALSE(stolen.has_value());
  EXPECT_EQ(stolen.error().code(), Code::kPermissionDenied) << stolen.error();
  EXPECT_EQ(stolen.error().field(), "x-oc-target-connection");
  auto staging = e.server->AcquireStaging();
  ASSERT_TRUE(staging.has_value());
  EXPECT_EQ(e.server->ReadRemote(bob, 0, *staging, 16).code(), Code::kPermissionDenied);
  DataPlaneTarget anonymous = alice;
  anonymous.principal.clear();
  EXPECT_EQ(e.server->OpenSink(anonymous).error().code(), Code::kPermissionDenied);
  // Alice still is served.
  auto again = e.server->OpenSink(alice);
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ((*again)->Finish(Status::Cancelled("not needed")).code(), Code::kCancelled);
}

TEST(DataPlaneConnect, ConnectionsAreBoundedAndAnEvictedClientConnectsAgain) {
  storage::DataPlaneOptions o = ServerOptions(kTransports[0], LayerOrdering::kFlush);
  o.max_endpoints = 2;
  auto server = UcxDataPlane::Create(o);
  ASSERT_TRUE(server.has_value()) << server.error();
  std::vector<std::unique_ptr<DataPlane>> clients;
  std::vector<ConnectionId> ids;
  for (int i = 0; i < 3; ++i) {
    DataPlaneOptions copts;
    copts.transports = "shm";
    auto c = DataPlane::Open(copts);
    ASSERT_TRUE(c.has_value()) << c.error();
    auto id = ConnectTo(**c, **server);
    ASSERT_TRUE(id.has_value()) << id.error();
    clients.push_back(std::move(*c));
    ids.push_back(*id);
  }
  // clients[0] was least recently used: its connection was closed.
  EXPECT_EQ((*server)->endpoints().size(), 2u);
  auto first = (*server)->endpoints().Find(ids[0], "");
  ASSERT_FALSE(first.has_value());
  EXPECT_EQ(first.error().field(), "x-oc-target-connection");
  auto second = (*server)->endpoints().Find(ids[1], "");
  ASSERT_TRUE(second.has_value()) << second.error();
  auto second_again = (*server)->endpoints().Find(ids[1], "");
  ASSERT_TRUE(second_again.has_value());
  EXPECT_EQ(second->get(), second_again->get());
  // What liboc_client does on that answer: forget the connection and connect again.
  clients[0]->Disconnect((*server)->listen_address(), ids[0]);
  auto reconnected = ConnectTo(*clients[0], **server);
  ASSERT_TRUE(reconnected.has_value()) << reconnected.error();
  EXPECT_NE(*reconnected, ids[0]);
  EXPECT_TRUE((*server)->endpoints().Find(*reconnected, "").has_value());
}

TEST(DataPlaneConnect, NoServerListeningIsAnErrorNotAHang) {
  DataPlaneOptions copts;
  copts.transports = "shm";
  copts.connect_timeout = std::chrono::milliseconds(3000);
  auto client = DataPlane::Open(copts);
  ASSERT_TRUE(client.has_value()) << client.error();
  const uint16_t port = testutil::FreePort();
  auto refused = (*client)->Connect("127.0.0.1:" + std::to_string(port), true);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kUnavailable) << refused.error();
  auto unresolved = (*client)->Connect("no-such-host.invalid:1", true);
  ASSERT_FALSE(unresolved.has_value());
  EXPECT_EQ(unresolved.error().code(), Code::kInvalidArgument) << unresolved.error();
}

// --------------------------------------------------------------------------------------
// Rkeys.

// An rkey as UCX 1.13 packs it: map, memory type, one length-prefixed entry per map bit.
std::vector<std::byte> PackRkey(uint64_t map, uint8_t memory_type,
                                const std::vector<std::vector<std::byte>>& entries) {
  std::vector<std::byte> out(8);
  PutLittleEndian64(map, out.data());
  out.push_back(static_cast<std::byte>(memory_type));
  for (const auto& e : entries) {
    out.push_back(static_cast<std::byte>(e.size()));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

// The remote md index our endpoint sees as `c`, or -1.
int RemoteMdOf(const storage::EndpointInfo& info, storage::MdComponent c) {
  for (size_t i = 0; i < info.remote_mds.size(); ++i) {
    if (info.remote_mds[i] == c) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

TEST(DataPlaneRkey, EntriesAreCheckedAgainstTheEndpointsViewBeforeUcxUnpacksThem) {
  Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, storage::WriteMode::kRendezvous,
                    /*in_place=*/true);
  ASSERT_TRUE(e.server && e.client);
  auto endpoint = e.server->endpoints().Find(e.connection, "");
  ASSERT_TRUE(endpoint.has_value()) << endpoint.error();
  const storage::EndpointInfo& info = (*endpoint)->info();
  const int sysv = RemoteMdOf(info, storage::MdComponent::kSysv);
  const int posix = RemoteMdOf(info, storage::MdComponent::kOther);
  // With mode none over shm (tcp added only for the connection manager) the bytes go through
  // shared memory: System V and POSIX lanes, none over TCP.
  ASSERT_GE(sysv, 0) << "no System V lane over shm";
  ASSERT_GE(posix, 0) << "no posix lane over shm";
  EXPECT_FALSE((*endpoint)->info().tcp_lane);
  EXPECT_FALSE((*endpoint)->peer_error_handling());
  auto buffer = e.client->Allocate(64 << 10);
  ASSERT_TRUE(buffer.has_value()) << buffer.error();
  const DataPlaneTarget good = (*buffer)->Target(e.connection);
  // The real key names the buffer's System V segment.
  auto checked =
      storage::CheckRkey(good.rkey, info, good.address, good.length, (*endpoint)->owner());
  ASSERT_TRUE(checked.has_value()) << checked.error();
  ASSERT_GE(checked->sysv_id, 0);
  std::vector<std::byte> segment_entry(12);
  PutLittleEndian32(static_cast<uint32_t>(checked->sysv_id), segment_entry.data());
  PutLittleEndian64(good.address - ucx::kOwnerPageBytes, segment_entry.data() + 4);
  // A System V segment id nobody created.
  const int unused = ::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  ASSERT_GE(unused, 0);
  ASSERT_EQ(::shmctl(unused, IPC_RMID, nullptr), 0);
  std::vector<std::byte> missing = segment_entry;
  PutLittleEndian32(static_cast<uint32_t>(unused), missing.data());
  // A segment that exists but is not the client's: its first page is not the owner page.
  const int foreign = ::shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
  ASSERT_GE(foreign, 0);
  std::vector<std::byte> not_owned = segment_entry;
  PutLittleEndian32(static_cast<uint32_t>(foreign), not_owned.data());
  const uint64_t bit = uint64_t{1} << sysv;
  std::vector<std::byte> cut = PackRkey(bit, 0, {segment_entry});
  cut.pop_back();

  struct Row {
    const char* what;
    std::vector<std::byte> rkey;
    Code code;
    const char* field;
    const char* says;  // in the message: refused by our check, not by UCX
  };
  const std::vector<Row> rows = {
      {"posix entry", PackRkey(uint64_t{1} << posix, 0, {std::vector<std::byte>(24)}),
       Code::kInvalidArgument, "x-oc-target-rkey", "does not write through"},
      {"System V entry of the wrong size", PackRkey(bit, 0, {std::vector<std::byte>(11)}),
       Code::kInvalidArgument, "x-oc-target-rkey", "UCX packs 12"},
      {"System V segment that does not exist", PackRkey(bit, 0, {missing}), Code::kInvalidArgument,
       "x-oc-target-rkey", "does not exist"},
      {"System V segment of someone else", PackRkey(bit, 0, {not_owned}), Code::kPermissionDenied,
       "x-oc-target-rkey", "does not own"},
      {"GPU memory type", PackRkey(bit, 1, {segment_entry}), Code::kInvalidArgument,
       "x-oc-target-rkey", "other than host"},
      {"cut entry", cut, Code::kInvalidArgument, "x-oc-target-rkey", "not a whole packed rkey"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    DataPlaneTarget bad = good;
    bad.rkey = row.rkey;
    auto sink = e.server->OpenSink(bad);
    ASSERT_FALSE(sink.has_value());
    EXPECT_EQ(sink.error().code(), row.code) << sink.error();
    EXPECT_EQ(sink.error().field(), row.field);
    EXPECT_NE(sink.error().message().find(row.says), std::string::npos) << sink.error();
  }
  (void)::shmctl(foreign, IPC_RMID, nullptr);
  // The segment entry rebuilt by hand is the client's own: accepted, written in place.
  auto sink = e.server->OpenSink(good);
  ASSERT_TRUE(sink.has_value()) << sink.error();
  EXPECT_TRUE((*sink)->writes_in_place());
  EXPECT_EQ((*sink)->Finish(Status::Cancelled("not needed")).code(), Code::kCancelled);
  EXPECT_TRUE(AllZero((*buffer)->bytes()));
}

// A target UCX allocated in POSIX shared memory (UCX_ALLOC_PRIO puts posix first): before,
// the server's UCX mapped the segment the key named (a file named by the client's pid, a
// length from the key) and only then refused it; now the entry is refused unread.
TEST(DataPlaneRkey, PosixTargetsAreRefusedBeforeUcxMapsThem) {
  Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, storage::WriteMode::kRendezvous,
                    /*in_place=*/true);
  ASSERT_TRUE(e.server);
  const char* saved = std::getenv("UCX_ALLOC_PRIO");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("UCX_ALLOC_PRIO", "md:posix,md:sysv,heap", 1);
  DataPlaneOptions copts;
  copts.transports = "shm";
  auto client = DataPlane::Open(copts);
  if (saved != nullptr) {
    ::setenv("UCX_ALLOC_PRIO", restore.c_str(), 1);
  } else {
    ::unsetenv("UCX_ALLOC_PRIO");
  }
  ASSERT_TRUE(client.has_value()) << client.error();
  auto connection = ConnectTo(**client, *e.server);
  ASSERT_TRUE(connection.has_value()) << connection.error();
  auto buffer = (*client)->Allocate(64 << 10);
  ASSERT_TRUE(buffer.has_value()) << buffer.error();
  auto sink = e.server->OpenSink((*buffer)->Target(*connection));
  ASSERT_FALSE(sink.has_value()) << "a POSIX shared-memory target was accepted";
  EXPECT_EQ(sink.error().code(), Code::kInvalidArgument) << sink.error();
  EXPECT_EQ(sink.error().field(), "x-oc-target-rkey");
  EXPECT_TRUE(AllZero((*buffer)->bytes()));
}

TEST(DataPlaneRkey, EndpointInfoNamesEachRemoteMemoryDomainOnALane) {
  // ucp_ep_print_info of UCX 1.13 (an endpoint with mode none over shm, and one over tcp).
  const std::string shm =
      "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
      "#                 lane[0]: cm tcp\n"
      "#                 lane[1]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] "
      "am am_bw#0\n"
      "#                 lane[2]:  4:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]\n"
      "#                 lane[3]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] "
      "rma_bw#0\n";
  storage::EndpointInfo info = storage::ParseEndpointInfo(shm);
  EXPECT_EQ(info.remote_mds[2], storage::MdComponent::kSysv);
  EXPECT_EQ(info.remote_mds[3], storage::MdComponent::kOther);
  EXPECT_EQ(info.remote_mds[4], storage::MdComponent::kCma);
  EXPECT_EQ(info.remote_mds[0], storage::MdComponent::kNone);
  EXPECT_EQ(info.remote_mds[1], storage::MdComponent::kNone);
  EXPECT_FALSE(info.tcp_lane);
  const std::string tcp =
      "#                 lane[0]: cm tcp\n"
      "#                 lane[1]:  1:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] "
      "rma_bw#0 am am_bw#0 wireup\n"
      "#                 lane[2]:  4:rc_mlx5/mlx5_0:1 md[3]       -> md[63]/ib/sysdev[255]\n"
      "#                 lane[3]:  -> md[64]/ib\n";
  info = storage::ParseEndpointInfo(tcp);
  EXPECT_EQ(info.remote_mds[1], storage::MdComponent::kTcp);
  EXPECT_EQ(info.remote_mds[63], storage::MdComponent::kIb);
  EXPECT_TRUE(info.tcp_lane);
}

}  // namespace
}  // namespace oc
