// The S3 listing walker (object/list_walker.h) over an in-memory cursor: the edge-case table
// of list_cases.h (store_list_test.cc runs the same table through every real backend), the
// upload markers, paging across common prefixes, and the cursor contract (a coarse Seek that
// stops at the prefix's start lists the same; max_keys 0 leaves the cursor untouched).

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "list_cases.h"
#include "object/list_walker.h"
#include "records/meta_codec.h"

namespace oc::storage::test {
namespace {

struct MemEntry {
  std::string name;
  std::string upload_id;
  std::string value;
};

// Sorted entries; Seek exact (first entry after the marker) or coarse (the prefix's first
// entry, leaving the marker to the walker). Counts the calls that move it.
class MemCursor final : public ListCursor {
 public:
  MemCursor(std::vector<MemEntry> entries, bool coarse)
      : entries_(std::move(entries)), coarse_(coarse) {
    std::sort(entries_.begin(), entries_.end(), [](const MemEntry& a, const MemEntry& b) {
      return std::tie(a.name, a.upload_id) < std::tie(b.name, b.upload_id);
    });
  }

  Status Seek(std::string_view prefix, const ListMarker& marker) override {
    ++moves;
    prefix_ = std::string(prefix);
    pos_ = 0;
    while (pos_ < entries_.size() && (!entries_[pos_].name.starts_with(prefix_) ||
                                      (!coarse_ && AtOrBefore(Item(pos_), marker)))) {
      ++pos_;
    }
    return Status::Ok();
  }
  Result<bool> Current(ListItem* item) override {
    while (pos_ < entries_.size() && !entries_[pos_].name.starts_with(prefix_)) {
      ++pos_;
    }
    if (pos_ == entries_.size()) {
      return false;
    }
    *item = Item(pos_);
    return true;
  }
  void Next() override {
    ++moves;
    ++pos_;
  }
  void SkipPrefix(std::string_view name_prefix) override {
    ++moves;
    while (pos_ < entries_.size() && entries_[pos_].name.starts_with(name_prefix)) {
      ++pos_;
    }
  }

  int moves = 0;

 private:
  ListItem Item(size_t i) const {
    return ListItem{entries_[i].name, entries_[i].upload_id, entries_[i].value};
  }
  std::vector<MemEntry> entries_;
  const bool coarse_;
  std::string prefix_;
  size_t pos_ = 0;
};

std::vector<MemEntry> ObjectEntries() {
  std::vector<MemEntry> out;
  for (const std::string& k : kEdgeKeys) {
    ObjectRecord r;
    r.meta.size = k.size();
    r.segments.push_back(Segment{out.size() + 1, k.size(), 4096, 0});
    out.push_back(MemEntry{k, "", EncodeObjectRecord(r)});
  }
  return out;
}

class WalkerTest : public ::testing::TestWithParam<bool> {};  // the cursor is coarse
INSTANTIATE_TEST_SUITE_P(Cursors, WalkerTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Coarse" : "Exact";
                         });

TEST_P(WalkerTest, EdgeCaseTable) {
  for (const ListCase& c : EdgeCases()) {
    SCOPED_TRACE(c.what);
    MemCursor cursor(ObjectEntries(), GetParam());
    Result<ListResult> r = ListObjects(cursor, c.options);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(Spelled(*r), c.want);
    EXPECT_EQ(r->truncated, c.truncated);
    EXPECT_EQ(SpelledNext(*r), c.next);
    for (const ListEntry& e : r->objects) {
      EXPECT_EQ(e.meta.size, e.name.size());  // the record decoded is the key's own
    }
  }
}

TEST_P(WalkerTest, MaxKeysZeroLeavesTheCursorAlone) {
  MemCursor cursor(ObjectEntries(), GetParam());
  Result<ListResult> r = ListObjects(cursor, Opts("", "/", "", 0));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(cursor.moves, 0);
  EXPECT_FALSE(r->truncated);
}

TEST_P(WalkerTest, PagesAcrossCommonPrefixesListEverythingOnce) {
  for (const std::string delimiter : {"", "/", "//"}) {
    for (uint32_t max_keys : {1u, 2u, 3u, 4u}) {
      SCOPED_TRACE(delimiter + " max_keys=" + std::to_string(max_keys));
      MemCursor whole_cursor(ObjectEntries(), GetParam());
      Result<ListResult> whole = ListObjects(whole_cursor, Opts("", delimiter, ""));
      ASSERT_TRUE(whole.has_value());
      std::vector<std::string> paged;
      ListOptions o = Opts("", delimiter, "", max_keys);
      for (int guard = 0; guard < 50; ++guard) {
        MemCursor cursor(ObjectEntries(), GetParam());
        Result<ListResult> page = ListObjects(cursor, o);
        ASSERT_TRUE(page.has_value());
        const std::vector<std::string> spelled = Spelled(*page);
        EXPECT_LE(spelled.size(), max_keys);
        paged.insert(paged.end(), spelled.begin(), spelled.end());
        if (!page->truncated) {
          break;
        }
        ASSERT_EQ(spelled.size(), max_keys);
        o.start_after = page->next_start_after;
      }
      EXPECT_EQ(paged, Spelled(*whole));
    }
  }
}

TEST_P(WalkerTest, CorruptRecordIsAnError) {
  std::vector<MemEntry> entries = ObjectEntries();
  entries[2].value = "not a record";
  MemCursor cursor(std::move(entries), GetParam());
  Result<ListResult> r = ListObjects(cursor, Opts("", "", ""));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kCorruption);
}

// Uploads: (key, id) pairs; ids chosen so their order differs from insertion order.
std::vector<MemEntry> UploadEntries() {
  std::vector<MemEntry> out;
  int64_t t = 1;
  for (auto [k, id] : {std::pair{"a", "u2"}, std::pair{"a", "u1"}, std::pair{"a/x", "u3"},
                       std::pair{"b", "u5"}, std::pair{"b", "u4"}}) {
    UploadRecord r;
    r.initiated_unix_ms = t++;
    out.push_back(MemEntry{k, id, EncodeUploadRecord(r)});
  }
  return out;
}

std::vector<std::string> SpelledUploads(const ListUploadsResult& r) {
  std::vector<std::string> out;
  for (const UploadInfo& u : r.uploads) {
    out.push_back(u.key + "#" + u.upload_id);
  }
  for (const std::string& p : r.common_prefixes) {
    out.push_back("P:" + p);
  }
  return out;
}

TEST_P(WalkerTest, UploadMarkers) {
  struct Row {
    std::string key_marker, id_marker, delimiter;
    uint32_t max = 1000;
    std::vector<std::string> want;
    bool truncated = false;
    std::string next_key, next_id;
  };
  const Row rows[] = {
      {"", "", "", 1000, {"a#u1", "a#u2", "a/x#u3", "b#u4", "b#u5"}, false, "b", "u5"},
      {"a", "", "", 1000, {"a/x#u3", "b#u4", "b#u5"}, false, "b", "u5"},  // past every "a"
      {"a", "u1", "", 1000, {"a#u2", "a/x#u3", "b#u4", "b#u5"}, false, "b", "u5"},
      {"", "u1", "", 2, {"a#u1", "a#u2"}, true, "a", "u2"},  // an id marker alone is ignored
      {"a", "u2", "", 1, {"a/x#u3"}, true, "a/x", "u3"},
      {"", "", "/", 1000, {"a#u1", "a#u2", "b#u4", "b#u5", "P:a/"}, false, "b", "u5"},
      {"a", "u2", "/", 1, {"P:a/"}, true, "a/", ""},
      {"a/", "", "/", 1000, {"b#u4", "b#u5"}, false, "b", "u5"},  // the group was returned
      {"b", "u5", "", 1000, {}, false, "", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.key_marker + "/" + row.id_marker + " delimiter=" + row.delimiter);
    MemCursor cursor(UploadEntries(), GetParam());
    ListUploadsOptions o;
    o.key_marker = row.key_marker;
    o.upload_id_marker = row.id_marker;
    o.delimiter = row.delimiter;
    o.max_uploads = row.max;
    Result<ListUploadsResult> r = ListUploads(cursor, o);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(SpelledUploads(*r), row.want);
    EXPECT_EQ(r->truncated, row.truncated);
    EXPECT_EQ(r->next_key_marker, row.next_key);
    EXPECT_EQ(r->next_upload_id_marker, row.next_id);
  }
  MemCursor cursor(UploadEntries(), GetParam());
  ListUploadsOptions prefixed;
  prefixed.prefix = "a";
  Result<ListUploadsResult> p = ListUploads(cursor, prefixed);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->uploads.size(), 3u);
  EXPECT_EQ(p->uploads[0].initiated_unix_ms, 2);  // a#u1 was created second
}

}  // namespace
}  // namespace oc::storage::test
