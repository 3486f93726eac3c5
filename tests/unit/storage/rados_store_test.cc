// RadosStore's own cases, against the test cluster (store_test_util.h: OC_TEST_CEPH_CONF, a
// random namespace per test): racing overwrites of one key, a reader pinned to its version,
// DeleteBucket racing PUTs, a 7-shard listing against a std::set model, a HeadMany of
// 2,500 names, and the layer reads' read-ahead windows.

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "composed_store.h"
#include "kv_test_util.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

class RadosStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(5); }
  void Open(uint32_t shards) {
    Result<StoreOptions> o = RadosTestOptions(StoreOptions{}, RandomRadosNamespace());
    ASSERT_TRUE(o.has_value()) << o.error();
    o->rados.index_shards = shards;
    Result<std::unique_ptr<Store>> s = OpenStore(*o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  RadosStore& rados() { return dynamic_cast<RadosStore&>(*BackendOf(*store_)); }

  std::unique_ptr<Store> store_;
};

TEST_F(RadosStoreTest, EightThreadsOverwritingOneKeyEndWithOneVisibleVersion) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Result<ObjectMeta> put = PutString(*store_, {"bkt", "hot"}, Bytes(t * 1000 + r, 70'000));
        if (!put.has_value()) {
          ++failures;
          ADD_FAILURE() << "thread " << t << " round " << r << ": " << put.error();
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  // One version: the record's ETag is the MD5 of exactly the bytes it reads, and those bytes
  // are one writer's whole object (the last round of some thread or an earlier one).
  Result<ObjectMeta> meta = store_->Head({"bkt", "hot"});
  ASSERT_TRUE(meta.has_value()) << meta.error();
  Result<std::string> body = GetString(*store_, {"bkt", "hot"});
  ASSERT_TRUE(body.has_value()) << body.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(*body))));
  bool whole = false;
  for (int t = 0; t < kThreads && !whole; ++t) {
    for (int r = 0; r < kRounds && !whole; ++r) {
      whole = *body == Bytes(t * 1000 + r, 70'000);
    }
  }
  EXPECT_TRUE(whole) << "the visible object is no writer's whole object";
  Result<ListResult> list = store_->List("bkt", {});
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].meta.etag, meta->etag);
  // Every replaced version waits for the GC; none was lost or left half-written: 2 data
  // objects (64 KiB each) per version.
  Result<uint64_t> data = rados().CountDataObjects();
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(*data, 2u * kThreads * kRounds);
}

TEST_F(RadosStoreTest, AReaderOpenedBeforeAnOverwriteReadsItsOwnVersion) {
  const std::string v1 = Bytes(1, 300'000);
  const std::string v2 = Bytes(2, 200'000);
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, v1).has_value());
  Result<std::unique_ptr<ObjectReader>> reader = store_->Get({"bkt", "k"}, ByteRange::All());
  ASSERT_TRUE(reader.has_value());
  std::string first(1000, '\0');
  ASSERT_EQ(*(*reader)->Read(MutableByteSpan(reinterpret_cast<std::byte*>(first.data()), 1000)),
            1000u);
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, v2).has_value());
  ASSERT_TRUE(store_->Delete({"bkt", "k"}).ok());
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, v2).has_value());
  Result<std::string> rest = ReadAll(**reader);
  ASSERT_TRUE(rest.has_value()) << rest.error();
  EXPECT_TRUE(first + *rest == v1);
  EXPECT_TRUE(*GetString(*store_, {"bkt", "k"}) == v2);
}

TEST_F(RadosStoreTest, DeleteBucketRacingPutsNeverLosesAnAcknowledgedObject) {
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    const std::string bucket = "race" + std::to_string(round);
    ASSERT_TRUE(store_->CreateBucket(bucket, "me").ok());
    std::atomic<bool> stop{false};
    std::atomic<int> acknowledged{0};
    std::vector<std::string> acked_names;
    std::mutex mu;
    std::thread writer([&] {
      for (int i = 0; i < 40 && !stop; ++i) {
        const std::string name = "o" + std::to_string(i);
        Result<ObjectMeta> r = PutString(*store_, {bucket, name}, Bytes(i, 1000));
        if (r.has_value()) {
          ++acknowledged;
          std::lock_guard lock(mu);
          acked_names.push_back(name);
        } else {
          EXPECT_EQ(r.error().subject(), Subject::kBucket) << r.error();
        }
      }
    });
    // Delete attempts race the writer: each either refuses (not empty) or wins when the
    // bucket is empty at that moment.
    bool deleted = false;
    for (int attempt = 0; attempt < 50 && !deleted; ++attempt) {
      Status s = store_->DeleteBucket(bucket);
      if (s.ok()) {
        deleted = true;
      } else {
        EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
      }
    }
    stop = true;
    writer.join();
    Result<BucketInfo> head = store_->HeadBucket(bucket);
    if (deleted) {
      // Deleted while empty: no PUT was acknowledged before, none after (they answer
      // NoSuchBucket), so nothing acknowledged is lost.
      EXPECT_EQ(head.error().code(), Code::kNotFound);
      EXPECT_EQ(acknowledged.load(), 0) << "an acknowledged object vanished with its bucket";
    } else {
      ASSERT_TRUE(head.has_value());
      std::lock_guard lock(mu);
      for (const std::string& name : acked_names) {
        EXPECT_TRUE(store_->Head({bucket, name}).has_value()) << name;
      }
    }
  }
}

TEST_F(RadosStoreTest, ListingOfThousandsOfKeysOnSevenShardsMatchesAModel) {
  Open(7);
  std::set<std::string> model;
  std::mt19937 rng(42);
  const char* dirs[] = {"a/", "a/b/", "b/", "c-", ""};
  for (int i = 0; i < 2000; ++i) {
    std::string name = std::string(dirs[rng() % 5]) + "k" + std::to_string(rng() % 100000);
    model.insert(name);
  }
  // Writers in parallel: listing order must come from the merge, not from write order.
  std::vector<std::string> names(model.begin(), model.end());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < names.size(); i += 4) {
        if (!PutString(*store_, {"bkt", names[i]}, "x").has_value()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  struct Case {
    std::string prefix;
    std::string delimiter;
    uint32_t max_keys;
  };
  for (const Case& c : {Case{"", "", 333}, Case{"", "/", 7}, Case{"a/", "/", 50},
                        Case{"a/", "", 1000}, Case{"c", "-", 3}, Case{"zz", "/", 10}}) {
    SCOPED_TRACE(c.prefix + " " + c.delimiter + " " + std::to_string(c.max_keys));
    // The model's answer: every key with the prefix, grouped at the first delimiter after it.
    std::vector<std::string> want;
    for (const std::string& k : model) {
      if (!k.starts_with(c.prefix)) {
        continue;
      }
      const size_t pos =
          c.delimiter.empty() ? std::string::npos : k.find(c.delimiter, c.prefix.size());
      std::string entry = pos == std::string::npos ? k : k.substr(0, pos + c.delimiter.size());
      if (want.empty() || want.back() != entry) {
        want.push_back(entry);
      }
    }
    std::vector<std::string> got;
    ListOptions o{c.prefix, c.delimiter, "", c.max_keys};
    for (int pages = 0; pages < 10000; ++pages) {
      Result<ListResult> r = store_->List("bkt", o);
      ASSERT_TRUE(r.has_value()) << r.error();
      std::vector<std::string> page;
      for (const ListEntry& e : r->objects) {
        page.push_back(e.name);
      }
      page.insert(page.end(), r->common_prefixes.begin(), r->common_prefixes.end());
      std::sort(page.begin(), page.end());
      EXPECT_LE(page.size(), c.max_keys);
      got.insert(got.end(), page.begin(), page.end());
      if (!r->truncated) {
        break;
      }
      o.start_after = r->next_start_after;
    }
    EXPECT_EQ(got, want);
  }
}

TEST_F(RadosStoreTest, HeadManyOf2500NamesAnswersEachInOrder) {
  std::vector<std::string> names;
  for (int i = 0; i < 2500; ++i) {
    names.push_back("chunk-" + std::to_string(i));
  }
  // Every third name present, each with its own size.
  for (size_t i = 0; i < names.size(); i += 3) {
    ASSERT_TRUE(PutString(*store_, {"bkt", names[i]}, std::string(i % 50, 'z')).has_value());
  }
  names.push_back("chunk-0");  // a name given twice gets the same answer
  Result<std::vector<std::optional<ObjectMeta>>> got = store_->HeadMany("bkt", names);
  ASSERT_TRUE(got.has_value()) << got.error();
  ASSERT_EQ(got->size(), names.size());
  for (size_t i = 0; i < 2500; ++i) {
    ASSERT_EQ((*got)[i].has_value(), i % 3 == 0) << i;
    if (i % 3 == 0) {
      EXPECT_EQ((*got)[i]->size, i % 50) << i;
    }
  }
  ASSERT_TRUE(got->back().has_value());
  EXPECT_EQ(got->back()->size, 0u);
}

TEST_F(RadosStoreTest, IdentityNamesTheClusterPoolAndNamespace) {
  const StoreIdentity id = store_->identity();
  EXPECT_EQ(id.backend, "rados");
  EXPECT_FALSE(id.fsid.empty());
  EXPECT_FALSE(id.pool.empty());
  EXPECT_EQ(id.rados_namespace.size(), 17u);  // RandomRadosNamespace()
}

// A store over a fresh namespace in which every descriptor GET is layerwise, its read-ahead
// windows `window` bytes, holding chunks 0..s.n-1 of `d` in kvtest::kBucket (their bytes in
// *chunks, from `seed`).
Result<std::unique_ptr<Store>> LayerwiseStoreWithChunks(
    uint64_t window, const kvtest::Shape& s, const descriptor::Descriptor& d, uint64_t seed,
    std::vector<std::vector<std::byte>>* chunks) {
  StoreOptions base;
  base.kv.layerwise_threshold_bytes = 1;
  OC_ASSIGN_OR_RETURN(StoreOptions o, RadosTestOptions(base, RandomRadosNamespace()));
  o.rados.read_ahead_window_bytes = window;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(o));
  OC_RETURN_IF_ERROR(store->CreateBucket(kvtest::kBucket, "me"));
  for (uint64_t j = 0; j < s.n; ++j) {
    chunks->push_back(kvtest::ChunkBytes(seed, j, s));
    OC_RETURN_IF_ERROR(kvtest::StoreChunk(*store, d, j, chunks->back()));
  }
  return store;
}

// The store's /stats figure `name` (0, and a failure, if it has none).
uint64_t Figure(Store& store, std::string_view name) {
  Result<StoreStats> st = store.Stats();
  EXPECT_TRUE(st.has_value());
  for (const auto& [n, value] : st.has_value() ? st->figures : decltype(st->figures){}) {
    if (n == name) {
      return value;
    }
  }
  ADD_FAILURE() << "no " << name << " figure";
  return 0;
}

// A layerwise descriptor GET from RADOS reads each chunk in growing windows
// ([rados] read_ahead_window_bytes, src/kv/read_ahead.h): with 32 layers, 6 RADOS reads per
// chunk (1, 2, 4, 8 and 16 slices, then the last one) rather than 32, byte-exact, for both
// stored layouts; with the window set to 0, one read op per layer as before.
TEST(RadosReadAhead, LayerwiseGetReadsEachChunkInGrowingWindows) {
  for (const uint64_t window : {uint64_t{1} << 20, uint64_t{0}}) {
    for (const descriptor::StoredLayout layout :
         {descriptor::StoredLayout::kL2TD, descriptor::StoredLayout::k2LTD}) {
      SCOPED_TRACE(std::to_string(window) + " " +
                   std::string(descriptor::StoredLayoutName(layout)));
      const kvtest::Shape s{5, 32, 8192, layout};
      const descriptor::Descriptor d = kvtest::MakeDescriptor(s, true, 3);
      std::vector<std::vector<std::byte>> chunks;
      Result<std::unique_ptr<Store>> store = LayerwiseStoreWithChunks(window, s, d, 3, &chunks);
      ASSERT_TRUE(store.has_value()) << store.error();
      auto figure = [&](std::string_view name) { return Figure(**store, name); };
      const uint64_t before = figure("rados_slice_read_ops");
      const uint64_t lookups_before = figure("rados_slice_index_lookups");
      kvtest::VectorSink sink(2, 64 << 10);
      Result<KvGetReport> report = (*store)->GetLayers(kvtest::kBucket, d, &sink, {});
      ASSERT_TRUE(report.has_value()) << report.error();
      EXPECT_EQ(report->plan.mode, descriptor::ServeMode::kLayerwise);
      std::vector<std::byte> want(s.n * s.layers * s.s);
      kvtest::OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
      EXPECT_TRUE(sink.body() == want);
      // Per chunk: one op per slice, or 6 windows (kv_2ltd's K and V windows load at the
      // same layers and share each op: one op per data object and call).
      EXPECT_EQ(figure("rados_slice_read_ops") - before, s.n * (window == 0 ? s.layers : 6));
      // The request's reads share one ReadSession: each chunk's record is read once, not at
      // every layer or window.
      EXPECT_EQ(figure("rados_slice_index_lookups") - lookups_before, s.n);
    }
  }
}

// A descriptor GET looks all of its chunks up before its first read, in one batch
// (ReadSession::Prepare): 20 chunks whose first layer spans three staging buffers cost one
// index batch, not one per buffer, and no lookup after it.
TEST(RadosReadAhead, ADescriptorGetLooksItsChunksUpInOneBatchBeforeItsFirstRead) {
  const kvtest::Shape s{20, 8, 8192, descriptor::StoredLayout::kL2TD};
  const descriptor::Descriptor d = kvtest::MakeDescriptor(s, true, 5);
  std::vector<std::vector<std::byte>> chunks;
  Result<std::unique_ptr<Store>> store = LayerwiseStoreWithChunks(1 << 20, s, d, 5, &chunks);
  ASSERT_TRUE(store.has_value()) << store.error();
  auto figure = [&](std::string_view name) { return Figure(**store, name); };
  const uint64_t lookups = figure("rados_slice_index_lookups");
  const uint64_t batches = figure("rados_slice_index_batches");
  kvtest::VectorSink sink(2, 64 << 10);  // 8 slices a buffer: layer 0 takes three
  Result<KvGetReport> report = (*store)->GetLayers(kvtest::kBucket, d, &sink, {});
  ASSERT_TRUE(report.has_value()) << report.error();
  std::vector<std::byte> want(s.n * s.layers * s.s);
  kvtest::OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
  EXPECT_TRUE(sink.body() == want);
  EXPECT_EQ(figure("rados_slice_index_lookups") - lookups, s.n);
  EXPECT_EQ(figure("rados_slice_index_batches") - batches, 1u);
}

}  // namespace
}  // namespace oc::storage::test
