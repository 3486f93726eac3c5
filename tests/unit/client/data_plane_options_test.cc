// The server data plane's options (every field Validate names) and its staging pool: bounded
// buffers lent with a bounded wait, retired slots replaced with new memory.

#include <chrono>

#include <gtest/gtest.h>

#include "data_plane/ucx_data_plane.h"
#include "data_plane_test_util.h"
#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/storage/layer_sink.h"

namespace oc {
namespace {

using client::DataPlaneOptions;
using storage::LayerOrdering;
using storage::StagingBuffer;
using storage::UcxDataPlane;

using dptest::kTransports;
using dptest::ServerOptions;

TEST(DataPlaneOptions, ValidateNamesTheFieldAtFault) {
  struct Row {
    const char* field;
    void (*mutate)(storage::DataPlaneOptions&);
  };
  for (const Row& row : {
           Row{"data_plane.max_endpoints",
               [](storage::DataPlaneOptions& o) { o.max_endpoints = 0; }},
           Row{"data_plane.staging_buffers",
               [](storage::DataPlaneOptions& o) { o.staging_buffers = 0; }},
           Row{"data_plane.staging_buffers",
               [](storage::DataPlaneOptions& o) { o.staging_buffers = 1025; }},
           Row{"data_plane.staging_buffer_bytes",
               [](storage::DataPlaneOptions& o) { o.staging_buffer_bytes = 4095; }},
           Row{"data_plane.staging_buffer_bytes",
               [](storage::DataPlaneOptions& o) { o.staging_buffer_bytes = (1ull << 30) + 1; }},
           Row{"data_plane.op_timeout",
               [](storage::DataPlaneOptions& o) { o.op_timeout = std::chrono::milliseconds(0); }},
       }) {
    SCOPED_TRACE(row.field);
    storage::DataPlaneOptions o;
    ASSERT_TRUE(o.Validate().ok());
    row.mutate(o);
    Status s = o.Validate();
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.field(), row.field);
    EXPECT_FALSE(UcxDataPlane::Create(o).has_value());
  }
}

TEST(StagingPool, LendsBoundedBuffersAndReplacesRetiredOnes) {
  storage::DataPlaneOptions o = ServerOptions(kTransports[0], LayerOrdering::kFlush);
  o.staging_buffers = 2;
  o.op_timeout = std::chrono::milliseconds(50);
  auto plane = UcxDataPlane::Create(o);
  ASSERT_TRUE(plane.has_value()) << plane.error();
  storage::StagingPool& pool = (*plane)->staging();
  auto a = pool.Acquire(o.op_timeout);
  auto b = pool.Acquire(o.op_timeout);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(pool.free_count(), 0u);
  auto none = pool.Acquire(o.op_timeout);  // all lent: bounded wait, then kUnavailable
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), Code::kUnavailable);
  b->Reset();  // given back unused
  EXPECT_EQ(pool.free_count(), 1u);

  // Retiring a lent slot frees it with new memory; the old handle is no longer the pool's.
  const uint32_t slot = a->Detach();
  std::byte* old_memory = a->bytes().data();
  ASSERT_TRUE(pool.Retire(slot).ok());
  EXPECT_EQ(pool.retired(), 1u);
  EXPECT_EQ(pool.free_count(), 2u);
  auto c = pool.Acquire(o.op_timeout);
  auto d = pool.Acquire(o.op_timeout);
  ASSERT_TRUE(c.has_value() && d.has_value());
  EXPECT_NE(c->bytes().data(), old_memory);
  EXPECT_NE(d->bytes().data(), old_memory);
  EXPECT_TRUE(pool.Owns(*c));
  StagingBuffer foreign;  // empty handle
  EXPECT_FALSE(pool.Owns(foreign));
}

}  // namespace
}  // namespace oc
