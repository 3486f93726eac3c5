// objectcache._native.ObjectCacheL2Connector: LMCache's MP-mode `native_plugin` L2 connector
// (docs/integrations.md, section 1), exported as objectcache.integrations.lmcache. Arguments
// are converted here with the GIL held (keys to object names, buffers pinned and checked);
// lmcache_engine.cc runs the batches without it.
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "binding.h"
#include "fmt/format.h"
#include "lmcache_engine.h"

namespace oc::python {
namespace {

using lmcache::Engine;
using lmcache::Op;

// Longest key prefix: prefix + an LMCache key must fit the 1,024-byte object name limit, and
// LMCache keys (model name, rank, group, hash, salt) take a few hundred bytes.
constexpr uint64_t kMaxPrefixBytes = 512;
constexpr uint64_t kMaxNameBytes = 1024;  // descriptor::Limits::max_key_bytes

class PyL2Connector {
 public:
  PyL2Connector(std::unique_ptr<Engine> engine, std::string prefix)
      : engine_(std::move(engine)), prefix_(std::move(prefix)) {}
  PyL2Connector(const PyL2Connector&) = delete;
  PyL2Connector& operator=(const PyL2Connector&) = delete;
  ~PyL2Connector() {
    if (engine_ != nullptr) {
      {
        py::gil_scoped_release release;  // workers may be finishing a request
        engine_->Close();
      }
      engine_.reset();  // completions never drained release their pins here, GIL held
    }
  }

  int EventFd() const { return engine_->event_fd(); }

  uint64_t SubmitBuffers(Op op, const py::handle& keys, const py::handle& views) {
    lmcache::Job job;
    job.op = op;
    job.names = Names(keys);
    if (!py::isinstance<py::sequence>(views) || py::isinstance<py::str>(views) ||
        py::isinstance<py::bytes>(views)) {
      throw py::type_error("memoryviews must be a list of buffers, one per key");
    }
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(views);
    if (seq.size() != job.names.size()) {
      Raise(Status::InvalidArgument(
          "memoryviews", fmt::format("{} keys but {} buffers", job.names.size(), seq.size())));
    }
    const bool writable = op == Op::kGet;
    for (size_t j = 0; j < seq.size(); ++j) {
      const py::object view = seq[j];
      PinnedBuffer pin(view, writable, fmt::format("memoryviews[{}]", j));
      if (pin.size() == 0 || pin.size() > lmcache::kMaxObjectBytes) {
        Raise(Status::InvalidArgument(
            "memoryviews", fmt::format("memoryviews[{}] has {} bytes; a KV object is 1..{}", j,
                                       pin.size(), lmcache::kMaxObjectBytes)));
      }
      job.buffers.emplace_back(pin.data(), pin.size());
      job.pins.push_back(std::move(pin));
    }
    return Submit(std::move(job));
  }

  uint64_t SubmitKeys(Op op, const py::handle& keys) {
    lmcache::Job job;
    job.op = op;
    job.names = Names(keys);
    return Submit(std::move(job));
  }

  py::list Drain() {
    std::vector<lmcache::Completion> done = engine_->Drain();
    py::list out;
    for (lmcache::Completion& c : done) {
      py::list per_key(c.per_key.size());  // sized once: no append (and regrowth) per key
      for (size_t j = 0; j < c.per_key.size(); ++j) {
        per_key[j] = py::bool_(c.per_key[j]);
      }
      out.append(py::make_tuple(c.id, c.ok, c.error, per_key));
    }
    return out;  // `done` (and its pins) is destroyed here, GIL held
  }

  void Close() {
    py::gil_scoped_release release;
    engine_->Close();
  }

  py::dict Stats() const {
    const lmcache::Stats s = engine_->stats();
    py::dict out;
    const std::pair<const char*, const lmcache::OpStats*> ops[] = {
        {"get", &s.get}, {"set", &s.set}, {"exists", &s.exists}, {"delete", &s.del}};
    for (const auto& [name, op] : ops) {
      py::dict d;
      d["batches"] = op->batches;
      d["keys"] = op->keys;
      d["hits"] = op->hits;
      d["bytes"] = op->bytes;
      d["failed_batches"] = op->failed_batches;
      d["seconds_total"] = op->seconds_total;
      d["last_seconds"] = op->last_seconds;
      out[name] = d;
    }
    return out;
  }

  double LastLoadSeconds() const { return engine_->stats().get.last_seconds; }
  const std::string& prefix() const { return prefix_; }

 private:
  // keys as object names: a list (or tuple) of non-empty str without NUL, prefix + key at
  // most kMaxNameBytes bytes of UTF-8.
  std::vector<std::string> Names(const py::handle& keys) const {
    if (!py::isinstance<py::sequence>(keys) || py::isinstance<py::str>(keys) ||
        py::isinstance<py::bytes>(keys)) {
      throw py::type_error("keys must be a list of str");
    }
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(keys);
    std::vector<std::string> names;
    names.reserve(seq.size());
    for (size_t j = 0; j < seq.size(); ++j) {
      const py::object k = seq[j];
      if (!py::isinstance<py::str>(k)) {
        throw py::type_error(
            fmt::format("keys[{}] must be str, not {}", j, Py_TYPE(k.ptr())->tp_name));
      }
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(k.ptr(), &size);  // lone surrogates raise
      if (utf8 == nullptr) {
        throw py::error_already_set();
      }
      const std::string_view key(utf8, static_cast<size_t>(size));
      if (key.empty() || key.find('\0') != std::string_view::npos ||
          prefix_.size() + key.size() > kMaxNameBytes) {
        Raise(Status::InvalidArgument(
            "keys", fmt::format("keys[{}] must be 1..{} bytes of UTF-8 without NUL", j,
                                kMaxNameBytes - prefix_.size())));
      }
      names.push_back(prefix_ + std::string(key));
    }
    return names;
  }

  uint64_t Submit(lmcache::Job job) {
    lmcache::Job refused;
    Result<uint64_t> id = engine_->Submit(std::move(job), &refused);
    if (!id.has_value()) {
      throw py::value_error("the connector is closed");  // `refused` unpins here, GIL held
    }
    return *id;
  }

  std::unique_ptr<Engine> engine_;
  std::string prefix_;
};

PyL2Connector* MakeConnector(const std::string& endpoint, const std::string& access_key,
                             const std::string& secret_key, const std::string& bucket,
                             const std::string& prefix, const std::string& region, double timeout,
                             uint32_t workers, bool sign_payload, uint64_t merge_exists_keys) {
  if (prefix.size() > kMaxPrefixBytes || prefix.find('\0') != std::string::npos) {
    Raise(Status::InvalidArgument(
        "prefix", fmt::format("prefix must be at most {} bytes without NUL", kMaxPrefixBytes)));
  }
  Engine::Options o;
  o.client.endpoint = endpoint;
  o.client.access_key = access_key;
  o.client.secret_key = secret_key;
  o.client.region = region;
  o.client.timeout = TimeoutArg(timeout).value_or(o.client.timeout);
  o.client.sign_payload = sign_payload;
  o.bucket = bucket;
  o.prefix = prefix;
  o.workers = workers;
  o.merge_exists_keys = merge_exists_keys;
  Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(o));
  if (!e.has_value()) {
    Raise(e.error());
  }
  return new PyL2Connector(std::move(*e), prefix);
}

}  // namespace

void BindLMCache(py::module_& m) {
  py::class_<PyL2Connector>(
      m, "ObjectCacheL2Connector",
      R"doc(LMCache's multi-process native_plugin L2 connector over an ObjectCache gateway (docs/integrations.md). submit_batch_* return a future id at once; completions are announced on event_fd() and collected with drain_completions() as (future_id, ok, error, per_key bools). stats() reports batches, keys, hits, bytes and seconds (submit to completion) per operation; last_load_seconds is the latest get's.)doc")
      .def(py::init(&MakeConnector), py::kw_only(), py::arg("endpoint"), py::arg("access_key"),
           py::arg("secret_key"), py::arg("bucket"), py::arg("prefix") = "",
           py::arg("region") = "us-east-1", py::arg("timeout") = 60.0, py::arg("workers") = 8,
           py::arg("sign_payload") = false,
           py::arg("merge_exists_keys") = lmcache::kMaxMergedProbeKeys)
      .def("event_fd", &PyL2Connector::EventFd,
           "The eventfd LMCache polls for POLLIN; -1 after close().")
      .def(
          "submit_batch_get",
          [](PyL2Connector& c, const py::handle& keys, const py::handle& views) {
            return c.SubmitBuffers(Op::kGet, keys, views);
          },
          "Load object keys[j] into the writable buffer memoryviews[j] (its own length).",
          py::arg("keys"), py::arg("memoryviews"))
      .def(
          "submit_batch_set",
          [](PyL2Connector& c, const py::handle& keys, const py::handle& views) {
            return c.SubmitBuffers(Op::kSet, keys, views);
          },
          "Store memoryviews[j] under keys[j].", py::arg("keys"), py::arg("memoryviews"))
      .def(
          "submit_batch_exists",
          [](PyL2Connector& c, const py::handle& keys) { return c.SubmitKeys(Op::kExists, keys); },
          "Which keys are stored (one probe).", py::arg("keys"))
      .def(
          "submit_batch_delete",
          [](PyL2Connector& c, const py::handle& keys) { return c.SubmitKeys(Op::kDelete, keys); },
          "Delete keys (per-key true when the delete succeeded).", py::arg("keys"))
      .def("drain_completions", &PyL2Connector::Drain,
           "Completions ready since the last call: [(future_id, ok, error, per_key)].")
      .def("close", &PyL2Connector::Close,
           "Fail queued batches, wait for running ones, close the eventfd. Idempotent.")
      .def("stats", &PyL2Connector::Stats)
      .def_property_readonly("last_load_seconds", &PyL2Connector::LastLoadSeconds)
      .def_property_readonly("prefix", &PyL2Connector::prefix);
}

}  // namespace oc::python
