// The crash test on RADOS: a writer process (crash_writer.cc, --backend rados) doing single
// PUTs and multipart uploads is SIGKILLed at random points, mid-upload most of the time, and
// after each kill, with a store of its own in the same namespace:
//  - every acknowledged object reads back byte-exact (xxHash and size), and a visible object
//    is a version the writer wrote whole (the acknowledged one, or one in flight);
//  - a scrub (orphan_min_age = 0) then a GC pass leave exactly the data objects that the
//    visible objects and the still open uploads reference: nothing else, nothing less;
//  - over the rounds the scrub did remove leftovers (the kills did leave some).

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "rados/rados_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr int kRounds = 6;
constexpr uint64_t kExtentBytes = 64 << 10;  // as in crash_writer.cc

uint64_t Objects(uint64_t size) { return (size + kExtentBytes - 1) / kExtentBytes; }

struct Version {
  uint64_t hash = 0;
  uint64_t size = 0;
  bool operator==(const Version&) const = default;
};

// Runs the writer with `args` for `run_for`, SIGKILLs it, and returns every complete line it
// printed.
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
  return lines;
}

// Data objects of a visible object, as the writer builds them: one PUT, or a multipart
// upload whose parts but the last are exactly kMinPartBytes.
uint64_t ObjectsOf(const ObjectMeta& meta) {
  if (meta.parts_count == 0) {
    return Objects(meta.size);
  }
  const uint64_t full = meta.parts_count - 1;
  return full * Objects(kMinPartBytes) + Objects(meta.size - full * kMinPartBytes);
}

TEST(RadosCrashTest, ScrubAfterSigkillLeavesExactlyTheReferencedData) {
  const std::string ns = RandomRadosNamespace();
  Result<StoreOptions> base = RadosTestOptions(StoreOptions{}, ns);
  ASSERT_TRUE(base.has_value()) << base.error();
  base->rados.gc = false;
  base->rados.gc_min_wait = std::chrono::milliseconds(0);
  base->rados.orphan_min_age = std::chrono::milliseconds(0);
  std::mt19937_64 rng(20261126);
  std::map<std::string, std::optional<Version>> committed;
  std::map<std::string, std::vector<Version>> maybe;
  uint64_t acknowledged = 0;
  uint64_t scrubbed = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto run_for = std::chrono::milliseconds(700 + rng() % 900);
    const std::vector<std::string> args = {"--backend",      "rados", base->rados.conf_file,
                                           base->rados.pool, ns,      std::to_string(rng())};
    for (const std::string& line : RunAndKill(args, run_for)) {
      std::istringstream in(line);
      char kind = 0;
      std::string key, hash_hex;
      Version v;
      uint64_t group = 0;
      in >> kind >> key >> hash_hex >> v.size >> group;
      ASSERT_FALSE(in.fail()) << line;
      v.hash = std::stoull(hash_hex, nullptr, 16);
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

    Result<std::unique_ptr<Store>> opened = OpenStore(*base);
    ASSERT_TRUE(opened.has_value()) << opened.error();
    Store& store = **opened;
    RadosStore& rados = dynamic_cast<RadosStore&>(store);
    Result<RadosStore::ScrubReport> scrub = rados.RunScrubOnce();
    ASSERT_TRUE(scrub.has_value()) << scrub.error();
    scrubbed += scrub->data_objects;
    Result<uint64_t> gc = rados.RunGcOnce();
    ASSERT_TRUE(gc.has_value()) << gc.error();

    uint64_t expected = 0;
    std::set<std::string> keys;
    for (const auto& [k, v] : committed) {
      keys.insert(k);
    }
    for (const auto& [k, v] : maybe) {
      keys.insert(k);
    }
    for (const std::string& key : keys) {
      SCOPED_TRACE(key);
      Result<std::unique_ptr<ObjectReader>> r = store.Get({"crash", key}, ByteRange::All());
      std::optional<Version> seen;
      if (r.has_value()) {
        Result<std::string> bytes = ReadAll(**r, 1 << 20);
        ASSERT_TRUE(bytes.has_value()) << bytes.error();
        seen = Version{XXH3_64bits(bytes->data(), bytes->size()), bytes->size()};
        expected += ObjectsOf((*r)->meta());
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
    // Uploads the kill left open keep their parts; the test then aborts them (their data
    // goes at the next round's GC pass).
    Result<ListUploadsResult> uploads = store.ListMultipartUploads("crash", {});
    ASSERT_TRUE(uploads.has_value()) << uploads.error();
    for (const UploadInfo& u : uploads->uploads) {
      Result<ListPartsResult> parts = store.ListParts({"crash", u.key}, u.upload_id, 0, 1000);
      ASSERT_TRUE(parts.has_value()) << parts.error();
      for (const PartInfo& p : parts->parts) {
        expected += Objects(p.size);
      }
    }
    Result<uint64_t> data = rados.CountDataObjects();
    ASSERT_TRUE(data.has_value()) << data.error();
    EXPECT_EQ(*data, expected) << "the scrub and GC left other data than the referenced";
    for (const UploadInfo& u : uploads->uploads) {
      ASSERT_TRUE(store.AbortMultipartUpload({"crash", u.key}, u.upload_id).ok());
    }
  }
  EXPECT_GT(acknowledged, 0u) << "the writer never acknowledged a write";
  EXPECT_GT(scrubbed, 0u) << "no kill left orphans: the test did not exercise the scrub";
}

}  // namespace
}  // namespace oc::storage::test
