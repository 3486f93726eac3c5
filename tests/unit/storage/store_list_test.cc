// Listing of objects and multipart uploads: prefix, delimiter, start-after, max-keys,
// truncation and continuation across pages, on RocksDB and RADOS, for objects and multipart
// uploads; and the walker's edge-case table (list_cases.h, list_walker_test.cc) through each
// backend's real cursor.

#include <gtest/gtest.h>

#include <set>

#include "list_cases.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

class ListTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Store>> s = OpenTestStore(
        GetParam(), SmallOptions(dir_.path(), ExtentLayout::kSstBlocks), RandomRadosNamespace());
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  void Put(const std::string& name) {
    ASSERT_TRUE(PutString(*store_, {"bkt", name}, name).has_value()) << name;
  }
  // Pages through the whole listing; every entry (key or common prefix) in order.
  std::vector<std::string> ListAll(ListOptions o, int* pages = nullptr) {
    std::vector<std::string> all;
    int n = 0;
    for (;;) {
      Result<ListResult> r = store_->List("bkt", o);
      EXPECT_TRUE(r.has_value());
      if (!r.has_value()) {
        return all;
      }
      ++n;
      EXPECT_LE(r->objects.size() + r->common_prefixes.size(), o.max_keys);
      // Merge keys and prefixes of the page in order.
      std::vector<std::string> page;
      for (const ListEntry& e : r->objects) {
        page.push_back(e.name);
      }
      for (const std::string& p : r->common_prefixes) {
        page.push_back(p);
      }
      std::sort(page.begin(), page.end());
      all.insert(all.end(), page.begin(), page.end());
      if (!r->truncated) {
        break;
      }
      EXPECT_FALSE(page.empty());
      EXPECT_EQ(r->next_start_after, page.back());
      o.start_after = r->next_start_after;
    }
    if (pages != nullptr) {
      *pages = n;
    }
    return all;
  }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, ListTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksData,
                                           Backend::kRados),
                         BackendName);

TEST_P(ListTest, PaginatesThousandsOfKeysWithoutDelimiter) {
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "k%05d", i);
    names.push_back(buf);
    Put(buf);
  }
  for (uint32_t max_keys : {1000u, 333u, 7u}) {
    SCOPED_TRACE(max_keys);
    ListOptions o;
    o.max_keys = max_keys;
    int pages = 0;
    EXPECT_EQ(ListAll(o, &pages), names);
    EXPECT_EQ(pages, static_cast<int>((3000 + max_keys - 1) / max_keys));
  }
  ListOptions one;
  one.max_keys = 1;
  Result<ListResult> first = store_->List("bkt", one);
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->objects.size(), 1u);
  EXPECT_EQ(first->objects[0].name, "k00000");
  EXPECT_EQ(first->objects[0].meta.size, 6u);
  EXPECT_TRUE(first->truncated);
}

TEST_P(ListTest, DelimiterGroupsCommonPrefixesCountedOnceAcrossPages) {
  // 40 directories of 30 files, plus top-level files between them.
  std::vector<std::string> expected;
  for (int d = 0; d < 40; ++d) {
    char dir[16];
    std::snprintf(dir, sizeof(dir), "d%02d/", d);
    for (int f = 0; f < 30; ++f) {
      Put(std::string(dir) + "f" + std::to_string(f));
    }
    expected.push_back(dir);
    char top[16];
    std::snprintf(top, sizeof(top), "d%02d.txt", d);
    Put(top);
    expected.push_back(top);
  }
  std::sort(expected.begin(), expected.end());
  for (uint32_t max_keys : {1000u, 3u, 1u}) {
    SCOPED_TRACE(max_keys);
    ListOptions o;
    o.delimiter = "/";
    o.max_keys = max_keys;
    EXPECT_EQ(ListAll(o), expected);
  }
  ListOptions page;
  page.delimiter = "/";
  page.max_keys = 80;
  Result<ListResult> r = store_->List("bkt", page);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->common_prefixes.size(), 40u);
  EXPECT_EQ(r->objects.size(), 40u);
  EXPECT_FALSE(r->truncated);
}

TEST_P(ListTest, PrefixDelimiterAndStartAfter) {
  for (const char* n :
       {"a", "a/1", "a/2", "a/b/1", "a/b/2", "a/c/1", "ab", "b/1", "photos/2024/x.jpg",
        "photos/2024/y.jpg", "photos/2025/z.jpg", "photos/index.html"}) {
    Put(n);
  }
  struct Row {
    std::string prefix, delimiter, start_after;
    std::vector<std::string> want;  // keys, then "P:" common prefixes, each sorted
  };
  const Row rows[] = {
      {"",
       "",
       "",
       {"a", "a/1", "a/2", "a/b/1", "a/b/2", "a/c/1", "ab", "b/1", "photos/2024/x.jpg",
        "photos/2024/y.jpg", "photos/2025/z.jpg", "photos/index.html"}},
      {"", "/", "", {"a", "ab", "P:a/", "P:b/", "P:photos/"}},
      {"a/", "/", "", {"a/1", "a/2", "P:a/b/", "P:a/c/"}},
      {"photos/", "/", "", {"photos/index.html", "P:photos/2024/", "P:photos/2025/"}},
      {"photos/20", "/", "", {"P:photos/2024/", "P:photos/2025/"}},
      {"a/", "", "a/2", {"a/b/1", "a/b/2", "a/c/1"}},
      {"", "/", "a/", {"ab", "P:b/", "P:photos/"}},
      {"", "/", "a/b/1", {"ab", "P:b/", "P:photos/"}},  // inside a group: the group is done
      {"a/", "/", "a/b/", {"P:a/c/"}},
      {"zzz", "/", "", {}},
      {"", "", "photos/index.html", {}},
      {"",
       "",
       "0",
       {"a", "a/1", "a/2", "a/b/1", "a/b/2", "a/c/1", "ab", "b/1", "photos/2024/x.jpg",
        "photos/2024/y.jpg", "photos/2025/z.jpg", "photos/index.html"}},
      {"",
       "b/",
       "",
       {"a", "a/1", "a/2", "P:a/b/", "a/c/1", "ab", "P:b/", "photos/2024/x.jpg",
        "photos/2024/y.jpg", "photos/2025/z.jpg", "photos/index.html"}},
      {"",
       "20",
       "",
       {"a", "a/1", "a/2", "a/b/1", "a/b/2", "a/c/1", "ab", "b/1", "P:photos/20",
        "photos/index.html"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE("prefix=" + row.prefix + " delimiter=" + row.delimiter +
                 " after=" + row.start_after);
    ListOptions o;
    o.prefix = row.prefix;
    o.delimiter = row.delimiter;
    o.start_after = row.start_after;
    Result<ListResult> r = store_->List("bkt", o);
    ASSERT_TRUE(r.has_value());
    std::vector<std::string> got;
    for (const ListEntry& e : r->objects) {
      got.push_back(e.name);
    }
    for (const std::string& p : r->common_prefixes) {
      got.push_back("P:" + p);
    }
    std::vector<std::string> want = row.want;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
    EXPECT_FALSE(r->truncated);
  }
}

TEST_P(ListTest, EdgeCases) {
  ListOptions zero;
  zero.max_keys = 0;
  Put("x");
  Result<ListResult> r = store_->List("bkt", zero);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->objects.empty());
  EXPECT_EQ(store_->List("nobucket", {}).error().subject(), Subject::kBucket);
  // Keys of another bucket whose name extends this one never leak in.
  ASSERT_TRUE(store_->CreateBucket("bkt2", "me").ok());
  ASSERT_TRUE(PutString(*store_, {"bkt2", "y"}, "y").has_value());
  Result<ListResult> only = store_->List("bkt", {});
  ASSERT_TRUE(only.has_value());
  ASSERT_EQ(only->objects.size(), 1u);
  EXPECT_EQ(only->objects[0].name, "x");
  Result<ListResult> other = store_->List("bkt2", {});
  ASSERT_TRUE(other.has_value());
  ASSERT_EQ(other->objects.size(), 1u);
  EXPECT_EQ(other->objects[0].name, "y");
  // Exactly max_keys entries: not truncated.
  ListOptions one;
  one.max_keys = 1;
  Result<ListResult> exact = store_->List("bkt", one);
  ASSERT_TRUE(exact.has_value());
  EXPECT_FALSE(exact->truncated);
}

TEST_P(ListTest, MultipartUploadsListWithMarkersAndDelimiter) {
  std::vector<std::pair<std::string, std::string>> uploads;  // (key, id), listing order
  for (const char* k : {"a", "a", "b/1", "b/2", "c", "c", "c"}) {
    Result<std::string> id = store_->CreateMultipartUpload({"bkt", k}, {});
    ASSERT_TRUE(id.has_value());
    uploads.emplace_back(k, *id);
  }
  std::sort(uploads.begin(), uploads.end());

  // Page through one at a time.
  ListUploadsOptions o;
  o.max_uploads = 1;
  std::vector<std::pair<std::string, std::string>> seen;
  for (int guard = 0; guard < 20; ++guard) {
    Result<ListUploadsResult> r = store_->ListMultipartUploads("bkt", o);
    ASSERT_TRUE(r.has_value());
    for (const UploadInfo& u : r->uploads) {
      seen.emplace_back(u.key, u.upload_id);
      EXPECT_GT(u.initiated_unix_ms, 0);
    }
    if (!r->truncated) {
      break;
    }
    o.key_marker = r->next_key_marker;
    o.upload_id_marker = r->next_upload_id_marker;
  }
  EXPECT_EQ(seen, uploads);

  ListUploadsOptions grouped;
  grouped.delimiter = "/";
  Result<ListUploadsResult> g = store_->ListMultipartUploads("bkt", grouped);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->uploads.size(), 5u);  // a x2, c x3
  EXPECT_EQ(g->common_prefixes, std::vector<std::string>{"b/"});

  ListUploadsOptions after_key;
  after_key.key_marker = "a";  // no id marker: every upload of "a" is skipped
  Result<ListUploadsResult> ak = store_->ListMultipartUploads("bkt", after_key);
  ASSERT_TRUE(ak.has_value());
  ASSERT_EQ(ak->uploads.size(), 5u);
  EXPECT_EQ(ak->uploads[0].key, "b/1");

  ListUploadsOptions after_id;  // the second upload of "a" and everything after it
  after_id.key_marker = uploads[0].first;
  after_id.upload_id_marker = uploads[0].second;
  after_id.max_uploads = 2;
  Result<ListUploadsResult> ai = store_->ListMultipartUploads("bkt", after_id);
  ASSERT_TRUE(ai.has_value());
  ASSERT_EQ(ai->uploads.size(), 2u);
  EXPECT_EQ(ai->uploads[0].upload_id, uploads[1].second);
  EXPECT_EQ(ai->uploads[1].key, "b/1");
  EXPECT_TRUE(ai->truncated);
  EXPECT_EQ(ai->next_key_marker, "b/1");
  EXPECT_EQ(ai->next_upload_id_marker, ai->uploads[1].upload_id);

  ListUploadsOptions past_group;  // a key marker inside a group: the group was returned
  past_group.delimiter = "/";
  past_group.key_marker = "b/1";
  Result<ListUploadsResult> pg = store_->ListMultipartUploads("bkt", past_group);
  ASSERT_TRUE(pg.has_value());
  EXPECT_TRUE(pg->common_prefixes.empty());
  ASSERT_EQ(pg->uploads.size(), 3u);
  EXPECT_EQ(pg->uploads[0].key, "c");

  ListUploadsOptions prefixed;
  prefixed.prefix = "c";
  Result<ListUploadsResult> p = store_->ListMultipartUploads("bkt", prefixed);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->uploads.size(), 3u);
}

TEST_P(ListTest, WalkerEdgeCaseTable) {
  for (const std::string& k : kEdgeKeys) {
    Put(k);
  }
  for (const ListCase& c : EdgeCases()) {
    SCOPED_TRACE(c.what);
    Result<ListResult> r = store_->List("bkt", c.options);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(Spelled(*r), c.want);
    EXPECT_EQ(r->truncated, c.truncated);
    EXPECT_EQ(SpelledNext(*r), c.next);
  }
  // Paged one entry at a time, a common prefix spans every page boundary.
  ListOptions all;
  all.delimiter = "/";
  for (uint32_t max_keys : {1u, 2u, 3u}) {
    all.max_keys = max_keys;
    EXPECT_EQ(ListAll(all), (std::vector<std::string>{"a", "a/", "abc", "abc/", "b/", "c", "d/"}));
  }
}

}  // namespace
}  // namespace oc::storage::test
