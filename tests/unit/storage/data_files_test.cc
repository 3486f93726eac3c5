// ExtentLayout::kDataFiles (src/rocks/data_files.h): the space of overwritten and deleted
// objects comes back (files rewritten and deleted), readers keep the version they opened
// across a rewrite, a torn tail is ignored and reclaimed, corrupt bytes are refused, and a
// store switched between layouts reads both kinds of segments, and a delete or overwrite
// that commits while the reclaimer moves the object wins. The shared suites (store,
// list, multipart, group, slices, kv) run on the layout as Backend::kRocksData.

#include <gtest/gtest.h>

#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "kv/slice_source.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

namespace fs = std::filesystem;

struct DiskUse {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

class DataFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  StoreOptions Options(ExtentLayout layout = ExtentLayout::kDataFiles) const {
    StoreOptions o = SmallOptions(dir_.path(), layout);
    o.reclaim_after_bytes = 0;  // the tests reclaim when they choose
    o.data_file_min_bytes = min_bytes_;
    return o;
  }
  void Open(ExtentLayout layout = ExtentLayout::kDataFiles) { Open(Options(layout)); }
  void Open(const StoreOptions& o) {
    store_.reset();
    Result<std::unique_ptr<RocksStore>> s = RocksStore::Open(o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    if (!store_->HeadBucket("bkt").has_value()) {
      ASSERT_TRUE(store_->CreateBucket("bkt", "o").ok());
    }
  }
  fs::path FilesDir() const { return dir_.path() / "extents"; }
  // What the data files occupy, as the directory lists them.
  DiskUse OnDisk() const {
    DiskUse u;
    for (const fs::directory_entry& e : fs::directory_iterator(FilesDir())) {
      ++u.files;
      u.bytes += e.file_size();
    }
    return u;
  }
  uint64_t Figure(std::string_view name) {
    Result<StoreStats> stats = store_->Stats();
    EXPECT_TRUE(stats.has_value());
    for (const auto& [n, v] : stats->figures) {
      if (n == name) {
        return v;
      }
    }
    ADD_FAILURE() << "no figure " << name;
    return 0;
  }
  void Put(const std::string& name, const std::string& bytes) {
    ASSERT_TRUE(PutString(*store_, {"bkt", name}, bytes).has_value()) << name;
  }
  void ExpectContent(const std::string& name, const std::string& bytes) {
    Result<std::string> got = GetString(*store_, {"bkt", name});
    ASSERT_TRUE(got.has_value()) << name << ": " << got.error();
    EXPECT_TRUE(*got == bytes) << name;
  }
  kv::SliceSource& source() { return *store_; }

  testutil::TempDir dir_;
  uint64_t min_bytes_ = 0;  // every object to the data files unless a test says otherwise
  std::unique_ptr<RocksStore> store_;
};

constexpr uint64_t kFrame = kFrameHeaderBytes;

// One frame of a data file as Walk finds it.
struct Frame {
  uint64_t offset = 0;
  uint64_t data_id = 0;
  uint64_t index = 0;
  uint64_t length = 0;
  bool hash_ok = false;  // the bytes match the header's hash
};
struct Walked {
  std::vector<Frame> frames;
  uint64_t end = 0;  // where the walk stopped: the file's end, or a torn or zero tail
};

// Walks a data file's frames (data_files.h: the format) from offset 0 until the end or the
// first header that does not check: the file is readable without RocksDB.
Walked Walk(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  Walked w;
  while (w.end + kFrame <= bytes.size()) {
    const std::byte* h = p + w.end;
    const uint64_t length = GetLittleEndian64(h + 24);
    if (GetLittleEndian32(h) != kFrameMagic ||
        XXH3_64bits(h, kFrame - 8) != GetLittleEndian64(h + kFrame - 8) ||
        length > bytes.size() - w.end - kFrame) {
      break;
    }
    w.frames.push_back(Frame{w.end, GetLittleEndian64(h + 8), GetLittleEndian64(h + 16), length,
                             XXH3_64bits(h + kFrame, length) == GetLittleEndian64(h + 32)});
    w.end += kFrame + length;
  }
  return w;
}

TEST_F(DataFilesTest, ExtentsGoToDataFilesAndOnlyLocatorsToRocksDb) {
  const std::string a = Bytes(1, 20000);  // 5 extents of 4 KiB (the last 3616 bytes)
  Put("a", a);
  ExpectContent("a", a);
  EXPECT_EQ(*store_->CountExtents(), 5u);
  const DiskUse u = OnDisk();
  EXPECT_EQ(u.files, 1u);
  EXPECT_EQ(u.bytes, 20000 + 5 * kFrame);
  EXPECT_EQ(Figure("data_file_live_bytes"), 20000 + 5 * kFrame);
  // The frames walk back as written: data id and index in each header, hashes that match.
  const Walked walked = Walk(fs::directory_iterator(FilesDir())->path());
  const std::vector<Frame>& frames = walked.frames;
  EXPECT_EQ(walked.end, u.bytes);
  ASSERT_EQ(frames.size(), 5u);
  for (uint64_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].index, i);
    EXPECT_EQ(frames[i].data_id, frames[0].data_id);
    EXPECT_TRUE(frames[i].hash_ok);
  }
}

TEST_F(DataFilesTest, OverwrittenAndDeletedSpaceComesBack) {
  // 24 objects of 20,000 bytes in 64 KiB files: several files, each object spread over two.
  for (int i = 0; i < 24; ++i) {
    Put("o" + std::to_string(i), Bytes(i, 20000));
  }
  const DiskUse full = OnDisk();
  EXPECT_GE(full.files, 7u);
  // Overwrite a third with small objects, delete a third, keep a third.
  for (int i = 0; i < 24; i += 3) {
    Put("o" + std::to_string(i), Bytes(100 + i, 300));
    ASSERT_TRUE(store_->Delete({"bkt", "o" + std::to_string(i + 1)}).ok());
  }
  EXPECT_GE(OnDisk().bytes, full.bytes) << "nothing is reclaimed before the reclaimer runs";
  const uint64_t live = Figure("data_file_live_bytes");
  EXPECT_EQ(live, 8 * (20000 + 5 * kFrame) + 8 * (300 + kFrame));

  Result<uint64_t> rewritten = store_->ReclaimDataFiles(/*min_garbage_percent=*/0, true);
  ASSERT_TRUE(rewritten.has_value()) << rewritten.error();
  EXPECT_GE(*rewritten, full.files);
  const DiskUse after = OnDisk();
  EXPECT_EQ(after.bytes, live) << "after a full rewrite only live frames occupy the disk";
  EXPECT_LT(after.files, full.files);
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  EXPECT_EQ(Figure("data_file_bytes"), live);
  for (int i = 0; i < 24; i += 3) {
    ExpectContent("o" + std::to_string(i), Bytes(100 + i, 300));
    EXPECT_EQ(store_->Head({"bkt", "o" + std::to_string(i + 1)}).error().code(), Code::kNotFound);
    ExpectContent("o" + std::to_string(i + 2), Bytes(i + 2, 20000));
  }
  // The rewritten locators are durable: the same after a restart.
  Open();
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  for (int i = 2; i < 24; i += 3) {
    ExpectContent("o" + std::to_string(i), Bytes(i, 20000));
  }
}

TEST_F(DataFilesTest, ThresholdLeavesMostlyLiveFilesAlone) {
  for (int i = 0; i < 6; ++i) {
    Put("o" + std::to_string(i), Bytes(i, 20000));
  }
  ASSERT_TRUE(store_->Delete({"bkt", "o0"}).ok());  // a little garbage in the first file
  const DiskUse before = OnDisk();
  Result<uint64_t> rewritten = store_->ReclaimDataFiles(/*min_garbage_percent=*/50, false);
  ASSERT_TRUE(rewritten.has_value()) << rewritten.error();
  EXPECT_EQ(*rewritten, 0u);
  EXPECT_EQ(OnDisk().bytes, before.bytes);
}

TEST_F(DataFilesTest, ReadersKeepTheirVersionAcrossARewrite) {
  const std::string old_bytes = Bytes(7, 30000);
  Put("k", old_bytes);
  Put("pinned", Bytes(8, 8192));
  // A reader opened now, and bytes lent by PinSlices, both name the first files.
  Result<std::unique_ptr<ObjectReader>> reader = store_->Get({"bkt", "k"}, ByteRange::All());
  ASSERT_TRUE(reader.has_value()) << reader.error();
  const kv::SlicePin pin{"pinned", 0, 8192};
  std::vector<kv::PinnedPiece> pieces;
  Result<std::vector<kv::SliceStatus>> pinned = source().PinSlices("bkt", {&pin, 1}, &pieces);
  ASSERT_TRUE(pinned.has_value()) << pinned.error();
  ASSERT_EQ(pieces.size(), 2u);

  Put("k", Bytes(9, 100));
  ASSERT_TRUE(store_->Delete({"bkt", "pinned"}).ok());
  const fs::path first = FilesDir() / "000001.ocd";
  ASSERT_TRUE(fs::exists(first));
  Result<uint64_t> rewritten = store_->ReclaimDataFiles(0, true);
  ASSERT_TRUE(rewritten.has_value()) << rewritten.error();
  EXPECT_GE(*rewritten, 1u);
  EXPECT_FALSE(fs::exists(first)) << "the rewritten file is unlinked";

  // The unlinked files still serve the reader's snapshot and the lent bytes.
  Result<std::string> got = ReadAll(**reader, 3000);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_TRUE(*got == old_bytes);
  std::string lent;
  for (const kv::PinnedPiece& p : pieces) {
    lent.append(reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size());
  }
  EXPECT_TRUE(lent == Bytes(8, 8192));
  ExpectContent("k", Bytes(9, 100));
}

TEST_F(DataFilesTest, DeleteAndOverwriteDuringARewriteWin) {
  Put("garbage", Bytes(5, 20000));  // deleted below: the first file has garbage to reclaim
  Put("deleted", Bytes(1, 20000));
  Put("overwritten", Bytes(2, 20000));
  Put("kept", Bytes(3, 20000));
  ASSERT_TRUE(store_->Delete({"bkt", "garbage"}).ok());
  // The reclaimer has copied the three objects' extents (and synced the copies) but not yet
  // swapped their locators when a delete and an overwrite commit: theirs must win.
  int runs = 0;
  store_->SetRewriteHookForTest([&] {
    if (runs++ == 0) {
      EXPECT_TRUE(store_->Delete({"bkt", "deleted"}).ok());
      Put("overwritten", Bytes(4, 300));
    }
  });
  Result<uint64_t> rewritten = store_->ReclaimDataFiles(/*min_garbage_percent=*/0, true);
  store_->SetRewriteHookForTest(nullptr);
  ASSERT_TRUE(rewritten.has_value()) << rewritten.error();
  ASSERT_EQ(runs, 1) << "one piece of live extents was copied";
  EXPECT_EQ(store_->Head({"bkt", "deleted"}).error().code(), Code::kNotFound);
  ExpectContent("overwritten", Bytes(4, 300));
  ExpectContent("kept", Bytes(3, 20000));
  // Only the visible versions' extents are named and counted live: the copies of the
  // deleted object and of the replaced version are garbage...
  const uint64_t live = (20000 + 5 * kFrame) + (300 + kFrame);
  EXPECT_EQ(*store_->CountExtents(), 5u + 1u);
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  // ...so their space comes back with the next rewrite, and a restart counts the same.
  ASSERT_TRUE(store_->ReclaimDataFiles(0, true).has_value());
  EXPECT_EQ(OnDisk().bytes, live);
  Open();
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  EXPECT_EQ(store_->Head({"bkt", "deleted"}).error().code(), Code::kNotFound);
  ExpectContent("overwritten", Bytes(4, 300));
  ExpectContent("kept", Bytes(3, 20000));
}

TEST_F(DataFilesTest, TornTailIsIgnoredAndReclaimed) {
  Put("a", Bytes(1, 10000));
  Put("b", Bytes(2, 5000));
  const uint64_t live = Figure("data_file_live_bytes");
  store_.reset();
  // What a crash in the middle of an append leaves: a header and part of the bytes.
  fs::path last;
  for (const fs::directory_entry& e : fs::directory_iterator(FilesDir())) {
    last = std::max(last, e.path());
  }
  const uint64_t good = fs::file_size(last);
  {
    std::ofstream f(last, std::ios::binary | std::ios::app);
    const std::string torn = Bytes(3, 3000);
    f.write(torn.data(), static_cast<std::streamsize>(torn.size()));
  }
  Open();
  ExpectContent("a", Bytes(1, 10000));
  ExpectContent("b", Bytes(2, 5000));
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  EXPECT_EQ(Walk(last).end, good) << "the walk stops where the torn tail begins";
  // New appends never go after the tail: a restart starts a new file.
  Put("c", Bytes(4, 100));
  ASSERT_TRUE(store_->ReclaimDataFiles(0, true).has_value());
  EXPECT_EQ(OnDisk().bytes, live + 100 + kFrame);
  ExpectContent("a", Bytes(1, 10000));
}

TEST_F(DataFilesTest, ZeroTailIsNotReadAsFramesAfterARestart) {
  // What a file extended ahead of its frames (fallocate, or a size made durable before the
  // data) leaves after a crash: zeros behind the last frame.
  Put("a", Bytes(1, 10000));  // 3 frames: 10,144 bytes
  Put("b", Bytes(2, 5000));   // 2 more: 15,240 bytes
  const uint64_t frames = 15000 + 5 * kFrame;
  const uint64_t live = Figure("data_file_live_bytes");
  ASSERT_EQ(live, frames);
  store_.reset();
  const fs::path file = fs::directory_iterator(FilesDir())->path();
  ASSERT_EQ(fs::file_size(file), frames);
  fs::resize_file(file, 32 << 10);
  Open();
  ExpectContent("a", Bytes(1, 10000));
  ExpectContent("b", Bytes(2, 5000));
  EXPECT_EQ(Figure("data_file_live_bytes"), live);
  const Walked walked = Walk(file);
  EXPECT_EQ(walked.end, frames) << "the walk stops where the zeros begin";
  EXPECT_EQ(walked.frames.size(), 5u);
  // Appends go to a fresh file; the zeros are garbage and go with the rewrite.
  Put("c", Bytes(3, 100));
  ASSERT_TRUE(store_->ReclaimDataFiles(0, true).has_value());
  EXPECT_FALSE(fs::exists(file));
  EXPECT_EQ(OnDisk().bytes, live + 100 + kFrame);
  ExpectContent("a", Bytes(1, 10000));
  ExpectContent("c", Bytes(3, 100));
}

TEST_F(DataFilesTest, CorruptBytesAreRefused) {
  Put("a", Bytes(1, 8192));
  store_.reset();
  fs::path file = fs::directory_iterator(FilesDir())->path();
  {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(kFrame + 100));  // inside the first extent's bytes
    f.put('\x5a');
  }
  Open();
  Result<std::string> got = GetString(*store_, {"bkt", "a"});
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), Code::kCorruption);
  std::string buf(4096, '\0');
  const kv::SliceRead read{"a", 0, MutableByteSpan(reinterpret_cast<std::byte*>(buf.data()), 4096)};
  Result<std::vector<kv::SliceStatus>> r = source().ReadSlices("bkt", {&read, 1});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kCorruption);
  const kv::SlicePin pin{"a", 0, 4096};
  std::vector<kv::PinnedPiece> pieces;
  r = source().PinSlices("bkt", {&pin, 1}, &pieces);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kCorruption);
  EXPECT_TRUE(pieces.empty());
  // The second extent is intact.
  const kv::SliceRead second{"a", 4096,
                             MutableByteSpan(reinterpret_cast<std::byte*>(buf.data()), 4096)};
  r = source().ReadSlices("bkt", {&second, 1});
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(buf, Bytes(1, 8192).substr(4096));
}

TEST_F(DataFilesTest, RefusedPutLeavesOnlyGarbage) {
  PutOptions o;
  o.expected_size = 9999;
  EXPECT_FALSE(PutString(*store_, {"bkt", "x"}, Bytes(1, 12000), o).has_value());
  EXPECT_EQ(store_->Head({"bkt", "x"}).error().code(), Code::kNotFound);
  EXPECT_EQ(Figure("data_file_live_bytes"), 0u);
  EXPECT_GT(OnDisk().bytes, 0u);
  ASSERT_TRUE(store_->ReclaimDataFiles(0, true).has_value());
  EXPECT_EQ(OnDisk().bytes, 0u);
}

TEST_F(DataFilesTest, SmallObjectsInOneExtentStayInRocksDb) {
  min_bytes_ = 1000;
  Open();
  Put("small", Bytes(1, 999));
  EXPECT_EQ(Figure("data_file_bytes"), 0u) << "999 bytes in one extent: no data file";
  Put("big", Bytes(2, 1000));
  EXPECT_EQ(Figure("data_file_live_bytes"), 1000 + kFrame);
  Put("two", Bytes(3, 5000));  // two 4 KiB extents: data files, whatever the size
  EXPECT_EQ(Figure("data_file_live_bytes"), 1000 + 5000 + 3 * kFrame);
  // A part follows the same rule; the completed object reads across both kinds.
  Result<std::string> upload = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(upload.has_value()) << upload.error();
  std::vector<CompletedPart> parts;
  const std::string first = Bytes(4, kMinPartBytes);
  const std::string last = Bytes(5, 300);
  for (uint32_t n : {1u, 2u}) {
    Result<std::unique_ptr<ObjectWriter>> w = store_->UploadPart({"bkt", "mp"}, *upload, n, {});
    ASSERT_TRUE(w.has_value()) << w.error();
    ASSERT_TRUE((*w)->Append(AsBytes(n == 1 ? first : last)).ok());
    Result<ObjectMeta> m = (*w)->Commit();
    ASSERT_TRUE(m.has_value()) << m.error();
    parts.push_back({n, m->etag});
  }
  ASSERT_TRUE(store_->CompleteMultipartUpload({"bkt", "mp"}, *upload, parts, {}).has_value());
  ExpectContent("mp", first + last);
  ExpectContent("small", Bytes(1, 999));
  Open();  // the counts at open agree
  EXPECT_EQ(Figure("data_file_live_bytes"),
            1000 + 5000 + 3 * kFrame + kMinPartBytes + (kMinPartBytes / 4096) * kFrame);
  ExpectContent("small", Bytes(1, 999));
}

TEST_F(DataFilesTest, StoreSwitchedBetweenLayoutsReadsBoth) {
  Open(ExtentLayout::kSstBlocks);
  Put("sst", Bytes(1, 9000));
  Open(ExtentLayout::kDataFiles);
  Put("data", Bytes(2, 9000));
  ExpectContent("sst", Bytes(1, 9000));
  Open(ExtentLayout::kSstBlocks);
  ExpectContent("sst", Bytes(1, 9000));
  ExpectContent("data", Bytes(2, 9000));
  EXPECT_EQ(Figure("data_file_live_bytes"), 9000 + 3 * kFrame);
}

// A large PUT's bytes start for the disk while later ones arrive (data_file_writeback_bytes):
// kicks cover each file's appended bytes once, in order, and never what was not appended; 0
// turns them off. What the object reads back is unchanged either way.
TEST_F(DataFilesTest, EarlyWritebackKicksEveryThresholdOfAppendedBytes) {
  for (const uint64_t threshold : {uint64_t{0}, uint64_t{16} << 10}) {
    SCOPED_TRACE(threshold);
    StoreOptions o = Options();
    o.data_file_bytes = 64ull << 20;  // one file: its kicks are contiguous
    o.data_file_writeback_bytes = threshold;
    Open(o);
    const uint64_t kicks_before = Figure("data_file_writeback_kicks");
    const uint64_t kicked_before = Figure("data_file_writeback_kicked_bytes");
    const uint64_t appended_before = Figure("data_file_bytes");
    const std::string big = Bytes(7, 1 << 20);
    Put("wb", big);
    const uint64_t kicks = Figure("data_file_writeback_kicks") - kicks_before;
    const uint64_t kicked = Figure("data_file_writeback_kicked_bytes") - kicked_before;
    const uint64_t appended = Figure("data_file_bytes") - appended_before;
    ASSERT_GE(appended, big.size());
    if (threshold == 0) {
      EXPECT_EQ(kicks, 0u);
      EXPECT_EQ(kicked, 0u);
    } else {
      // Every kick covers at least the threshold, and together they leave less than one
      // threshold of the file's bytes to the commit's fdatasync.
      EXPECT_GE(kicks, 1u);
      EXPECT_LE(kicks * threshold, kicked);
      EXPECT_LE(kicked, appended);
      EXPECT_LT(appended - kicked, threshold);
    }
    ExpectContent("wb", big);
  }
}

// With write-back on, every 64 MiB appended also starts a sync in the background, so a large
// PUT's commit syncs only its tail; without write-back (a store that does not sync) none. The
// object reads back the same, and a store closed right after the PUT stops the background
// thread first (ASan would catch a sync touching a destroyed store).
TEST_F(DataFilesTest, LargeWritesAreSyncedBehindEvery64MiB) {
  for (const uint64_t threshold : {uint64_t{0}, uint64_t{8} << 20}) {
    SCOPED_TRACE(threshold);
    StoreOptions o = Options();
    o.data_file_bytes = 256ull << 20;  // one file
    o.data_file_writeback_bytes = threshold;
    Open(o);
    const std::string big = Bytes(9, 70 << 20);
    Put("behind", big);
    const uint64_t syncs = Figure("data_file_syncs_behind");
    if (threshold == 0) {
      EXPECT_EQ(syncs, 0u);
    } else {
      EXPECT_EQ(syncs, 1u) << "one per 64 MiB of the 70 MiB appended";
    }
    ExpectContent("behind", big);
  }
  store_.reset();
}

TEST(DataFilesDefault, AStoreWithDefaultOptionsKeepsLargeObjectsInDataFiles) {
  testutil::TempDir dir;
  StoreOptions o;  // the defaults, but for the directory
  o.data_dir = dir.path().string();
  Result<std::unique_ptr<RocksStore>> store = RocksStore::Open(o);
  ASSERT_TRUE(store.has_value()) << store.error();
  ASSERT_TRUE((*store)->CreateBucket("bkt", "o").ok());
  const std::string big = Bytes(1, 1 << 20);
  ASSERT_TRUE(PutString(**store, {"bkt", "big"}, big).has_value());
  ASSERT_TRUE(PutString(**store, {"bkt", "small"}, Bytes(2, 1000)).has_value());
  uint64_t files = 0;
  uint64_t bytes = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.path() / "extents")) {
    ++files;
    bytes += e.file_size();
  }
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(bytes, big.size() + kFrame) << "one 1 MiB extent; the small object stays in RocksDB";
  Result<std::string> got = GetString(**store, {"bkt", "big"});
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_TRUE(*got == big);
}

}  // namespace
}  // namespace oc::storage::test
