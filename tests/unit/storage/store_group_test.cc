// Store::PutGroup (store.h, ObjectGroupWriter) on RocksStore (every extent layout) and
// RadosStore: objects
// written one after the other become visible together at Commit, replace their earlier
// versions and free them; a dropped or failed group leaves nothing visible and frees what it
// staged (extents and pending records); a name given twice keeps its last object; every
// object gets the chunk ETag (records/chunk_etag.h), the same on every backend and layout.

#include <gtest/gtest.h>

#include "composed_store.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

class StoreGroupTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    auto s = OpenTestStore(GetParam(), SmallOptions(dir_.path(), LayoutOf(GetParam())),
                           RandomRadosNamespace());
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("grp", "o").ok());
  }

  bool IsRados() const { return GetParam() == Backend::kRados; }
  // Extent records (RocksDB, 4 KiB) or data objects (RADOS, 64 KiB) stored now, and how many
  // an object of `size` bytes takes.
  uint64_t Extents() {
    Result<uint64_t> n = IsRados()
                             ? dynamic_cast<RadosStore&>(*BackendOf(*store_)).CountDataObjects()
                             : dynamic_cast<RocksStore&>(*BackendOf(*store_)).CountExtents();
    EXPECT_TRUE(n.has_value());
    return n.has_value() ? *n : 0;
  }
  uint64_t ExtentsOf(uint64_t size) const {
    const uint64_t e = IsRados() ? 64 << 10 : 4096;
    return (size + e - 1) / e;
  }
  // Streamed writes not yet committed (RocksDB's pending records; RADOS keeps no such count,
  // its uncommitted data objects are counted by Extents()).
  uint64_t Pending() {
    if (IsRados()) {
      return 0;
    }
    Result<StoreStats> stats = store_->Stats();
    EXPECT_TRUE(stats.has_value());
    if (!stats.has_value()) {
      return 0;
    }
    for (const auto& [name, value] : stats->figures) {
      if (name == "writes_in_progress") {
        return value;
      }
    }
    return 0;
  }
  uint64_t Figure(std::string_view name) {
    Result<StoreStats> stats = store_->Stats();
    EXPECT_TRUE(stats.has_value());
    for (const auto& [n, v] : stats->figures) {
      if (n == name) {
        return v;
      }
    }
    return 0;
  }
  // Whether a group has staged bytes that nothing names yet: RADOS data objects beyond
  // `extents_before`, data-file bytes no record names (RocksDB's data-file layout) or
  // flushed extents under pending records (its other layouts).
  bool Staged(uint64_t extents_before) {
    if (IsRados()) {
      return Extents() > extents_before;
    }
    if (GetParam() == Backend::kRocksData) {
      return Figure("data_file_bytes") > Figure("data_file_live_bytes");
    }
    return Pending() > 0;
  }
  std::optional<std::string> Content(const std::string& name) {
    Result<std::string> r = GetString(*store_, {"grp", name});
    return r.has_value() ? std::optional<std::string>(*r) : std::nullopt;
  }
  // Writes `objects` (name, bytes) into `group` in 3000-byte appends.
  static Status Write(ObjectGroupWriter& group,
                      const std::vector<std::pair<std::string, std::string>>& objects) {
    for (const auto& [name, bytes] : objects) {
      PutOptions o;
      o.expected_size = bytes.size();
      OC_RETURN_IF_ERROR(group.Begin(name, o));
      for (size_t pos = 0; pos < bytes.size(); pos += 3000) {
        OC_RETURN_IF_ERROR(group.Append(AsBytes(std::string_view(bytes).substr(pos, 3000))));
      }
    }
    return Status::Ok();
  }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreGroupTest, ObjectsAppearTogetherAtCommitAndReplaceEarlierVersions) {
  ASSERT_TRUE(PutString(*store_, {"grp", "a"}, Bytes(1, 50'000)).has_value());
  const uint64_t extents_of_old_a = Extents();
  const std::vector<std::pair<std::string, std::string>> objects = {
      {"a", Bytes(2, 40'000)}, {"b", Bytes(3, 70'000)}, {"c", Bytes(4, 10)}};
  auto group = store_->PutGroup("grp");
  ASSERT_TRUE(group.has_value()) << group.error();
  ASSERT_TRUE(Write(**group, objects).ok());
  // Extents have been flushed (write_batch_bytes is 16 KiB; RADOS writes data objects and
  // the data-file layout its files at once) but nothing is visible yet.
  EXPECT_TRUE(Staged(extents_of_old_a));
  EXPECT_EQ(Content("a"), Bytes(1, 50'000));
  EXPECT_EQ(Content("b"), std::nullopt);
  auto metas = (*group)->Commit();
  ASSERT_TRUE(metas.has_value()) << metas.error();
  ASSERT_EQ(metas->size(), 3u);
  EXPECT_EQ((*metas)[1].meta.size, 70'000u);
  for (const auto& [name, bytes] : objects) {
    EXPECT_EQ(Content(name), bytes) << name;
  }
  EXPECT_EQ(Pending(), 0u);
  // RocksDB frees old a's extents at once; RADOS leaves its data object to the GC.
  EXPECT_EQ(Extents(),
            ExtentsOf(40'000) + ExtentsOf(70'000) + 1 + (IsRados() ? extents_of_old_a : 0))
      << "old a had " << extents_of_old_a << " extents";
  EXPECT_EQ((*group)->Commit().status().code(), Code::kFailedPrecondition);
}

TEST_P(StoreGroupTest, ADroppedOrFailedGroupLeavesNothingAndFreesWhatItStaged) {
  ASSERT_TRUE(PutString(*store_, {"grp", "a"}, Bytes(1, 50'000)).has_value());
  const uint64_t before = Extents();
  {  // Dropped after flushes.
    auto group = store_->PutGroup("grp");
    ASSERT_TRUE(group.has_value());
    ASSERT_TRUE(Write(**group, {{"a", Bytes(2, 60'000)}, {"x", Bytes(3, 60'000)}}).ok());
    EXPECT_TRUE(Staged(before));
  }
  EXPECT_EQ(Content("a"), Bytes(1, 50'000));
  EXPECT_EQ(Content("x"), std::nullopt);
  EXPECT_EQ(Extents(), before);
  EXPECT_EQ(Pending(), 0u);
  {  // An object shorter than its expected size: refused at the next Begin.
    auto group = store_->PutGroup("grp");
    ASSERT_TRUE(group.has_value());
    PutOptions o;
    o.expected_size = 30'000;
    ASSERT_TRUE((*group)->Begin("a", o).ok());
    ASSERT_TRUE((*group)->Append(AsBytes(Bytes(4, 29'999))).ok());
    Status s = (*group)->Begin("y", {});
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.subject(), Subject::kEntity);
    EXPECT_FALSE((*group)->Commit().has_value());
  }
  {  // The bucket deleted before the commit.
    ASSERT_TRUE(store_->CreateBucket("gone", "o").ok());
    auto group = store_->PutGroup("gone");
    ASSERT_TRUE(group.has_value());
    ASSERT_TRUE(Write(**group, {{"z", Bytes(5, 40'000)}}).ok());
    ASSERT_TRUE(store_->DeleteBucket("gone").ok());
    EXPECT_EQ((*group)->Commit().status().code(), Code::kNotFound);
  }
  EXPECT_EQ(Content("a"), Bytes(1, 50'000));
  EXPECT_EQ(Extents(), before);
  EXPECT_EQ(Pending(), 0u);
  EXPECT_EQ(store_->PutGroup("no-such-bucket").status().code(), Code::kNotFound);
}

TEST_P(StoreGroupTest, ANameGivenTwiceKeepsItsLastObject) {
  auto group = store_->PutGroup("grp");
  ASSERT_TRUE(group.has_value());
  ASSERT_TRUE(
      Write(**group, {{"d", Bytes(6, 30'000)}, {"e", Bytes(7, 5)}, {"d", Bytes(8, 20'000)}}).ok());
  ASSERT_TRUE((*group)->Commit().has_value());
  EXPECT_EQ(Content("d"), Bytes(8, 20'000));
  EXPECT_EQ(Content("e"), Bytes(7, 5));
  EXPECT_EQ(Extents(), ExtentsOf(20'000) + 1) << "the first d's extents were not freed";
  EXPECT_EQ(Pending(), 0u);
  if (GetParam() == Backend::kRocksData) {  // the first d's frames are not counted live
    EXPECT_EQ(Figure("data_file_live_bytes"),
              20'000 + ExtentsOf(20'000) * kFrameHeaderBytes + 5 + kFrameHeaderBytes);
  }
}

// The ETag of a descriptor PUT's chunk is not its MD5 (docs/protocol.md, "Responses"): the
// expected values were computed with Python's xxhash (XXH3-64 per piece, XXH3-128 over them).
TEST_P(StoreGroupTest, ObjectsGetTheChunkEtagNotAnMd5) {
  std::string bytes(3 * 8192, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(i % 251);
  }
  struct Row {
    std::string name;
    std::optional<ChunkShape> chunk;
    std::string etag;
  };
  const std::vector<Row> rows = {
      {"l2td", ChunkShape{descriptor::StoredLayout::kL2TD, 3, 8192},
       "da975ec16300a4fcc5238c524897729d-1"},  // pieces of S = 8192
      {"2ltd", ChunkShape{descriptor::StoredLayout::k2LTD, 3, 8192},
       "c73aa6da0f7cc640cf228a74d860e980-1"},                            // pieces of S/2
      {"unshaped", std::nullopt, "d820822b71732fb54851cc7d21a68a58-1"},  // one piece
  };
  auto group = store_->PutGroup("grp");
  ASSERT_TRUE(group.has_value()) << group.error();
  for (const Row& row : rows) {
    PutOptions o;
    o.expected_size = bytes.size();
    o.chunk = row.chunk;
    ASSERT_TRUE((*group)->Begin(row.name, o).ok());
    for (size_t pos = 0; pos < bytes.size(); pos += 3000) {
      ASSERT_TRUE((*group)->Append(AsBytes(std::string_view(bytes).substr(pos, 3000))).ok());
    }
  }
  auto metas = (*group)->Commit();
  ASSERT_TRUE(metas.has_value()) << metas.error();
  ASSERT_EQ(metas->size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(rows[i].name);
    EXPECT_EQ((*metas)[i].meta.etag, rows[i].etag);
    Result<ObjectMeta> head = store_->Head({"grp", rows[i].name});
    ASSERT_TRUE(head.has_value()) << head.error();
    EXPECT_EQ(head->etag, rows[i].etag);
    EXPECT_EQ(Content(rows[i].name), bytes);
  }
  // A plain PUT of the same bytes keeps the MD5 ETag S3 clients compare.
  Result<ObjectMeta> put = PutString(*store_, {"grp", "plain"}, bytes);
  ASSERT_TRUE(put.has_value()) << put.error();
  EXPECT_EQ(put->etag, HexEncode(Md5::Of(AsBytes(bytes))));
}

// A Content-MD5 given for a group's object is still checked (MD5 is computed for that only).
TEST_P(StoreGroupTest, AContentMd5OfAnObjectIsChecked) {
  const std::string bytes = Bytes(5, 20'000);
  for (const bool right : {false, true}) {
    SCOPED_TRACE(right);
    auto group = store_->PutGroup("grp");
    ASSERT_TRUE(group.has_value()) << group.error();
    PutOptions o;
    o.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, 5, 4000};
    o.content_md5 = Md5::Of(AsBytes(right ? bytes : bytes + "x"));
    ASSERT_TRUE((*group)->Begin("md5", o).ok());
    ASSERT_TRUE((*group)->Append(AsBytes(bytes)).ok());
    auto metas = (*group)->Commit();
    if (!right) {
      EXPECT_EQ(metas.status().subject(), Subject::kDigest) << metas.status();
      EXPECT_EQ(Content("md5"), std::nullopt);
      continue;
    }
    ASSERT_TRUE(metas.has_value()) << metas.error();
    EXPECT_TRUE((*metas)[0].meta.etag.ends_with("-1")) << (*metas)[0].meta.etag;
    EXPECT_EQ(Content("md5"), bytes);
  }
}

// PutOptions::if_none_match in a group (create-if-absent, the descriptor PUT's
// x-oc-if-none-match): a member whose key exists at the commit is left as it is, reported as
// existing with the kept object's metadata, and its bytes are freed; the other members are
// written in the same commit, and a member without the option still replaces its key.
TEST_P(StoreGroupTest, IfNoneMatchMembersLeaveExistingKeysAndFreeTheirBytes) {
  ASSERT_TRUE(PutString(*store_, {"grp", "kept"}, Bytes(1, 50'000)).has_value());
  ASSERT_TRUE(PutString(*store_, {"grp", "replaced"}, Bytes(2, 20'000)).has_value());
  const Result<ObjectMeta> kept_before = store_->Head({"grp", "kept"});
  ASSERT_TRUE(kept_before.has_value());
  auto group = store_->PutGroup("grp");
  ASSERT_TRUE(group.has_value()) << group.error();
  struct Member {
    std::string name;
    std::string bytes;
    bool if_none_match;
  };
  const std::vector<Member> members = {{"kept", Bytes(3, 40'000), true},
                                       {"new", Bytes(4, 30'000), true},
                                       {"replaced", Bytes(5, 10'000), false}};
  for (const Member& m : members) {
    PutOptions o;
    o.expected_size = m.bytes.size();
    o.if_none_match = m.if_none_match;
    ASSERT_TRUE((*group)->Begin(m.name, o).ok());
    for (size_t pos = 0; pos < m.bytes.size(); pos += 3000) {
      ASSERT_TRUE((*group)->Append(AsBytes(std::string_view(m.bytes).substr(pos, 3000))).ok());
    }
  }
  auto committed = (*group)->Commit();
  ASSERT_TRUE(committed.has_value()) << committed.error();
  ASSERT_EQ(committed->size(), 3u);
  EXPECT_TRUE((*committed)[0].existed);
  EXPECT_EQ((*committed)[0].meta.etag, kept_before->etag);
  EXPECT_EQ((*committed)[0].meta.size, 50'000u);
  EXPECT_FALSE((*committed)[1].existed);
  EXPECT_EQ((*committed)[1].meta.size, 30'000u);
  EXPECT_FALSE((*committed)[2].existed);
  EXPECT_EQ(Content("kept"), Bytes(1, 50'000));
  EXPECT_EQ(Content("new"), Bytes(4, 30'000));
  EXPECT_EQ(Content("replaced"), Bytes(5, 10'000));
  EXPECT_EQ(Pending(), 0u);
  // kept's 40,000 refused bytes are freed at the commit (RADOS leaves only replaced's old data
  // object to the GC).
  EXPECT_EQ(Extents(), ExtentsOf(50'000) + ExtentsOf(30'000) + ExtentsOf(10'000) +
                           (IsRados() ? ExtentsOf(20'000) : 0));
  if (GetParam() == Backend::kRocksData) {  // objects of 10,000+ bytes are in data files
    EXPECT_EQ(Figure("data_file_live_bytes"), 50'000 + ExtentsOf(50'000) * kFrameHeaderBytes +
                                                  30'000 + ExtentsOf(30'000) * kFrameHeaderBytes +
                                                  10'000 + ExtentsOf(10'000) * kFrameHeaderBytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreGroupTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData, Backend::kRados),
                         BackendName);

}  // namespace
}  // namespace oc::storage::test
