#pragma once
// Edge cases of the S3 listing rules (object/list_walker.h), as a table that
// list_walker_test.cc runs against an in-memory cursor and store_list_test.cc through every
// real backend: the same keys, the same answers.

#include <cstdint>
#include <string>
#include <vector>

#include "oc/storage/types.h"

namespace oc::storage::test {

// The keys every case lists, in byte order.
inline const std::vector<std::string> kEdgeKeys = {"a",   "a/",  "a/1", "abc", "abc/d",
                                                   "b/1", "b/2", "b/3", "c",   "d//e"};

struct ListCase {
  std::string what;
  ListOptions options;
  std::vector<std::string> want;  // keys and "P:" common prefixes, in listing order
  bool truncated = false;
  std::string next;  // next_start_after
};

inline ListOptions Opts(std::string prefix, std::string delimiter, std::string start_after,
                        uint32_t max_keys = 1000) {
  ListOptions o;
  o.prefix = std::move(prefix);
  o.delimiter = std::move(delimiter);
  o.start_after = std::move(start_after);
  o.max_keys = max_keys;
  return o;
}

inline const std::vector<ListCase>& EdgeCases() {
  static const std::vector<ListCase> cases = {
      {"delimiter at a key's end groups the key",
       Opts("", "/", ""),
       {"a", "P:a/", "abc", "P:abc/", "P:b/", "c", "P:d/"},
       false,
       "P:d/"},
      {"prefix equal to a key lists the key", Opts("a/", "/", ""), {"a/", "a/1"}, false, "a/1"},
      {"prefix equal to a key, its group after it",
       Opts("abc", "/", ""),
       {"abc", "P:abc/"},
       false,
       "P:abc/"},
      {"start_after beyond all keys", Opts("", "/", "zzz"), {}, false, ""},
      {"start_after the last key", Opts("", "", "d//e"), {}, false, ""},
      {"max_keys 0", Opts("", "/", "", 0), {}, false, ""},
      {"page ends on a key before a group",
       Opts("", "/", "", 3),
       {"a", "P:a/", "abc"},
       true,
       "abc"},
      {"page ends on a group", Opts("", "/", "abc", 2), {"P:abc/", "P:b/"}, true, "P:b/"},
      {"exactly max_keys left: not truncated",
       Opts("", "/", "b/", 2),
       {"c", "P:d/"},
       false,
       "P:d/"},
      {"start_after inside a group: the group is done",
       Opts("", "/", "b/2"),
       {"c", "P:d/"},
       false,
       "P:d/"},
      {"start_after before the prefix", Opts("b/", "", "a"), {"b/1", "b/2", "b/3"}, false, "b/3"},
      {"no delimiter, truncated", Opts("b/", "", "", 2), {"b/1", "b/2"}, true, "b/2"},
      {"two-byte delimiter",
       Opts("", "//", ""),
       {"a", "a/", "a/1", "abc", "abc/d", "b/1", "b/2", "b/3", "c", "P:d//"},
       false,
       "P:d//"},
      {"a marker equal to a group skips it",
       Opts("a", "/", "a/"),
       {"abc", "P:abc/"},
       false,
       "P:abc/"},
  };
  return cases;
}

// A listing page as the table spells it: entries merged in order, "P:" before prefixes.
inline std::vector<std::string> Spelled(const ListResult& r) {
  std::vector<std::string> out;
  size_t o = 0;
  size_t p = 0;
  while (o < r.objects.size() || p < r.common_prefixes.size()) {
    if (p == r.common_prefixes.size() ||
        (o < r.objects.size() && r.objects[o].name < r.common_prefixes[p])) {
      out.push_back(r.objects[o++].name);
    } else {
      out.push_back("P:" + r.common_prefixes[p++]);
    }
  }
  return out;
}

// The case's next_start_after as the table spells it.
inline std::string SpelledNext(const ListResult& r) {
  if (!r.common_prefixes.empty() && r.next_start_after == r.common_prefixes.back()) {
    return "P:" + r.next_start_after;
  }
  return r.next_start_after;
}

}  // namespace oc::storage::test
