// StoreOptions: Validate, and the [storage], [rados] and [kv] config tables read from TOML.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include "composed_store.h"
#include "oc/common/config.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

TEST(StoreOptions, ValidateRefusesBadValues) {
  StoreOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.default_extent_bytes = 0;
  EXPECT_EQ(o.Validate().field(), "storage.default_extent_bytes");
  o = {};
  o.data_dir = "";
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.write_batch_bytes = 1;
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.read_threads = 1000;
  EXPECT_FALSE(o.Validate().ok());
}

TEST(StoreConfig, AppliesTheStorageTable) {
  Result<Config> c = Config::Parse(R"(
[storage]
data_dir = "/var/lib/oc"
default_extent_bytes = "256KiB"
block_cache_bytes = 1048576
sync_writes = false
read_threads = 2
extent_layout = "blob"
slice_read_mode = "parallel"
write_batch_bytes = "16MiB"
reclaim_after_bytes = 0
)");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  EXPECT_EQ(o.data_dir, "/var/lib/oc");
  EXPECT_EQ(o.default_extent_bytes, 256u << 10);
  EXPECT_EQ(o.block_cache_bytes, 1u << 20);
  EXPECT_FALSE(o.sync_writes);
  EXPECT_EQ(o.read_threads, 2u);
  EXPECT_EQ(o.extent_layout, ExtentLayout::kBlobFiles);
  EXPECT_EQ(o.slice_read_mode, SliceReadMode::kParallelGet);
  EXPECT_EQ(o.write_batch_bytes, 16u << 20);
  EXPECT_EQ(o.reclaim_after_bytes, 0u);
  EXPECT_TRUE(c->CheckNoUnknownKeys().ok());
  EXPECT_TRUE(o.Validate().ok());

  Result<Config> data = Config::Parse(R"(
[storage]
extent_layout = "data_files"
data_file_bytes = "256MiB"
data_file_garbage_percent = 80
)");
  ASSERT_TRUE(data.has_value()) << data.error();
  ASSERT_TRUE(ApplyConfig(*data, &o).ok());
  EXPECT_EQ(o.extent_layout, ExtentLayout::kDataFiles);
  EXPECT_EQ(o.data_file_bytes, 256u << 20);
  EXPECT_EQ(o.data_file_garbage_percent, 80u);
  EXPECT_TRUE(o.Validate().ok());
  for (const auto& [bytes, percent, field] :
       {std::tuple{uint64_t{1000}, 50u, "storage.data_file_bytes"},
        std::tuple{uint64_t{1} << 30, 0u, "storage.data_file_garbage_percent"},
        std::tuple{uint64_t{1} << 30, 101u, "storage.data_file_garbage_percent"}}) {
    StoreOptions bad = o;
    bad.data_file_bytes = bytes;
    bad.data_file_garbage_percent = percent;
    EXPECT_EQ(bad.Validate().field(), field);
  }

  for (const char* bad :
       {"[storage]\nextent_layout = \"disk\"\n", "[storage]\nslice_read_mode = \"fast\"\n",
        "[storage]\nsync_writes = \"yes\"\n", "[storage]\ndefault_extent_bytes = \"lots\"\n",
        "[storage]\ndata_file_bytes = \"big\"\n"}) {
    SCOPED_TRACE(bad);
    Result<Config> b = Config::Parse(bad);
    ASSERT_TRUE(b.has_value());
    StoreOptions untouched;
    Status s = ApplyConfig(*b, &untouched);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_TRUE(s.field().starts_with("storage.")) << s;
  }
}

TEST(StoreConfig, ShippedFileListsEveryKeyAtItsDefault) {
  Result<Config> c = Config::LoadFile(std::string(OC_SOURCE_DIR) + "/conf/storage-server.toml");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions from_file;
  from_file.data_dir = "changed";
  from_file.read_threads = 99;
  ASSERT_TRUE(ApplyConfig(*c, &from_file).ok());
  const StoreOptions defaults;
  EXPECT_EQ(from_file.data_dir, defaults.data_dir);
  EXPECT_EQ(from_file.default_extent_bytes, defaults.default_extent_bytes);
  EXPECT_EQ(from_file.block_cache_bytes, defaults.block_cache_bytes);
  EXPECT_EQ(from_file.sync_writes, defaults.sync_writes);
  EXPECT_EQ(from_file.read_threads, defaults.read_threads);
  EXPECT_EQ(from_file.extent_layout, defaults.extent_layout);
  EXPECT_EQ(from_file.slice_read_mode, defaults.slice_read_mode);
  EXPECT_EQ(from_file.write_batch_bytes, defaults.write_batch_bytes);
  EXPECT_EQ(from_file.reclaim_after_bytes, defaults.reclaim_after_bytes);
  EXPECT_EQ(from_file.data_file_bytes, defaults.data_file_bytes);
  EXPECT_EQ(from_file.data_file_min_bytes, defaults.data_file_min_bytes);
  EXPECT_EQ(from_file.data_file_writeback_bytes, defaults.data_file_writeback_bytes);
  EXPECT_EQ(from_file.data_file_garbage_percent, defaults.data_file_garbage_percent);
  EXPECT_EQ(from_file.backend, defaults.backend);
  const RadosOptions& r = from_file.rados;
  const RadosOptions& d = defaults.rados;
  EXPECT_EQ(r.conf_file, d.conf_file);
  EXPECT_EQ(r.client_name, d.client_name);
  EXPECT_EQ(r.keyring, d.keyring);
  EXPECT_EQ(r.pool, d.pool);
  EXPECT_EQ(r.rados_namespace, d.rados_namespace);
  EXPECT_EQ(r.create_pool, d.create_pool);
  EXPECT_EQ(r.index_shards, d.index_shards);
  EXPECT_EQ(r.object_extent_bytes, d.object_extent_bytes);
  EXPECT_EQ(r.max_chunk_object_bytes, d.max_chunk_object_bytes);
  EXPECT_EQ(r.max_ops_in_flight, d.max_ops_in_flight);
  EXPECT_EQ(r.max_bytes_in_flight, d.max_bytes_in_flight);
  EXPECT_EQ(r.op_timeout, d.op_timeout);
  EXPECT_EQ(r.connect_timeout, d.connect_timeout);
  EXPECT_EQ(r.gc, d.gc);
  EXPECT_EQ(r.gc_min_wait, d.gc_min_wait);
  EXPECT_EQ(r.orphan_min_age, d.orphan_min_age);
}

TEST(StoreConfig, AppliesTheRadosTableAndRefusesBadValues) {
  Result<Config> c = Config::Parse(R"(
[storage]
backend = "rados"
[rados]
conf_file = "/etc/ceph/ceph.conf"
pool = "kv"
namespace = "team-a"
index_shards = 7
cluster_handles = 3
op_timeout = "5s"
gc_min_wait = "0s"
)");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  EXPECT_EQ(o.backend, "rados");
  EXPECT_EQ(o.rados.pool, "kv");
  EXPECT_EQ(o.rados.rados_namespace, "team-a");
  EXPECT_EQ(o.rados.index_shards, 7u);
  EXPECT_EQ(o.rados.cluster_handles, 3u);
  EXPECT_EQ(o.rados.op_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o.rados.gc_min_wait.count(), 0);
  EXPECT_TRUE(o.Validate().ok());
  o.rados.op_timeout = std::chrono::milliseconds(0);  // Ceph's "wait forever" is refused
  EXPECT_EQ(o.Validate().field(), "rados.op_timeout");
  o.rados = {};
  o.rados.index_shards = 0;
  EXPECT_EQ(o.Validate().field(), "rados.index_shards");
  o.rados = {};
  o.rados.cluster_handles = kMaxRadosClusterHandles + 1;
  EXPECT_EQ(o.Validate().field(), "rados.cluster_handles");
  // 0: one handle per usable core, never none.
  EXPECT_GE(RadosClusterHandlesFor(0), 1u);
  EXPECT_EQ(RadosClusterHandlesFor(5), 5u);
  Result<Config> bad = Config::Parse("[storage]\nbackend = \"ceph\"\n");
  ASSERT_TRUE(bad.has_value());
  StoreOptions b;
  EXPECT_EQ(ApplyConfig(*bad, &b).field(), "storage.backend");
}

}  // namespace
}  // namespace oc::storage::test
