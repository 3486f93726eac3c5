// objectcache._native: the exceptions, chunk keys, Descriptor, and the Client's calls that do
// not move layer bytes (probe, the plain S3 helpers). transfer.cc binds the rest (buffers,
// get_layers, put_chunks, futures). binding.h says who holds what.
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "binding.h"
#include "oc/common/bytes.h"
#include "oc/descriptor/chunk_key.h"
#include "oc/descriptor/layout.h"
#include "oc/descriptor/limits.h"

namespace oc::python {
namespace {

template <class T>
T Unwrap(Result<T> r) {
  if (!r.has_value()) {
    Raise(r.error());
  }
  return std::move(*r);
}

std::string NamespaceString(const std::string& model, const std::string& dtype, uint32_t tp_rank,
                            uint32_t tp_size) {
  return Unwrap(descriptor::NamespaceString({model, dtype, tp_rank, tp_size}));
}

std::vector<py::bytes> ChunkHashes(const py::handle& tokens, uint32_t chunk_tokens,
                                   const std::string& ns) {
  std::vector<uint32_t> t = Tokens(tokens);
  Result<std::vector<descriptor::ChunkHash>> r = [&] {
    py::gil_scoped_release release;  // long token lists hash while other threads run
    return descriptor::ChunkHashes(t, chunk_tokens, ns);
  }();
  std::vector<descriptor::ChunkHash> hashes = Unwrap(std::move(r));
  std::vector<py::bytes> out;
  out.reserve(hashes.size());
  for (const descriptor::ChunkHash& h : hashes) {
    out.emplace_back(reinterpret_cast<const char*>(h.data()), h.size());
  }
  return out;
}

std::vector<std::string> ChunkKeys(const py::handle& tokens, uint32_t chunk_tokens,
                                   const std::string& ns, const std::string& prefix) {
  std::vector<uint32_t> t = Tokens(tokens);
  std::vector<descriptor::ChunkHash> hashes = Unwrap(descriptor::ChunkHashes(t, chunk_tokens, ns));
  std::vector<std::string> out;
  out.reserve(hashes.size());
  for (const descriptor::ChunkHash& h : hashes) {
    out.push_back(descriptor::ChunkObjectName(prefix, h));
  }
  return out;
}

descriptor::StoredLayout ParseLayout(const std::string& s) {
  if (s == "kv_l2td") {
    return descriptor::StoredLayout::kL2TD;
  }
  if (s == "kv_2ltd") {
    return descriptor::StoredLayout::k2LTD;
  }
  throw py::value_error("layout must be 'kv_l2td' or 'kv_2ltd'");
}

descriptor::Delivery ParseDelivery(const std::string& s) {
  if (s == "layer-major") {
    return descriptor::Delivery::kLayerMajor;
  }
  if (s == "chunk-major") {
    return descriptor::Delivery::kChunkMajor;
  }
  throw py::value_error("delivery must be 'layer-major' or 'chunk-major'");
}

// Descriptor(keys, layers=, layer_bytes=, ...): bytes keys (16 each) are compact hashes under
// `prefix`; str keys are explicit object names.
descriptor::Descriptor MakeDescriptor(const py::sequence& keys, uint32_t layers,
                                      uint64_t layer_bytes, uint32_t chunk_tokens,
                                      const std::string& layout, const std::string& delivery,
                                      const std::string& prefix, const std::string& request_id,
                                      std::optional<uint64_t> compute_window_us) {
  descriptor::Descriptor d;
  bool compact = keys.size() > 0 && py::isinstance<py::bytes>(keys[0]);
  if (compact) {
    descriptor::CompactKeys ck{prefix, {}};
    ck.hashes.reserve(keys.size());
    for (py::handle k : keys) {
      if (!py::isinstance<py::bytes>(k)) {
        throw py::type_error("keys: all bytes (16-byte chunk hashes) or all str (names)");
      }
      char* raw = nullptr;
      Py_ssize_t raw_size = 0;
      if (PyBytes_AsStringAndSize(k.ptr(), &raw, &raw_size) != 0) {
        throw py::error_already_set();
      }
      if (raw_size != 16) {
        throw py::value_error("keys: a chunk hash is 16 bytes (objectcache.chunk_hashes)");
      }
      descriptor::ChunkHash h;
      std::memcpy(h.data(), raw, 16);
      ck.hashes.push_back(h);
    }
    d.keys = std::move(ck);
  } else {
    if (!prefix.empty()) {
      throw py::value_error("prefix applies to compact (bytes) keys only");
    }
    descriptor::ExplicitKeys ek;
    ek.names.reserve(keys.size());
    for (py::handle k : keys) {
      if (!py::isinstance<py::str>(k)) {
        throw py::type_error("keys: all bytes (16-byte chunk hashes) or all str (names)");
      }
      ek.names.push_back(k.cast<std::string>());
    }
    d.keys = std::move(ek);
  }
  d.num_layers = layers;
  d.layer_bytes = layer_bytes;
  d.chunk_tokens = chunk_tokens;
  d.layout = ParseLayout(layout);
  d.delivery = ParseDelivery(delivery);
  d.request_id = request_id;
  d.compute_window_us = compute_window_us;
  if (Status s = descriptor::Validate(d, descriptor::Limits{}); !s.ok()) {
    Raise(s);
  }
  return d;
}

descriptor::Descriptor Slice(const descriptor::Descriptor& d, const py::slice& slice) {
  size_t start = 0, stop = 0, step = 0, length = 0;
  if (!slice.compute(d.num_chunks(), &start, &stop, &step, &length)) {
    throw py::error_already_set();
  }
  if (step != 1 || length == 0) {
    throw py::value_error("a descriptor slice is a non-empty run of chunks with step 1");
  }
  descriptor::Descriptor sub = d;
  if (const auto* c = std::get_if<descriptor::CompactKeys>(&d.keys)) {
    sub.keys =
        descriptor::CompactKeys{c->prefix,
                                {c->hashes.begin() + static_cast<std::ptrdiff_t>(start),
                                 c->hashes.begin() + static_cast<std::ptrdiff_t>(start + length)}};
  } else {
    const auto& names = std::get<descriptor::ExplicitKeys>(d.keys).names;
    sub.keys =
        descriptor::ExplicitKeys{{names.begin() + static_cast<std::ptrdiff_t>(start),
                                  names.begin() + static_cast<std::ptrdiff_t>(start + length)}};
  }
  return sub;
}

// ------------------------------------------------------------------------------------------
// Client: construction and the calls that move no layer bytes.

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

// Runs `call` with the GIL released; raises its error.
template <class F>
auto Blocking(F&& call) {
  auto r = [&] {
    py::gil_scoped_release release;
    return call();
  }();
  if constexpr (std::is_same_v<std::decay_t<decltype(r)>, Status>) {
    if (!r.ok()) {
      Raise(r);
    }
  } else {
    if (!r.has_value()) {
      Raise(r.error());
    }
    return std::move(*r);
  }
}

client::Client& ClientOf(PyClient& c) {
  if (c.core == nullptr || c.core->client == nullptr) {
    throw py::value_error("the client is closed");
  }
  return *c.core->client;
}

// A Future whose work needs no buffer.
template <class Call, class ToPy>
Future* Submit(PyClient& c, Call call, ToPy to_py) {
  client::Client* cl = &ClientOf(c);
  return new Future(
      c.core,
      [cl, call = std::move(call), to_py = std::move(to_py)]() -> Future::Convert {
        auto r = call(*cl);
        return [r = std::move(r), to_py]() -> py::object {
          if constexpr (std::is_same_v<std::decay_t<decltype(r)>, Status>) {
            if (!r.ok()) {
              Raise(r);
            }
            return to_py();
          } else {
            if (!r.has_value()) {
              Raise(r.error());
            }
            return to_py(*r);
          }
        };
      },
      {}, py::none());
}

py::object ListToPy(const std::vector<ObjectInfo>& objects) { return py::cast(objects); }

Result<std::vector<ObjectInfo>> ListAll(client::Client& c, const std::string& bucket,
                                        const std::string& prefix, uint64_t limit) {
  std::vector<ObjectInfo> out;
  std::string token;
  for (;;) {
    const auto page_keys = static_cast<uint32_t>(std::min<uint64_t>(1000, limit - out.size()));
    OC_ASSIGN_OR_RETURN(client::ListPage page, c.ListObjects(bucket, prefix, token, page_keys));
    for (client::ObjectEntry& e : page.objects) {
      out.push_back({std::move(e.key), e.size, std::move(e.etag)});
    }
    if (!page.truncated || out.size() >= limit || page.next_continuation_token.empty()) {
      return out;
    }
    token = std::move(page.next_continuation_token);
  }
}

}  // namespace

PyClient::~PyClient() {
  if (core != nullptr) {
    DropCore(core);
  }
}

PYBIND11_MODULE(_native, m) {
  m.doc() = "objectcache's native module (liboc_client); import objectcache instead.";
  CreateErrorClasses(m);

  m.def("namespace_string", &NamespaceString,
        "The chunk-key namespace string: oc-kv-v1;model=..;dtype=..;tp=rank/size.",
        py::arg("model"), py::arg("dtype") = "bfloat16", py::arg("tp_rank") = 0,
        py::arg("tp_size") = 1);
  m.def("chunk_hashes", &ChunkHashes,
        "16-byte rolling XXH3-128 hashes of every full chunk of `tokens` (uint32 ids).",
        py::arg("tokens"), py::arg("chunk_tokens"), py::arg("namespace"));
  m.def("chunk_keys", &ChunkKeys,
        "Object names: prefix + 32 lowercase hex digits of each chunk hash.", py::arg("tokens"),
        py::arg("chunk_tokens"), py::arg("namespace"), py::arg("prefix") = "");

  py::class_<descriptor::Descriptor>(
      m, "Descriptor",
      R"doc(N chunk keys and their shape (docs/protocol.md): bytes keys are 16-byte chunk hashes under `prefix` (compact), str keys full object names (explicit). d[a:b] is the descriptor of chunks a..b-1.)doc")
      .def(py::init(&MakeDescriptor), py::arg("keys"), py::kw_only(), py::arg("layers"),
           py::arg("layer_bytes"), py::arg("chunk_tokens") = 16, py::arg("layout") = "kv_l2td",
           py::arg("delivery") = "layer-major", py::arg("prefix") = "", py::arg("request_id") = "",
           py::arg("compute_window_us") = std::nullopt)
      .def("__len__", &descriptor::Descriptor::num_chunks)
      .def("__getitem__", &Slice)
      .def_property_readonly("num_chunks", &descriptor::Descriptor::num_chunks)
      .def_readonly("layers", &descriptor::Descriptor::num_layers)
      .def_readonly("layer_bytes", &descriptor::Descriptor::layer_bytes)
      .def_readonly("chunk_tokens", &descriptor::Descriptor::chunk_tokens)
      .def_property_readonly("layout",
                             [](const descriptor::Descriptor& d) {
                               return std::string(descriptor::StoredLayoutName(d.layout));
                             })
      .def_property_readonly("delivery",
                             [](const descriptor::Descriptor& d) {
                               return std::string(descriptor::DeliveryName(d.delivery));
                             })
      .def_property_readonly("compact", &descriptor::Descriptor::compact)
      .def_property_readonly(
          "chunk_bytes",
          [](const descriptor::Descriptor& d) { return uint64_t{d.num_layers} * d.layer_bytes; })
      .def_property_readonly("payload_bytes",
                             [](const descriptor::Descriptor& d) {
                               return d.num_chunks() * d.num_layers * d.layer_bytes;
                             })
      .def("object_names",
           [](const descriptor::Descriptor& d) {
             std::vector<std::string> out;
             for (uint64_t j = 0; j < d.num_chunks(); ++j) {
               out.push_back(d.ObjectName(j));
             }
             return out;
           })
      .def("__repr__", [](const descriptor::Descriptor& d) {
        return "<objectcache.Descriptor chunks=" + std::to_string(d.num_chunks()) +
               " layers=" + std::to_string(d.num_layers) +
               " layer_bytes=" + std::to_string(d.layer_bytes) +
               " layout=" + std::string(descriptor::StoredLayoutName(d.layout)) + ">";
      });

  py::class_<client::ProbeResult>(
      m, "ProbeResult",
      "matched: leading present chunks; sizes: per key, None when absent; present: per key.")
      .def_readonly("matched", &client::ProbeResult::matched)
      .def_readonly("sizes", &client::ProbeResult::sizes)
      .def_property_readonly("present",
                             [](const client::ProbeResult& r) {
                               std::vector<bool> out;
                               for (const auto& s : r.sizes) {
                                 out.push_back(s.has_value());
                               }
                               return out;
                             })
      .def("__repr__", [](const client::ProbeResult& r) {
        return "<objectcache.ProbeResult matched=" + std::to_string(r.matched) + " of " +
               std::to_string(r.sizes.size()) + ">";
      });

  py::class_<ObjectInfo>(m, "ObjectInfo")
      .def_readonly("key", &ObjectInfo::key)
      .def_readonly("size", &ObjectInfo::size)
      .def_readonly("etag", &ObjectInfo::etag)
      .def("__repr__", [](const ObjectInfo& o) {
        return "<ObjectInfo " + o.key + " " + std::to_string(o.size) + ">";
      });

  py::class_<Future>(
      m, "Future",
      "A call running on the client's task threads: done(), result(timeout), exception(timeout).")
      .def("done", &Future::done)
      .def("result", &Future::result, py::arg("timeout") = py::none())
      .def("exception", &Future::exception, py::arg("timeout") = py::none());

  py::class_<PyClient> client(
      m, "Client",
      R"doc(A client of one ObjectCache gateway: SigV4 credentials, a pool of keep-alive connections, the UCX data plane (opened on first use). Thread-safe; calls release the GIL.)doc");
  client.def(py::init([](const std::string& endpoint, const std::string& access_key,
                         const std::string& secret_key, const std::string& region, double timeout,
                         const std::string& ucx_transports, uint32_t requests_in_flight,
                         bool sign_payload) {
               client::ClientOptions o;
               o.endpoint = endpoint;
               o.access_key = access_key;
               o.secret_key = secret_key;
               o.region = region;
               o.timeout = TimeoutArg(timeout).value_or(o.timeout);
               o.data_plane.transports = ucx_transports;
               o.requests_in_flight = requests_in_flight;
               o.sign_payload = sign_payload;
               auto core = std::make_shared<Core>();
               core->client = Unwrap(client::Client::Open(o));
               BoundedExecutor::Options tasks;
               tasks.threads = requests_in_flight;
               tasks.max_queued = 4096;
               tasks.field = "requests_in_flight";
               tasks.thread_name = "oc-py-tasks";
               core->tasks = std::make_unique<BoundedExecutor>(std::move(tasks));
               return PyClient(std::move(core));
             }),
             py::arg("endpoint"), py::arg("access_key") = "", py::arg("secret_key") = "",
             py::kw_only(), py::arg("region") = "us-east-1", py::arg("timeout") = 60.0,
             py::arg("ucx_transports") = "", py::arg("requests_in_flight") = 16,
             py::arg("sign_payload") = false);
  client.def("close", [](PyClient& c) {
    if (c.core != nullptr) {
      DropCore(c.core);
    }
  });
  client.def_property_readonly("endpoint",
                               [](PyClient& c) { return ClientOf(c).options().endpoint; });
  client.def_property_readonly("timeout", [](PyClient& c) {
    return static_cast<double>(ClientOf(c).options().timeout.count()) / 1000.0;
  });
  client.def_property_readonly("slowdown_retries",
                               [](PyClient& c) { return ClientOf(c).slowdown_retries(); });

  client.def(
      "ping",
      [](PyClient& c, const std::string& bucket) {
        client::Client& cl = ClientOf(c);
        Blocking([&] { return cl.ListObjects(bucket, "", "", 1); });
      },
      R"doc(Connectivity and credentials check: one signed ListObjects on `bucket`. Raises NoSuchBucket, AuthenticationError, Unavailable...)doc",
      py::arg("bucket"));
  client.def(
      "create_bucket",
      [](PyClient& c, const std::string& bucket) {
        client::Client& cl = ClientOf(c);
        Blocking([&] { return cl.CreateBucket(bucket); });
      },
      R"doc(Creates `bucket` (AlreadyExists if this account owns it).)doc", py::arg("bucket"));
  client.def(
      "put_object",
      [](PyClient& c, const std::string& bucket, const std::string& key, const py::buffer& data) {
        client::Client& cl = ClientOf(c);
        PinnedBuffer pin(data, false, "data");
        const ByteSpan body(pin.data(), pin.size());
        Blocking([&] { return cl.PutObject(bucket, key, body); });
      },
      R"doc(Plain S3 PutObject of the bytes of `data` (any buffer).)doc", py::arg("bucket"),
      py::arg("key"), py::arg("data"));
  client.def(
      "get_object",
      [](PyClient& c, const std::string& bucket, const std::string& key, uint64_t offset,
         uint64_t length) {
        client::Client& cl = ClientOf(c);
        std::string bytes =
            Blocking([&] { return cl.GetObjectBytes(bucket, key, offset, length); });
        return py::bytes(bytes);
      },
      R"doc(Plain S3 GetObject: the whole object, or `length` bytes from `offset` (a Range GET) when length > 0. NoSuchKey, InvalidRange.)doc",
      py::arg("bucket"), py::arg("key"), py::arg("offset") = 0, py::arg("length") = 0);
  client.def(
      "get_object_into",
      [](PyClient& c, const std::string& bucket, const std::string& key, const py::buffer& out,
         uint64_t offset, uint64_t length) {
        client::Client& cl = ClientOf(c);
        PinnedBuffer pin(out, true, "out");
        if (length > 0) {  // a Range GET: its size is known before anything is sent
          CheckFits(pin.size(), 0, length, "out");
        }
        const MutableByteSpan into(pin.data(), pin.size());
        return Blocking([&] { return cl.GetObject(bucket, key, into, offset, length); });
      },
      R"doc(GetObject into the writable, C-contiguous buffer `out`; returns the bytes read. InvalidArgument (a ValueError) if `out` is smaller than `length`; OutOfRange if the whole object (length 0) does not fit (nothing past `out` is written).)doc",
      py::arg("bucket"), py::arg("key"), py::arg("out"), py::arg("offset") = 0,
      py::arg("length") = 0);
  client.def(
      "delete_object",
      [](PyClient& c, const std::string& bucket, const std::string& key) {
        client::Client& cl = ClientOf(c);
        Blocking([&] { return cl.DeleteObject(bucket, key); });
      },
      R"doc(Plain S3 DeleteObject (no error if the key is absent).)doc", py::arg("bucket"),
      py::arg("key"));
  client.def(
      "list_objects",
      [](PyClient& c, const std::string& bucket, const std::string& prefix, uint64_t limit) {
        client::Client& cl = ClientOf(c);
        return Blocking([&] { return ListAll(cl, bucket, prefix, limit); });
      },
      R"doc(ListObjectsV2 pages followed to the end (or `limit` keys): ObjectInfo(key, size, etag) in key order.)doc",
      py::arg("bucket"), py::arg("prefix") = "", py::arg("limit") = UINT64_MAX);
  client.def(
      "probe",
      [](PyClient& c, const std::string& bucket, const descriptor::Descriptor& d) {
        client::Client& cl = ClientOf(c);
        return Blocking([&] { return cl.ProbeChunks(bucket, d); });
      },
      R"doc(The batch existence query in one round trip: ProbeResult(matched = leading present chunks, sizes/present per key).)doc",
      py::arg("bucket"), py::arg("descriptor"));

  // The non-blocking forms: the same calls on the client's task threads.
  client.def(
      "probe_async",
      [](PyClient& c, const std::string& bucket, const descriptor::Descriptor& d) {
        return Submit(
            c, [bucket, d](client::Client& cl) { return cl.ProbeChunks(bucket, d); },
            [](const client::ProbeResult& r) { return py::cast(r); });
      },
      R"doc(probe() on the client's task threads: a Future of the ProbeResult.)doc",
      py::arg("bucket"), py::arg("descriptor"));
  client.def(
      "get_object_async",
      [](PyClient& c, const std::string& bucket, const std::string& key, uint64_t offset,
         uint64_t length) {
        return Submit(
            c,
            [bucket, key, offset, length](client::Client& cl) {
              return cl.GetObjectBytes(bucket, key, offset, length);
            },
            [](const std::string& r) -> py::object { return py::bytes(r); });
      },
      R"doc(get_object() as a Future of the bytes.)doc", py::arg("bucket"), py::arg("key"),
      py::arg("offset") = 0, py::arg("length") = 0);
  client.def(
      "delete_object_async",
      [](PyClient& c, const std::string& bucket, const std::string& key) {
        return Submit(
            c, [bucket, key](client::Client& cl) { return cl.DeleteObject(bucket, key); },
            []() { return py::none(); });
      },
      R"doc(delete_object() as a Future of None.)doc", py::arg("bucket"), py::arg("key"));
  client.def(
      "list_objects_async",
      [](PyClient& c, const std::string& bucket, const std::string& prefix, uint64_t limit) {
        return Submit(
            c,
            [bucket, prefix, limit](client::Client& cl) {
              return ListAll(cl, bucket, prefix, limit);
            },
            [](const std::vector<ObjectInfo>& r) { return ListToPy(r); });
      },
      R"doc(list_objects() as a Future of the list.)doc", py::arg("bucket"), py::arg("prefix") = "",
      py::arg("limit") = UINT64_MAX);

  BindTransfers(m, client);
  BindLMCache(m);
}

}  // namespace oc::python
