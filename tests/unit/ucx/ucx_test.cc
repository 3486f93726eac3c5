// oc_ucx (common/ucx): what each end of the data plane relies on, tested alone. Real UCX, one
// process, no peer: FromUcs' classes, the transport and error-mode rules both ends derive
// (docs/protocol.md, "Data plane: connecting"), socket addresses, the owner token's known
// answer, the worker's thread contract, and what a mapping holds.

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "oc/common/bytes.h"
#include "oc/ucx/mapped_memory.h"
#include "oc/ucx/owner_token.h"
#include "oc/ucx/socket_address.h"
#include "oc/ucx/status.h"
#include "oc/ucx/transports.h"
#include "oc/ucx/worker.h"

namespace oc::ucx {
namespace {

TEST(UcxStatus, FromUcsTranslatesEachClassOnce) {
  EXPECT_TRUE(FromUcs(UCS_OK, "op").ok());
  EXPECT_TRUE(FromUcs(UCS_INPROGRESS, "op").ok());
  struct Row {
    ucs_status_t status;
    Code code;
  };
  for (const Row& row :
       {Row{UCS_ERR_INVALID_PARAM, Code::kInvalidArgument},
        Row{UCS_ERR_UNREACHABLE, Code::kInvalidArgument},
        Row{UCS_ERR_NO_MEMORY, Code::kResourceExhausted},
        Row{UCS_ERR_EXCEEDS_LIMIT, Code::kResourceExhausted},
        Row{UCS_ERR_CANCELED, Code::kCancelled}, Row{UCS_ERR_TIMED_OUT, Code::kUnavailable},
        Row{UCS_ERR_CONNECTION_RESET, Code::kUnavailable},
        Row{UCS_ERR_UNSUPPORTED, Code::kUnimplemented},
        Row{UCS_ERR_MESSAGE_TRUNCATED, Code::kIOError}, Row{UCS_ERR_NO_ELEM, Code::kIOError}}) {
    SCOPED_TRACE(ucs_status_string(row.status));
    const Status s = FromUcs(row.status, "ucp_thing");
    EXPECT_EQ(s.code(), row.code);
    EXPECT_EQ(s.message(), std::string("ucp_thing: ") + ucs_status_string(row.status));
  }
}

TEST(UcxTransports, TransportsAndErrorModeFollowBothEnds) {
  EXPECT_EQ(WithConnectionManager("shm"), "shm,tcp");
  EXPECT_EQ(WithConnectionManager("sysv,cma"), "sysv,cma,tcp");
  EXPECT_EQ(WithConnectionManager("tcp"), "tcp");
  EXPECT_EQ(WithConnectionManager("shm,tcp"), "shm,tcp");
  EXPECT_EQ(WithConnectionManager(""), "");
  EXPECT_EQ(WithConnectionManager("^ib"), "^ib");
  EXPECT_TRUE(AllowsSharedMemory(""));
  EXPECT_TRUE(AllowsSharedMemory("shm"));
  EXPECT_TRUE(AllowsSharedMemory("tcp,sysv"));
  EXPECT_TRUE(AllowsSharedMemory("^ib"));
  EXPECT_FALSE(AllowsSharedMemory("tcp"));
  EXPECT_FALSE(AllowsSharedMemory("cma,tcp"));
  EXPECT_FALSE(AllowsSharedMemory("^shm"));
  EXPECT_EQ(EffectiveTransports("shm,cma"), "shm,cma");
  EXPECT_EQ(ErrorMode(true, true, true), UCP_ERR_HANDLING_MODE_NONE);
  EXPECT_EQ(ErrorMode(true, true, false), UCP_ERR_HANDLING_MODE_PEER);
  EXPECT_EQ(ErrorMode(true, false, true), UCP_ERR_HANDLING_MODE_PEER);
  EXPECT_EQ(ErrorMode(false, true, true), UCP_ERR_HANDLING_MODE_PEER);
}

TEST(UcxSocketAddress, ParsesPrintsAndKnowsLoopback) {
  for (const char* text : {"127.0.0.1:0", "127.0.0.1:65535", "[::1]:80", "localhost:7"}) {
    SCOPED_TRACE(text);
    auto parsed = ParseSocketAddress(text, "f");
    ASSERT_TRUE(parsed.has_value()) << parsed.error();
    EXPECT_TRUE(IsLoopback(reinterpret_cast<const sockaddr*>(&*parsed)));
  }
  auto v4 = ParseSocketAddress("10.1.2.3:4567", "f");
  ASSERT_TRUE(v4.has_value());
  EXPECT_FALSE(IsLoopback(reinterpret_cast<const sockaddr*>(&*v4)));
  EXPECT_EQ(FormatSocketAddress(*v4), "10.1.2.3:4567");
  EXPECT_EQ(SocketAddressBytes(*v4), sizeof(sockaddr_in));
  auto v6 = ParseSocketAddress("[::1]:80", "f");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(FormatSocketAddress(*v6), "[::1]:80");
  EXPECT_EQ(SocketAddressBytes(*v6), sizeof(sockaddr_in6));
  EXPECT_FALSE(IsLoopback(nullptr));
  for (const char* bad : {"", "1.2.3.4", ":80", "1.2.3.4:", "1.2.3.4:x"}) {
    SCOPED_TRACE(bad);
    auto r = ParseSocketAddress(bad, "data_plane.listen");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.error().field(), "data_plane.listen");
  }
}

TEST(UcxOwnerToken, IsTheSha256OfTheDomainAndTheSecret) {
  // python3 -c "import hashlib; print(hashlib.sha256(
  //   b'objectcache data-plane target owner v2' + bytes(range(32))).hexdigest())"
  OwnerSecret secret;
  for (size_t i = 0; i < secret.size(); ++i) {
    secret[i] = static_cast<std::byte>(i);
  }
  EXPECT_EQ(HexEncode(MakeOwnerToken(secret)),
            "d7733c6650adfca633bc0c0d753b6ef5f9e49e7458931b4f8c19496139dc9cfe");
  OwnerSecret other = secret;
  other[31] ^= std::byte{1};
  EXPECT_NE(MakeOwnerToken(other), MakeOwnerToken(secret));
}

std::unique_ptr<UcxWorker> MakeWorker() {
  WorkerOptions options;
  options.transports = "tcp";
  auto worker = UcxWorker::Create(options);
  EXPECT_TRUE(worker.has_value()) << worker.error();
  return worker.has_value() ? std::move(*worker) : nullptr;
}

TEST(UcxWorker, TasksRunInOrderOnTheProgressThreadOnceStarted) {
  std::unique_ptr<UcxWorker> worker = MakeWorker();
  ASSERT_NE(worker, nullptr);
  EXPECT_FALSE(worker->address().empty());
  // Before Start the caller owns the worker: tasks run inline.
  bool ran = false;
  worker->Submit([&] { ran = true; });
  EXPECT_TRUE(ran);

  worker->Start();
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int> order;  // touched only on the progress thread until Call returns
  for (int i = 0; i < 100; ++i) {
    worker->Submit([&order, i] { order.push_back(i); });
  }
  const std::thread::id runner = worker->Call([&] {
    EXPECT_TRUE(worker->OnProgressThread());
    return std::this_thread::get_id();
  });
  EXPECT_NE(runner, caller);
  EXPECT_FALSE(worker->OnProgressThread());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(order[i], i);
  }

  // A task deferred from the progress thread runs after the one that deferred it.
  std::atomic<int> step{0};
  const int seen = worker->Call([&] {
    worker->Defer([&] { step.store(2); });
    step.store(1);
    return step.load();
  });
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(worker->Call([&] { return step.load(); }), 2);

  // Stop hands the worker back: queued tasks run on the caller, later ones inline.
  worker->Stop();
  bool after = false;
  worker->Submit([&] { after = std::this_thread::get_id() == caller; });
  EXPECT_TRUE(after);
  worker->DestroyWorker();
  worker->DestroyWorker();  // idempotent
}

TEST(UcxMappedMemory, AllocateStartsWithTheOwnerPageAndZeroedBytes) {
  std::unique_ptr<UcxWorker> worker = MakeWorker();
  ASSERT_NE(worker, nullptr);
  OwnerSecret secret{};
  secret[0] = std::byte{7};
  const OwnerToken owner = MakeOwnerToken(secret);
  constexpr uint64_t kBytes = 3 * 4096 + 5;
  auto mapping = MappedMemory::Allocate(worker->context(), kBytes, owner);
  ASSERT_TRUE(mapping.has_value()) << mapping.error();
  const MutableByteSpan bytes = (*mapping)->bytes();
  ASSERT_EQ(bytes.size(), kBytes);
  EXPECT_FALSE((*mapping)->rkey().empty());
  EXPECT_NE((*mapping)->memh(), nullptr);
  const std::byte* page = bytes.data() - kOwnerPageBytes;
  EXPECT_EQ(std::memcmp(page, owner.data(), owner.size()), 0);
  for (uint64_t i = owner.size(); i < kOwnerPageBytes; ++i) {
    ASSERT_EQ(page[i], std::byte{0}) << i;
  }
  for (uint64_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(bytes[i], std::byte{0}) << i;
  }
  bytes[kBytes - 1] = std::byte{1};  // the whole length is writable
}

TEST(UcxMappedMemory, MapCoversExactlyTheCallersMemory) {
  std::unique_ptr<UcxWorker> worker = MakeWorker();
  ASSERT_NE(worker, nullptr);
  std::vector<std::byte> memory(8192, std::byte{0x5a});
  auto mapping = MappedMemory::Map(worker->context(), memory.data(), memory.size());
  ASSERT_TRUE(mapping.has_value()) << mapping.error();
  EXPECT_EQ((*mapping)->bytes().data(), memory.data());
  EXPECT_EQ((*mapping)->bytes().size(), memory.size());
  EXPECT_FALSE((*mapping)->rkey().empty());
  mapping->reset();
  EXPECT_EQ(memory[0], std::byte{0x5a});  // unmapping leaves the caller's bytes alone
}

}  // namespace
}  // namespace oc::ucx
