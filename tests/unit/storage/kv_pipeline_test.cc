// One descriptor GET on several cores (storage-server/src/kv/layer_pipeline.h): with shared
// assembly workers, reads of later units run while earlier ones are handed to the sink, and
// the sink still sees every layer's bytes before its LayerReady, layers in order, at most K
// layers read ahead, nothing after a failure, and every buffer and pin back at the end.
//
// The source is an in-memory SliceSource whose reads wait at a gate until two of them run at
// once (or a generous timeout passes, recorded as "never overlapped"), so overlap is forced by
// behaviour, not by timing: a sequential assembler never has two reads in flight and fails.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kv/kv_engine.h"
#include "kv/layer_pipeline.h"
#include "kv/slice_source.h"
#include "kv_test_util.h"
#include "oc/common/executor.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"

namespace oc::storage {
namespace {

using kvtest::Shape;

constexpr char kBucketName[] = "pipe";

// Announced layers, shared by the sink (writer) and the source (reader of the bound).
struct Progress {
  std::atomic<uint32_t> announced{0};
};

// An in-memory SliceSource over kv_l2td chunks. Every read records the layer it serves (from
// its object offset) against the layers announced so far; reads wait at the gate until
// `gate` of them are in flight at once (once; a 5 s timeout opens it and records a miss).
class GateSource final : public kv::SliceSource {
 public:
  GateSource(const Shape& shape, Progress& progress, uint32_t gate)
      : shape_(shape), progress_(progress), gate_(gate) {}

  void Add(std::string name, std::vector<std::byte> bytes) { objects_[name] = std::move(bytes); }
  // Reads of this object fail as "changed" (the chunk vanished mid-request) for layer `layer`.
  void FailAt(std::string name, uint32_t layer) {
    fail_name_ = std::move(name);
    fail_layer_ = layer;
  }
  void set_pinned(bool pinned) { pinned_ = pinned; }

  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view, std::span<const std::string> names) override {
    std::vector<std::optional<ObjectMeta>> out;
    for (const std::string& n : names) {
      auto it = objects_.find(n);
      if (it == objects_.end()) {
        out.push_back(std::nullopt);
        continue;
      }
      ObjectMeta m;
      m.size = it->second.size();
      m.chunk = ChunkShape{shape_.layout, shape_.layers, shape_.s};
      out.push_back(m);
    }
    return out;
  }

  Result<std::vector<kv::SliceStatus>> ReadSlices(std::string_view,
                                                  std::span<const kv::SliceRead> slices) override {
    std::vector<kv::SliceStatus> out;
    Enter(slices.empty() ? 0 : slices.front().offset);
    for (const kv::SliceRead& r : slices) {
      out.push_back(Lookup(r.name, r.offset, r.dest.size()));
      if (out.back() == kv::SliceStatus::kOk) {
        std::memcpy(r.dest.data(), objects_.at(r.name).data() + r.offset, r.dest.size());
      }
    }
    Leave();
    return out;
  }

  bool SupportsPinnedSlices() const override { return pinned_; }
  Result<std::vector<kv::SliceStatus>> PinSlices(std::string_view,
                                                 std::span<const kv::SlicePin> slices,
                                                 std::vector<kv::PinnedPiece>* pieces) override {
    std::vector<kv::SliceStatus> out;
    Enter(slices.empty() ? 0 : slices.front().offset);
    for (size_t i = 0; i < slices.size(); ++i) {
      const kv::SlicePin& p = slices[i];
      const std::string name(p.name);
      out.push_back(Lookup(name, p.offset, p.length));
      if (out.back() == kv::SliceStatus::kOk) {
        holds_.fetch_add(1);
        std::shared_ptr<const void> hold(nullptr, [this](const void*) { holds_.fetch_sub(1); });
        pieces->push_back(kv::PinnedPiece{
            i, 0, ByteSpan(objects_.at(name).data() + p.offset, p.length), std::move(hold)});
      }
    }
    Leave();
    return out;
  }

  Result<std::unique_ptr<ObjectGroupWriter>> PutGroup(std::string_view) override {
    return Status::Unimplemented("read-only test source");
  }

  uint32_t peak_concurrent() const { return peak_; }
  bool gate_timed_out() const { return gate_timed_out_; }
  // Reads that started for a layer K or more past the first layer not yet announced.
  uint32_t reads_past_bound(uint32_t k) const { return past_bound_(k); }
  int in_flight() const { return in_flight_; }
  int holds() const { return holds_.load(); }

 private:
  kv::SliceStatus Lookup(const std::string& name, uint64_t offset, uint64_t length) {
    if (name == fail_name_ && offset / shape_.s == fail_layer_) {
      return kv::SliceStatus::kMissing;
    }
    auto it = objects_.find(name);
    if (it == objects_.end()) {
      return kv::SliceStatus::kMissing;
    }
    return offset + length <= it->second.size() ? kv::SliceStatus::kOk : kv::SliceStatus::kShort;
  }

  void Enter(uint64_t offset) {
    std::unique_lock<std::mutex> lock(mu_);
    started_layers_.push_back(
        {static_cast<uint32_t>(offset / shape_.s), progress_.announced.load()});
    ++in_flight_;
    peak_ = std::max<uint32_t>(peak_, static_cast<uint32_t>(in_flight_));
    if (!gate_open_ && static_cast<uint32_t>(in_flight_) >= gate_) {
      gate_open_ = true;
      cv_.notify_all();
    }
    if (!gate_open_ && !cv_.wait_for(lock, std::chrono::seconds(5), [&] { return gate_open_; })) {
      gate_open_ = true;  // never two at once: open it so the request ends, and say so
      gate_timed_out_ = true;
    }
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  uint32_t past_bound_(uint32_t k) const {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t n = 0;
    for (const auto& [layer, announced] : started_layers_) {
      n += layer >= announced + k ? 1 : 0;
    }
    return n;
  }

  const Shape shape_;
  Progress& progress_;
  const uint32_t gate_;
  std::map<std::string, std::vector<std::byte>> objects_;
  std::string fail_name_;
  uint32_t fail_layer_ = 0;
  bool pinned_ = false;
  std::atomic<int> holds_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;                                          // guarded by mu_
  uint32_t peak_ = 0;                                          // guarded by mu_
  bool gate_open_ = false;                                     // guarded by mu_
  bool gate_timed_out_ = false;                                // guarded by mu_
  std::vector<std::pair<uint32_t, uint32_t>> started_layers_;  // guarded by mu_: (layer, announced)
};

// A target-style sink (offsets as the descriptor's N gives them, layer-major): checks that
// LayerReady(l) comes in order and only once every byte of layer l was written, and that no
// write lands in a layer already announced or after Finish.
class CheckingSink final : public LayerSink {
 public:
  CheckingSink(const Shape& shape, Progress& progress, uint32_t buffers, uint64_t buffer_bytes,
               bool pinned)
      : shape_(shape),
        progress_(progress),
        pool_(buffers, buffer_bytes),
        pinned_(pinned),
        target_(shape.n * shape.layers * shape.s),
        written_(shape.layers, 0) {}

  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(kvtest::kWait); }
  Result<StagingBuffer> TryAcquireBuffer() override {
    Result<StagingBuffer> b = pool_.Acquire(std::chrono::milliseconds(0));
    return b.has_value() ? std::move(*b) : StagingBuffer();
  }
  Status Write(uint64_t dest, StagingBuffer buffer, uint64_t length) override {
    if (!pool_.Owns(buffer) || length == 0 || length > buffer.bytes().size()) {
      return Status::InvalidArgument("", "bad buffer or length");
    }
    return Land(dest, ByteSpan(buffer.bytes().data(), length));
  }
  bool accepts_pinned() const override { return pinned_; }
  bool writes_in_place() const override { return pinned_; }
  Status WritePinned(uint64_t dest, ByteSpan bytes, std::shared_ptr<const void> hold) override {
    (void)hold;
    return Land(dest, bytes);
  }
  Status LayerReady(uint32_t layer) override {
    EXPECT_FALSE(finished_);
    if (layer != layers_.size()) {
      bad_order_ = true;
    }
    if (written_[layer] != shape_.n * shape_.s) {
      early_notice_ = true;
    }
    layers_.push_back(layer);
    progress_.announced.store(static_cast<uint32_t>(layers_.size()));
    return Status::Ok();
  }
  Status Finish(const Status& final) override {
    EXPECT_FALSE(finished_);
    finished_ = true;
    final_ = final;
    return final;
  }

  const std::vector<std::byte>& target() const { return target_; }
  const std::vector<uint32_t>& layers() const { return layers_; }
  bool bad_order() const { return bad_order_; }
  bool early_notice() const { return early_notice_; }
  bool late_write() const { return late_write_; }
  bool write_after_finish() const { return write_after_finish_; }
  bool finished() const { return finished_; }
  const Status& final_status() const { return final_; }
  uint32_t free_buffers() const { return pool_.free_count(); }

 private:
  Status Land(uint64_t dest, ByteSpan bytes) {
    if (finished_) {
      write_after_finish_ = true;
    }
    if (dest + bytes.size() > target_.size()) {
      return Status::OutOfRange("outside the target");
    }
    std::memcpy(target_.data() + dest, bytes.data(), bytes.size());
    const uint64_t layer_bytes = shape_.n * shape_.s;
    for (uint64_t at = dest; at < dest + bytes.size();) {
      const uint32_t layer = static_cast<uint32_t>(at / layer_bytes);
      const uint64_t end = std::min<uint64_t>(dest + bytes.size(), (layer + 1) * layer_bytes);
      if (layer < layers_.size()) {
        late_write_ = true;  // into a layer the client was told is complete
      }
      written_[layer] += end - at;
      at = end;
    }
    return Status::Ok();
  }

  const Shape shape_;
  Progress& progress_;
  HeapBufferPool pool_;
  const bool pinned_;
  std::vector<std::byte> target_;
  std::vector<uint64_t> written_;  // bytes written per layer
  std::vector<uint32_t> layers_;
  bool bad_order_ = false;
  bool early_notice_ = false;
  bool late_write_ = false;
  bool write_after_finish_ = false;
  bool finished_ = false;
  Status final_;
};

struct Request {
  Shape shape;
  descriptor::Descriptor d;
  std::vector<std::vector<std::byte>> chunks;
};

Request MakeRequestFor(GateSource& source, const Shape& shape, uint64_t seed) {
  Request s{shape, kvtest::MakeDescriptor(shape, /*compact=*/false, seed), {}};
  for (uint64_t j = 0; j < shape.n; ++j) {
    s.chunks.push_back(kvtest::ChunkBytes(seed, j, shape));
    source.Add(s.d.ObjectName(j), s.chunks.back());
  }
  return s;
}

BoundedExecutor::Options Workers(uint32_t threads) {
  BoundedExecutor::Options o;
  o.threads = threads;
  o.max_queued = 1 << 12;
  o.field = "test.workers";
  return o;
}

// Layerwise, staging and pinned, K = 1 and 2: the reads overlap (two in flight at once), the
// target is byte-exact, every layer is announced in order after its last byte, no read runs
// K layers past the first unannounced one, the report's peak says the same, and every
// buffer and pin is back.
TEST(KvPipeline, ReadsOverlapWhileLayersStayOrderedAndBounded) {
  struct Row {
    bool pinned;
    uint32_t k;
    uint64_t buffer_bytes;  // 4 KiB: a 16 KiB layer is 4 units, read side by side
  };
  for (const Row& row : {Row{false, 2, 16 << 10}, Row{false, 1, 4 << 10}, Row{true, 2, 16 << 10},
                         Row{true, 3, 4 << 10}}) {
    SCOPED_TRACE(std::string(row.pinned ? "pinned" : "staging") + " K=" + std::to_string(row.k) +
                 " buffer=" + std::to_string(row.buffer_bytes));
    const Shape shape{4, 12, 4 << 10, descriptor::StoredLayout::kL2TD};
    Progress progress;
    GateSource source(shape, progress, /*gate=*/2);
    source.set_pinned(row.pinned);
    Request s = MakeRequestFor(source, shape, 7);
    Result<kv::PlanResult> plan = kv::PlanRequest(source, kBucketName, s.d, /*threshold=*/1);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    ASSERT_EQ(plan->plan.mode, descriptor::ServeMode::kLayerwise);
    CheckingSink sink(shape, progress, /*buffers=*/8, row.buffer_bytes, row.pinned);
    BoundedExecutor workers(Workers(3));
    kv::AssembleOptions options;
    options.workers = &workers;
    options.layers_in_flight = row.k;
    options.zero_copy_min_bytes = 0;
    Result<KvGetReport> report =
        kv::Assemble(source, kBucketName, s.d, *plan, sink, options, kv::Clock::now());
    ASSERT_TRUE(report.has_value()) << report.error();

    EXPECT_FALSE(source.gate_timed_out()) << "no two reads were ever in flight at once";
    EXPECT_GE(source.peak_concurrent(), 2u);
    std::vector<std::byte> want(sink.target().size());
    kvtest::OraclePayload(s.chunks, shape, descriptor::Delivery::kLayerMajor, shape.n, shape.n,
                          want);
    EXPECT_TRUE(sink.target() == want) << "target not byte-exact";
    std::vector<uint32_t> order(shape.layers);
    for (uint32_t l = 0; l < shape.layers; ++l) {
      order[l] = l;
    }
    EXPECT_EQ(sink.layers(), order);
    EXPECT_FALSE(sink.bad_order());
    EXPECT_FALSE(sink.early_notice()) << "a layer was announced before all its bytes";
    EXPECT_FALSE(sink.late_write()) << "bytes landed in a layer already announced";
    EXPECT_EQ(source.reads_past_bound(row.k), 0u) << "read ahead past K layers";
    EXPECT_LE(report->peak_layers_ahead, row.k);
    EXPECT_LE(report->peak_bytes_ahead, uint64_t{row.k} * shape.n * shape.s);
    EXPECT_GT(report->worker_reads, 0u);
    EXPECT_EQ(report->layers_notified, shape.layers);
    EXPECT_EQ(sink.free_buffers(), 8u);
    EXPECT_EQ(source.holds(), 0);
    EXPECT_EQ(source.in_flight(), 0);
  }
}

// A chunk that vanishes under the request at layer 5, while later layers are being read:
// the request fails naming the chunk, layers 0-4 were announced and nothing after, no write
// reached the target after Finish, and no read or buffer is left behind.
TEST(KvPipeline, AFailedReadEndsTheRequestWithNothingWrittenAfterIt) {
  for (const bool pinned : {false, true}) {
    SCOPED_TRACE(pinned ? "pinned" : "staging");
    const Shape shape{4, 12, 4 << 10, descriptor::StoredLayout::kL2TD};
    Progress progress;
    GateSource source(shape, progress, /*gate=*/2);
    source.set_pinned(pinned);
    Request s = MakeRequestFor(source, shape, 11);
    source.FailAt(s.d.ObjectName(2), 5);
    Result<kv::PlanResult> plan = kv::PlanRequest(source, kBucketName, s.d, /*threshold=*/1);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    CheckingSink sink(shape, progress, /*buffers=*/8, 4 << 10, pinned);
    BoundedExecutor workers(Workers(3));
    kv::AssembleOptions options;
    options.workers = &workers;
    options.layers_in_flight = 3;
    options.zero_copy_min_bytes = 0;
    Result<KvGetReport> report =
        kv::Assemble(source, kBucketName, s.d, *plan, sink, options, kv::Clock::now());
    ASSERT_FALSE(report.has_value());
    EXPECT_EQ(report.error().code(), Code::kFailedPrecondition) << report.error();
    EXPECT_NE(report.error().message().find(s.d.ObjectName(2)), std::string::npos);
    EXPECT_TRUE(sink.finished());
    EXPECT_FALSE(sink.final_status().ok());
    EXPECT_EQ(sink.layers(), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
    EXPECT_FALSE(sink.write_after_finish());
    EXPECT_FALSE(sink.late_write());
    EXPECT_EQ(sink.free_buffers(), 8u);
    EXPECT_EQ(source.holds(), 0);
    EXPECT_EQ(source.in_flight(), 0);
  }
}

// A staging buffer lent by a pool that ends with its request (an HTTP body sink's): a read that
// fails on a worker leaves the buffer in its unit, and the worker's task may hold the last
// reference to the unit until after the request returned. The buffer must be back before the
// request returns, on its thread (a server crashed in StagingBuffer::Reset on a freed pool).
// Deterministic: the worker's copy of the read function blocks as the task is dropped (GCC
// drops a closure's captures last to first, so the read function before the unit) until the
// test has closed the pool.
TEST(KvPipeline, AFailedUnitsBufferIsBackBeforeTheRequestReturns) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    const std::thread::id request_thread = std::this_thread::get_id();
  };
  struct FailingRead {
    std::shared_ptr<Gate> gate;
    Status operator()(kv::PipelineUnit&) const { return Status::Unavailable("the read failed"); }
    ~FailingRead() {
      if (gate != nullptr && std::this_thread::get_id() != gate->request_thread) {
        std::unique_lock lock(gate->mu);
        gate->cv.wait_for(lock, std::chrono::seconds(10), [&] { return gate->open; });
      }
    }
  };
  struct ClosingPool final : StagingBuffer::Owner {
    void Release(uint32_t) noexcept override {
      ++released;
      late = late || closed;
    }
    std::atomic<int> released{0};
    std::atomic<bool> closed{false};
    std::atomic<bool> late{false};
  };
  struct NoSink final : LayerSink {
    uint64_t buffer_bytes() const override { return 4096; }
    Result<StagingBuffer> AcquireBuffer() override { return Status::Unavailable("none here"); }
    Status Write(uint64_t, StagingBuffer, uint64_t) override {
      ADD_FAILURE() << "a failed unit was written";
      return Status::Ok();
    }
    Status LayerReady(uint32_t) override { return Status::Ok(); }
    Status Finish(const Status& final) override { return final; }
  };

  auto gate = std::make_shared<Gate>();
  ClosingPool pool;
  NoSink sink;
  std::vector<std::byte> memory(4096);
  {
    BoundedExecutor workers(Workers(1));
    KvGetReport report;
    kv::LayerPipeline::Options options;
    options.workers = &workers;
    options.layer_bytes = memory.size();
    {
      kv::LayerPipeline pipeline(sink, report, options, FailingRead{gate});
      auto unit = std::make_unique<kv::PipelineUnit>();
      unit->bytes = memory.size();
      unit->fill = memory.size();
      unit->buffer = StagingBuffer(&pool, 0, MutableByteSpan(memory.data(), memory.size()));
      ASSERT_TRUE(pipeline.Push(std::move(unit)).ok());
      EXPECT_EQ(pipeline.Drain().code(), Code::kUnavailable);
    }
    EXPECT_EQ(pool.released.load(), 1) << "the buffer was not back when the request returned";
    pool.closed = true;  // the sink and its pool end with the request
    {
      std::lock_guard lock(gate->mu);
      gate->open = true;
    }
    gate->cv.notify_all();
  }  // the worker has dropped its task
  EXPECT_EQ(pool.released.load(), 1);
  EXPECT_FALSE(pool.late.load()) << "the buffer went back to a pool that was gone";
}

// Six GETs at once through two shared workers, each with its own body sink but all drawing
// staging from one small pool (as UCX requests share the data plane's): every one completes
// byte-exact, none waits out the pool's timeout holding buffers another needs.
TEST(KvPipeline, ConcurrentRequestsShareWorkersAndOnePoolWithoutStalling) {
  const Shape shape{6, 8, 4 << 10, descriptor::StoredLayout::kL2TD};
  Progress progress;
  GateSource source(shape, progress, /*gate=*/1);
  Request s = MakeRequestFor(source, shape, 5);
  Result<kv::PlanResult> plan = kv::PlanRequest(source, kBucketName, s.d, /*threshold=*/1);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  HeapBufferPool shared(3, 8 << 10);

  // A body sink over the shared pool: offsets must increase without gaps.
  class PoolSink final : public LayerSink {
   public:
    explicit PoolSink(HeapBufferPool& pool) : pool_(pool) {}
    uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
    Result<StagingBuffer> AcquireBuffer() override {
      return pool_.Acquire(std::chrono::milliseconds(10'000));
    }
    Result<StagingBuffer> TryAcquireBuffer() override {
      Result<StagingBuffer> b = pool_.Acquire(std::chrono::milliseconds(0));
      return b.has_value() ? std::move(*b) : StagingBuffer();
    }
    Status Write(uint64_t dest, StagingBuffer buffer, uint64_t length) override {
      if (dest != body.size()) {
        return Status::OutOfRange("gap");
      }
      body.insert(body.end(), buffer.bytes().begin(), buffer.bytes().begin() + length);
      return Status::Ok();
    }
    Status LayerReady(uint32_t) override { return Status::Ok(); }
    Status Finish(const Status& final) override { return final; }
    std::vector<std::byte> body;

   private:
    HeapBufferPool& pool_;
  };

  BoundedExecutor workers(Workers(2));
  std::vector<std::byte> want(shape.n * shape.layers * shape.s);
  kvtest::OraclePayload(s.chunks, shape, descriptor::Delivery::kLayerMajor, shape.n, shape.n, want);
  constexpr int kRequests = 6;
  std::vector<std::unique_ptr<PoolSink>> sinks;
  std::vector<Status> results(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    sinks.push_back(std::make_unique<PoolSink>(shared));
  }
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      kv::AssembleOptions options;
      options.dense = true;
      options.workers = &workers;
      options.layers_in_flight = 4;
      results[i] =
          kv::Assemble(source, kBucketName, s.d, *plan, *sinks[i], options, kv::Clock::now())
              .status();
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  for (int i = 0; i < kRequests; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(results[i].ok()) << results[i];
    EXPECT_TRUE(sinks[i]->body == want);
  }
  EXPECT_EQ(shared.free_count(), 3u);
}

}  // namespace
}  // namespace oc::storage
