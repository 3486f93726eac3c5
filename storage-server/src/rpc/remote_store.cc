// RemoteStore: the Store interface over the storage RPC (ConnectRemoteStore in remote_store.h).
//
// Endpoints: each bucket lives on one server, chosen by XXH3-64 (seed 0) of its name modulo
// the number of endpoints, so every gateway with the same endpoint list agrees without
// coordination (changing the list moves buckets: it is a deployment decision). ListBuckets
// and Stats ask every server and merge.
//
// Connections: each call takes a connection from its endpoint's idle pool (checked alive
// first) or opens one (connect + Hello), uses it alone, and gives it back if the call ended
// cleanly; at most max_idle_connections wait per endpoint. A streamed writer or reader owns
// its connection until it ends; a reader dropped before its last byte closes the connection
// rather than draining an unknown amount.
//
// Descriptor calls (ProbeChunks, GetLayers, PutChunks) go to the bucket's server as one call
// each (wire.h kKv*): that server plans, reads and assembles, and with a data-plane target
// writes (or, for a PUT, pulls) the caller's memory with its own UCX data plane, so nothing
// of the payload passes through this process. Without a target the layer-major payload
// streams back in frames read straight into the body sink's staging buffers, and a PUT's
// chunk-major body streams to the server in data frames; TCP's flow control and the sink's
// bounded buffers are the backpressure.
//
// Failures: a broken connection is dropped and the call fails with kUnavailable. A call
// that only reads (and opening a writer, which creates nothing) is retried once on a fresh
// connection when it failed on a pooled one, since a server may have closed that idle
// connection meanwhile; mutations are never retried, because the server may have applied
// them before the connection broke.

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>

#include <fmt/core.h>
#include <xxhash.h>

#include "oc/common/log.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/codec.h"
#include "oc/storage/remote_store.h"
#include "rpc/client_conn.h"
#include "rpc/wire.h"
#include "stream_copy.h"

namespace oc::storage {

Status RemoteStoreOptions::Validate() const {
  if (endpoints.empty()) {
    return Status::InvalidArgument("endpoints", "at least one storage server is required");
  }
  for (const std::string& e : endpoints) {
    OC_ASSIGN_OR_RETURN(rpc::HostPort hp, rpc::ParseHostPort(e, "endpoints"));
    if (hp.port == 0) {
      return Status::InvalidArgument("endpoints", fmt::format("'{}' has port 0", e));
    }
  }
  if (secret.empty()) {
    return Status::InvalidArgument("secret", "the RPC shared secret (OC_RPC_SECRET) is required");
  }
  if (secret.size() > rpc::kMaxSecretBytes) {
    return Status::InvalidArgument("secret",
                                   fmt::format("longer than {} bytes", rpc::kMaxSecretBytes));
  }
  return Status::Ok();
}

namespace rpc {
namespace {

const Logger kLog{"remote_store"};

constexpr std::chrono::milliseconds kConnectTimeout{5'000};
// Generous: a call includes the server's store work (a synced commit, a large batch).
constexpr std::chrono::milliseconds kIoTimeout{120'000};

Status MalformedReply(Op op, const Status& decode) {
  return Status::Internal(
      fmt::format("malformed {} reply from storage server: {}", OpName(op), decode.ToString()));
}

// One storage server and its idle connections.
class Endpoint {
 public:
  Endpoint(HostPort address, std::string secret, uint32_t max_idle)
      : address_(std::move(address)), secret_(std::move(secret)), max_idle_(max_idle) {}

  const HostPort& address() const { return address_; }

  // A connection for one call; `reused` tells whether it came from the pool.
  Result<std::unique_ptr<ClientConn>> Acquire(uint64_t request_id, bool* reused) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!idle_.empty()) {
        std::unique_ptr<ClientConn> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->LooksAlive()) {
          *reused = true;
          return c;
        }
      }
    }
    *reused = false;
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> c,
                        ClientConn::Connect(address_, kConnectTimeout));
    c->set_io_timeout(kIoTimeout);
    OC_RETURN_IF_ERROR(c->Handshake(secret_, request_id));
    return c;
  }

  // Takes a connection back after a call; broken ones and those above the cap are closed.
  void Release(std::unique_ptr<ClientConn> c) {
    if (c == nullptr || !c->healthy()) {
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(std::move(c));
    }
  }

 private:
  const HostPort address_;
  const std::string secret_;
  const uint32_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ClientConn>> idle_ OC_GUARDED_BY(mu_);
};

// A connection checked out for one call; returned to its endpoint on destruction when
// the call left it in a clean state, closed otherwise.
class Lease {
 public:
  Lease() = default;
  Lease(Endpoint* endpoint, std::unique_ptr<ClientConn> conn)
      : endpoint_(endpoint), conn_(std::move(conn)) {}
  Lease(Lease&&) = default;
  Lease& operator=(Lease&& other) {
    Return();
    endpoint_ = other.endpoint_;
    conn_ = std::move(other.conn_);
    clean_ = other.clean_;
    return *this;
  }
  ~Lease() { Return(); }

  ClientConn* operator->() { return conn_.get(); }
  ClientConn& conn() { return *conn_; }
  explicit operator bool() const { return conn_ != nullptr; }
  // The call completed and the stream is at a frame boundary: reusable.
  void MarkClean() { clean_ = true; }
  void MarkDirty() { clean_ = false; }
  void Return() {
    if (conn_ != nullptr && endpoint_ != nullptr && clean_) {
      endpoint_->Release(std::move(conn_));
    }
    conn_.reset();
    clean_ = false;
  }

 private:
  Endpoint* endpoint_ = nullptr;
  std::unique_ptr<ClientConn> conn_;
  bool clean_ = false;
};

enum class Retry { kNo, kIfPooled };

// Reads the reply frame of call `rid`: the body of a frame (op, reply) or the error an
// error frame carries. Anything else breaks the connection.
Result<std::vector<std::byte>> ReadReply(ClientConn& conn, Op op, uint64_t rid) {
  FrameHeader h;
  std::vector<std::byte> body;
  OC_RETURN_IF_ERROR(conn.ReadFrame(&h, &body));
  if (h.request_id != rid || (h.flags & kFlagReply) == 0 || (h.op != op && h.op != Op::kError)) {
    conn.MarkBroken();
    return Status::Internal(
        fmt::format("storage server {} answered {} req={:016x} to {} req={:016x}", conn.peer(),
                    OpName(h.op), h.request_id, OpName(op), rid));
  }
  if (h.op == Op::kError) {
    Status st;
    if (Status d = DecodeBody(body, &st); !d.ok()) {
      conn.MarkBroken();
      return MalformedReply(op, d);
    }
    return st;
  }
  return body;
}

class RemoteWriter final : public ObjectWriter {
 public:
  RemoteWriter(Lease lease, uint64_t rid) : lease_(std::move(lease)), rid_(rid) {}
  ~RemoteWriter() override {
    if (lease_ && !spent_ && lease_->healthy()) {
      // Tell the server to discard what it has; it sends no reply, so the connection is
      // back at a frame boundary and reusable.
      if (lease_->WriteFrame(Op::kAbort, rid_, {}).ok()) {
        lease_.MarkClean();
      }
    }
  }

  Status Append(ByteSpan data) override {
    if (spent_ || !lease_) {
      return Status::FailedPrecondition(Subject::kNone, "writer already committed or failed");
    }
    while (!data.empty()) {
      const ByteSpan piece = data.first(std::min<size_t>(data.size(), kStreamChunkBytes));
      if (Status st = lease_->WriteFrame(Op::kData, rid_, piece); !st.ok()) {
        spent_ = true;
        return st;
      }
      data = data.subspan(piece.size());
    }
    return Status::Ok();
  }

  Result<ObjectMeta> Commit() override {
    if (spent_ || !lease_) {
      return Status::FailedPrecondition(Subject::kNone, "writer already committed or failed");
    }
    spent_ = true;
    OC_RETURN_IF_ERROR(lease_->WriteFrame(Op::kCommit, rid_, {}));
    Result<std::vector<std::byte>> body = ReadReply(lease_.conn(), Op::kCommit, rid_);
    if (lease_->healthy()) {
      lease_.MarkClean();  // a meta or an error reply: either way the call is over
    }
    if (!body.has_value()) {
      return std::move(body).error();
    }
    ObjectMeta meta;
    if (Status d = DecodeBody(*body, &meta); !d.ok()) {
      lease_.MarkDirty();
      return MalformedReply(Op::kCommit, d);
    }
    return meta;
  }

 private:
  Lease lease_;
  const uint64_t rid_;
  bool spent_ = false;
};

class RemoteReader final : public ObjectReader {
 public:
  RemoteReader(Lease lease, uint64_t rid, GetReply reply)
      : lease_(std::move(lease)), rid_(rid), reply_(std::move(reply)), remaining_(reply_.length) {
    if (remaining_ == 0) {
      lease_.MarkClean();
      lease_.Return();
    }
  }

  const ObjectMeta& meta() const override { return reply_.meta; }
  uint64_t offset() const override { return reply_.offset; }
  uint64_t length() const override { return reply_.length; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    if (remaining_ == 0 || out.empty()) {
      return uint64_t{0};
    }
    if (!lease_) {
      return Status::Unavailable("storage connection of this reader was lost");
    }
    if (frame_left_ == 0) {
      OC_RETURN_IF_ERROR(NextFrame());
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), frame_left_));
    if (Status st = lease_->ReadExact(out.first(n)); !st.ok()) {
      lease_.Return();
      return st;
    }
    frame_left_ -= n;
    remaining_ -= n;
    if (remaining_ == 0) {
      lease_.MarkClean();
      lease_.Return();
    }
    return uint64_t{n};
  }

 private:
  // Reads the next data frame's header (its bytes are then read straight into the
  // caller's buffers), or the error that ended the stream.
  Status NextFrame() {
    Result<FrameHeader> h = lease_->ReadHeader(kMaxFrameBodyBytes);
    if (!h.has_value()) {
      lease_.Return();
      return h.error();
    }
    if (h->request_id == rid_ && h->op == Op::kError) {
      std::vector<std::byte> body(h->body_length);
      OC_RETURN_IF_ERROR(lease_->ReadExact(body));
      Status st;
      if (Status d = DecodeBody(body, &st); !d.ok()) {
        lease_.Return();
        return MalformedReply(Op::kGet, d);
      }
      remaining_ = 0;  // the server ended the stream; the connection is at a boundary
      lease_.MarkClean();
      lease_.Return();
      return st;
    }
    if (h->request_id != rid_ || h->op != Op::kData || h->body_length == 0 ||
        h->body_length > remaining_ || h->body_length > kStreamChunkBytes) {
      lease_->MarkBroken();
      lease_.Return();
      return Status::Internal("storage server sent an unexpected frame in a Get stream");
    }
    frame_left_ = h->body_length;
    return Status::Ok();
  }

  Lease lease_;
  const uint64_t rid_;
  const GetReply reply_;
  uint64_t remaining_;
  uint64_t frame_left_ = 0;
};

class RemoteStore final : public Store {
 public:
  explicit RemoteStore(const RemoteStoreOptions& options) {
    std::random_device rd;
    next_rid_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    for (const std::string& e : options.endpoints) {
      HostPort hp = *ParseHostPort(e, "endpoints");  // checked by Validate()
      endpoints_.push_back(
          std::make_unique<Endpoint>(std::move(hp), options.secret, options.max_idle_connections));
    }
  }

  // --- Buckets ---
  Status CreateBucket(std::string_view bucket, std::string_view owner) override {
    return CallStatus(For(bucket), Op::kCreateBucket, Retry::kNo, bucket, owner);
  }
  Status DeleteBucket(std::string_view bucket) override {
    return CallStatus(For(bucket), Op::kDeleteBucket, Retry::kNo, bucket);
  }
  Result<BucketInfo> HeadBucket(std::string_view bucket) override {
    return CallValue<BucketInfo>(For(bucket), Op::kHeadBucket, Retry::kIfPooled, bucket);
  }
  Result<std::vector<BucketInfo>> ListBuckets() override {
    std::vector<BucketInfo> all;
    for (const auto& ep : endpoints_) {
      OC_ASSIGN_OR_RETURN(
          std::vector<BucketInfo> some,
          CallValue<std::vector<BucketInfo>>(*ep, Op::kListBuckets, Retry::kIfPooled));
      std::move(some.begin(), some.end(), std::back_inserter(all));
    }
    std::sort(all.begin(), all.end(),
              [](const BucketInfo& a, const BucketInfo& b) { return a.name < b.name; });
    return all;
  }

  // --- Objects ---
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& key,
                                            const PutOptions& options) override {
    return OpenWriter(For(key.bucket), Op::kPutBegin, key, options);
  }

  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& key, ByteRange range) override {
    const uint64_t rid = NextRid();
    OC_ASSIGN_OR_RETURN(auto call,
                        Call(For(key.bucket), Op::kGet, Retry::kIfPooled, rid, key, range));
    GetReply reply;
    if (Status d = DecodeBody(call.body, &reply); !d.ok()) {
      return MalformedReply(Op::kGet, d);
    }
    call.lease.MarkDirty();  // data frames follow: the reader owns the stream now
    return std::unique_ptr<ObjectReader>(
        new RemoteReader(std::move(call.lease), rid, std::move(reply)));
  }

  Result<ObjectMeta> Head(const ObjectKey& key) override {
    return CallValue<ObjectMeta>(For(key.bucket), Op::kHead, Retry::kIfPooled, key);
  }

  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view bucket, std::span<const std::string> names) override {
    OC_ASSIGN_OR_RETURN(auto metas,
                        CallValue<std::vector<std::optional<ObjectMeta>>>(
                            For(bucket), Op::kHeadMany, Retry::kIfPooled, bucket, names));
    if (metas.size() != names.size()) {
      return Status::Internal("storage server answered HeadMany with a wrong count");
    }
    return metas;
  }

  Status Delete(const ObjectKey& key) override {
    return CallStatus(For(key.bucket), Op::kDelete, Retry::kNo, key);
  }

  Result<ObjectMeta> Copy(const ObjectKey& src, const ObjectKey& dst,
                          const std::optional<PutOptions>& replace) override {
    Endpoint& from = For(src.bucket);
    Endpoint& to = For(dst.bucket);
    if (&from == &to) {
      return CallValue<ObjectMeta>(from, Op::kCopy, Retry::kNo, src, dst, replace);
    }
    return CopyAcross(src, dst, replace);
  }

  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override {
    return CallValue<ListResult>(For(bucket), Op::kList, Retry::kIfPooled, bucket, options);
  }

  // --- Multipart ---
  Result<std::string> CreateMultipartUpload(const ObjectKey& key,
                                            const PutOptions& options) override {
    return CallValue<std::string>(For(key.bucket), Op::kCreateUpload, Retry::kNo, key, options);
  }
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& key, std::string_view upload_id,
                                                   uint32_t part_number,
                                                   const PutOptions& options) override {
    return OpenWriter(For(key.bucket), Op::kUploadPartBegin, key, upload_id, part_number, options);
  }
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& key, std::string_view upload_id,
                                             std::span<const CompletedPart> parts) override {
    return CallValue<ObjectMeta>(For(key.bucket), Op::kCompleteUpload, Retry::kNo, key, upload_id,
                                 parts);
  }
  Status AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) override {
    return CallStatus(For(key.bucket), Op::kAbortUpload, Retry::kNo, key, upload_id);
  }
  Result<ListPartsResult> ListParts(const ObjectKey& key, std::string_view upload_id,
                                    uint32_t part_number_marker, uint32_t max_parts) override {
    return CallValue<ListPartsResult>(For(key.bucket), Op::kListParts, Retry::kIfPooled, key,
                                      upload_id, part_number_marker, max_parts);
  }
  Result<ListUploadsResult> ListMultipartUploads(std::string_view bucket,
                                                 const ListUploadsOptions& options) override {
    return CallValue<ListUploadsResult>(For(bucket), Op::kListUploads, Retry::kIfPooled, bucket,
                                        options);
  }

  // --- KV-cache descriptor calls (see the header comment) ---
  Result<KvProbeResult> ProbeChunks(std::string_view bucket,
                                    const descriptor::Descriptor& d) override {
    OC_ASSIGN_OR_RETURN(KvProbeResult r,
                        CallValue<KvProbeResult>(For(bucket), Op::kKvProbe, Retry::kIfPooled,
                                                 bucket, descriptor::EncodeBody(d),
                                                 std::string()));  // no principal: no target
    if (r.sizes.size() != d.num_chunks()) {
      return Status::Internal("storage server answered KvProbe with a wrong count");
    }
    return r;
  }
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override;
  // The data plane of the storage server that owns the bucket (descriptor requests of a
  // bucket go to that server, which writes the targets with its own data plane).
  Result<DataPlaneInfo> DataPlane(std::string_view bucket) override {
    return CallValue<DataPlaneInfo>(For(bucket), Op::kKvDataPlane, Retry::kIfPooled, bucket);
  }
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body) override;

  // --- Operations ---
  Result<StoreStats> Stats() override {
    // Figures of every server, summed by name.
    std::map<std::string, uint64_t> sums;
    for (const auto& ep : endpoints_) {
      OC_ASSIGN_OR_RETURN(StoreStats s, CallValue<StoreStats>(*ep, Op::kStats, Retry::kIfPooled));
      for (auto& [name, value] : s.figures) {
        sums[name] += value;
      }
    }
    StoreStats out;
    out.figures.assign(sums.begin(), sums.end());
    out.figures.emplace_back("remote_endpoints", endpoints_.size());
    return out;
  }

 private:
  struct CallResult {
    Lease lease;
    std::vector<std::byte> body;
  };

  Endpoint& For(std::string_view bucket) {
    const uint64_t h = XXH3_64bits(bucket.data(), bucket.size());
    return *endpoints_[h % endpoints_.size()];
  }

  uint64_t NextRid() { return next_rid_.fetch_add(1, std::memory_order_relaxed); }

  // Sends the request frame (op, rid, fields) and reads its reply; on success the lease is
  // still held so streamed calls can go on using it.
  template <typename... Fields>
  Result<CallResult> Call(Endpoint& ep, Op op, Retry retry, uint64_t rid, const Fields&... fields) {
    std::vector<std::byte> frame;
    EncodeFrame(&frame, op, 0, rid, fields...);
    const uint64_t limit = IsKvRequestOp(op) ? kMaxKvRequestBodyBytes : kMaxRequestBodyBytes;
    if (frame.size() - kHeaderBytes > limit) {
      return Status::InvalidArgument(
          "request", fmt::format("{} request of {} bytes exceeds the RPC limit of {}", OpName(op),
                                 frame.size() - kHeaderBytes, limit));
    }
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> conn, ep.Acquire(rid, &reused));
      Lease lease(&ep, std::move(conn));
      Status sent = lease->WriteAll(frame);
      Result<std::vector<std::byte>> body =
          sent.ok() ? ReadReply(lease.conn(), op, rid) : Result<std::vector<std::byte>>(sent);
      if (body.has_value()) {
        return CallResult{std::move(lease), std::move(*body)};
      }
      if (lease->healthy()) {
        lease.MarkClean();  // the server answered with an error: the call is over
        return std::move(body).error();
      }
      if (retry == Retry::kIfPooled && reused && attempt == 0) {
        kLog.Info("retrying on a fresh connection req={:016x} op={} error={}", rid, OpName(op),
                  body.error().ToString());
        continue;
      }
      kLog.Warn("call failed req={:016x} op={} error={}", rid, OpName(op), body.error().ToString());
      return std::move(body).error();
    }
  }

  template <typename... Fields>
  Status CallStatus(Endpoint& ep, Op op, Retry retry, const Fields&... fields) {
    OC_ASSIGN_OR_RETURN(CallResult r, Call(ep, op, retry, NextRid(), fields...));
    r.lease.MarkClean();
    if (Status d = DecodeBody(r.body); !d.ok()) {
      return MalformedReply(op, d);
    }
    return Status::Ok();
  }

  template <typename T, typename... Fields>
  Result<T> CallValue(Endpoint& ep, Op op, Retry retry, const Fields&... fields) {
    OC_ASSIGN_OR_RETURN(CallResult r, Call(ep, op, retry, NextRid(), fields...));
    r.lease.MarkClean();
    T value{};
    if (Status d = DecodeBody(r.body, &value); !d.ok()) {
      return MalformedReply(op, d);
    }
    return value;
  }

  template <typename... Fields>
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(Endpoint& ep, Op op, const Fields&... fields) {
    const uint64_t rid = NextRid();
    // Opening creates nothing on the server, so it may be retried like a read.
    OC_ASSIGN_OR_RETURN(CallResult r, Call(ep, op, Retry::kIfPooled, rid, fields...));
    if (Status d = DecodeBody(r.body); !d.ok()) {
      return MalformedReply(op, d);
    }
    return std::unique_ptr<ObjectWriter>(new RemoteWriter(std::move(r.lease), rid));
  }

  Result<ObjectMeta> CopyAcross(const ObjectKey& src, const ObjectKey& dst,
                                const std::optional<PutOptions>& replace);

  // Sends a descriptor call's request frame on a connection of the bucket's server: a
  // pooled one if it looks alive, else a new one.
  Result<Lease> SendKvRequest(std::string_view bucket, Op op, uint64_t rid,
                              const descriptor::Descriptor& d);

  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::atomic<uint64_t> next_rid_{0};
};

Result<Lease> RemoteStore::SendKvRequest(std::string_view bucket, Op op, uint64_t rid,
                                         const descriptor::Descriptor& d) {
  std::vector<std::byte> frame;
  EncodeFrame(&frame, op, 0, rid, bucket, descriptor::EncodeBody(d),
              d.target.has_value() ? d.target->principal : std::string());
  if (frame.size() - kHeaderBytes > kMaxKvRequestBodyBytes) {
    return Status(Code::kInvalidArgument, Subject::kDescriptor, "body",
                  "descriptor too large for the storage RPC");
  }
  Endpoint& ep = For(bucket);
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> conn, ep.Acquire(rid, &reused));
    Lease lease(&ep, std::move(conn));
    Status sent = lease->WriteAll(frame);
    if (sent.ok()) {
      return lease;
    }
    // Nothing reached the server's store if the request frame did not go out whole.
    if (!(reused && attempt == 0)) {
      return sent;
    }
  }
}

// The reply frames of one descriptor GET (wire.h, kKvGetLayers): kKvPlan, then without a
// target kKvData/kKvLayerReady, then the report or an error. Once the plan has arrived the
// body sink is finished exactly once, whatever happens (Store::GetLayers' contract).
Result<KvGetReport> RemoteStore::GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                           LayerSink* body_sink,
                                           const std::function<Status(const KvPlan&)>& on_plan) {
  const bool to_target = d.target.has_value();
  if (!to_target && body_sink == nullptr) {
    return Status::InvalidArgument("body_sink", "a descriptor without a target needs a body sink");
  }
  const uint64_t rid = NextRid();
  OC_ASSIGN_OR_RETURN(Lease lease, SendKvRequest(bucket, Op::kKvGetLayers, rid, d));
  std::optional<KvPlan> plan;
  uint64_t next = 0;  // body bytes received so far
  // Ends the call after the plan: the sink learns `st` (unless the transfer already failed).
  auto fail = [&](Status st, bool broken) -> Status {
    if (broken) {
      lease->MarkBroken();
      kLog.Warn("descriptor get failed req={:016x} error={}", rid, st.ToString());
    } else {
      lease.MarkClean();
    }
    if (plan.has_value() && body_sink != nullptr) {
      (void)body_sink->Finish(st);
    }
    return st;
  };
  auto protocol = [&](std::string_view what) {
    return fail(Status::Internal(fmt::format("storage server {} broke a descriptor get: {}",
                                             lease->peer(), what)),
                true);
  };
  for (;;) {
    Result<FrameHeader> h = lease->ReadHeader(kMaxFrameBodyBytes);
    if (!h.has_value()) {
      return fail(h.error(), true);
    }
    if (h->request_id != rid || (h->flags & kFlagReply) == 0) {
      return protocol("a frame of another call");
    }
    if (h->op == Op::kKvData && plan.has_value() && !to_target) {
      // u64 offset, then bytes read straight into the sink's staging buffers.
      std::array<std::byte, 8> offset_bytes;
      if (h->body_length <= offset_bytes.size() ||
          h->body_length - offset_bytes.size() > kStreamChunkBytes) {
        return protocol("a data frame of a bad size");
      }
      if (Status st = lease->ReadExact(offset_bytes); !st.ok()) {
        return fail(st, true);
      }
      uint64_t left = h->body_length - offset_bytes.size();
      if (GetLittleEndian64(offset_bytes.data()) != next || left > plan->payload_bytes - next) {
        return protocol("a data frame out of order or past the payload");
      }
      while (left > 0) {
        Result<StagingBuffer> buffer = body_sink->AcquireBuffer();
        if (!buffer.has_value()) {
          return fail(buffer.error(), true);  // the caller's side failed: drop the stream
        }
        const uint64_t n = std::min<uint64_t>(left, buffer->bytes().size());
        if (Status st = lease->ReadExact(buffer->bytes().first(n)); !st.ok()) {
          return fail(st, true);
        }
        if (Status st = body_sink->Write(next, std::move(*buffer), n); !st.ok()) {
          return fail(st, true);
        }
        next += n;
        left -= n;
      }
      continue;
    }
    // Every other frame is small: read it whole.
    if (h->body_length > kMaxRequestBodyBytes) {
      return protocol("an oversized control frame");
    }
    std::vector<std::byte> body(h->body_length);
    if (Status st = lease->ReadExact(body); !st.ok()) {
      return fail(st, true);
    }
    if (h->op == Op::kError) {
      Status remote;
      if (Status dec = DecodeBody(body, &remote); !dec.ok()) {
        return protocol(dec.ToString());
      }
      return fail(remote, false);
    }
    if (h->op == Op::kKvPlan && !plan.has_value()) {
      KvPlan p;
      if (Status dec = DecodeBody(body, &p); !dec.ok()) {
        return protocol(dec.ToString());
      }
      // The plan must describe this descriptor: M·L·S bytes, M <= N.
      uint64_t want = 0;
      if (p.num_chunks != d.num_chunks() ||
          __builtin_mul_overflow(p.matched * d.num_layers, d.layer_bytes, &want) ||
          p.payload_bytes != want) {
        return protocol("a plan that does not match the descriptor");
      }
      plan = std::move(p);
      if (on_plan) {
        if (Status st = on_plan(*plan); !st.ok()) {
          // The server is already delivering: closing the connection stops it.
          return fail(st, true);
        }
      }
      continue;
    }
    if (h->op == Op::kKvLayerReady && plan.has_value() && !to_target) {
      uint32_t layer = 0;
      if (Status dec = DecodeBody(body, &layer); !dec.ok() || layer >= d.num_layers) {
        return protocol("a bad layer-ready frame");
      }
      if (Status st = body_sink->LayerReady(layer); !st.ok()) {
        return fail(st, true);
      }
      continue;
    }
    if (h->op == Op::kKvGetLayers && plan.has_value()) {
      KvGetReport report;
      if (Status dec = DecodeBody(body, &report); !dec.ok()) {
        return protocol(dec.ToString());
      }
      if (!to_target && next != plan->payload_bytes) {
        return protocol("the payload ended early");
      }
      lease.MarkClean();
      if (!to_target) {
        OC_RETURN_IF_ERROR(body_sink->Finish(Status::Ok()));
      }
      return report;
    }
    return protocol(fmt::format("an unexpected {} frame", OpName(h->op)));
  }
}

// A descriptor PUT (wire.h, kKvPutChunks): the request, then without a target the body in
// data frames, then kCommit (or kAbort if the body failed), then one reply.
Result<KvPutReport> RemoteStore::PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                           ChunkSource* body) {
  const bool from_target = d.target.has_value();
  if (!from_target && body == nullptr) {
    return Status::InvalidArgument("body", "a descriptor without a target needs a body");
  }
  const uint64_t rid = NextRid();
  OC_ASSIGN_OR_RETURN(Lease lease, SendKvRequest(bucket, Op::kKvPutChunks, rid, d));
  Status source_error;
  if (!from_target) {
    std::vector<std::byte> piece(kStreamChunkBytes);
    for (;;) {
      Result<uint64_t> n = body->Read(MutableByteSpan(piece));
      if (!n.has_value()) {
        source_error = n.error();
        break;
      }
      if (*n == 0) {
        break;
      }
      if (*n > piece.size()) {
        source_error = Status::Internal("chunk source returned a bad length");
        break;
      }
      OC_RETURN_IF_ERROR(lease->WriteFrame(Op::kData, rid, ByteSpan(piece).first(*n)));
    }
  }
  OC_RETURN_IF_ERROR(lease->WriteFrame(source_error.ok() ? Op::kCommit : Op::kAbort, rid, {}));
  Result<std::vector<std::byte>> reply = ReadReply(lease.conn(), Op::kKvPutChunks, rid);
  if (lease->healthy()) {
    lease.MarkClean();
  }
  if (!source_error.ok()) {
    return source_error;  // the server's answer to kAbort only confirms it
  }
  if (!reply.has_value()) {
    return std::move(reply).error();
  }
  KvPutReport report;
  if (Status dec = DecodeBody(*reply, &report); !dec.ok()) {
    lease.MarkDirty();
    return MalformedReply(Op::kKvPutChunks, dec);
  }
  return report;
}

Result<ObjectMeta> RemoteStore::CopyAcross(const ObjectKey& src, const ObjectKey& dst,
                                           const std::optional<PutOptions>& replace) {
  // The buckets live on different servers: stream src through this process into dst, one
  // piece at a time. The reader pins one version of src, as a server-side copy would.
  return StreamCopy(*this, src, *this, dst, replace, kStreamChunkBytes);
}

}  // namespace
}  // namespace rpc

Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<Store>(new rpc::RemoteStore(options));
}

}  // namespace oc::storage
