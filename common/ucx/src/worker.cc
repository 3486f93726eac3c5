#include "oc/ucx/worker.h"

#include <poll.h>

#include "oc/common/log.h"
#include "oc/common/status.h"
#include "oc/ucx/status.h"

namespace oc::ucx {

Result<std::unique_ptr<UcxWorker>> UcxWorker::Create(const WorkerOptions& options) {
  std::unique_ptr<UcxWorker> w(new UcxWorker());
  ucp_config_t* config = nullptr;
  OC_RETURN_IF_ERROR(FromUcs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read"));
  Status s;
  if (!options.transports.empty()) {
    s = FromUcs(ucp_config_modify(config, "TLS", options.transports.c_str()),
                "ucp_config_modify TLS");
  }
  if (s.ok() && !options.keepalive_interval.empty()) {
    s = FromUcs(ucp_config_modify(config, "KEEPALIVE_INTERVAL", options.keepalive_interval.c_str()),
                "ucp_config_modify KEEPALIVE_INTERVAL");
  }
  if (s.ok()) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    s = FromUcs(ucp_init(&params, config, &w->context_), "ucp_init");
  }
  ucp_config_release(config);
  OC_RETURN_IF_ERROR(s);
  w->teardown_timeout_ = options.teardown_timeout;

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_CLIENT_ID;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  wparams.client_id = options.client_id;
  OC_RETURN_IF_ERROR(
      FromUcs(ucp_worker_create(w->context_, &wparams, &w->worker_), "ucp_worker_create"));
  OC_RETURN_IF_ERROR(FromUcs(ucp_worker_get_efd(w->worker_, &w->efd_), "ucp_worker_get_efd"));

  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  OC_RETURN_IF_ERROR(FromUcs(ucp_worker_get_address(w->worker_, &address, &address_bytes),
                             "ucp_worker_get_address"));
  const auto* first = reinterpret_cast<const std::byte*>(address);
  w->address_.assign(first, first + address_bytes);
  ucp_worker_release_address(w->worker_, address);
  return w;
}

void UcxWorker::Start() {
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { ProgressLoop(); });
}

void UcxWorker::Stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) {
    Wake();
    thread_.join();
  }
  running_.store(false, std::memory_order_release);
  progress_thread_.store(std::thread::id(), std::memory_order_release);
  RunTasks();
}

void UcxWorker::Submit(std::function<void()> task) {
  if (!running_.load(std::memory_order_acquire) || OnProgressThread()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks_.push_back(std::move(task));
  }
  Wake();
}

void UcxWorker::Defer(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks_.push_back(std::move(task));
  }
  if (running_.load(std::memory_order_acquire)) {
    Wake();
  }
}

bool UcxWorker::FlushAll(std::chrono::steady_clock::time_point deadline) {
  bool done = false;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void*, ucs_status_t, void* user_data) {
    *static_cast<bool*>(user_data) = true;
  };
  param.user_data = &done;
  ucs_status_ptr_t sp = ucp_worker_flush_nbx(worker_, &param);
  if (!UCS_PTR_IS_PTR(sp)) {
    return UCS_PTR_STATUS(sp) == UCS_OK;
  }
  if (ProgressUntil([&] { return done; }, deadline)) {
    ucp_request_free(sp);
    return true;
  }
  return false;  // the request still points at `done`: the caller leaks the worker
}

void UcxWorker::DestroyWorker() {
  Stop();
  if (worker_ == nullptr) {
    return;
  }
  if (!FlushAll(std::chrono::steady_clock::now() + teardown_timeout_)) {
    static const Logger kLog{"data_plane"};
    kLog.Error("UCX worker did not flush within {} ms at teardown; leaking it",
               teardown_timeout_.count());
    worker_ = nullptr;
    leaked_ = true;
    return;
  }
  ucp_worker_destroy(std::exchange(worker_, nullptr));
}

UcxWorker::~UcxWorker() {
  DestroyWorker();
  if (context_ != nullptr && !leaked_) {
    ucp_cleanup(context_);
  }
}

bool UcxWorker::RunTasks() {
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    if (tasks_.empty()) {
      return false;
    }
    batch_.swap(tasks_);
  }
  for (auto& task : batch_) {
    task();
  }
  batch_.clear();
  return true;
}

void UcxWorker::ProgressLoop() {
  progress_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  auto last_event = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_acquire)) {
    const bool ran = RunTasks();
    in_progress_ = true;
    const unsigned events = ucp_worker_progress(worker_);
    in_progress_ = false;
    if (events != 0 || ran) {
      last_event = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_event < kSpin) {
      continue;
    }
    const ucs_status_t armed = ucp_worker_arm(worker_);
    if (armed == UCS_ERR_BUSY) {
      continue;  // events arrived meanwhile
    }
    if (armed != UCS_OK) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    {
      // A task queued before arm may have had its wakeup consumed by it; one queued after
      // signals the fd again.
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (!tasks_.empty()) {
        continue;
      }
    }
    pollfd pfd{efd_, POLLIN, 0};
    (void)::poll(&pfd, 1, kIdlePollMs);
  }
}

}  // namespace oc::ucx
