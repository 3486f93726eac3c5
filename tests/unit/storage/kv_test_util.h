#pragma once
// Helpers of the KV-cache descriptor tests (kv_*_test.cc): a store in a temp dir, chunk
// objects with known bytes, descriptors of both key forms, an independent oracle of the
// expected payload (written from the formulas of docs/protocol.md, not from layout.h), a
// body sink that checks its offsets increase without gaps, and a UCX receiving side built
// on the client library (client/include/oc/client/target_buffer.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "composed_store.h"
#include "kv/slice_source.h"
#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"
#include "oc/storage/open_store.h"
#include "oc/storage/store.h"
#include "oc/testutil/testutil.h"
#include "store_test_util.h"

namespace oc::storage::kvtest {

using descriptor::Delivery;
using descriptor::Descriptor;
using descriptor::StoredLayout;

inline constexpr std::chrono::milliseconds kWait{20'000};
inline constexpr char kBucket[] = "kv-test";

struct Transport {
  const char* name;
  const char* tls;
};
inline constexpr Transport kTransports[] = {{"shm", "shm"}, {"tcp", "tcp"}};

inline StoreOptions TestStoreOptions(const std::filesystem::path& dir) {
  StoreOptions o;
  o.data_dir = dir.string();
  o.block_cache_bytes = 64 << 20;
  o.read_threads = 2;
  o.sync_writes = false;  // the engine, not the disk, is under test here
  o.kv.data_plane_staging_buffers = 4;
  o.kv.data_plane_staging_buffer_bytes = 16 << 10;  // small: layers span several buffers
  o.kv.data_plane_timeout = std::chrono::milliseconds(5'000);
  return o;
}

// A local store in a temp dir (TestStoreOptions) with kBucket created: the base of the
// kv_*_test fixtures.
class KvStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenStore(TestStoreOptions(dir_.path()));
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket(kBucket, "tester").ok());
  }

  // The local store as the KV engine sees it (src/kv/slice_source.h).
  kv::SliceSource& source() { return dynamic_cast<kv::SliceSource&>(*BackendOf(*store_)); }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

// KvStoreTest on a parameter's backend (store_test_util.h): RocksDB, or a RADOS namespace of
// the test cluster (instantiations named "Rados").
class KvBackendTest : public ::testing::TestWithParam<test::Backend> {
 protected:
  void SetUp() override {
    auto s = test::OpenTestStore(GetParam(), TestStoreOptions(dir_.path()),
                                 test::RandomRadosNamespace());
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket(kBucket, "tester").ok());
  }

  kv::SliceSource& source() { return dynamic_cast<kv::SliceSource&>(*BackendOf(*store_)); }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

struct Shape {
  uint64_t n;
  uint32_t layers;
  uint64_t s;
  StoredLayout layout;
};

inline std::string ShapeName(const Shape& s) {
  return "N=" + std::to_string(s.n) + " L=" + std::to_string(s.layers) +
         " S=" + std::to_string(s.s) + " " + std::string(descriptor::StoredLayoutName(s.layout));
}

// Chunk j's object bytes (L·S) for a test identified by `seed`.
inline std::vector<std::byte> ChunkBytes(uint64_t seed, uint64_t j, const Shape& s) {
  return testutil::PatternBytes(seed * 1000 + j + 1, s.layers * s.s);
}

// A descriptor naming `s.n` chunks, compact (prefix + hashes) or explicit.
inline Descriptor MakeDescriptor(const Shape& s, bool compact, uint64_t seed,
                                 Delivery delivery = Delivery::kLayerMajor) {
  Descriptor d;
  if (compact) {
    descriptor::CompactKeys keys;
    keys.prefix = "model-a/" + std::to_string(seed) + "/";
    for (uint64_t j = 0; j < s.n; ++j) {
      descriptor::ChunkHash h{};
      std::vector<std::byte> p = testutil::PatternBytes(seed * 7919 + j, h.size());
      std::copy(p.begin(), p.end(), h.begin());
      keys.hashes.push_back(h);
    }
    d.keys = std::move(keys);
  } else {
    descriptor::ExplicitKeys keys;
    for (uint64_t j = 0; j < s.n; ++j) {
      keys.names.push_back("llama@1@0@" + std::to_string(seed) + "-" + std::to_string(j) +
                           "@bfloat16");
    }
    d.keys = std::move(keys);
  }
  d.num_layers = s.layers;
  d.chunk_tokens = 16;
  d.layer_bytes = s.s;
  d.layout = s.layout;
  d.delivery = delivery;
  d.request_id = "test-" + std::to_string(seed);
  return d;
}

// Stores chunk j of `d` as a chunk object (with its ChunkShape), written through Put.
inline Status StoreChunk(Store& store, const Descriptor& d, uint64_t j, ByteSpan bytes,
                         bool with_shape = true) {
  PutOptions o;
  if (with_shape) {
    o.chunk = ChunkShape{d.layout, d.num_layers, d.layer_bytes};
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w,
                      store.Put(ObjectKey{kBucket, d.ObjectName(j)}, o));
  OC_RETURN_IF_ERROR(w->Append(bytes));
  return w->Commit().status();
}

// The slice (layer l) of a stored chunk, K half then V half, from docs/protocol.md.
inline std::vector<std::byte> OracleSlice(const std::vector<std::byte>& chunk, const Shape& s,
                                          uint32_t l) {
  std::vector<std::byte> out(s.s);
  if (s.layout == StoredLayout::kL2TD) {
    std::memcpy(out.data(), chunk.data() + l * s.s, s.s);
  } else {
    const uint64_t half = s.s / 2;
    std::memcpy(out.data(), chunk.data() + l * half, half);
    std::memcpy(out.data() + half, chunk.data() + (s.layers + l) * half, half);
  }
  return out;
}

// Where slice (l, j) lands when the payload has `n` chunk slots.
inline uint64_t OracleOffset(Delivery delivery, const Shape& s, uint64_t n, uint32_t l,
                             uint64_t j) {
  return delivery == Delivery::kLayerMajor ? (l * n + j) * s.s : (j * s.layers + l) * s.s;
}

// Writes the expected slices of chunks 0..m-1 into `out` (sized by the caller) with `n`
// slots per layer.
inline void OraclePayload(const std::vector<std::vector<std::byte>>& chunks, const Shape& s,
                          Delivery delivery, uint64_t n, uint64_t m, std::vector<std::byte>& out) {
  for (uint64_t j = 0; j < m; ++j) {
    for (uint32_t l = 0; l < s.layers; ++l) {
      std::vector<std::byte> slice = OracleSlice(chunks[j], s, l);
      std::memcpy(out.data() + OracleOffset(delivery, s, n, l, j), slice.data(), s.s);
    }
  }
}

// A LayerSink collecting the body in memory. Write() copies at once and gives the buffer
// back; offsets must increase without gaps (the HTTP body's rule).
class VectorSink final : public LayerSink {
 public:
  VectorSink(uint32_t buffers, uint64_t buffer_bytes) : pool_(buffers, buffer_bytes) {}

  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(kWait); }
  Status Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) override {
    EXPECT_FALSE(finished_);
    if (!pool_.Owns(buffer) || length == 0 || length > buffer.bytes().size()) {
      return Status::InvalidArgument("", "bad buffer or length");
    }
    if (dest_offset != body_.size()) {
      gap_or_reorder_ = true;
      return Status::OutOfRange("body offsets must increase without gaps");
    }
    body_.insert(body_.end(), buffer.bytes().begin(), buffer.bytes().begin() + length);
    ++writes_;
    return Status::Ok();
  }
  Status LayerReady(uint32_t layer) override {
    EXPECT_FALSE(finished_);
    layers_.push_back(layer);
    return Status::Ok();
  }
  Status Finish(const Status& final) override {
    EXPECT_FALSE(finished_) << "Finish called twice";
    finished_ = true;
    final_ = final;
    return final;
  }

  const std::vector<std::byte>& body() const { return body_; }
  const std::vector<uint32_t>& layers() const { return layers_; }
  bool finished() const { return finished_; }
  const Status& final_status() const { return final_; }
  bool gap_or_reorder() const { return gap_or_reorder_; }
  uint64_t writes() const { return writes_; }
  const HeapBufferPool& pool() const { return pool_; }

 private:
  HeapBufferPool pool_;
  std::vector<std::byte> body_;
  std::vector<uint32_t> layers_;
  bool finished_ = false;
  bool gap_or_reorder_ = false;
  uint64_t writes_ = 0;
  Status final_;
};

// A ChunkSource over bytes in memory, handing out at most `piece` bytes per Read.
class MemorySource final : public ChunkSource {
 public:
  MemorySource(std::vector<std::byte> bytes, uint64_t piece)
      : bytes_(std::move(bytes)), piece_(piece) {}
  Result<uint64_t> Read(MutableByteSpan out) override {
    const uint64_t n = std::min<uint64_t>({out.size(), piece_, bytes_.size() - at_});
    std::memcpy(out.data(), bytes_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::vector<std::byte> bytes_;
  uint64_t piece_;
  uint64_t at_ = 0;
};

// The receiving side: a client data plane and a target buffer pre-filled with a marker byte,
// so a slice that is never written stays recognisable (never zero-filled by the server).
inline constexpr std::byte kUntouched{0xEE};

struct Receiver {
  std::unique_ptr<client::DataPlane> plane;
  std::vector<std::byte> memory;
  std::unique_ptr<client::TargetBuffer> buffer;
  descriptor::ConnectionId connection{};  // to `server` of Open

  // Connects to the data plane `server` (Store::DataPlane, or Where(UcxDataPlane)).
  static Result<Receiver> Open(const Transport& t, uint64_t length, const DataPlaneInfo& server) {
    Receiver r;
    client::DataPlaneOptions o;
    o.transports = t.tls;
    OC_ASSIGN_OR_RETURN(r.plane, client::DataPlane::Open(o));
    OC_ASSIGN_OR_RETURN(r.connection, r.plane->Connect(server.address, server.shared_memory));
    r.memory.assign(length, kUntouched);
    OC_ASSIGN_OR_RETURN(r.buffer, r.plane->Wrap(MutableByteSpan(r.memory)));
    return r;
  }
  // The whole buffer as a target of the connection.
  descriptor::DataPlaneTarget Target() const { return buffer->Target(connection); }
};

// Where a data plane (UcxDataPlane) listens.
template <typename Plane>
DataPlaneInfo Where(const Plane& plane) {
  return DataPlaneInfo{plane.listen_address(), plane.shared_memory()};
}

// Where a store's data plane listens; fails the test (empty address) if it cannot open.
inline DataPlaneInfo WhereIs(Store& store, std::string_view bucket) {
  Result<DataPlaneInfo> where = store.DataPlane(bucket);
  EXPECT_TRUE(where.has_value()) << where.error();
  return where.has_value() ? *where : DataPlaneInfo{};
}

}  // namespace oc::storage::kvtest
