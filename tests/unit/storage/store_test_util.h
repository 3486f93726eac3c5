#pragma once
// Helpers shared by the storage tests: a store in a temp dir or in a RADOS namespace of the
// test cluster, and byte round trips.
//
// RADOS tests (every test whose full name contains "Rados") need the test cluster: ctest
// starts one per run (the rados_cluster fixture) and sets OC_TEST_CEPH_CONF and
// OC_TEST_RADOS_POOL. Without them such a test FAILS naming the variable; it never skips.
// Each RADOS store a test opens lives in its own random namespace of that pool.

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include <fmt/core.h>

#include "oc/common/bytes.h"
#include "oc/storage/open_store.h"
#include "oc/storage/store.h"
#include "oc/testutil/testutil.h"

namespace oc::storage::test {

// The backends a parameterised suite runs on.
enum class Backend { kRocksSst, kRocksBlob, kRocksData, kRados };

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kRocksSst:
      return "RocksSst";
    case Backend::kRocksBlob:
      return "RocksBlob";
    case Backend::kRocksData:
      return "RocksData";
    case Backend::kRados:
      return "Rados";
  }
  return "Unknown";
}

inline ExtentLayout LayoutOf(Backend b) {
  switch (b) {
    case Backend::kRocksBlob:
      return ExtentLayout::kBlobFiles;
    case Backend::kRocksData:
      return ExtentLayout::kDataFiles;
    default:
      return ExtentLayout::kSstBlocks;
  }
}

// A fresh RADOS namespace name for one test's store.
inline std::string RandomRadosNamespace() {
  std::random_device rd;
  return fmt::format("t{:08x}{:08x}", rd(), rd());
}

// `base` turned into a RADOS store of the test cluster in namespace `ns`: small data objects
// (64 KiB, so modest objects span several) and few index shards. kFailedPrecondition naming
// OC_TEST_CEPH_CONF when the environment does not name a cluster.
inline Result<StoreOptions> RadosTestOptions(StoreOptions base, const std::string& ns) {
  const char* conf = std::getenv("OC_TEST_CEPH_CONF");
  if (conf == nullptr || *conf == '\0') {
    return Status::FailedPrecondition(
        Subject::kNone,
        "OC_TEST_CEPH_CONF is not set: RADOS tests need a test cluster. Start one with "
        "`tools/ceph-test-cluster up DIR` and set OC_TEST_CEPH_CONF=DIR/ceph.conf (ctest does "
        "both through the rados_cluster fixture)");
  }
  const char* pool = std::getenv("OC_TEST_RADOS_POOL");
  base.backend = "rados";
  base.rados.conf_file = conf;
  base.rados.pool = pool != nullptr && *pool != '\0' ? pool : "oc-test";
  base.rados.rados_namespace = ns;
  base.rados.client_name = "client.admin";
  base.rados.object_extent_bytes = 64 << 10;
  base.rados.index_shards = 5;
  base.rados.connect_timeout = std::chrono::seconds(10);
  return base;
}

// Opens `base` on `backend`: RocksDB (in base.data_dir, with the backend's layout) or the
// test cluster's namespace `ns`.
inline Result<std::unique_ptr<Store>> OpenTestStore(Backend backend, StoreOptions base,
                                                    const std::string& ns) {
  if (backend == Backend::kRados) {
    OC_ASSIGN_OR_RETURN(StoreOptions o, RadosTestOptions(std::move(base), ns));
    return OpenStore(o);
  }
  base.extent_layout = LayoutOf(backend);
  return OpenStore(base);
}

// Small extents, flush batches and data files so that modest objects exercise multi-extent
// reads, streamed (unsynced, pending) flushes and data files rolled mid-object.
inline StoreOptions SmallOptions(const std::filesystem::path& dir, ExtentLayout layout) {
  StoreOptions o;
  o.data_dir = dir.string();
  o.default_extent_bytes = 4096;
  o.write_batch_bytes = 16384;
  o.block_cache_bytes = 64 << 20;
  o.read_threads = 2;
  o.extent_layout = layout;
  o.data_file_bytes = 64 << 10;
  o.data_file_min_bytes = 1000;  // tiny objects stay in RocksDB, the rest go to data files
  return o;
}

inline std::string Bytes(uint64_t seed, uint64_t size) {
  std::vector<std::byte> b = testutil::PatternBytes(seed, size);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline Result<ObjectMeta> PutString(Store& store, const ObjectKey& key, std::string_view data,
                                    PutOptions options = {}, size_t piece = 3000) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w, store.Put(key, options));
  for (size_t pos = 0; pos < data.size(); pos += piece) {
    OC_RETURN_IF_ERROR(w->Append(AsBytes(data.substr(pos, piece))));
  }
  return w->Commit();
}

inline Result<std::string> ReadAll(ObjectReader& reader, size_t piece = 5000) {
  std::string out;
  std::string buf(piece, '\0');
  for (;;) {
    OC_ASSIGN_OR_RETURN(uint64_t n, reader.Read(MutableByteSpan(
                                        reinterpret_cast<std::byte*>(buf.data()), buf.size())));
    if (n == 0) {
      return out;
    }
    out.append(buf.data(), n);
  }
}

inline Result<std::string> GetString(Store& store, const ObjectKey& key,
                                     ByteRange range = ByteRange::All(), size_t piece = 5000) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> r, store.Get(key, range));
  return ReadAll(*r, piece);
}

inline std::string LayoutName(ExtentLayout layout) {
  switch (layout) {
    case ExtentLayout::kSstBlocks:
      return "Sst";
    case ExtentLayout::kBlobFiles:
      return "Blob";
    case ExtentLayout::kDataFiles:
      return "Data";
  }
  return "Unknown";
}

inline std::string LayoutName(const ::testing::TestParamInfo<ExtentLayout>& info) {
  return LayoutName(info.param);
}

}  // namespace oc::storage::test
