#include "kv/kv_engine.h"

#include "data_plane/ucx_data_plane.h"
#include "kv/pacing.h"
#include "oc/common/log.h"
#include "oc/sched/options.h"

namespace oc::storage::kv {
namespace {

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

namespace {

BoundedExecutor::Options ExecutorOptions(const KvOptions& options) {
  return DescriptorExecutorOptions(options.descriptor_threads, options.admission_queue,
                                   options.admission_timeout);
}

BoundedExecutor::Options AssemblyOptions(const KvOptions& options) {
  BoundedExecutor::Options o;
  o.threads = AssemblyThreadsFor(options.assembly_threads);
  // Each GET queues at most K layers of units, and a refused unit is read by its request's
  // own thread, so this bound is never what limits a request.
  o.max_queued = 1 << 16;
  o.field = "kv.assembly_threads";
  o.start_all = true;
  o.thread_name = "oc-assemble";
  return o;
}

}  // namespace

KvEngine::KvEngine(SliceSource& source, KvOptions options)
    : source_(source),
      options_(std::move(options)),
      executor_(ExecutorOptions(options_)),
      assembly_(AssemblyOptions(options_)) {
  if (options_.scheduler != nullptr) {
    static const sched::SteadyClock kSteadyClock;
    PacingOptions po;
    po.scheduler = *options_.scheduler;
    po.max_wait = options_.data_plane_timeout;
    Result<std::unique_ptr<PacingService>> p =
        PacingService::Create(po, kSteadyClock, options_.layerwise_threshold_bytes);
    if (p.has_value()) {
      pacing_ = std::move(*p);
      pacing_->Start();
    } else {
      const Logger log{"kv"};
      log.Error("scheduler options rejected, layerwise requests unpaced: {}", p.error().ToString());
    }
  }
}

KvEngine::~KvEngine() { Shutdown(); }

Result<UcxDataPlane*> KvEngine::DataPlane() {
  std::lock_guard<std::mutex> lock(plane_mu_);
  if (plane_ == nullptr) {
    DataPlaneOptions o;
    o.transports = options_.data_plane_transports;
    o.listen = options_.data_plane_listen;
    o.staging_buffers = options_.data_plane_staging_buffers;
    o.staging_buffer_bytes = options_.data_plane_staging_buffer_bytes;
    o.op_timeout = options_.data_plane_timeout;
    o.direct_writes = options_.data_plane_direct_writes;
    o.copy_threads = CopyThreadsFor(options_.data_plane_copy_threads);
    OC_ASSIGN_OR_RETURN(plane_, UcxDataPlane::Create(o));
  }
  return plane_.get();
}

Result<storage::DataPlaneInfo> KvEngine::DataPlaneInfo() {
  OC_ASSIGN_OR_RETURN(UcxDataPlane * plane, DataPlane());
  return storage::DataPlaneInfo{plane->listen_address(), plane->shared_memory()};
}

Result<KvProbeResult> KvEngine::ProbeChunks(std::string_view bucket,
                                            const descriptor::Descriptor& d) {
  OC_ASSIGN_OR_RETURN(PlanResult plan,
                      PlanRequest(source_, bucket, d, options_.layerwise_threshold_bytes));
  return KvProbeResult{plan.plan.matched, std::move(plan.sizes)};
}

Result<KvGetReport> KvEngine::GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                        LayerSink* body_sink,
                                        const std::function<Status(const KvPlan&)>& on_plan) {
  const Clock::time_point started = Clock::now();
  if (!d.target.has_value() && body_sink == nullptr) {
    return Status::InvalidArgument("body_sink", "a descriptor without a target needs a body sink");
  }
  OC_ASSIGN_OR_RETURN(PlanResult plan,
                      PlanRequest(source_, bucket, d, options_.layerwise_threshold_bytes));
  const uint64_t plan_us = Micros(Clock::now() - started);
  std::unique_ptr<LayerSink> target_sink;
  LayerSink* sink = body_sink;
  if (d.target.has_value()) {
    // The target is checked (connection, rkey, address) before anything is announced.
    OC_ASSIGN_OR_RETURN(UcxDataPlane * plane, DataPlane());
    OC_ASSIGN_OR_RETURN(target_sink, plane->OpenSink(*d.target));
    sink = target_sink.get();
  }
  if (on_plan) {
    if (Status s = on_plan(plan.plan); !s.ok()) {
      (void)sink->Finish(s);
      return s;
    }
  }
  AssembleOptions options;
  options.dense = !d.target.has_value();
  options.zero_copy = options_.zero_copy;
  options.workers = &assembly_;
  options.layers_in_flight = LayersInFlightFor(options_.layers_in_flight);
  // Layerwise requests enter the shared cap; the pacer holds the grant until it is destroyed on
  // every exit path below. Chunkwise ones get no pacer.
  std::unique_ptr<RequestPacer> pacer;
  if (pacing_ != nullptr) {
    Result<std::unique_ptr<RequestPacer>> p = pacing_->ForPlan(d, plan.plan);
    if (!p.has_value()) {
      (void)sink->Finish(p.error());
      return p.error();
    }
    pacer = std::move(*p);
  }
  options.pacer = pacer.get();
  OC_ASSIGN_OR_RETURN(KvGetReport report,
                      Assemble(source_, bucket, d, plan, *sink, options, started));
  report.timings.plan_us = plan_us;
  return report;
}

Result<KvPutReport> KvEngine::PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                        ChunkSource* body) {
  UcxDataPlane* plane = nullptr;
  if (d.target.has_value()) {
    OC_ASSIGN_OR_RETURN(plane, DataPlane());
  }
  return kv::PutChunks(source_, bucket, d, body, plane, options_);
}

}  // namespace oc::storage::kv
