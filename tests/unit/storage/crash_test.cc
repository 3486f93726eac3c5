// The crash test (issue 3): a writer process (crash_writer.cc) is SIGKILLed at random
// points, the store is reopened after each kill, and
//  - every acknowledged object reads back byte-exact (xxHash and size);
//  - no partial object is visible: each visible object is a version the writer wrote whole
//    for that key (the last acknowledged one, or the one in flight when it was killed);
//  - a group of objects committed together (Store::PutGroup) is visible whole or not at all;
//  - recovery freed every uncommitted write: the extent records are exactly those of the
//    visible objects, and no write is left pending.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <sstream>

#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr int kRounds = 20;
constexpr uint64_t kExtentBytes = 64 << 10;  // as in crash_writer.cc

struct Version {
  uint64_t hash = 0;
  uint64_t size = 0;
  bool operator==(const Version&) const = default;
};

// Runs the writer for `run_for`, SIGKILLs it, and returns every complete line it printed.
std::vector<std::string> RunAndKill(const std::string& dir, uint64_t seed,
                                    std::chrono::milliseconds run_for) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const std::string program = OC_CRASH_WRITER;
  const std::string seed_text = std::to_string(seed);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(program.c_str(), program.c_str(), dir.c_str(), seed_text.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + run_for;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      const ssize_t n = ::read(fds[0], buf, sizeof(buf));
      if (n <= 0) {
        break;  // the writer died on its own: the test fails on its exit status below
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::kill(pid, SIGKILL);
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) {
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer exited by itself, status " << status;
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(out.substr(start, nl - start));
  }
  return lines;  // a partial last line (impossible with one write(2) per line) is dropped
}

TEST(CrashTest, AcknowledgedObjectsSurviveSigkillAndNothingPartialIsVisible) {
  testutil::TempDir dir;
  std::mt19937_64 rng(20261122);
  // Per key: the version the store must hold (if any), and versions it may hold instead
  // (written after it, in flight or not yet acknowledged when the writer was killed).
  std::map<std::string, std::optional<Version>> committed;
  std::map<std::string, std::vector<Version>> maybe;
  uint64_t acknowledged = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto run_for = std::chrono::milliseconds(60 + rng() % 240);
    // The last group the writer began and how many of its members it acknowledged: if the
    // kill came before all were, that group was the last write, and must be all or nothing.
    uint64_t last_group = 0;
    std::vector<std::pair<std::string, Version>> group_members;
    size_t group_acked = 0;
    for (const std::string& line : RunAndKill(dir.path().string(), rng(), run_for)) {
      std::istringstream in(line);
      char kind = 0;
      std::string key, hash_hex;
      Version v;
      uint64_t group = 0;
      in >> kind >> key >> hash_hex >> v.size >> group;
      ASSERT_FALSE(in.fail()) << line;
      v.hash = std::stoull(hash_hex, nullptr, 16);
      if (kind == 'W' && group != 0) {
        if (group != last_group) {
          last_group = group;
          group_members.clear();
          group_acked = 0;
        }
        group_members.emplace_back(key, v);
      } else if (kind == 'A' && group != 0) {
        ++group_acked;
      }
      if (kind == 'W') {
        maybe[key].push_back(v);
      } else {
        ASSERT_EQ(kind, 'A') << line;
        committed[key] = v;
        maybe[key].clear();
        ++acknowledged;
      }
    }
    if (HasFatalFailure()) {
      return;
    }

    StoreOptions options;
    options.data_dir = dir.path().string();
    options.block_cache_bytes = 32 << 20;
    Result<std::unique_ptr<Store>> opened = OpenLocalStore(options);
    ASSERT_TRUE(opened.has_value()) << opened.error();
    Store& store = **opened;
    uint64_t expected_extents = 0;
    std::set<std::string> keys;
    for (const auto& [k, v] : committed) {
      keys.insert(k);
    }
    for (const auto& [k, v] : maybe) {
      keys.insert(k);
    }
    std::map<std::string, std::optional<Version>> visible;
    for (const std::string& key : keys) {
      SCOPED_TRACE(key);
      Result<std::unique_ptr<ObjectReader>> r = store.Get({"crash", key}, ByteRange::All());
      std::optional<Version>& seen = visible[key];
      if (r.has_value()) {
        Result<std::string> bytes = ReadAll(**r, 1 << 20);
        ASSERT_TRUE(bytes.has_value()) << bytes.error();
        seen = Version{XXH3_64bits(bytes->data(), bytes->size()), bytes->size()};
        expected_extents += (seen->size + kExtentBytes - 1) / kExtentBytes;
      } else {
        ASSERT_EQ(r.error().code(), Code::kNotFound) << r.error();
      }
      const std::vector<Version>& later = maybe[key];
      const bool is_committed = seen == committed[key];
      const bool is_later =
          seen.has_value() && std::find(later.begin(), later.end(), *seen) != later.end();
      EXPECT_TRUE(is_committed || is_later)
          << "visible version is neither the acknowledged one nor a whole later one";
      if (is_later) {
        committed[key] = seen;  // committed before the ack could be printed
      }
      maybe[key].clear();
    }
    if (group_acked < group_members.size()) {  // killed inside the last group
      size_t shown = 0;
      for (const auto& [key, v] : group_members) {
        shown += visible[key] == v ? 1 : 0;
      }
      EXPECT_TRUE(shown == 0 || shown == group_members.size())
          << shown << " of the " << group_members.size() << " objects of an unacknowledged group";
    }
    RocksStore& rocks = dynamic_cast<RocksStore&>(store);
    Result<uint64_t> extents = rocks.CountExtents();
    ASSERT_TRUE(extents.has_value());
    EXPECT_EQ(*extents, expected_extents) << "recovery left extents of uncommitted writes";
    Result<StoreStats> stats = store.Stats();
    ASSERT_TRUE(stats.has_value());
    for (const auto& [name, value] : stats->figures) {
      if (name == "writes_in_progress") {
        EXPECT_EQ(value, 0u);
      }
    }
  }
  EXPECT_GT(acknowledged, 0u) << "the writer never acknowledged a write";
}

}  // namespace
}  // namespace oc::storage::test
