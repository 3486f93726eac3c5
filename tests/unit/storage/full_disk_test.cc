// A full disk (docs/decisions/full-disk.md), below the store: a failed sync stays failed for
// the writes it may have lost but no longer for later ones once re-armed (GroupSync::Rearm),
// a data file whose sync failed takes no appends again, and a failed append is cut back off its
// file. The whole path, on a real full file system, is tests/integration/test_full_disk.py.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>
#include <vector>

#include "oc/storage/no_space.h"
#include "oc/testutil/testutil.h"
#include "rados/rados_wrap.h"
#include "rocks/data_files.h"
#include "rocks/group_sync.h"
#include "rocks/rocks_store.h"

namespace oc::storage {
namespace {

namespace fs = std::filesystem;

TEST(GroupSyncRearm, FailedWindowKeepsFailingLaterTicketsSyncAgain) {
  bool fail = true;
  GroupSync sync([&] { return fail ? NoSpace("full") : Status::Ok(); });
  const uint64_t first = sync.Written();
  EXPECT_TRUE(IsNoSpace(sync.AwaitSynced(first)));
  fail = false;
  const uint64_t during = sync.Written();  // written after the failure: still refused
  EXPECT_TRUE(IsNoSpace(sync.AwaitSynced(during)));
  EXPECT_TRUE(sync.failed());
  EXPECT_TRUE(sync.Rearm());
  EXPECT_FALSE(sync.failed());
  EXPECT_FALSE(sync.Rearm());  // nothing pending any more
  const uint64_t after = sync.Written();
  EXPECT_TRUE(sync.AwaitSynced(after).ok());
  // The failed window never turns into an acknowledgement.
  EXPECT_TRUE(IsNoSpace(sync.AwaitSynced(first)));
  EXPECT_TRUE(IsNoSpace(sync.AwaitSynced(during)));
}

TEST(GroupSyncRearm, AFailureAfterARearmIsStickyAgain) {
  int calls = 0;
  GroupSync sync([&] { return ++calls == 2 ? Status::IOError("eio") : Status::Ok(); });
  EXPECT_TRUE(sync.AwaitSynced(sync.Written()).ok());
  EXPECT_FALSE(sync.AwaitSynced(sync.Written()).ok());
  EXPECT_TRUE(sync.Rearm());
  EXPECT_TRUE(sync.AwaitSynced(sync.Written()).ok());
}

// A sync started behind a large write (GroupSync::SyncInBackground) that fails is the sync of
// the writes it covered: their waiters get its error without another sync, and once stopped the
// background thread starts nothing.
TEST(GroupSyncBackground, AFailedSyncBehindFailsTheWritesItCovered) {
  std::atomic<int> calls{0};
  GroupSync sync([&] {
    ++calls;
    return NoSpace("full");
  });
  const uint64_t ticket = sync.Written();
  sync.SyncInBackground(ticket);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!sync.failed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(sync.failed());
  EXPECT_TRUE(IsNoSpace(sync.AwaitSynced(ticket)));
  EXPECT_EQ(calls.load(), 1);
  sync.StopBackground();
  ASSERT_TRUE(sync.Rearm());
  sync.SyncInBackground(sync.Written());
  EXPECT_EQ(calls.load(), 1) << "a stopped background thread ran a sync";
}

// Appends that cross RLIMIT_FSIZE fail (EFBIG; SIGXFSZ ignored) as a full disk would, after
// a short write: the file is cut back to the failed frame's offset, and once writes fit again
// the next frame starts there.
TEST(DataFilesFailedAppend, IsCutBackOffTheFile) {
  testutil::TempDir dir;
  Result<std::unique_ptr<DataFiles>> files =
      DataFiles::Open((dir.path() / "extents").string(), 64 << 20, /*sync=*/true);
  ASSERT_TRUE(files.has_value()) << files.error();
  const std::vector<std::byte> bytes(100 << 10, std::byte{7});
  Result<DataFiles::Appended> a = (*files)->Append(1, 0, bytes);
  ASSERT_TRUE(a.has_value()) << a.error();
  ASSERT_TRUE((*files)->AwaitSynced(a->ticket).ok());
  const uint64_t end = a->locator.offset + a->locator.frame_bytes();
  const fs::path path = dir.path() / "extents" / "000001.ocd";
  ASSERT_EQ(fs::file_size(path), end);

  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = end + (10 << 10);  // part of the next frame fits: a short write, then EFBIG
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Result<DataFiles::Appended> failed = (*files)->Append(2, 0, bytes);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(fs::file_size(path), end) << "the torn frame stayed at the end of the file";

  Result<DataFiles::Appended> next = (*files)->Append(3, 0, bytes);
  ASSERT_TRUE(next.has_value()) << next.error();
  EXPECT_EQ(next->locator.file, 1u);
  EXPECT_EQ(next->locator.offset, end);
  ASSERT_TRUE((*files)->AwaitSynced(next->ticket).ok());
  std::vector<std::byte> back(bytes.size());
  ASSERT_TRUE((*files)->Read(next->locator, 0, back).ok());
  EXPECT_EQ(back, bytes);
}

// A full cluster (-ENOSPC) and a pool at its quota (-EDQUOT) are the store's "no space", as a
// full disk is (507 at the gateway); other errors are not.
TEST(NoSpaceMapping, FullCephClusterAndPoolQuotaAreNoSpace) {
  EXPECT_TRUE(IsNoSpace(rados::FromRados(-ENOSPC, "write")));
  EXPECT_TRUE(IsNoSpace(rados::FromRados(-EDQUOT, "write")));
  EXPECT_FALSE(IsNoSpace(rados::FromRados(-EIO, "write")));
  EXPECT_FALSE(IsNoSpace(Status::ResourceExhausted("kv.descriptor_threads", "busy")));
}

// RocksDB's own no-space errors, and the Incomplete it returns to a write held back by a
// compaction's no-space background error (its text), are "no space"; other Incompletes not.
TEST(NoSpaceMapping, RocksDbStoppedByAFullDiskIsNoSpace) {
  EXPECT_TRUE(IsNoSpace(FromRocks(rocksdb::Status::NoSpace("While appending to file"))));
  const rocksdb::Status held = rocksdb::Status::Incomplete(
      rocksdb::Status::NoSpace("While appending to file: 000480.sst").ToString());
  EXPECT_TRUE(IsNoSpace(FromRocks(held)));
  EXPECT_FALSE(IsNoSpace(FromRocks(rocksdb::Status::Incomplete("Write stall"))));
  EXPECT_FALSE(IsNoSpace(FromRocks(rocksdb::Status::IOError("Bad file descriptor"))));
}

}  // namespace
}  // namespace oc::storage
