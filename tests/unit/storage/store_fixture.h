#pragma once
// The fixtures of the local-store tests (store_test.cc, store_versions_test.cc): a store per
// test over RocksDB with each extent layout, or RADOS (store_test_util.h). Both suites are
// instantiated once, in store_test.cc.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "composed_store.h"
#include "rados/rados_store.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { Open(); }
  bool IsRados() const { return GetParam() == Backend::kRados; }
  // Opens (again) the same store: the same directory or RADOS namespace.
  void Open() {
    Result<std::unique_ptr<Store>> s =
        OpenTestStore(GetParam(), SmallOptions(dir_.path(), LayoutOf(GetParam())), ns_);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    if (!store_->HeadBucket("bkt").has_value()) {
      ASSERT_TRUE(store_->CreateBucket("bkt", "owner").ok());
    }
  }
  RocksStore& rocks() { return dynamic_cast<RocksStore&>(*BackendOf(*store_)); }
  // Extent records (RocksDB) or data objects (RADOS) stored now.
  uint64_t Extents() {
    Result<uint64_t> n = IsRados()
                             ? dynamic_cast<RadosStore&>(*BackendOf(*store_)).CountDataObjects()
                             : rocks().CountExtents();
    EXPECT_TRUE(n.has_value());
    return n.has_value() ? *n : 0;
  }

  testutil::TempDir dir_;
  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

// Cases about RocksDB's own machinery (extent records, compaction, its figures).
class RocksStoreTest : public StoreTest {};

}  // namespace oc::storage::test
