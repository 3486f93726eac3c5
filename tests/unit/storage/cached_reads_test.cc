// CachedReadsOnly (oc/storage/cached_reads.h) on RocksStore, the gateway's GET on its I/O
// thread: in the scope, what is in memory reads byte-exact and what would need the disk notes
// a miss and fails; a reader opened in the scope reads from the disk again once outside it;
// a data-file extent is read in the scope only when its pages are in the page cache.
// ObjectReader::Lend hands out the same bytes Read copies.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "oc/storage/cached_reads.h"
#include "rocks/data_files.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

class CachedReadsTest : public ::testing::TestWithParam<ExtentLayout> {
 protected:
  void SetUp() override {
    Reopen();
    ASSERT_TRUE(store_->CreateBucket("bkt", "o").ok());
    ASSERT_TRUE(PutString(*store_, {"bkt", "big"}, big_).has_value());
    ASSERT_TRUE(PutString(*store_, {"bkt", "tiny"}, tiny_).has_value());
    Reopen();  // recovery writes the memtables to SST files; the new block cache is empty
  }
  void Reopen() {
    store_.reset();
    Result<std::unique_ptr<RocksStore>> s = RocksStore::Open(SmallOptions(dir_.path(), GetParam()));
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
  }
  // `name` read whole inside a scope: its bytes, or the error; *missed says if it missed.
  Result<std::string> ScopedGet(const std::string& name, bool* missed) {
    CachedReadsOnly scope;
    Result<std::string> got = GetString(*store_, {"bkt", name});
    *missed = scope.missed();
    return got;
  }
  bool DataFiles() const { return GetParam() == ExtentLayout::kDataFiles; }

  testutil::TempDir dir_;
  std::unique_ptr<RocksStore> store_;
  const std::string big_ = Bytes(1, 20000);  // five 4 KiB extents; in data files there
  const std::string tiny_ = Bytes(2, 500);   // one extent, always in RocksDB
};

TEST_P(CachedReadsTest, ColdReadsMissAndWarmReadsHit) {
  ASSERT_TRUE(store_->SupportsCachedReads());
  bool missed = false;
  Result<std::string> cold = ScopedGet("big", &missed);
  EXPECT_TRUE(missed);
  ASSERT_FALSE(cold.has_value());
  EXPECT_EQ(cold.error().code(), Code::kUnavailable) << cold.error();

  ASSERT_EQ(GetString(*store_, {"bkt", "big"}).value(), big_);  // outside: from the disk
  ASSERT_EQ(GetString(*store_, {"bkt", "tiny"}).value(), tiny_);

  Result<std::string> warm = ScopedGet("tiny", &missed);
  EXPECT_FALSE(missed);
  ASSERT_TRUE(warm.has_value()) << warm.error();
  EXPECT_EQ(*warm, tiny_);
  warm = ScopedGet("big", &missed);  // data files: its pages are in the page cache now
  EXPECT_FALSE(missed);
  ASSERT_TRUE(warm.has_value()) << warm.error();
  EXPECT_EQ(*warm, big_);
  {
    CachedReadsOnly scope;
    Result<ObjectMeta> head = store_->Head({"bkt", "big"});
    ASSERT_TRUE(head.has_value()) << head.error();
    EXPECT_EQ(head->size, big_.size());
    EXPECT_TRUE(store_->HeadBucket("bkt").has_value());
    EXPECT_FALSE(scope.missed());
  }
}

TEST_P(CachedReadsTest, ReaderOpenedInTheScopeReadsTheDiskOutsideIt) {
  ASSERT_TRUE(store_->Head({"bkt", "big"}).has_value());  // the record is cached, not the bytes
  std::unique_ptr<ObjectReader> reader;
  {
    CachedReadsOnly scope;
    Result<std::unique_ptr<ObjectReader>> r = store_->Get({"bkt", "big"}, ByteRange::All());
    ASSERT_TRUE(r.has_value()) << r.error();
    reader = std::move(*r);
    std::string buf(100, '\0');
    Result<uint64_t> n =
        reader->Read(MutableByteSpan(reinterpret_cast<std::byte*>(buf.data()), buf.size()));
    EXPECT_FALSE(n.has_value());
    EXPECT_TRUE(scope.missed());
  }
  // The same reader, now on a thread without a scope (the gateway's store pool): from the
  // disk, the bytes still cold.
  Result<std::string> rest = ReadAll(*reader);
  ASSERT_TRUE(rest.has_value()) << rest.error();
  EXPECT_EQ(*rest, big_);
}

TEST_P(CachedReadsTest, LendGivesTheBytesReadCopies) {
  for (const ByteRange range :
       {ByteRange::All(), ByteRange{3000, 9000, false}, ByteRange{0, 7000, true}}) {
    Result<std::unique_ptr<ObjectReader>> r = store_->Get({"bkt", "big"}, range);
    ASSERT_TRUE(r.has_value()) << r.error();
    const uint64_t offset = (*r)->offset();
    std::string lent;
    for (;;) {
      Result<ByteSpan> piece = (*r)->Lend(5000);
      ASSERT_TRUE(piece.has_value()) << piece.error();
      if (piece->empty()) {
        break;
      }
      EXPECT_LE(piece->size(), 5000u);
      lent.append(reinterpret_cast<const char*>(piece->data()), piece->size());
    }
    EXPECT_EQ(lent, big_.substr(offset, (*r)->length()));
  }
}

// A data-file extent whose pages left the page cache is a miss for a resident-only view (the
// gateway then reruns the GET on its pool) and reads from the disk otherwise, after which it
// is resident again. The files live under the working directory (the build tree): a tmpfs
// /tmp never drops its pages, so nothing there could be evicted.
TEST(CachedReadsDataFiles, AnEvictedExtentIsAMissUntilItIsReadAgain) {
  std::string pattern = (std::filesystem::current_path() / "oc-evict-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  {
    Result<std::unique_ptr<DataFiles>> files =
        DataFiles::Open(dir.string(), 64ull << 20, /*sync=*/true);
    ASSERT_TRUE(files.has_value()) << files.error();
    const std::string bytes = Bytes(3, 256 << 10);
    Result<DataFiles::Appended> a = (*files)->Append(
        1, 0, ByteSpan(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    ASSERT_TRUE(a.has_value()) << a.error();
    ASSERT_TRUE((*files)->AwaitSynced(a->ticket).ok());  // clean pages: the kernel may drop them
    // Drop the file's pages (nothing maps them yet: no read has happened).
    for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir)) {
      const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
      ::close(fd);
    }
    Result<ExtentView> cold = (*files)->View(a->locator, /*resident_only=*/true);
    ASSERT_FALSE(cold.has_value()) << "the extent's pages are still in the page cache";
    EXPECT_EQ(cold.error().code(), Code::kUnavailable) << cold.error();

    Result<ExtentView> read = (*files)->View(a->locator);  // from the disk, verified
    ASSERT_TRUE(read.has_value()) << read.error();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(read->bytes.data()), read->bytes.size()),
              bytes);
    Result<ExtentView> warm = (*files)->View(a->locator, /*resident_only=*/true);
    ASSERT_TRUE(warm.has_value()) << warm.error();
    EXPECT_EQ(warm->bytes.size(), bytes.size());
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Layouts, CachedReadsTest,
                         ::testing::Values(ExtentLayout::kSstBlocks, ExtentLayout::kDataFiles),
                         [](const auto& info) { return LayoutName(info.param); });

}  // namespace
}  // namespace oc::storage::test
