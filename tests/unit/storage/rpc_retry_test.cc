// Calls whose request frame went out and whose connection then broke, in shared placement
// (calls.h Retry; docs/decisions/remote-store-shared-placement.md, issue 33): the first server in
// the list is a real TCP listener that greets, answers ServerInfo as a member of the shared
// target and then reads one request frame and closes the connection without answering (a server
// that died with the call in hand; a real one may have applied it). The second is a real
// RpcServer over a real RocksDB store (rpc_placement_test_util.h). An idempotent mutation, and a
// descriptor PUT pulled from the caller's memory, must then run on the real server; any other
// mutation, and a descriptor PUT whose body streamed from the caller, must answer kUnavailable
// and change nothing there.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv_test_util.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/store.h"
#include "rpc/wire.h"
#include "rpc_placement_test_util.h"

namespace oc::storage::test {
namespace {

using rpc::Op;

// A storage server that dies with a call in hand: it greets any client, answers ServerInfo as
// `identity`, and on any other request reads the whole frame, records its op and closes the
// connection without answering. It never checks the secret.
class CutServer {
 public:
  explicit CutServer(StoreIdentity identity) : identity_(std::move(identity)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~CutServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (int fd : open_) {
        ::shutdown(fd, SHUT_RDWR);  // wakes its thread, which closes it
      }
    }
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    for (std::thread& t : connections_) {  // only the acceptor adds to it
      t.join();
    }
    ::close(listen_fd_);
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  // The ops of the requests it cut, in order.
  std::vector<Op> cut() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cut_;
  }

 private:
  static bool ReadFrame(int fd, rpc::FrameHeader* h) {
    std::array<std::byte, rpc::kHeaderBytes> header;
    if (::recv(fd, header.data(), header.size(), MSG_WAITALL) != ssize_t(header.size()) ||
        !rpc::DecodeHeader(header, rpc::kMaxKvRequestBodyBytes, h).ok()) {
      return false;
    }
    std::vector<std::byte> body(h->body_length);
    return body.empty() ||
           ::recv(fd, body.data(), body.size(), MSG_WAITALL) == ssize_t(body.size());
  }

  void Accept() {
    for (;;) {
      const int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c < 0) {
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) {
          ::close(c);
          return;
        }
        open_.push_back(c);
      }
      connections_.emplace_back([this, c] { Serve(c); });
    }
  }

  void Serve(int c) {
    rpc::FrameHeader h;
    std::vector<std::byte> out;
    while (ReadFrame(c, &h)) {
      out.clear();
      if (h.op == Op::kHello) {
        rpc::EncodeFrame(&out, Op::kHello, rpc::kFlagReply, h.request_id);
      } else if (h.op == Op::kServerInfo) {
        rpc::EncodeFrame(&out, Op::kServerInfo, rpc::kFlagReply, h.request_id, identity_);
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        cut_.push_back(h.op);  // recorded before the close the client sees
        break;
      }
      if (::send(c, out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) {
        break;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(std::find(open_.begin(), open_.end(), c));
    ::close(c);
  }

  const StoreIdentity identity_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // the acceptor's
  mutable std::mutex mu_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<int> open_;  // guarded by mu_
  std::vector<Op> cut_;    // guarded by mu_
};

// A remote store over [cut, real]: its first call of each kind goes to `cut` (the round-robin
// turn starts at the first server).
Result<std::unique_ptr<Store>> ConnectCutFirst(const CutServer& cut, const Server& real) {
  RemoteStoreOptions o;
  o.endpoints = {cut.endpoint(), real.endpoint};
  o.secret = std::string(kTestSecret);
  o.max_idle_connections = 4;
  return ConnectRemoteStore(o);
}

TEST(RemotePlacement, SharedMutationsCutAfterSendingRunElsewhereOnlyIfIdempotent) {
  CutServer cut(kRados);
  std::unique_ptr<Server> real = Start(kRados);
  ASSERT_TRUE(real);
  Store& there = *real->local;
  ASSERT_TRUE(there.CreateBucket("bkt", "me").ok());
  ASSERT_TRUE(there.CreateBucket("spare", "me").ok());
  for (const char* name : {"k", "gone", "expired"}) {
    ASSERT_TRUE(PutString(there, {"bkt", name}, "bytes").has_value());
  }
  Result<ObjectMeta> expired = there.Head({"bkt", "expired"});
  ASSERT_TRUE(expired.has_value());
  Result<std::string> upload = there.CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(upload.has_value());
  const Tags tags{{"team", "kv"}};
  const std::string lifecycle = "<LifecycleConfiguration/>";

  struct Row {
    std::string name;
    Op op;
    std::function<Status(Store&)> call;
    bool idempotent;
    std::function<bool()> done_there;  // the call's effect on the real server
  };
  const std::vector<Row> rows = {
      {"PutObjectTags", Op::kPutTags,
       [&](Store& s) {
         return s.PutObjectTags({"bkt", "k"}, tags).status();
       },
       true,
       [&] {
         Result<ObjectMeta> m = there.Head({"bkt", "k"});
         return m.has_value() && m->tags == tags;
       }},
      {"SetBucketLifecycle", Op::kSetLifecycle,
       [&](Store& s) { return s.SetBucketLifecycle("bkt", lifecycle); }, true,
       [&] {
         Result<std::string> c = there.GetBucketLifecycle("bkt");
         return c.has_value() && *c == lifecycle;
       }},
      {"Delete", Op::kDelete,
       [&](Store& s) {
         return s.Delete({"bkt", "gone"});
       },
       true,
       [&] {
         return !Has(there, {"bkt", "gone"});
       }},
      {"DeleteIf", Op::kDeleteIf,
       [&](Store& s) {
         return s.DeleteIf({"bkt", "expired"}, {expired->etag, expired->mtime_unix_ms});
       },
       true,
       [&] {
         return !Has(there, {"bkt", "expired"});
       }},
      {"CreateBucket", Op::kCreateBucket, [&](Store& s) { return s.CreateBucket("made", "me"); },
       false, [&] { return there.HeadBucket("made").has_value(); }},
      {"DeleteBucket", Op::kDeleteBucket, [&](Store& s) { return s.DeleteBucket("spare"); }, false,
       [&] { return !there.HeadBucket("spare").has_value(); }},
      {"Copy", Op::kCopy,
       [&](Store& s) {
         return s.Copy({"bkt", "k"}, {"bkt", "copied"}, std::nullopt, {}).status();
       },
       false,
       [&] {
         return Has(there, {"bkt", "copied"});
       }},
      {"CreateMultipartUpload", Op::kCreateUpload,
       [&](Store& s) {
         return s.CreateMultipartUpload({"bkt", "other"}, {}).status();
       },
       false,
       [&] {
         Result<ListUploadsResult> l = there.ListMultipartUploads("bkt", {});
         return l.has_value() && l->uploads.size() != 1;
       }},
      {"AbortMultipartUpload", Op::kAbortUpload,
       [&](Store& s) {
         return s.AbortMultipartUpload({"bkt", "mp"}, *upload);
       },
       false,
       [&] {
         return !there.ListParts({"bkt", "mp"}, *upload, 0, 10).has_value();
       }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    // A new remote store per row: its turn starts at the cut server, which nothing skips yet.
    Result<std::unique_ptr<Store>> remote = ConnectCutFirst(cut, *real);
    ASSERT_TRUE(remote.has_value()) << remote.error();
    const size_t cut_before = cut.cut().size();
    const Status st = row.call(**remote);
    const std::vector<Op> cut_ops = cut.cut();
    ASSERT_GT(cut_ops.size(), cut_before) << "the call never reached the cut server";
    EXPECT_EQ(cut_ops.back(), row.op);
    if (row.idempotent) {
      EXPECT_TRUE(st.ok()) << st;
      EXPECT_TRUE(row.done_there()) << "run again on the real server";
    } else {
      EXPECT_EQ(st.code(), Code::kUnavailable) << st;
      EXPECT_FALSE(row.done_there()) << "must not run again after it was sent";
    }
  }
}

// A bucket whose home (the first server from XXH3-64 of its name, remote_store.cc) is the
// first of two servers: its descriptor calls with a target go there first.
std::string BucketHomedOnFirstOfTwo() {
  for (int i = 0;; ++i) {
    const std::string name = "kv-" + std::to_string(i);
    if (XXH3_64bits(name.data(), name.size()) % 2 == 0) {
      return name;
    }
  }
}

TEST(RemotePlacement, SharedDescriptorPutCutAfterSendingRunsElsewhereOnlyIfPulled) {
  const kvtest::Shape shape{2, 3, 1'000, descriptor::StoredLayout::kL2TD};
  const std::string bucket = BucketHomedOnFirstOfTwo();
  for (const bool pull : {true, false}) {
    SCOPED_TRACE(pull ? "pulled from the caller's memory" : "streamed from a body");
    CutServer cut(kRados);
    std::unique_ptr<Server> real = Start(kRados);
    ASSERT_TRUE(real);
    Store& there = *real->local;
    ASSERT_TRUE(there.CreateBucket(bucket, "me").ok());
    const uint64_t seed = pull ? 71 : 72;
    kvtest::Descriptor d = kvtest::MakeDescriptor(shape, /*compact=*/true, seed);
    std::vector<std::byte> all;
    std::vector<std::vector<std::byte>> chunks;
    for (uint64_t j = 0; j < shape.n; ++j) {
      chunks.push_back(kvtest::ChunkBytes(seed, j, shape));
      all.insert(all.end(), chunks.back().begin(), chunks.back().end());
    }
    Result<std::unique_ptr<Store>> remote = ConnectCutFirst(cut, *real);
    ASSERT_TRUE(remote.has_value()) << remote.error();
    Result<KvPutReport> put = Status::Internal("unset");
    if (pull) {
      // The caller connected to the real server's data plane (it found the home skipped);
      // the call is routed to the home, the cut server, first.
      Result<kvtest::Receiver> rx = kvtest::Receiver::Open(kvtest::kTransports[0], all.size(),
                                                           kvtest::WhereIs(there, bucket));
      ASSERT_TRUE(rx.has_value()) << rx.error();
      std::copy(all.begin(), all.end(), rx->memory.begin());
      d.target = rx->Target();
      put = (*remote)->PutChunks(bucket, d, nullptr);
    } else {
      kvtest::MemorySource source(all, 300);
      put = (*remote)->PutChunks(bucket, d, &source);
    }
    ASSERT_EQ(cut.cut(), std::vector<Op>{Op::kKvPutChunks}) << "sent to the cut server first";
    if (pull) {
      ASSERT_TRUE(put.has_value()) << put.error();
      EXPECT_EQ(put->chunks, shape.n);
      for (uint64_t j = 0; j < shape.n; ++j) {
        Result<std::string> got =
            GetString(there, {bucket, d.ObjectName(j)}, ByteRange::All(), 1 << 20);
        ASSERT_TRUE(got.has_value()) << got.error();
        EXPECT_TRUE(*got ==
                    std::string(reinterpret_cast<const char*>(chunks[j].data()), chunks[j].size()));
      }
    } else {
      ASSERT_FALSE(put.has_value());
      EXPECT_EQ(put.error().code(), Code::kUnavailable) << put.error();
      for (uint64_t j = 0; j < shape.n; ++j) {
        EXPECT_FALSE(Has(there, {bucket, d.ObjectName(j)})) << "the body was gone: not run again";
      }
    }
  }
}

}  // namespace
}  // namespace oc::storage::test
