// Pacing of layerwise descriptor GETs (src/kv/pacing.h): real RocksDB in a temp dir, the real
// layer assembler, the real scheduler and pacer, and an injected ManualClock. A recording sink
// timestamps every Write() with the clock; the test checks bytes per time window against
// B * window + one layer payload. Nothing depends on wall time: the driver advances the clock only
// while every request is blocked waiting for its next dispatch.

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <thread>

#include "kv/kv_engine.h"
#include "kv/pacing.h"
#include "kv_test_util.h"
#include "oc/sched/grant.h"
#include "oc/sched/options.h"

namespace oc::storage::kvtest {
namespace {

using descriptor::ServeMode;
using sched::Time;

constexpr uint64_t kLayerwiseAlways = 1;
constexpr uint64_t kChunkwiseAlways = ~0ull;

// Bytes written at a clock time, by any request.
struct Event {
  Time at;
  uint64_t bytes;
};

class EventLog {
 public:
  void Add(Time at, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({at, bytes});
  }
  std::vector<Event> Sorted() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Event> e = events_;
    std::stable_sort(e.begin(), e.end(),
                     [](const Event& a, const Event& b) { return a.at < b.at; });
    return e;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

// A body sink that records (clock time, bytes) for every Write and the order of LayerReady.
class RecordingSink final : public LayerSink {
 public:
  RecordingSink(const sched::Clock& clock, EventLog& log)
      : clock_(clock), log_(log), pool_(2, 64 << 10) {}
  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(kWait); }
  Status Write(uint64_t, StagingBuffer buffer, uint64_t length) override {
    if (!pool_.Owns(buffer) || length == 0 || length > buffer.bytes().size()) {
      return Status::InvalidArgument("", "bad buffer or length");
    }
    log_.Add(clock_.Now(), length);
    bytes_ += length;
    return Status::Ok();
  }
  Status LayerReady(uint32_t layer) override {
    layers_.push_back(layer);
    return Status::Ok();
  }
  Status Finish(const Status& final) override {
    final_ = final;
    return final;
  }

  uint64_t bytes() const { return bytes_; }
  const std::vector<uint32_t>& layers() const { return layers_; }
  size_t layers_ready() const { return layers_.size(); }
  const Status& final_status() const { return final_; }

 private:
  const sched::Clock& clock_;
  EventLog& log_;
  HeapBufferPool pool_;
  uint64_t bytes_ = 0;
  std::vector<uint32_t> layers_;
  Status final_;
};

// The largest excess of bytes over B * window among all windows [t_i, t_j] spanned by events.
double WorstExcess(const std::vector<Event>& events, double cap_bytes_per_sec) {
  double worst = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    double sum = 0;
    for (size_t j = i; j < events.size(); ++j) {
      sum += static_cast<double>(events[j].bytes);
      const double window = static_cast<double>((events[j].at - events[i].at).count()) * 1e-9;
      worst = std::max(worst, sum - cap_bytes_per_sec * window);
    }
  }
  return worst;
}

class KvPacingTest : public KvStoreTest {
 protected:
  Descriptor Stored(const Shape& s, uint64_t seed, std::optional<uint64_t> compute_us) {
    Descriptor d = MakeDescriptor(s, /*compact=*/true, seed);
    d.compute_window_us = compute_us;
    for (uint64_t j = 0; j < s.n; ++j) {
      EXPECT_TRUE(StoreChunk(*store_, d, j, ChunkBytes(seed, j, s)).ok());
    }
    return d;
  }
};

struct Req {
  Shape shape;
  uint64_t compute_us;
};

// One request's delivery: the real assembler into a RecordingSink, paced by `pacer` (may be null).
struct Running {
  Descriptor d;
  kv::PlanResult plan;
  std::unique_ptr<RecordingSink> sink;
  std::unique_ptr<kv::RequestPacer> pacer;
  Status result;
  std::thread thread;
};

// Drives the scheduler by hand: dispatch while anything is dispatchable, advance the clock on
// kWait, only while every request is blocked. `on_step` runs after each quiescent point.
void Drive(kv::PacingService& service, sched::ManualClock& clock,
           const std::function<void()>& on_step = {}) {
  int idle = 0;
  for (int steps = 0; steps < 1'000'000; ++steps) {
    service.WaitQuiescent();
    if (on_step) {
      on_step();
    }
    if (service.active() == 0) {
      return;
    }
    sched::NextStep step = service.DispatchOnce();
    if (step.kind == sched::NextStep::Kind::kWait) {
      clock.Set(std::max(step.wait_until, clock.Now()));
    } else if (step.kind == sched::NextStep::Kind::kIdle) {
      if (++idle >= 1000) {
        std::string state;
        for (const sched::RequestStats& r : service.Stats().requests) {
          state += " [" + r.name + " rate " + std::to_string(r.rate_bytes_per_sec) + " queued " +
                   std::to_string(r.queued_payloads) + " delivered " +
                   std::to_string(r.delivered_bytes) + "]";
        }
        FAIL() << "requests wait but the scheduler has nothing to dispatch:" << state;
      }
    }
  }
  FAIL() << "the driver did not finish";
}

struct CapCase {
  const char* name;
  sched::Policy policy;
  bool work_conserving;
  bool paced;  // false: no pacer at all, which must break the bound (the check can fail)
};

TEST_F(KvPacingTest, ConcurrentLayerwiseRequestsNeverExceedTheCapOverAnyWindow) {
  const CapCase cases[] = {
      {"cal-stall-opt epochs", sched::Policy::kCalStallOpt, false, true},
      {"stall-opt work-conserving", sched::Policy::kStallOpt, true, true},
      {"equal epochs", sched::Policy::kEqual, false, true},
      {"kv-prop work-conserving", sched::Policy::kKvProp, true, true},
      {"unpaced", sched::Policy::kEqual, false, false},
  };
  // Four requests of different payloads and compute windows; together they want far more than B.
  const Req reqs[] = {
      {{4, 6, 20'000, StoredLayout::kL2TD}, 100},    // 80 KB per layer, r* = 0.8 GB/s
      {{2, 5, 30'000, StoredLayout::k2LTD}, 400},    // 60 KB per layer, r* = 0.15 GB/s
      {{3, 8, 10'000, StoredLayout::kL2TD}, 30},     // 30 KB per layer, r* = 1 GB/s
      {{1, 4, 50'000, StoredLayout::kL2TD}, 2'000},  // 50 KB per layer, r* = 25 MB/s
  };
  const double cap_gbps = 1.6;  // 200 MB/s
  uint64_t seed = 500;
  for (const CapCase& c : cases) {
    SCOPED_TRACE(c.name);
    sched::ManualClock clock(Time{1'000'000});
    kv::PacingOptions po;
    po.scheduler.cap_gbps = cap_gbps;
    po.scheduler.margin_gbps = 0.1;
    po.scheduler.policy = c.policy;
    po.scheduler.work_conserving = c.work_conserving;
    po.scheduler.epoch = std::chrono::microseconds(200);
    po.scheduler.drr_quantum_bytes = 16 << 10;
    auto service = kv::PacingService::Create(po, clock, kLayerwiseAlways);
    ASSERT_TRUE(service.has_value()) << service.error();
    EventLog log;
    std::vector<std::unique_ptr<Running>> runs;
    uint64_t max_payload = 0;
    for (const Req& r : reqs) {
      auto run = std::make_unique<Running>();
      run->d = Stored(r.shape, ++seed, r.compute_us);
      auto plan = kv::PlanRequest(source(), kBucket, run->d, kLayerwiseAlways);
      ASSERT_TRUE(plan.has_value()) << plan.error();
      ASSERT_EQ(plan->plan.mode, ServeMode::kLayerwise);
      run->plan = std::move(*plan);
      run->sink = std::make_unique<RecordingSink>(clock, log);
      if (c.paced) {
        auto pacer = (*service)->ForPlan(run->d, run->plan.plan);
        ASSERT_TRUE(pacer.has_value()) << pacer.error();
        ASSERT_NE(*pacer, nullptr);
        run->pacer = std::move(*pacer);
      }
      max_payload = std::max(max_payload, r.shape.n * r.shape.s);
      runs.push_back(std::move(run));
    }
    for (auto& run : runs) {
      Running* p = run.get();
      p->thread = std::thread([this, p] {
        kv::AssembleOptions o;
        o.dense = true;
        o.pacer = p->pacer.get();
        auto report = kv::Assemble(source(), kBucket, p->d, p->plan, *p->sink, o, kv::Clock::now());
        p->result = report.status();
        p->pacer.reset();  // releases the grant
      });
    }
    Drive(**service, clock);
    for (auto& run : runs) {
      run->thread.join();
      EXPECT_TRUE(run->result.ok()) << run->result;
      // Every byte delivered, every layer announced once and in order.
      EXPECT_EQ(run->sink->bytes(), run->plan.plan.payload_bytes);
      std::vector<uint32_t> want(run->d.num_layers);
      std::iota(want.begin(), want.end(), 0u);
      EXPECT_EQ(run->sink->layers(), want);
    }
    const double cap = sched::GbpsToBytesPerSec(cap_gbps);
    const double excess = WorstExcess(log.Sorted(), cap);
    if (c.paced) {
      // One payload of slack, plus rounding of the ns clock.
      EXPECT_LE(excess, static_cast<double>(max_payload) + 1.0);
    } else {
      EXPECT_GT(excess, static_cast<double>(max_payload) + 1.0);
    }
  }
}

// Issue 34: layers paced in parts. One request of 160 KB layers at the whole cap (1e8 bytes/s,
// rate held from the first byte), written through 64 KiB staging buffers: each write leaves
// exactly when the parts dispatched cover it, t0 + ceil(bytes written through it / part) * part /
// rate (16,000-byte parts: 160 µs each), so a layer's first writes go before its last part; with
// whole layers every write of layer l waits for the whole layer, t0 + (l + 1) * 1.6 ms. Either way
// each layer is announced once, in order, after its last write.
TEST_F(KvPacingTest, WritesLeaveWhenTheirPartsAreDispatched) {
  constexpr uint64_t kLayerBytes = 160'000;  // 8 chunks x 20,000
  constexpr int64_t kStart = 1'000'000;
  constexpr double kRate = 1e8;
  constexpr int64_t kNsPerByte = 10;  // at kRate
  for (uint64_t part : {uint64_t{16'000}, uint64_t{0}}) {
    SCOPED_TRACE(part == 0 ? "whole layers" : "16,000-byte parts");
    sched::ManualClock clock(Time{kStart});
    kv::PacingOptions po;
    po.scheduler.cap_gbps = sched::BytesPerSecToGbps(kRate);
    po.scheduler.policy = sched::Policy::kEqual;  // alone: the whole cap
    po.scheduler.pace_first_layer = true;
    po.scheduler.pace_part_bytes = part;
    po.scheduler.drr_quantum_bytes = 16 << 10;
    auto service = kv::PacingService::Create(po, clock, kLayerwiseAlways);
    ASSERT_TRUE(service.has_value()) << service.error();
    EventLog log;
    Running run;
    run.d = Stored({8, 4, 20'000, StoredLayout::kL2TD}, 700 + part, 100);
    auto plan = kv::PlanRequest(source(), kBucket, run.d, kLayerwiseAlways);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    run.plan = std::move(*plan);
    run.sink = std::make_unique<RecordingSink>(clock, log);
    auto pacer = (*service)->ForPlan(run.d, run.plan.plan);
    ASSERT_TRUE(pacer.has_value() && *pacer != nullptr);
    run.pacer = std::move(*pacer);
    run.thread = std::thread([this, &run] {
      kv::AssembleOptions o;
      o.dense = true;
      o.pacer = run.pacer.get();
      auto report =
          kv::Assemble(source(), kBucket, run.d, run.plan, *run.sink, o, kv::Clock::now());
      run.result = report.status();
      run.pacer.reset();
    });
    Drive(**service, clock);
    run.thread.join();
    ASSERT_TRUE(run.result.ok()) << run.result;
    EXPECT_EQ(run.sink->layers(), (std::vector<uint32_t>{0, 1, 2, 3}));
    const uint64_t unit = part == 0 ? kLayerBytes : part;
    const std::vector<Event> writes = log.Sorted();
    ASSERT_GT(writes.size(), 4u);  // several writes per layer
    uint64_t written = 0;
    bool before_layer_end = false;
    for (const Event& e : writes) {
      written += e.bytes;
      const uint64_t units = (written + unit - 1) / unit;
      const int64_t due_ns = static_cast<int64_t>(units * unit) * kNsPerByte;
      EXPECT_EQ(e.at, Time{kStart + due_ns}) << "write ending at byte " << written;
      const uint64_t layer_end = (written + kLayerBytes - 1) / kLayerBytes * kLayerBytes;
      before_layer_end |= e.at < Time{kStart + static_cast<int64_t>(layer_end) * kNsPerByte};
    }
    EXPECT_EQ(written, 4 * kLayerBytes);
    EXPECT_EQ(before_layer_end, part != 0);
  }
}

TEST_F(KvPacingTest, CancelledRequestReleasesItsShareToTheOthers) {
  for (bool work_conserving : {false, true}) {
    SCOPED_TRACE(work_conserving ? "work-conserving" : "epochs");
    sched::ManualClock clock(Time{0});
    kv::PacingOptions po;
    po.scheduler.cap_gbps = 0.8;  // 100 MB/s
    po.scheduler.policy = sched::Policy::kEqual;
    po.scheduler.work_conserving = work_conserving;
    po.scheduler.epoch = std::chrono::microseconds(500);
    po.scheduler.drr_quantum_bytes = 16 << 10;
    auto service = kv::PacingService::Create(po, clock, kLayerwiseAlways);
    ASSERT_TRUE(service.has_value()) << service.error();
    const double cap = sched::GbpsToBytesPerSec(0.8);
    EventLog log;
    std::vector<std::unique_ptr<Running>> runs;
    for (int i = 0; i < 3; ++i) {
      auto run = std::make_unique<Running>();
      run->d = Stored({2, 10, 20'000, StoredLayout::kL2TD}, 900 + i, 100);
      auto plan = kv::PlanRequest(source(), kBucket, run->d, kLayerwiseAlways);
      ASSERT_TRUE(plan.has_value()) << plan.error();
      run->plan = std::move(*plan);
      run->sink = std::make_unique<RecordingSink>(clock, log);
      auto pacer = (*service)->ForPlan(run->d, run->plan.plan);
      ASSERT_TRUE(pacer.has_value() && *pacer != nullptr);
      run->pacer = std::move(*pacer);
      runs.push_back(std::move(run));
    }
    const uint64_t cancelled_id = runs[0]->pacer->id();
    kv::RequestPacer* to_cancel = runs[0]->pacer.get();
    for (auto& run : runs) {
      Running* p = run.get();
      p->thread = std::thread([this, p] {
        kv::AssembleOptions o;
        o.dense = true;
        o.pacer = p->pacer.get();
        auto report = kv::Assemble(source(), kBucket, p->d, p->plan, *p->sink, o, kv::Clock::now());
        p->result = report.status();
        p->pacer.reset();
      });
    }
    bool cancelled = false;
    bool saw_half_cap = false;
    Drive(**service, clock, [&] {
      // Cancel request 0 once it has delivered three layers (it is blocked before its fourth).
      if (!cancelled && runs[0]->sink->layers_ready() == 3) {
        to_cancel->Cancel();
        cancelled = true;
        return;
      }
      if (!cancelled) {
        return;
      }
      // After the release the two others share B: at once when work-conserving, from the next
      // epoch otherwise.
      sched::SchedulerStats st = (*service)->Stats();
      double sum = 0;
      bool has_cancelled = false;
      for (const sched::RequestStats& r : st.requests) {
        has_cancelled |= r.id == cancelled_id;
        if (!r.released) {
          sum += r.rate_bytes_per_sec;
        }
      }
      if (!has_cancelled && st.requests.size() == 2 && std::abs(sum - cap) < 1.0) {
        saw_half_cap = true;
      }
    });
    for (auto& run : runs) {
      run->thread.join();
    }
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(runs[0]->result.code(), Code::kCancelled) << runs[0]->result;
    EXPECT_FALSE(runs[0]->sink->final_status().ok());
    EXPECT_EQ(runs[0]->sink->layers_ready(), 3u);
    EXPECT_TRUE(runs[1]->result.ok()) << runs[1]->result;
    EXPECT_TRUE(runs[2]->result.ok()) << runs[2]->result;
    EXPECT_TRUE(saw_half_cap) << "the survivors never got the cancelled request's share";
    EXPECT_LE(WorstExcess(log.Sorted(), cap), 40'000.0 + 1.0);
  }
}

TEST_F(KvPacingTest, ChunkwiseRequestsBypassThePoolAndLayerwiseOnesEnterIt) {
  struct Row {
    const char* name;
    uint64_t threshold;
    std::optional<uint64_t> compute_us;
    bool admitted;
    sched::ComputeSource source;
  };
  const Row rows[] = {
      {"chunkwise", kChunkwiseAlways, 100, false, sched::ComputeSource::kUnknown},
      {"layerwise, c from the descriptor", kLayerwiseAlways, 100, true,
       sched::ComputeSource::kDescriptor},
      {"layerwise, c from the table", kLayerwiseAlways, std::nullopt, true,
       sched::ComputeSource::kTable},
  };
  uint64_t seed = 700;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    sched::ManualClock clock(Time{0});
    kv::PacingOptions po;
    po.scheduler.cap_gbps = 0.8;
    auto service = kv::PacingService::Create(po, clock, row.threshold);
    ASSERT_TRUE(service.has_value()) << service.error();
    Running run;
    run.d = Stored({3, 4, 10'000, StoredLayout::kL2TD}, ++seed, row.compute_us);
    auto plan = kv::PlanRequest(source(), kBucket, run.d, row.threshold);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    run.plan = std::move(*plan);
    auto pacer = (*service)->ForPlan(run.d, run.plan.plan);
    ASSERT_TRUE(pacer.has_value()) << pacer.error();
    EXPECT_EQ(*pacer != nullptr, row.admitted);
    sched::SchedulerStats st = (*service)->Stats();
    ASSERT_EQ(st.requests.size(), row.admitted ? 1u : 0u);
    if (row.admitted) {
      EXPECT_EQ(st.requests[0].compute_source, row.source);
      EXPECT_EQ(st.requests[0].name, run.d.request_id);
      EXPECT_GT((*pacer)->assigned_rate_gbps(), 0.0);
      continue;
    }
    // Chunkwise: delivered with no pacer and no dispatch at all; the clock never moves.
    EventLog log;
    RecordingSink sink(clock, log);
    kv::AssembleOptions o;
    o.dense = true;
    auto report = kv::Assemble(source(), kBucket, run.d, run.plan, sink, o, kv::Clock::now());
    ASSERT_TRUE(report.has_value()) << report.error();
    EXPECT_EQ(report->assigned_rate_gbps, 0.0);
    EXPECT_EQ(sink.bytes(), run.plan.plan.payload_bytes);
    EXPECT_EQ((*service)->DispatchOnce().kind, sched::NextStep::Kind::kIdle);
  }
}

// The wiring in the store: with KvOptions::scheduler set, GetLayers admits a layerwise request,
// reports its assigned rate, shows it in Stats() while active and releases it at the end; a
// chunkwise request is not admitted.
TEST(KvPacingStoreTest, GetLayersIsPacedAndReportedWhenTheSchedulerIsConfigured) {
  testutil::TempDir dir;
  StoreOptions so = TestStoreOptions(dir.path());
  auto scheduler = std::make_shared<sched::SchedulerOptions>();
  scheduler->cap_gbps = 8;
  scheduler->policy = sched::Policy::kEqual;
  scheduler->work_conserving = true;
  so.kv.scheduler = scheduler;
  so.kv.layerwise_threshold_bytes = 100'000;
  auto opened = OpenStore(so);
  ASSERT_TRUE(opened.has_value()) << opened.error();
  std::unique_ptr<Store> store = std::move(*opened);
  ASSERT_TRUE(store->CreateBucket(kBucket, "tester").ok());
  struct Row {
    const char* name;
    Shape shape;
    ServeMode mode;
  };
  const Row rows[] = {
      {"layerwise", {4, 6, 10'000, StoredLayout::kL2TD}, ServeMode::kLayerwise},  // 240 KB >= Θ
      {"chunkwise", {2, 3, 10'000, StoredLayout::kL2TD}, ServeMode::kChunkwise},  // 60 KB < Θ
  };
  uint64_t seed = 1200;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Descriptor d = MakeDescriptor(row.shape, true, ++seed);
    d.compute_window_us = 50;
    for (uint64_t j = 0; j < row.shape.n; ++j) {
      ASSERT_TRUE(StoreChunk(*store, d, j, ChunkBytes(seed, j, row.shape)).ok());
    }
    VectorSink sink(2, 16 << 10);
    bool listed = false;
    auto report = store->GetLayers(kBucket, d, &sink, [&](const KvPlan& plan) {
      EXPECT_EQ(plan.mode, row.mode);
      return Status::Ok();
    });
    ASSERT_TRUE(report.has_value()) << report.error();
    EXPECT_EQ(sink.body().size(), row.shape.n * row.shape.layers * row.shape.s);
    if (row.mode == ServeMode::kLayerwise) {
      EXPECT_NEAR(report->assigned_rate_gbps, 8.0, 1e-9);  // alone: the whole cap
    } else {
      EXPECT_EQ(report->assigned_rate_gbps, 0.0);
    }
    // Released on return: no request left in the figures.
    auto stats = store->Stats();
    ASSERT_TRUE(stats.has_value()) << stats.error();
    for (const auto& [name, value] : stats->figures) {
      if (name == "sched.active_requests") {
        listed = true;
        EXPECT_EQ(value, 0u);
      }
      if (name == "sched.cap_bps") {
        EXPECT_EQ(value, 8'000'000'000u);
      }
    }
    EXPECT_TRUE(listed);
  }
}

TEST(KvPacingStatsTest, FiguresNameEveryActiveRequestsTargetRateEpochAndBytes) {
  sched::SchedulerStats st;
  st.cap_bytes_per_sec = 1e9;
  st.epoch = 7;
  sched::RequestStats r;
  r.id = 3;
  r.name = "req-a";
  r.target_bytes_per_sec = 2.5e8;
  r.rate_bytes_per_sec = 2e8;
  r.epoch = 6;
  r.delivered_bytes = 12345;
  r.compute_us = 99.6;
  st.requests.push_back(r);
  std::vector<std::pair<std::string, uint64_t>> figures;
  kv::AppendStatsFigures(st, &figures);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"sched.cap_bps", 8'000'000'000},
      {"sched.epoch", 7},
      {"sched.work_conserving", 0},
      {"sched.active_requests", 1},
      {"sched.request.3:req-a.target_bps", 2'000'000'000},
      {"sched.request.3:req-a.rate_bps", 1'600'000'000},
      {"sched.request.3:req-a.epoch", 6},
      {"sched.request.3:req-a.delivered_bytes", 12345},
      {"sched.request.3:req-a.compute_us", 100},
      {"sched.request.3:req-a.released", 0},
  };
  EXPECT_EQ(figures, want);
}

}  // namespace
}  // namespace oc::storage::kvtest
