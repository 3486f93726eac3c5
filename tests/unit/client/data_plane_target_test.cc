// What the UCX data plane lets a request write (storage-server/src/data_plane): writes outside
// the target are refused before any put, a target written in place is bounded by the client's
// own segment and let go when the client frees it, another client's rkey is refused in every
// write mode, and bad or malformed targets and rkeys get clean errors naming the field before
// UCX sees them. Real UCX over shared memory and TCP loopback in one process; waits bounded.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
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
using descriptor::DataPlaneTarget;
using storage::LayerOrdering;
using testutil::PatternBytes;

using dptest::AllZero;
using dptest::ConnectTo;
using dptest::Ends;
using dptest::kTransports;
using dptest::kWait;
using dptest::MakeEnds;
using dptest::Transport;
using dptest::WriteBytes;

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

// A target written in place has its pages mapped into the server's page tables when the sink
// opens (one madvise), not one fault per page as the writes first touch them: on a virtual
// machine each fault is an exit to the hypervisor (docs/decisions/data-plane-populate-targets.md).
// The client's buffer is fresh, so every page of the server's mapping is new.
TEST(DataPlane, InPlaceTargetsAreMappedWhenTheSinkOpensNotPageByPage) {
  Ends e = MakeEnds(kTransports[0], LayerOrdering::kFlush, storage::WriteMode::kRendezvous,
                    /*in_place=*/true);
  ASSERT_TRUE(e.server && e.client);
  const auto minor_faults = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<uint64_t>(u.ru_minflt);
  };
  constexpr uint64_t kBytes = 8 << 20;
  const uint64_t pages = kBytes / static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (int round = 0; round < 2; ++round) {  // the first also maps the staging buffers
    SCOPED_TRACE(round);
    auto buffer = e.client->Allocate(kBytes);
    ASSERT_TRUE(buffer.has_value()) << buffer.error();
    const DataPlaneTarget target = (*buffer)->Target(e.connection);
    auto delivery = e.client->Expect(target.address, 1);
    ASSERT_TRUE(delivery.has_value());
    auto sink = e.server->OpenSink(target);
    ASSERT_TRUE(sink.has_value()) << sink.error();
    ASSERT_TRUE((*sink)->writes_in_place());
    const std::vector<std::byte> bytes = PatternBytes(round, target.length);
    const uint64_t before = minor_faults();
    ASSERT_TRUE(WriteBytes(**sink, 0, bytes).ok());
    const uint64_t faults = minor_faults() - before;
    ASSERT_TRUE((*sink)->LayerReady(0).ok());
    ASSERT_TRUE((*sink)->Finish(Status::Ok()).ok());
    ASSERT_TRUE((*delivery)->Wait(kWait).ok());
    EXPECT_EQ(std::memcmp((*buffer)->bytes().data(), bytes.data(), bytes.size()), 0);
    if (round == 1) {
      EXPECT_LT(faults, pages / 8) << "writing " << pages << " fresh pages in place";
    }
  }
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

}  // namespace
}  // namespace oc
