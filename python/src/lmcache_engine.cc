// The LMCache L2 connector engine (lmcache_engine.h): job queue, workers, eventfd, and the
// four operations over liboc_client. Pure C++: runs without the GIL.
#include "lmcache_engine.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "fmt/format.h"
#include "oc/descriptor/descriptor.h"

namespace oc::python::lmcache {
namespace {

using Clock = std::chrono::steady_clock;

// One key = one object = one layer of its own size (the header comment says why).
descriptor::Descriptor OneLayerDescriptor(std::vector<std::string> names, uint64_t bytes) {
  descriptor::Descriptor d;
  d.keys = descriptor::ExplicitKeys{std::move(names)};
  d.num_layers = 1;
  d.chunk_tokens = 1;
  d.layer_bytes = bytes;
  d.layout = descriptor::StoredLayout::kL2TD;
  d.delivery = descriptor::Delivery::kChunkMajor;
  return d;
}

// The answer of a descriptor GET whose matched prefix holds a key stored with another size or
// shape (storage-server/src/kv/kv_plan.cc): a per-key problem, not the batch's.
bool IsShapeMismatch(const Status& s) {
  return s.code() == Code::kInvalidArgument &&
         (s.field() == "x-oc-layer-bytes" || s.field() == "x-oc-num-layers" ||
          s.field() == "x-oc-layout");
}

// Buffer indices grouped by size (a batch of one model has one size; hybrid models several),
// each group cut into runs of at most `max_keys` keys and `max_bytes` bytes (at least one key).
std::vector<std::vector<size_t>> Runs(const std::vector<MutableByteSpan>& buffers,
                                      uint64_t max_keys, uint64_t max_bytes) {
  std::map<uint64_t, std::vector<size_t>> by_size;
  for (size_t j = 0; j < buffers.size(); ++j) {
    by_size[buffers[j].size()].push_back(j);
  }
  std::vector<std::vector<size_t>> runs;
  for (auto& [size, indices] : by_size) {
    const uint64_t per_run = std::max<uint64_t>(
        1, std::min<uint64_t>(max_keys, max_bytes / std::max<uint64_t>(1, size)));
    for (size_t first = 0; first < indices.size(); first += per_run) {
      const size_t last = std::min<size_t>(indices.size(), first + per_run);
      runs.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(first),
                        indices.begin() + static_cast<std::ptrdiff_t>(last));
    }
  }
  return runs;
}

// Records the first error of a batch (later ones are usually the same cause).
void Fail(Completion& c, const Status& s) {
  if (c.ok) {
    c.ok = false;
    c.error = s.ToString();
  }
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Open(Options options) {
  if (options.bucket.empty()) {
    return Status::InvalidArgument("bucket", "bucket must not be empty");
  }
  if (options.workers == 0 || options.workers > 256) {
    return Status::InvalidArgument("workers", "workers must be 1..256");
  }
  // Every worker keeps a connection: the pool must hold them all between batches.
  options.client.max_idle_connections =
      std::max(options.client.max_idle_connections, options.workers);
  OC_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> cl, client::Client::Open(options.client));
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    return Status::Internal(fmt::format("eventfd: {}", std::strerror(errno)));
  }
  std::unique_ptr<Engine> e(new Engine(std::move(options), std::move(cl), fd));
  for (uint32_t i = 0; i < e->options_.workers; ++i) {
    e->workers_.emplace_back([raw = e.get()] { raw->Worker(); });
  }
  return e;
}

Engine::Engine(Options options, std::unique_ptr<client::Client> client, int event_fd)
    : options_(std::move(options)), client_(std::move(client)), event_fd_(event_fd) {}

Engine::~Engine() { Close(); }

int Engine::event_fd() const {
  std::lock_guard<std::mutex> lock(mu_);
  return event_fd_;
}

void Engine::Signal() {
  // The counter only needs to be non-zero; a full counter (2^64 - 2) is readable anyway.
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = write(event_fd_, &one, sizeof(one));
  } while (r < 0 && errno == EINTR);
}

Result<uint64_t> Engine::Submit(Job job, Job* refused) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) {
    *refused = std::move(job);
    return Status::FailedPrecondition(Subject::kNone, "the connector is closed");
  }
  const uint64_t id = next_id_++;
  if (job.names.empty()) {  // nothing to ask the gateway
    Completion c;
    c.id = id;
    c.ok = true;
    c.pins = std::move(job.pins);
    done_.push_back(std::move(c));
    Signal();
    return id;
  }
  queue_.push_back(Queued{id, std::move(job), Clock::now()});
  lock.unlock();
  cv_.notify_one();
  return id;
}

std::vector<Completion> Engine::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  if (event_fd_ >= 0) {
    // Cleared first, under mu_: a completion pushed after this read signals again.
    uint64_t count = 0;
    ssize_t r;
    do {
      r = read(event_fd_, &count, sizeof(count));
    } while (r < 0 && errno == EINTR);
  }
  std::vector<Completion> out;
  out.swap(done_);
  return out;
}

void Engine::Close() {
  std::lock_guard<std::mutex> serial(close_mu_);
  std::deque<Queued> cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ && workers_.empty()) {
      return;
    }
    closed_ = true;
    cancelled.swap(queue_);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    t.join();
  }
  workers_.clear();
  for (Queued& q : cancelled) {
    Completion c;
    c.id = q.id;
    c.ok = false;
    c.error = "the connector was closed before this batch ran";
    c.per_key.assign(q.job.names.size(), false);
    c.pins = std::move(q.job.pins);
    Finish(q.job.op, std::move(c), q.submitted, 0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (event_fd_ >= 0) {
    ::close(event_fd_);
    event_fd_ = -1;
  }
}

Stats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::Worker() {
  for (;;) {
    std::vector<Queued> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // closed: Close() fails what is still queued
      }
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      if (batch[0].job.op == Op::kExists) {
        TakeQueuedExists(batch);
      }
    }
    if (batch.size() > 1) {
      RunExistsTogether(batch);
      continue;
    }
    Queued& q = batch[0];
    Completion c;
    c.id = q.id;
    c.ok = true;
    c.per_key.assign(q.job.names.size(), false);
    Run(q, c);
    uint64_t bytes = 0;
    if (q.job.op == Op::kGet || q.job.op == Op::kSet) {
      for (size_t j = 0; j < c.per_key.size(); ++j) {
        bytes += c.per_key[j] ? q.job.buffers[j].size() : 0;
      }
    }
    c.pins = std::move(q.job.pins);
    Finish(q.job.op, std::move(c), q.submitted, bytes);
  }
}

void Engine::TakeQueuedExists(std::vector<Queued>& batch) {
  const uint64_t max_keys = std::min(options_.merge_exists_keys, kMaxKeysPerRequest - 1);
  uint64_t keys = batch[0].job.names.size();
  for (auto it = queue_.begin(); it != queue_.end() && keys < max_keys;) {
    if (it->job.op != Op::kExists || keys + it->job.names.size() > max_keys) {
      ++it;
      continue;
    }
    keys += it->job.names.size();
    batch.push_back(std::move(*it));
    it = queue_.erase(it);
  }
}

void Engine::RunExistsTogether(std::vector<Queued>& batch) {
  std::vector<std::string> names;
  for (const Queued& q : batch) {
    names.insert(names.end(), q.job.names.begin(), q.job.names.end());
  }
  Result<std::vector<std::optional<uint64_t>>> sizes = SizesOf(names.begin(), names.end());
  size_t at = 0;
  for (Queued& q : batch) {
    Completion c;
    c.id = q.id;
    c.ok = true;
    c.per_key.assign(q.job.names.size(), false);
    if (!sizes.has_value()) {
      Fail(c, sizes.error());
    } else {
      for (size_t j = 0; j < c.per_key.size(); ++j) {
        const std::optional<uint64_t>& size = (*sizes)[at + j];
        c.per_key[j] = size.has_value() && *size > 0;  // as RunExists
      }
    }
    at += q.job.names.size();
    c.pins = std::move(q.job.pins);
    Finish(Op::kExists, std::move(c), q.submitted, 0);
  }
}

void Engine::Run(Queued& q, Completion& c) {
  switch (q.job.op) {
    case Op::kGet:
      return RunGet(q.job, c);
    case Op::kSet:
      return RunSet(q.job, c);
    case Op::kExists:
      return RunExists(q.job, c);
    case Op::kDelete:
      return RunDelete(q.job, c);
  }
}

void Engine::Finish(Op op, Completion c, Clock::time_point submitted, uint64_t bytes) {
  const double seconds = std::chrono::duration<double>(Clock::now() - submitted).count();
  std::lock_guard<std::mutex> lock(mu_);
  OpStats& s = op == Op::kGet      ? stats_.get
               : op == Op::kSet    ? stats_.set
               : op == Op::kExists ? stats_.exists
                                   : stats_.del;
  s.batches += 1;
  s.keys += c.per_key.size();
  s.hits += static_cast<uint64_t>(std::count(c.per_key.begin(), c.per_key.end(), true));
  s.bytes += bytes;
  s.failed_batches += c.ok ? 0 : 1;
  s.seconds_total += seconds;
  s.last_seconds = seconds;
  done_.push_back(std::move(c));
  if (event_fd_ >= 0) {
    Signal();
  }
}

Result<uint64_t> Engine::GetRun(Job& job, const std::vector<size_t>& run) {
  const uint64_t size = job.buffers[run[0]].size();
  std::vector<std::string> names;
  std::vector<MutableByteSpan> outs;
  for (size_t j : run) {
    names.push_back(job.names[j]);
    outs.push_back(job.buffers[j]);
  }
  return client_->GetChunksInto(options_.bucket, OneLayerDescriptor(std::move(names), size), outs);
}

Result<std::vector<std::optional<uint64_t>>> Engine::SizesOf(
    std::vector<std::string>::const_iterator first, std::vector<std::string>::const_iterator last) {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(last - first) + 1);
  names.push_back(options_.prefix + std::string(kAbsentProbeKey));
  names.insert(names.end(), first, last);
  OC_ASSIGN_OR_RETURN(
      client::ProbeResult r,
      client_->ProbeChunks(options_.bucket, OneLayerDescriptor(std::move(names), 1)));
  r.sizes.erase(r.sizes.begin());  // the absent key
  return std::move(r.sizes);
}

void Engine::RunGet(Job& job, Completion& c) {
  for (const std::vector<size_t>& run : Runs(job.buffers, kMaxKeysPerRequest, UINT64_MAX)) {
    const uint64_t size = job.buffers[run[0]].size();
    Result<uint64_t> m = GetRun(job, run);
    if (!m.has_value() && IsShapeMismatch(m.error())) {
      // A key stored with another size: each key of the run alone, so only that key misses.
      for (size_t j : run) {
        Result<uint64_t> got = client_->GetObject(options_.bucket, job.names[j], job.buffers[j]);
        c.per_key[j] = got.has_value() && *got == size;
      }
      continue;
    }
    if (!m.has_value()) {
      Fail(c, m.error());  // every key of the run stays false
      continue;
    }
    for (size_t i = 0; i < *m; ++i) {
      c.per_key[run[i]] = true;
    }
    if (*m + 1 >= run.size()) {
      continue;
    }
    // Key m is absent, and the GET stopped there (the matched prefix). The keys after it may
    // be present: one probe says which, one more GET reads those of the right size. Three
    // requests at most; what fails here is a miss, not a failed batch.
    std::vector<std::string> tail_names;
    for (size_t i = *m + 1; i < run.size(); ++i) {
      tail_names.push_back(job.names[run[i]]);
    }
    Result<std::vector<std::optional<uint64_t>>> sizes =
        SizesOf(tail_names.begin(), tail_names.end());
    if (!sizes.has_value()) {
      continue;
    }
    std::vector<size_t> present;
    for (size_t i = 0; i < tail_names.size(); ++i) {
      if ((*sizes)[i] == size) {
        present.push_back(run[*m + 1 + i]);
      }
    }
    if (present.empty()) {
      continue;
    }
    Result<uint64_t> m2 = GetRun(job, present);
    for (size_t i = 0; m2.has_value() && i < *m2; ++i) {
      c.per_key[present[i]] = true;
    }
  }
}

void Engine::RunSet(Job& job, Completion& c) {
  std::vector<std::byte> body;
  for (const std::vector<size_t>& run : Runs(job.buffers, kMaxKeysPerRequest, kMaxPutBodyBytes)) {
    const uint64_t size = job.buffers[run[0]].size();
    std::vector<std::string> names;
    body.resize(run.size() * size);  // <= kMaxPutBodyBytes, or one buffer alone
    for (size_t i = 0; i < run.size(); ++i) {
      names.push_back(job.names[run[i]]);
      std::memcpy(body.data() + i * size, job.buffers[run[i]].data(), size);
    }
    Result<client::PutChunksResult> r =
        client_->PutChunks(options_.bucket, OneLayerDescriptor(std::move(names), size), body);
    if (!r.has_value()) {
      Fail(c, r.error());
      continue;
    }
    for (size_t j : run) {
      c.per_key[j] = true;
    }
  }
}

void Engine::RunExists(Job& job, Completion& c) {
  const uint64_t per_probe = kMaxKeysPerRequest - 1;  // the absent key comes first
  for (size_t first = 0; first < job.names.size(); first += per_probe) {
    const size_t last = std::min<size_t>(job.names.size(), first + per_probe);
    Result<std::vector<std::optional<uint64_t>>> sizes =
        SizesOf(job.names.begin() + static_cast<std::ptrdiff_t>(first),
                job.names.begin() + static_cast<std::ptrdiff_t>(last));
    if (!sizes.has_value()) {
      Fail(c, sizes.error());
      continue;
    }
    for (size_t j = first; j < last; ++j) {
      const std::optional<uint64_t>& size = (*sizes)[j - first];
      c.per_key[j] = size.has_value() && *size > 0;  // an empty object holds no KV
    }
  }
}

void Engine::RunDelete(Job& job, Completion& c) {
  for (size_t j = 0; j < job.names.size(); ++j) {
    Status s = client_->DeleteObject(options_.bucket, job.names[j]);
    c.per_key[j] = s.ok();
    if (!s.ok()) {
      Fail(c, s);
    }
  }
}

}  // namespace oc::python::lmcache
