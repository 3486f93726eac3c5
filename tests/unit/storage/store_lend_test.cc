// The lend APIs of store.h and kv.h (docs/decisions/put-copies-lent-buffers.md):
// ObjectWriter::AppendSpace/Appended, by default over a scratch buffer and Append, and in the
// Rocks writer over the tail of its extent buffer; ChunkSource::Peek/Consume, by default over
// Read. Bytes written through a lend are stored exactly as appended ones (partial and empty
// lends included), a writer abandoned after a lend stores nothing, and misuse is refused.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "composed_store.h"
#include "kv_test_util.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

// Fills `space` with data[0, n) and hands it back; the bytes written past n must not count.
Status FillLend(ObjectWriter& w, MutableByteSpan space, std::string_view data, uint64_t n) {
  std::memcpy(space.data(), data.data(), n);
  std::memset(space.data() + n, 0x5A, space.size() - n);  // garbage after the count
  return w.Appended(n);
}

// Writes `data` through lends of the sizes in `steps` (cycled): each asks max = step, fills
// what the writer lent up to step (or less: every third lend is filled half, a zero step is an
// empty lend), and every fourth piece goes through Append instead.
Status WriteByLends(ObjectWriter& w, std::string_view data, std::vector<uint64_t> steps) {
  uint64_t at = 0;
  for (uint64_t i = 0; at < data.size(); ++i) {
    const uint64_t step = std::min<uint64_t>(steps[i % steps.size()], data.size() - at);
    if (i % 4 == 3 && step > 0) {
      OC_RETURN_IF_ERROR(w.Append(AsBytes(data.substr(at, step))));
      at += step;
      continue;
    }
    OC_ASSIGN_OR_RETURN(MutableByteSpan space, w.AppendSpace(1, std::max<uint64_t>(step, 1)));
    if (space.empty() || space.size() > std::max<uint64_t>(step, 1)) {
      return Status::Internal("lend of a size outside [1, max]");
    }
    uint64_t n = std::min<uint64_t>(space.size(), step);
    if (i % 3 == 2) {
      n /= 2;
    }
    OC_RETURN_IF_ERROR(FillLend(w, space, data.substr(at), n));
    at += n;
  }
  return Status::Ok();
}

// The smallest writer: the base class's lend is what is under test.
class CollectingWriter final : public ObjectWriter {
 public:
  Status Append(ByteSpan data) override {
    appends_ += data.empty() ? 0 : 1;  // AppendSpace's empty probe of the writer's state
    bytes_.append(AsText(data));
    return Status::Ok();
  }
  Result<ObjectMeta> Commit() override {
    ObjectMeta m;
    m.size = bytes_.size();
    return m;
  }
  const std::string& bytes() const { return bytes_; }
  int appends() const { return appends_; }

 private:
  std::string bytes_;
  int appends_ = 0;
};

TEST(ObjectWriterLend, DefaultLendsScratchAndAppendsThroughAppend) {
  CollectingWriter w;
  const std::string data = Bytes(1, 5000);
  Result<MutableByteSpan> space = w.AppendSpace(10, 3000);
  ASSERT_TRUE(space.has_value()) << space.error();
  EXPECT_EQ(space->size(), 3000u);
  // A second lend while one is outstanding is refused; the first stays usable.
  EXPECT_EQ(w.AppendSpace(1, 10).error().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(FillLend(w, *space, data, 1200).ok());
  EXPECT_EQ(w.bytes(), data.substr(0, 1200));
  // Empty lend: nothing appended, the lend ends.
  space = w.AppendSpace(1, 100);
  ASSERT_TRUE(space.has_value());
  ASSERT_TRUE(w.Appended(0).ok());
  EXPECT_EQ(w.appends(), 1);
  // More than lent: refused, the lend ended, nothing appended.
  space = w.AppendSpace(1, 100);
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(w.Appended(101).code(), Code::kFailedPrecondition);
  EXPECT_EQ(w.Appended(0).code(), Code::kFailedPrecondition) << "no lend outstanding";
  EXPECT_EQ(w.AppendSpace(1, 0).error().code(), Code::kInvalidArgument);
  // A larger lend grows the scratch; the bytes still arrive whole and in order.
  ASSERT_TRUE(WriteByLends(w, std::string_view(data).substr(1200), {4000, 7, 0, 333}).ok());
  EXPECT_EQ(w.bytes(), data);
}

TEST(ChunkSourcePeek, DefaultPeeksThroughReadAndConsumesInParts) {
  const std::vector<std::byte> bytes = testutil::PatternBytes(3, 10000);
  kvtest::MemorySource source(bytes, /*piece=*/4096);
  std::vector<std::byte> got;
  Result<ByteSpan> p = source.Peek(3000);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 3000u);  // min(max, piece)
  // Consuming part of it: the next Peek returns the rest before reading again.
  got.insert(got.end(), p->begin(), p->begin() + 1000);
  ASSERT_TRUE(source.Consume(1000).ok());
  p = source.Peek(5000);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->size(), 2000u);
  EXPECT_EQ(source.Consume(2001).code(), Code::kFailedPrecondition);
  while (true) {
    p = source.Peek(5000);
    ASSERT_TRUE(p.has_value());
    if (p->empty()) {
      break;
    }
    got.insert(got.end(), p->begin(), p->end());
    ASSERT_TRUE(source.Consume(p->size()).ok());
  }
  EXPECT_TRUE(got == bytes);
  EXPECT_EQ(source.Peek(0).error().code(), Code::kInvalidArgument);
}

class LendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Store>> s =
        OpenTestStore(GetParam(), SmallOptions(dir_.path(), LayoutOf(GetParam())), ns_);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "owner").ok());
  }
  // Extent records (RocksDB) or data objects (RADOS) stored now.
  uint64_t Extents() {
    Result<uint64_t> n = GetParam() == Backend::kRados
                             ? dynamic_cast<RadosStore&>(*BackendOf(*store_)).CountDataObjects()
                             : dynamic_cast<RocksStore&>(*BackendOf(*store_)).CountExtents();
    EXPECT_TRUE(n.has_value());
    return n.has_value() ? *n : 0;
  }

  testutil::TempDir dir_;
  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, LendTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData, Backend::kRados),
                         BackendName);

class RocksLendTest : public LendTest {};
INSTANTIATE_TEST_SUITE_P(Layouts, RocksLendTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData),
                         BackendName);

TEST_P(LendTest, LentBytesAreStoredAsAppendedOnes) {
  struct Row {
    uint64_t size;
    std::vector<uint64_t> steps;  // extents are 4 KiB (SmallOptions)
  };
  for (const Row& row : {Row{1, {1}}, Row{900, {64, 0, 100}}, Row{4096, {4096}},
                         Row{50000, {4096, 1000, 0, 3096, 7000}}, Row{70001, {65536, 1, 4095}}}) {
    SCOPED_TRACE(row.size);
    const std::string data = Bytes(row.size, row.size);
    const std::string key = "lent-" + std::to_string(row.size);
    for (const bool sized : {false, true}) {
      PutOptions o;
      if (sized) {
        o.expected_size = data.size();  // as the gateway puts it: Content-Length
      }
      Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", key}, o);
      ASSERT_TRUE(w.has_value()) << w.error();
      ASSERT_TRUE(WriteByLends(**w, data, row.steps).ok());
      Result<ObjectMeta> m = (*w)->Commit();
      ASSERT_TRUE(m.has_value()) << m.error();
      EXPECT_EQ(m->size, data.size());
      EXPECT_EQ(m->etag, HexEncode(Md5::Of(AsBytes(data))));
      Result<std::string> got = GetString(*store_, {"bkt", key});
      ASSERT_TRUE(got.has_value()) << got.error();
      EXPECT_TRUE(*got == data);
    }
  }
  // A multipart part takes lends too.
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  const std::string part = Bytes(7, 30000);
  Result<std::unique_ptr<ObjectWriter>> pw = store_->UploadPart({"bkt", "mp"}, *id, 1, {});
  ASSERT_TRUE(pw.has_value());
  ASSERT_TRUE(WriteByLends(**pw, part, {5000, 0, 2048}).ok());
  Result<ObjectMeta> pm = (*pw)->Commit();
  ASSERT_TRUE(pm.has_value()) << pm.error();
  const std::vector<CompletedPart> parts = {{1, pm->etag}};
  ASSERT_TRUE(store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {}).has_value());
  Result<std::string> got = GetString(*store_, {"bkt", "mp"});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == part);
}

TEST_P(LendTest, AbandonedAfterALendStoresNothing) {
  const uint64_t before = Extents();
  const std::string data = Bytes(2, 60000);  // several extents and flushes (SmallOptions)
  {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "abandoned"}, {});
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE(WriteByLends(**w, data, {4096, 3000}).ok());
    Result<MutableByteSpan> space = (*w)->AppendSpace(1, 4096);  // outstanding at the end
    ASSERT_TRUE(space.has_value());
    std::memset(space->data(), 1, space->size());
  }
  EXPECT_EQ(store_->Head({"bkt", "abandoned"}).error().code(), Code::kNotFound);
  EXPECT_EQ(Extents(), before);

  // A lend filled but never handed back is not part of the object.
  Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "short"}, {});
  ASSERT_TRUE(w.has_value());
  ASSERT_TRUE(WriteByLends(**w, data.substr(0, 5000), {2000}).ok());
  Result<MutableByteSpan> space = (*w)->AppendSpace(1, 4096);
  ASSERT_TRUE(space.has_value());
  std::memset(space->data(), 1, space->size());
  if (GetParam() != Backend::kRados) {  // the default lend cannot see an Append (store.h)
    EXPECT_EQ((*w)->Append(AsBytes("x")).code(), Code::kFailedPrecondition)
        << "Append during a lend";
  }
  Result<ObjectMeta> m = (*w)->Commit();
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ(m->size, 5000u);
  Result<std::string> got = GetString(*store_, {"bkt", "short"});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == data.substr(0, 5000));
  const uint64_t with_short = Extents();

  // A lend refused by a size check at Commit leaves nothing either.
  PutOptions sized;
  sized.expected_size = 8000;
  Result<std::unique_ptr<ObjectWriter>> bad = store_->Put({"bkt", "sized"}, sized);
  ASSERT_TRUE(bad.has_value());
  ASSERT_TRUE(WriteByLends(**bad, data.substr(0, 7000), {4096}).ok());
  EXPECT_EQ((*bad)->Commit().error().subject(), Subject::kEntity);
  EXPECT_EQ(store_->Head({"bkt", "sized"}).error().code(), Code::kNotFound);
  EXPECT_EQ(Extents(), with_short);
  ASSERT_TRUE(store_->Delete({"bkt", "short"}).ok());
  if (GetParam() != Backend::kRados) {  // RADOS frees deleted data in its GC (rados_gc_test)
    EXPECT_EQ(Extents(), before);
  }
}

TEST_P(LendTest, MisuseIsRefused) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "misuse"}, {});
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ((*w)->Appended(0).code(), Code::kFailedPrecondition) << "no lend outstanding";
  EXPECT_EQ((*w)->AppendSpace(1, 0).error().code(), Code::kInvalidArgument);
  Result<MutableByteSpan> space = (*w)->AppendSpace(1, 100);
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ((*w)->AppendSpace(1, 100).error().code(), Code::kFailedPrecondition);
  EXPECT_EQ((*w)->Appended(space->size() + 1).code(), Code::kFailedPrecondition);
  // The refused Appended ended the lend and stored nothing.
  ASSERT_TRUE((*w)->Append(AsBytes("abc")).ok());
  Result<ObjectMeta> m = (*w)->Commit();
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ(m->size, 3u);
  EXPECT_FALSE((*w)->AppendSpace(1, 100).has_value()) << "a spent writer lends nothing";
}

// The Rocks writer lends the tail of the extent it is filling, so lent bytes are written
// where EmitExtent reads them: consecutive lends are adjacent, clamped at the extent's end,
// and a tail shorter than min_bytes is replaced by the scratch lend.
TEST_P(RocksLendTest, LendsTheTailOfItsExtentBuffer) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "tail"}, {});
  ASSERT_TRUE(w.has_value());
  ObjectWriter& writer = **w;
  const std::string data = Bytes(4, 3 * 4096);
  Result<MutableByteSpan> a = writer.AppendSpace(1, 1000);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->size(), 1000u);
  std::byte* const extent = a->data();
  ASSERT_TRUE(FillLend(writer, *a, data, 1000).ok());
  Result<MutableByteSpan> b = writer.AppendSpace(1, 10000);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->data(), extent + 1000) << "not the extent buffer's tail";
  EXPECT_EQ(b->size(), 4096u - 1000) << "not clamped at the extent's end";
  ASSERT_TRUE(FillLend(writer, *b, std::string_view(data).substr(1000), 3000).ok());
  // 96 bytes left in the extent: a lend wanting at least 1024 gets the scratch instead.
  Result<MutableByteSpan> c = writer.AppendSpace(1024, 4096);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->size(), 4096u);
  EXPECT_TRUE(c->data() < extent || c->data() >= extent + 4096) << "lent a short tail";
  ASSERT_TRUE(FillLend(writer, *c, std::string_view(data).substr(4000), 4096).ok());
  // The scratch's 4096 bytes ended the first extent (96) and put 4000 into the second, in
  // the same buffer: the next lend is its last 96 bytes.
  Result<MutableByteSpan> d = writer.AppendSpace(1, 8192);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->data(), extent + 4000) << "extent buffer not reused";
  EXPECT_EQ(d->size(), 96u);
  ASSERT_TRUE(FillLend(writer, *d, std::string_view(data).substr(8096), d->size()).ok());
  ASSERT_TRUE(writer.Append(AsBytes(std::string_view(data).substr(8192))).ok());
  Result<ObjectMeta> m = writer.Commit();
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ(m->etag, HexEncode(Md5::Of(AsBytes(data))));
  Result<std::string> got = GetString(*store_, {"bkt", "tail"});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == data);
}

}  // namespace
}  // namespace oc::storage::test
