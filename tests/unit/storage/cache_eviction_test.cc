// The cache bucket's eviction index (storage-server/src/cache/eviction_index.h): chains are
// eaten from their tails, least recently hit chains first; plain objects by LRU; watermarks;
// dead chunks first; the snapshot round trip; reconciling with another server's listing; and a
// randomized check that the policy never makes a dead byte.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/eviction_index.h"

namespace oc::storage::cache {
namespace {

EvictionOptions Options(uint64_t capacity = 1000) {
  EvictionOptions o;
  o.capacity_bytes = capacity;
  return o;
}

// A chain of `n` chunks of `size` bytes named <name>0, <name>1, ...
std::vector<std::string> Names(const std::string& name, int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) {
    keys.push_back(name + std::to_string(i));
  }
  return keys;
}

void Put(EvictionIndex& index, const std::vector<std::string>& keys, uint64_t size = 10,
         std::string_view predecessor = {}) {
  std::vector<ChunkRef> chain;
  for (const std::string& k : keys) {
    chain.push_back({k, size});
  }
  index.OnPut(chain, predecessor);
}

uint64_t Hit(EvictionIndex& index, const std::vector<std::string>& keys, size_t m) {
  std::vector<std::string_view> prefix(keys.begin(), keys.begin() + m);
  return index.OnHit(prefix);
}

std::vector<std::string> Order(EvictionIndex& index, uint64_t bytes = UINT64_MAX) {
  std::vector<std::string> keys;
  for (const Victim& v : index.PickVictims(bytes)) {
    keys.push_back(v.key);
  }
  return keys;
}

using Keys = std::vector<std::string>;

TEST(CacheEviction, ChainGoesTailFirst) {
  EvictionIndex index(Options());
  Put(index, Names("a", 4));
  EXPECT_EQ(Order(index), (Keys{"a3", "a2", "a1", "a0"}));
  EXPECT_EQ(index.Stats().used_bytes, 0u);
}

TEST(CacheEviction, LeastRecentlyHitChainsLoseTheirUnhitTailsFirst) {
  EvictionIndex index(Options());
  const Keys a = Names("a", 4);
  const Keys b = Names("b", 4);
  Put(index, a);
  Put(index, b);
  EXPECT_EQ(Hit(index, a, 2), 2u);  // a0, a1 now the most recent; a2, a3 are not
  // Per-object LRU would evict a2 a3 then b0 (breaking chain b at its head); this keeps b whole
  // until its tail goes, and a's hit prefix last.
  EXPECT_EQ(Order(index), (Keys{"a3", "a2", "b3", "b2", "b1", "b0", "a1", "a0"}));
}

TEST(CacheEviction, PartialPickStopsAtTheBytesAsked) {
  EvictionIndex index(Options());
  Put(index, Names("a", 4), 10);
  EXPECT_EQ(Order(index, 15), (Keys{"a3", "a2"}));
  EXPECT_EQ(index.Stats().used_bytes, 20u);
  EXPECT_EQ(index.Stats().dead_bytes, 0u);
}

TEST(CacheEviction, SharedPrefixStaysWhileAnyBranchRemains) {
  EvictionIndex index(Options());
  const Keys d = {"s0", "s1", "d0", "d1"};
  const Keys e = {"s0", "s1", "e0"};
  Put(index, d);
  Put(index, e);
  Hit(index, d, 4);
  // e0 is the least recent leaf; s1 and s0 wait for d's branch.
  EXPECT_EQ(Order(index), (Keys{"e0", "d1", "d0", "s1", "s0"}));
}

TEST(CacheEviction, TiesGoDeeperFirst) {
  EvictionIndex index(Options());
  const std::vector<ListedObject> listing = {{"y0", 10}, {"x0", 10}, {"x1", 10}, {"x2", 10}};
  const std::vector<SnapshotRow> rows = {
      {"y0", "", 10, 5}, {"x0", "", 10, 5}, {"x1", "x0", 10, 5}, {"x2", "x1", 10, 5}};
  index.Rebuild(listing, rows);
  const Keys order = Order(index);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], "x2");  // depth 2 before depth 0 at the same tick
  EXPECT_EQ(order[1], "x1");
}

TEST(CacheEviction, PlainObjectsByLruMergedWithChainLeaves) {
  EvictionIndex index(Options());
  index.OnPlainPut("p1", 10);
  Put(index, Names("c", 2));
  index.OnPlainPut("p2", 10);
  index.OnPlainPut("p3", 10);
  index.OnPlainGet("p1");
  index.OnPlainGet("unknown");  // ignored
  EXPECT_EQ(Order(index), (Keys{"c1", "c0", "p2", "p3", "p1"}));
}

// Once hit victims have an age (10 ticks here), a tail nobody hit since its PUT orders as if
// older by unhit_discount x that age: u0 (put at 15) goes before h0 (hit at 14) at 0.5, not at 0.
TEST(CacheEviction, NeverHitTailsGoBeforeHitChainsByTheDiscount) {
  for (double discount : {0.5, 0.0}) {
    SCOPED_TRACE(discount);
    EvictionOptions o = Options();
    o.unhit_discount = discount;
    EvictionIndex index(o);
    Put(index, {"v0"});     // tick 1
    Hit(index, {"v0"}, 1);  // 2
    for (int i = 0; i < 10; ++i) {
      index.OnPlainGet("nothing");  // ticks 3..12
    }
    EXPECT_EQ(Order(index, 1), (Keys{"v0"}));  // a hit victim 10 ticks old
    Put(index, {"h0"});                        // 13
    Hit(index, {"h0"}, 1);                     // 14
    Put(index, {"u0"});                        // 15: never hit
    index.OnPlainPut("p", 10);                 // 16: a plain object nobody read: never hit either
    index.OnPlainGet("nothing");               // 17
    EXPECT_EQ(Order(index), discount > 0 ? (Keys{"u0", "p", "h0"}) : (Keys{"h0", "u0", "p"}));
  }
}

TEST(CacheEviction, WatermarksStartAtHighAndFreeDownToLow) {
  EvictionIndex index(Options(1000));  // high 900, low 800
  index.OnPlainPut("a", 850);
  EXPECT_FALSE(index.NeedsEviction());
  EXPECT_EQ(index.BytesToFree(), 0u);
  EXPECT_TRUE(index.NeedsEviction(60));    // a 60-byte PUT would pass 900
  EXPECT_EQ(index.BytesToFree(60), 110u);  // 850 + 60 - 800
  index.OnPlainPut("b", 51);
  EXPECT_TRUE(index.NeedsEviction());
  EXPECT_EQ(index.BytesToFree(), 101u);
  index.OnPlainPut("b", 50);  // an overwrite replaces the size
  EXPECT_EQ(index.Stats().used_bytes, 900u);
  EXPECT_FALSE(index.NeedsEviction());
  EXPECT_TRUE(index.NeedsEviction(UINT64_MAX));  // saturates, never wraps
  EXPECT_EQ(index.BytesToFree(UINT64_MAX), UINT64_MAX - 800);
}

TEST(CacheEviction, OptionsAreValidated) {
  EvictionOptions o;
  EXPECT_FALSE(o.Validate().ok());  // no capacity
  o.capacity_bytes = 1;
  EXPECT_TRUE(o.Validate().ok());
  o.low_watermark = 0.95;  // above high
  EXPECT_FALSE(o.Validate().ok());
  o.low_watermark = 0.0;
  EXPECT_FALSE(o.Validate().ok());
  o.low_watermark = 0.5;
  o.high_watermark = 1.5;
  EXPECT_FALSE(o.Validate().ok());
  o.high_watermark = 0.9;
  o.unhit_discount = -1;
  EXPECT_FALSE(o.Validate().ok());
}

TEST(CacheEviction, ClientDeleteMakesSuccessorsDeadAndTheyGoFirst) {
  EvictionIndex index(Options());
  const Keys a = Names("a", 4);
  Put(index, a);
  index.OnPlainPut("old", 10);  // older than nothing, but live
  Put(index, Names("z", 1));
  Hit(index, a, 4);  // a is the most recent chain
  index.OnRemove("a1");
  EXPECT_EQ(index.Stats().dead_bytes, 20u);  // a2, a3
  EXPECT_EQ(index.Stats().ghosts, 1u);
  EXPECT_EQ(Order(index, 20), (Keys{"a3", "a2"}));  // dead before the least recent live object
  EXPECT_EQ(index.Stats().dead_bytes, 0u);
  EXPECT_EQ(index.Stats().ghosts, 0u);  // the ghost went with its last successor
  EXPECT_EQ(Order(index), (Keys{"old", "z0", "a0"}));
}

TEST(CacheEviction, ARestoredPredecessorRevivesItsSuccessors) {
  EvictionIndex index(Options());
  const Keys a = Names("a", 4);
  Put(index, a);
  index.OnRemove("a1");
  index.OnRemove("a0");  // a0 has a (ghost) successor: stays a ghost too
  EXPECT_EQ(index.Stats().dead_bytes, 20u);
  Put(index, {"a0", "a1"});
  EXPECT_EQ(index.Stats().dead_bytes, 0u);
  EXPECT_EQ(index.Stats().ghosts, 0u);
  EXPECT_EQ(Order(index), (Keys{"a3", "a2", "a1", "a0"}));
}

TEST(CacheEviction, APutNamingItsPredecessorLinksTheChain) {
  EvictionIndex index(Options());
  Put(index, {"a0", "a1"});
  Put(index, {"b0"});
  Hit(index, {"a0", "a1"}, 2);
  Put(index, {"a2", "a3"}, 10, "a1");  // the client hit a0..a1 and stores only a2..a3
  EXPECT_EQ(Order(index), (Keys{"b0", "a3", "a2", "a1", "a0"}));
  Put(index, {"c1"}, 10, "c0");  // c0 is gone: c1 is born dead
  EXPECT_EQ(index.Stats().dead_bytes, 10u);
}

TEST(CacheEviction, AHitLinksChunksRebuiltAsRoots) {
  EvictionIndex index(Options());
  index.Rebuild({{{"a0", 10}, {"a1", 10}, {"a2", 10}, {"b0", 10}}}, {});
  EXPECT_EQ(index.Stats().linked, 0u);
  EXPECT_EQ(Hit(index, {"a0", "a1", "a2"}, 3), 3u);
  EXPECT_EQ(index.Stats().linked, 2u);
  index.OnPlainGet("b0");  // b0 is now more recent than the whole chain
  EXPECT_EQ(Order(index), (Keys{"a2", "a1", "a0", "b0"}));
}

TEST(CacheEviction, ConflictingPredecessorsKeepTheFirstAndNeverCycle) {
  EvictionIndex index(Options());
  Put(index, {"a", "b"});
  Put(index, {"b", "a"});  // b keeps no predecessor change; a adopting b would close a cycle
  Put(index, {"x", "b"});  // b already has a: first writer wins
  EXPECT_EQ(index.Stats().linked, 1u);
  const Keys order = Order(index);
  EXPECT_EQ(order.size(), 3u);
  EXPECT_LT(std::find(order.begin(), order.end(), "b"), std::find(order.begin(), order.end(), "a"));
}

TEST(CacheEviction, ReinstatedVictimsComeBackAsTheyWere) {
  EvictionIndex index(Options());
  Put(index, Names("a", 3));
  std::vector<Victim> victims = index.PickVictims(10);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(victims[0].predecessor, "a1");
  index.Reinstate(victims[0]);
  EXPECT_EQ(index.Stats().used_bytes, 30u);
  EXPECT_EQ(index.Stats().evicted_objects, 0u);
  EXPECT_EQ(Order(index), (Keys{"a2", "a1", "a0"}));
}

TEST(CacheEviction, SnapshotRoundTripRebuildsTheSameOrder) {
  EvictionIndex index(Options());
  const Keys a = Names("a", 5);
  Put(index, a);
  Put(index, {"s0", "s1", "d0"});
  Put(index, {"s0", "s1", "e0", "e1"});
  index.OnPlainPut("p", 7);
  Hit(index, a, 3);
  index.OnRemove("d0");
  const std::vector<SnapshotRow> rows = index.Snapshot();
  for (size_t i = 0; i < rows.size(); ++i) {  // predecessors first
    for (size_t j = i + 1; j < rows.size(); ++j) {
      EXPECT_NE(rows[i].predecessor, rows[j].key) << rows[i].key;
    }
  }
  Result<std::vector<SnapshotRow>> decoded = DecodeSnapshot(EncodeSnapshot(rows));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  ASSERT_EQ(decoded->size(), rows.size());
  std::vector<ListedObject> listing;
  for (const SnapshotRow& row : rows) {
    listing.push_back({row.key, row.size});
  }
  std::reverse(listing.begin(), listing.end());  // a listing's order means nothing
  EvictionIndex rebuilt(Options());
  rebuilt.Rebuild(listing, *decoded);
  EXPECT_EQ(rebuilt.Stats().used_bytes, index.Stats().used_bytes);
  EXPECT_EQ(rebuilt.Stats().linked, index.Stats().linked);
  EXPECT_EQ(Order(rebuilt), Order(index));
}

TEST(CacheEviction, RebuildTrustsTheListingOverAStaleSnapshot) {
  EvictionIndex index(Options());
  const std::vector<SnapshotRow> rows = {
      {"a0", "", 10, 3}, {"a1", "a0", 10, 3}, {"a2", "a1", 10, 3}, {"gone", "", 10, 9}};
  // a1 was deleted after the snapshot; a2's size changed; "gone" is not listed.
  index.Rebuild({{{"a0", 10}, {"a2", 25}, {"new", 5}}}, rows);
  const EvictionStats s = index.Stats();
  EXPECT_EQ(s.used_bytes, 40u);
  EXPECT_EQ(s.objects, 3u);
  EXPECT_EQ(s.dead_bytes, 25u);  // a2 below the missing a1
  EXPECT_EQ(Order(index), (Keys{"a2", "new", "a0"}));
}

TEST(CacheEviction, ReconcileTakesPresenceFromAListingAndKeepsWhatItKnows) {
  // What another server did to the bucket, seen through a listing (a shared RADOS pool).
  EvictionIndex index(Options());
  const Keys a = Names("a", 3);
  Put(index, a);
  Put(index, {"gone"});  // another server evicted it
  EXPECT_EQ(Hit(index, a, 3), 3u);
  const uint64_t since = index.Tick();
  Put(index, {"mine"});  // written here while the listing ran: not in it, but kept
  index.Reconcile({{{"a0", 10}, {"a1", 10}, {"a2", 20}, {"new", 10}}}, since);
  const EvictionStats s = index.Stats();
  EXPECT_EQ(s.objects, 5u);      // a0 a1 a2 new mine
  EXPECT_EQ(s.used_bytes, 60u);  // a2's size corrected
  EXPECT_EQ(s.linked, 2u);       // a's links stay
  // "new" (another server just wrote it) is the most recent: it goes last, not first as a
  // rebuilt root would; a still goes from its tail.
  EXPECT_EQ(Order(index), (Keys{"a2", "a1", "a0", "mine", "new"}));
}

TEST(CacheEviction, ReconcileMakesSuccessorsOfAVanishedChunkDeadAndRevivesAReturnedOne) {
  EvictionIndex index(Options());
  const Keys a = Names("a", 3);
  Put(index, a);
  index.Reconcile({{{"a0", 10}, {"a2", 10}}}, index.Tick());  // a1 deleted elsewhere
  EXPECT_EQ(index.Stats().dead_bytes, 10u);                   // a2 is dead
  EXPECT_EQ(index.Stats().ghosts, 1u);
  index.Reconcile({{{"a0", 10}, {"a1", 10}, {"a2", 10}}}, index.Tick());  // rewritten elsewhere
  EXPECT_EQ(index.Stats().dead_bytes, 0u);
  EXPECT_EQ(Order(index), (Keys{"a2", "a1", "a0"}));
}

TEST(CacheEviction, AVictimGoneElsewhereIsNotCountedAsEvicted) {
  EvictionIndex index(Options());
  Put(index, Names("a", 2));
  std::vector<Victim> v = index.PickVictims(UINT64_MAX);
  ASSERT_EQ(v.size(), 2u);
  index.GoneElsewhere(v[0]);
  EXPECT_EQ(index.Stats().evicted_objects, 1u);
  EXPECT_EQ(index.Stats().evicted_bytes, 10u);
  EXPECT_EQ(index.Stats().used_bytes, 0u);
}

TEST(CacheEviction, MalformedSnapshotsAreCorruptionWithNoRows) {
  const std::string good = EncodeSnapshot(std::vector<SnapshotRow>{{"k", "p", 1, 2}});
  ASSERT_TRUE(DecodeSnapshot(good).has_value());
  struct Row {
    std::string name;
    std::string bytes;
  };
  std::string huge_count = good.substr(0, 5) + std::string("\xff\xff\xff\xff\x0f", 5);
  std::string long_key =
      good.substr(0, 5) + std::string("\x01\x80\x10", 3) + std::string(2048, 'k');
  for (const Row& row :
       {Row{"empty", ""}, Row{"magic", "XXXX\x01\x00"},
        Row{"version", std::string("OCEV\x02\x00", 6)},
        Row{"truncated", good.substr(0, good.size() - 1)}, Row{"trailing", good + "x"},
        Row{"huge count", huge_count}, Row{"long key", long_key}}) {
    SCOPED_TRACE(row.name);
    Result<std::vector<SnapshotRow>> r = DecodeSnapshot(row.bytes);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kCorruption);
  }
}

// Random puts (whole prefixes, or the tail after a hit naming its predecessor), hits of the
// longest present prefix, plain objects, client deletes and evictions to the low watermark,
// against a model that knows every key's true predecessor. After every step: usage and dead
// bytes match the model; every victim had no present successor when it went; with no client
// deletes, dead bytes are always 0.
void RandomOps(uint32_t seed, bool with_deletes) {
  std::mt19937 rng(seed);
  EvictionIndex index(Options(2000));
  std::map<std::string, uint64_t> present;  // the model
  auto pred_of = [](const std::string& key) {
    const size_t dot = key.rfind('.');
    return dot == std::string::npos ? std::string() : key.substr(0, dot);
  };
  auto random_path = [&](int n) {
    Keys path;
    std::string key = "t" + std::to_string(rng() % 4);
    path.push_back(key);
    for (int i = 1; i < n; ++i) {
      key += "." + std::to_string(rng() % 3);
      path.push_back(key);
    }
    return path;
  };
  auto size_of = [](const std::string& key) { return 5 + std::hash<std::string>{}(key) % 60; };
  auto model_dead = [&] {
    uint64_t dead = 0;
    for (const auto& [key, size] : present) {
      for (std::string p = pred_of(key); !p.empty(); p = pred_of(p)) {
        if (!present.count(p) && !p.starts_with("plain")) {
          dead += size;
          break;
        }
      }
    }
    return dead;
  };
  for (int step = 0; step < 4000; ++step) {
    SCOPED_TRACE(step);
    const int op = static_cast<int>(rng() % 100);
    if (op < 45) {  // a request: hit the longest present prefix, store the rest
      const Keys path = random_path(1 + static_cast<int>(rng() % 7));
      size_t m = 0;
      while (m < path.size() && present.count(path[m])) {
        ++m;
      }
      if (m > 0) {
        ASSERT_EQ(Hit(index, path, m), m);
      }
      std::vector<ChunkRef> chain;
      const bool whole = rng() % 2 == 0;  // if-none-match with the whole prefix, or the tail
      for (size_t i = whole ? 0 : m; i < path.size(); ++i) {
        chain.push_back({path[i], size_of(path[i])});
        present[path[i]] = size_of(path[i]);
      }
      index.OnPut(chain, !whole && m > 0 ? std::string_view(path[m - 1]) : std::string_view());
    } else if (op < 55) {
      const std::string key = "plain" + std::to_string(rng() % 20);
      if (rng() % 2 == 0) {
        present[key] = size_of(key);
        index.OnPlainPut(key, size_of(key));
      } else {
        index.OnPlainGet(key);
      }
    } else if (op < 60 && with_deletes && !present.empty()) {
      auto it = present.begin();
      std::advance(it, rng() % present.size());
      index.OnRemove(it->first);
      present.erase(it);
    } else if (index.NeedsEviction()) {
      for (const Victim& v : index.PickVictims(index.BytesToFree())) {
        ASSERT_EQ(present.count(v.key), 1u) << v.key;
        ASSERT_EQ(present[v.key], v.size);
        present.erase(v.key);
        for (const auto& [key, size] : present) {
          ASSERT_NE(pred_of(key), v.key) << "evicted " << v.key << " before its successor";
        }
      }
      ASSERT_FALSE(index.NeedsEviction());
    }
    uint64_t used = 0;
    for (const auto& [key, size] : present) {
      used += size;
    }
    const EvictionStats s = index.Stats();
    ASSERT_EQ(s.used_bytes, used);
    ASSERT_EQ(s.objects, present.size());
    ASSERT_EQ(s.dead_bytes, model_dead());
    if (!with_deletes) {
      ASSERT_EQ(s.dead_bytes, 0u);
    }
  }
  // Everything goes in the end, successors first, and nothing is left behind.
  for (const Victim& v : index.PickVictims(UINT64_MAX)) {
    present.erase(v.key);
    for (const auto& [key, size] : present) {
      ASSERT_NE(pred_of(key), v.key);
    }
  }
  EXPECT_TRUE(present.empty());
  EXPECT_EQ(index.Stats().ghosts, 0u);
}

TEST(CacheEviction, RandomOpsNeverEvictAPredecessorFirstNorMakeDeadBytes) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    RandomOps(seed, /*with_deletes=*/false);
  }
}

TEST(CacheEviction, RandomOpsWithClientDeletesCountDeadBytesExactly) {
  for (uint32_t seed = 100; seed <= 111; ++seed) {
    SCOPED_TRACE(seed);
    RandomOps(seed, /*with_deletes=*/true);
  }
}

}  // namespace
}  // namespace oc::storage::cache
