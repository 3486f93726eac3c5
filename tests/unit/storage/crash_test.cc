// The crash test (issue 3), on RocksDB and on RADOS: a writer process (crash_writer.cc) is
// SIGKILLed at random points, the store is reopened after each kill, and
//  - every acknowledged object reads back byte-exact (xxHash and size);
//  - no partial object is visible: each visible object is a version the writer wrote whole
//    for that key (the last acknowledged one, or the one in flight when it was killed);
//  - a group of objects committed together (Store::PutGroup, RocksDB's writer) is visible
//    whole or not at all;
//  - RocksDB: recovery freed every uncommitted write: the extent records are exactly those
//    of the visible objects, and no write is left pending;
//  - RocksDB with data files: the live bytes counted at open are exactly the visible objects'
//    frames, and rewriting every file with garbage (torn tails, bytes of writes never
//    committed, replaced versions) leaves exactly those bytes on disk;
//  - RADOS (PUTs and multipart uploads, killed mid-upload most of the time, checked with a
//    store of its own in the writer's namespace): a scrub (orphan_min_age = 0) then a GC
//    pass leave exactly the data objects that the visible objects and the still open uploads
//    reference, nothing else, nothing less; over the rounds the scrub did remove leftovers
//    (the kills did leave some).

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "composed_store.h"
#include "rados/rados_store.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr uint64_t kExtentBytes = 64 << 10;   // as in crash_writer.cc
constexpr uint64_t kDataFileBytes = 1 << 20;  // as in crash_writer.cc

uint64_t Objects(uint64_t size) { return (size + kExtentBytes - 1) / kExtentBytes; }

// Extents (RocksDB) or data objects (RADOS) of a visible object, as the writer builds them:
// one PUT or group member, or a multipart upload whose parts but the last are exactly
// kMinPartBytes.
uint64_t ObjectsOf(const ObjectMeta& meta) {
  if (meta.parts_count == 0) {
    return Objects(meta.size);
  }
  const uint64_t full = meta.parts_count - 1;
  return full * Objects(kMinPartBytes) + Objects(meta.size - full * kMinPartBytes);
}

struct Version {
  uint64_t hash = 0;
  uint64_t size = 0;
  bool operator==(const Version&) const = default;
};

// Runs the writer with `args` until `run_for` after its first acknowledged write (state, not
// wall time from the start: on a loaded machine the writer may take longer than any fixed time
// to open its store), SIGKILLs it, and returns every complete line it printed. A writer that
// acknowledges nothing within kFirstAckBound is killed then; the test fails on its count.
constexpr std::chrono::seconds kFirstAckBound{120};

bool HasAck(const std::string& out) {
  return out.starts_with("A ") || out.find("\nA ") != std::string::npos;
}

std::vector<std::string> RunAndKill(const std::vector<std::string>& args,
                                    std::chrono::milliseconds run_for) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const std::string program = OC_CRASH_WRITER;
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + kFirstAckBound;
  bool acked = false;
  for (;;) {
    if (!acked && HasAck(out)) {
      acked = true;
      deadline = std::chrono::steady_clock::now() + run_for;
    }
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

// The harness, per backend: how the writer is started and how its store is opened and
// checked after each kill.
class CrashTest : public ::testing::TestWithParam<Backend> {
 protected:
  bool rados() const { return GetParam() == Backend::kRados; }
  bool data_files() const { return GetParam() == Backend::kRocksData; }

  void SetUp() override {
    if (!rados()) {
      return;
    }
    ns_ = RandomRadosNamespace();
    Result<StoreOptions> o = RadosTestOptions(StoreOptions{}, ns_);
    ASSERT_TRUE(o.has_value()) << o.error();
    options_ = std::move(*o);
    options_.rados.gc = false;
    options_.rados.gc_min_wait = std::chrono::milliseconds(0);
    options_.rados.orphan_min_age = std::chrono::milliseconds(0);
  }

  // RocksDB is quick to kill and reopen; RADOS rounds take longer (a cluster round trip per
  // op, a scrub per round), so fewer, longer ones.
  int Rounds() const { return rados() ? 6 : 20; }
  uint64_t Seed() const { return rados() ? 20261126 : 20261122; }
  std::chrono::milliseconds RunFor(std::mt19937_64& rng) const {
    return std::chrono::milliseconds(rados() ? 700 + rng() % 900 : 60 + rng() % 240);
  }

  std::vector<std::string> WriterArgs(uint64_t seed) const {
    if (rados()) {
      return {"--backend",         "rados", options_.rados.conf_file,
              options_.rados.pool, ns_,     std::to_string(seed)};
    }
    if (data_files()) {
      return {dir_.path().string(), std::to_string(seed), "data_files"};
    }
    return {dir_.path().string(), std::to_string(seed)};
  }

  Result<std::unique_ptr<Store>> OpenAfterKill() {
    if (rados()) {
      return OpenStore(options_);
    }
    StoreOptions o;
    o.data_dir = dir_.path().string();
    o.block_cache_bytes = 32 << 20;
    o.extent_layout = ExtentLayout::kSstBlocks;  // the writer's layout (not the default)
    if (data_files()) {
      o.extent_layout = ExtentLayout::kDataFiles;
      o.data_file_bytes = kDataFileBytes;
    }
    return OpenStore(o);
  }

  // RADOS: one scrub and one GC pass before the objects are read.
  void CollectAfterKill(Store& store) {
    if (!rados()) {
      return;
    }
    RadosStore& rados = dynamic_cast<RadosStore&>(*BackendOf(store));
    Result<RadosStore::ScrubReport> scrub = rados.RunScrubOnce();
    ASSERT_TRUE(scrub.has_value()) << scrub.error();
    scrubbed_ += scrub->data_objects;
    Result<uint64_t> gc = rados.RunGcOnce();
    ASSERT_TRUE(gc.has_value()) << gc.error();
  }

  // `expected`: the extents or data objects of the visible objects, `bytes` their sizes'
  // sum. RocksDB: exactly those extents are left and no write is pending; with data files
  // the live count is their frames, and a rewrite of every file with garbage leaves only
  // those on disk. RADOS: exactly those data objects and the
  // parts of the uploads left open; then those uploads are aborted (their data goes at the
  // next round's GC pass).
  void CheckLeftovers(Store& store, uint64_t expected, uint64_t bytes) {
    if (!rados()) {
      RocksStore& rocks = dynamic_cast<RocksStore&>(*BackendOf(store));
      Result<uint64_t> extents = rocks.CountExtents();
      ASSERT_TRUE(extents.has_value());
      EXPECT_EQ(*extents, expected) << "recovery left extents of uncommitted writes";
      const uint64_t frames = bytes + expected * kFrameHeaderBytes;
      auto figure = [&](std::string_view want) {
        Result<StoreStats> stats = store.Stats();
        EXPECT_TRUE(stats.has_value());
        for (const auto& [name, value] : stats->figures) {
          if (name == want) {
            return value;
          }
        }
        return uint64_t{0};
      };
      EXPECT_EQ(figure("writes_in_progress"), 0u);
      if (!data_files()) {
        return;
      }
      EXPECT_EQ(figure("data_file_live_bytes"), frames);
      Result<uint64_t> rewritten = rocks.ReclaimDataFiles(0, /*seal_active=*/true);
      ASSERT_TRUE(rewritten.has_value()) << rewritten.error();
      rewritten_ += *rewritten;
      uint64_t on_disk = 0;
      for (const auto& e : std::filesystem::directory_iterator(dir_.path() / "extents")) {
        on_disk += e.file_size();
      }
      EXPECT_EQ(on_disk, frames) << "garbage left after a full rewrite";
      return;
    }
    Result<ListUploadsResult> uploads = store.ListMultipartUploads("crash", {});
    if (!uploads.has_value() && uploads.error().IsNotFound() && expected == 0) {
      uploads = ListUploadsResult{};  // killed before its bucket was created: nothing else is
    }
    ASSERT_TRUE(uploads.has_value()) << uploads.error();
    for (const UploadInfo& u : uploads->uploads) {
      Result<ListPartsResult> parts = store.ListParts({"crash", u.key}, u.upload_id, 0, 1000);
      ASSERT_TRUE(parts.has_value()) << parts.error();
      for (const PartInfo& p : parts->parts) {
        expected += Objects(p.size);
      }
    }
    Result<uint64_t> data = dynamic_cast<RadosStore&>(*BackendOf(store)).CountDataObjects();
    ASSERT_TRUE(data.has_value()) << data.error();
    EXPECT_EQ(*data, expected) << "the scrub and GC left other data than the referenced";
    for (const UploadInfo& u : uploads->uploads) {
      ASSERT_TRUE(store.AbortMultipartUpload({"crash", u.key}, u.upload_id).ok());
    }
  }

  testutil::TempDir dir_;   // RocksDB's data
  std::string ns_;          // RADOS: the writer's and the checks' namespace
  StoreOptions options_;    // RADOS: the checks' store
  uint64_t scrubbed_ = 0;   // RADOS: data objects the scrubs removed
  uint64_t rewritten_ = 0;  // data files: files the checks rewrote
};

INSTANTIATE_TEST_SUITE_P(Backends, CrashTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksData,
                                           Backend::kRados),
                         BackendName);

TEST_P(CrashTest, AcknowledgedObjectsSurviveSigkillAndNothingPartialIsVisible) {
  std::mt19937_64 rng(Seed());
  // Per key: the version the store must hold (if any), and versions it may hold instead
  // (written after it, in flight or not yet acknowledged when the writer was killed).
  std::map<std::string, std::optional<Version>> committed;
  std::map<std::string, std::vector<Version>> maybe;
  uint64_t acknowledged = 0;
  for (int round = 0; round < Rounds(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto run_for = RunFor(rng);
    // The last group the writer began and how many of its members it acknowledged: if the
    // kill came before all were, that group was the last write, and must be all or nothing.
    uint64_t last_group = 0;
    std::vector<std::pair<std::string, Version>> group_members;
    size_t group_acked = 0;
    for (const std::string& line : RunAndKill(WriterArgs(rng()), run_for)) {
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

    Result<std::unique_ptr<Store>> opened = OpenAfterKill();
    ASSERT_TRUE(opened.has_value()) << opened.error();
    Store& store = **opened;
    CollectAfterKill(store);
    if (HasFatalFailure()) {
      return;
    }
    uint64_t expected = 0;
    uint64_t visible_bytes = 0;
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
        expected += ObjectsOf((*r)->meta());
        visible_bytes += (*r)->meta().size;
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
    CheckLeftovers(store, expected, visible_bytes);
    if (HasFatalFailure()) {
      return;
    }
  }
  EXPECT_GT(acknowledged, 0u) << "the writer never acknowledged a write";
  if (rados()) {
    EXPECT_GT(scrubbed_, 0u) << "no kill left orphans: the test did not exercise the scrub";
  }
  if (data_files()) {
    EXPECT_GT(rewritten_, 0u) << "no round left garbage: the test did not exercise the rewrite";
  }
}

}  // namespace
}  // namespace oc::storage::test
