// storage_crash_writer DATA_DIR SEED [data_files]
// storage_crash_writer --backend rados CEPH_CONF POOL NAMESPACE SEED
// The writer half of the crash test (crash_test.cc, Backends/CrashTest on RocksDB, with SST
// extents or, given `data_files`, data files of kDataFileBytes, and RADOS).
// Opens the store and writes objects of random sizes (some many extents and several
// streamed flushes, many overwriting earlier keys) until killed. On RocksDB one time in four
// it writes a group of 2-4 objects of distinct keys committed together (Store::PutGroup); on
// RADOS one time in four a multipart upload instead: 1 or 2 parts (the first of exactly
// kMinPartBytes when there are 2), completed, or one time in six aborted.
// For every object it prints
//   W <key> <xxh3-64 hex> <size> <group>   before its first byte is appended (an intent), and
//   A <key> <xxh3-64 hex> <size> <group>   only after Commit returned (acknowledged),
// <group> numbering the groups from 1 (0 for a single object or a multipart upload), each
// line with one write(2) to stdout, so what the test reads is exactly what the writer knew
// when it was killed.

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"

namespace {

// The test and the writer agree on these.
constexpr int kKeys = 24;
constexpr uint64_t kExtentBytes = 64 << 10;
constexpr uint64_t kDataFileBytes = 1 << 20;

void Emit(char kind, const std::string& key, uint64_t hash, uint64_t size, uint64_t group) {
  char line[256];
  const int n =
      std::snprintf(line, sizeof(line), "%c %s %016llx %llu %llu\n", kind, key.c_str(),
                    static_cast<unsigned long long>(hash), static_cast<unsigned long long>(size),
                    static_cast<unsigned long long>(group));
  if (n <= 0 || ::write(1, line, static_cast<size_t>(n)) != n) {
    std::_Exit(3);
  }
}

std::string KeyName(int i) {
  return i == 0 ? "ключ/🙂" : "k" + std::to_string(i);  // one non-ASCII key among them
}

uint64_t RandomSize(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return rng() % 100;  // tiny, sometimes empty
    case 1:
      return rng() % (3 * kExtentBytes);  // one batch
    default:
      return rng() % (20 * kExtentBytes);  // streamed, many flushes
  }
}

// Appends `data` in random pieces; the first error.
oc::Status AppendAll(oc::storage::ObjectWriter& w, const std::vector<std::byte>& data,
                     std::mt19937_64& rng) {
  for (uint64_t pos = 0; pos < data.size();) {
    const uint64_t n = std::min<uint64_t>(data.size() - pos, 1 + rng() % (100 << 10));
    OC_RETURN_IF_ERROR(w.Append(oc::ByteSpan(data.data() + pos, n)));
    pos += n;
  }
  return oc::Status::Ok();
}

int Fail(const char* what, const oc::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

// The RADOS mode's writes: single PUTs and multipart uploads, until killed.
int RunRados(oc::storage::Store& store, uint64_t seed);

int main(int argc, char** argv) {
  if (argc == 7 && std::string_view(argv[1]) == "--backend" &&
      std::string_view(argv[2]) == "rados") {
    oc::storage::StoreOptions options;
    options.backend = "rados";
    options.rados.conf_file = argv[3];
    options.rados.pool = argv[4];
    options.rados.rados_namespace = argv[5];
    options.rados.client_name = "client.admin";
    options.rados.index_shards = 5;
    options.rados.object_extent_bytes = kExtentBytes;
    options.rados.gc = false;  // the test collects; a killed leader would hold the lock
    options.rados.gc_min_wait = std::chrono::milliseconds(0);
    auto store = oc::storage::OpenStore(options);
    if (!store.has_value()) {
      std::fprintf(stderr, "open: %s\n", store.error().ToString().c_str());
      return 1;
    }
    return RunRados(**store, std::strtoull(argv[6], nullptr, 10));
  }
  const bool data_files = argc == 4 && std::string_view(argv[3]) == "data_files";
  if (argc != 3 && !data_files) {
    std::fprintf(stderr,
                 "usage: storage_crash_writer DATA_DIR SEED [data_files]\n"
                 "       storage_crash_writer --backend rados CEPH_CONF POOL NAMESPACE SEED\n");
    return 2;
  }
  oc::storage::StoreOptions options;
  options.data_dir = argv[1];
  options.default_extent_bytes = kExtentBytes;
  options.write_batch_bytes = 4 * kExtentBytes;  // big objects flush several times
  options.block_cache_bytes = 32 << 20;
  options.read_threads = 0;
  options.extent_layout = oc::storage::ExtentLayout::kSstBlocks;  // unless data_files
  if (data_files) {
    options.extent_layout = oc::storage::ExtentLayout::kDataFiles;
    options.data_file_bytes = kDataFileBytes;
    options.data_file_min_bytes = 0;  // every object in the files (the test counts frames)
  }
  auto store = oc::storage::OpenStore(options);
  if (!store.has_value()) {
    std::fprintf(stderr, "open: %s\n", store.error().ToString().c_str());
    return 1;
  }
  oc::Status created = (*store)->CreateBucket("crash", "writer");
  if (!created.ok() && created.code() != oc::Code::kAlreadyExists) {
    std::fprintf(stderr, "bucket: %s\n", created.ToString().c_str());
    return 1;
  }
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  auto random_size = [&rng] { return RandomSize(rng); };
  uint64_t groups = 0;
  for (;;) {
    if (rng() % 4 == 0) {
      const uint64_t group_id = ++groups;
      std::vector<std::string> keys;
      const size_t members = 2 + rng() % 3;
      while (keys.size() < members) {
        std::string k = KeyName(static_cast<int>(rng() % kKeys));
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
          keys.push_back(std::move(k));
        }
      }
      auto group = (*store)->PutGroup("crash");
      if (!group.has_value()) {
        std::fprintf(stderr, "group: %s\n", group.error().ToString().c_str());
        return 1;
      }
      std::vector<std::pair<uint64_t, uint64_t>> written;  // hash, size
      for (const std::string& k : keys) {
        const uint64_t size = random_size();
        const std::vector<std::byte> data = oc::testutil::PatternBytes(rng(), size);
        const uint64_t hash = XXH3_64bits(data.data(), data.size());
        Emit('W', k, hash, size, group_id);
        oc::Status s = (*group)->Begin(k, {});
        for (uint64_t pos = 0; s.ok() && pos < size;) {
          const uint64_t n = std::min<uint64_t>(size - pos, 1 + rng() % (100 << 10));
          s = (*group)->Append(oc::ByteSpan(data.data() + pos, n));
          pos += n;
        }
        if (!s.ok()) {
          std::fprintf(stderr, "group write: %s\n", s.ToString().c_str());
          return 1;
        }
        written.emplace_back(hash, size);
      }
      auto metas = (*group)->Commit();
      if (!metas.has_value()) {
        std::fprintf(stderr, "group commit: %s\n", metas.error().ToString().c_str());
        return 1;
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        Emit('A', keys[i], written[i].first, written[i].second, group_id);
      }
      continue;
    }
    const std::string key = KeyName(static_cast<int>(rng() % kKeys));
    const uint64_t size = random_size();
    const std::vector<std::byte> data = oc::testutil::PatternBytes(rng(), size);
    const uint64_t hash = XXH3_64bits(data.data(), data.size());
    Emit('W', key, hash, size, 0);
    auto writer = (*store)->Put({"crash", key}, {});
    if (!writer.has_value()) {
      std::fprintf(stderr, "put: %s\n", writer.error().ToString().c_str());
      return 1;
    }
    uint64_t pos = 0;
    while (pos < size) {
      const uint64_t n = std::min<uint64_t>(size - pos, 1 + rng() % (100 << 10));
      oc::Status s = (*writer)->Append(oc::ByteSpan(data.data() + pos, n));
      if (!s.ok()) {
        std::fprintf(stderr, "append: %s\n", s.ToString().c_str());
        return 1;
      }
      pos += n;
    }
    auto meta = (*writer)->Commit();
    if (!meta.has_value()) {
      std::fprintf(stderr, "commit: %s\n", meta.error().ToString().c_str());
      return 1;
    }
    Emit('A', key, hash, size, 0);
  }
}

int RunRados(oc::storage::Store& store, uint64_t seed) {
  oc::Status created = store.CreateBucket("crash", "writer");
  if (!created.ok() && created.code() != oc::Code::kAlreadyExists) {
    return Fail("bucket", created);
  }
  std::mt19937_64 rng(seed);
  for (;;) {
    const std::string key = KeyName(static_cast<int>(rng() % kKeys));
    if (rng() % 4 != 0) {
      const std::vector<std::byte> data = oc::testutil::PatternBytes(rng(), RandomSize(rng));
      const uint64_t hash = XXH3_64bits(data.data(), data.size());
      Emit('W', key, hash, data.size(), 0);
      auto writer = store.Put({"crash", key}, {});
      if (!writer.has_value()) {
        return Fail("put", writer.error());
      }
      if (oc::Status s = AppendAll(**writer, data, rng); !s.ok()) {
        return Fail("append", s);
      }
      auto meta = (*writer)->Commit();
      if (!meta.has_value()) {
        return Fail("commit", meta.error());
      }
      Emit('A', key, hash, data.size(), 0);
      continue;
    }
    // A multipart upload: every part but the last is exactly kMinPartBytes.
    const uint32_t parts = 1 + static_cast<uint32_t>(rng() % 2);
    std::vector<std::vector<std::byte>> bodies;
    std::vector<std::byte> whole;
    for (uint32_t p = 1; p <= parts; ++p) {
      const uint64_t size = p < parts ? oc::storage::kMinPartBytes : RandomSize(rng);
      bodies.push_back(oc::testutil::PatternBytes(rng(), size));
      whole.insert(whole.end(), bodies.back().begin(), bodies.back().end());
    }
    const bool abort = rng() % 6 == 0;
    const uint64_t hash = XXH3_64bits(whole.data(), whole.size());
    if (!abort) {
      Emit('W', key, hash, whole.size(), 0);
    }
    auto id = store.CreateMultipartUpload({"crash", key}, {});
    if (!id.has_value()) {
      return Fail("create upload", id.error());
    }
    std::vector<oc::storage::CompletedPart> done;
    for (uint32_t p = 1; p <= parts; ++p) {
      auto writer = store.UploadPart({"crash", key}, *id, p, {});
      if (!writer.has_value()) {
        return Fail("upload part", writer.error());
      }
      if (oc::Status s = AppendAll(**writer, bodies[p - 1], rng); !s.ok()) {
        return Fail("append part", s);
      }
      auto meta = (*writer)->Commit();
      if (!meta.has_value()) {
        return Fail("commit part", meta.error());
      }
      done.push_back({p, meta->etag});
    }
    if (abort) {
      if (oc::Status s = store.AbortMultipartUpload({"crash", key}, *id); !s.ok()) {
        return Fail("abort", s);
      }
      continue;
    }
    auto meta = store.CompleteMultipartUpload({"crash", key}, *id, done, {});
    if (!meta.has_value()) {
      return Fail("complete", meta.error());
    }
    Emit('A', key, hash, whole.size(), 0);
  }
}
