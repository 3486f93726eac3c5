// ConfigTable (oc/common/config_table.h) over a small options struct: every key is read from its
// row, a bad value names the key, the bounds are checked with the key named, defaults survive
// absent keys, and the TOML the table prints reads back to the same options.
#include "oc/common/config_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace oc {
namespace {

enum class Mode { kFast, kSafe };

struct Opts {
  std::string name = "x";
  bool on = true;
  uint32_t threads = 4;
  uint64_t bytes = 1ull << 20;
  std::chrono::milliseconds timeout{30'000};
  std::vector<std::string> list = {"a"};
  Mode mode = Mode::kSafe;
  double ratio = 0.5;
};

const ConfigTable<Opts>& Table() {
  static const ConfigTable<Opts> table = [] {
    ConfigTable<Opts> t("t", "[t]: a test table.");
    t.Str("name", &Opts::name, "A name.")
        .Bool("on", &Opts::on, "On or off.")
        .Int("threads", &Opts::threads, "Threads. 1..8.", 1, 8)
        .Size("bytes", &Opts::bytes, "Bytes, 1KiB..1GiB.", 1 << 10, 1 << 30)
        .Duration("timeout", &Opts::timeout, "A timeout, at least 1s.",
                  std::chrono::milliseconds(1000))
        .Strings("list", &Opts::list, "A list.")
        .Enum("mode", &Opts::mode, "fast or safe.", {{"fast", Mode::kFast}, {"safe", Mode::kSafe}})
        .Double("ratio", &Opts::ratio, "A ratio.");
    return t;
  }();
  return table;
}

Opts Apply(std::string_view text, Status* status) {
  Result<Config> c = Config::Parse(text);
  EXPECT_TRUE(c.has_value()) << c.error();
  Opts o;
  *status = Table().Apply(*c, &o);
  if (status->ok()) {
    *status = Table().Check(o);
  }
  if (status->ok()) {
    *status = c->CheckNoUnknownKeys();
  }
  return o;
}

TEST(ConfigTable, ReadsEveryRow) {
  Status s;
  const Opts o = Apply(
      "[t]\nname = \"y\"\non = false\nthreads = 2\nbytes = \"64KiB\"\ntimeout = \"2m\"\n"
      "list = [\"b\", \"c\"]\nmode = \"fast\"\nratio = 1\n",
      &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(o.name, "y");
  EXPECT_FALSE(o.on);
  EXPECT_EQ(o.threads, 2u);
  EXPECT_EQ(o.bytes, 64u << 10);
  EXPECT_EQ(o.timeout, std::chrono::minutes(2));
  EXPECT_EQ(o.list, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(o.mode, Mode::kFast);
  EXPECT_EQ(o.ratio, 1.0);
}

TEST(ConfigTable, AbsentKeysKeepTheDefaults) {
  Status s;
  const Opts o = Apply("[t]\nthreads = 3\n", &s);
  ASSERT_TRUE(s.ok()) << s;
  const Opts d;
  EXPECT_EQ(o.threads, 3u);
  EXPECT_EQ(o.name, d.name);
  EXPECT_EQ(o.bytes, d.bytes);
  EXPECT_EQ(o.timeout, d.timeout);
  EXPECT_EQ(o.list, d.list);
  EXPECT_EQ(o.mode, d.mode);
}

TEST(ConfigTable, ParseErrorsAndBoundsNameTheKey) {
  struct Case {
    std::string_view text;
    std::string_view field;
  };
  for (const Case& c : {
           Case{"[t]\nname = 3\n", "t.name"}, Case{"[t]\non = \"yes\"\n", "t.on"},
           Case{"[t]\nthreads = -1\n", "t.threads"},
           Case{"[t]\nthreads = 9\n", "t.threads"},     // above the bound
           Case{"[t]\nthreads = 0\n", "t.threads"},     // below it
           Case{"[t]\nbytes = \"lots\"\n", "t.bytes"},  // no size
           Case{"[t]\nbytes = \"2GiB\"\n", "t.bytes"},
           Case{"[t]\ntimeout = 5\n", "t.timeout"},  // a duration needs its unit
           Case{"[t]\ntimeout = \"10ms\"\n", "t.timeout"}, Case{"[t]\nlist = \"a\"\n", "t.list"},
           Case{"[t]\nmode = \"slow\"\n", "t.mode"}, Case{"[t]\nratio = \"half\"\n", "t.ratio"},
           Case{"[t]\nthraeds = 2\n", "t.thraeds"},  // unknown keys stay Config's error
       }) {
    SCOPED_TRACE(c.text);
    Status s;
    Apply(c.text, &s);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.field(), c.field) << s;
  }
}

TEST(ConfigTable, PrintedTomlReadsBackAndDescribeNamesEveryKey) {
  Opts o;
  o.name = "q\"uote";
  o.bytes = 1088ull << 10;
  o.timeout = std::chrono::milliseconds(1500);
  o.list = {};
  o.mode = Mode::kFast;
  const std::string toml = Table().Toml(o);
  EXPECT_NE(toml.find("# [t]: a test table.\n[t]\n# A name.\nname = \"q\\\"uote\"\n"),
            std::string::npos)
      << toml;
  EXPECT_NE(toml.find("bytes = \"1088KiB\"\n"), std::string::npos) << toml;
  EXPECT_NE(toml.find("timeout = \"1500ms\"\n"), std::string::npos) << toml;
  Status s;
  const Opts back = Apply(toml, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(back.name, o.name);
  EXPECT_EQ(back.bytes, o.bytes);
  EXPECT_EQ(back.timeout, o.timeout);
  EXPECT_EQ(back.list, o.list);
  EXPECT_EQ(back.mode, o.mode);
  EXPECT_EQ(back.ratio, o.ratio);
  const std::string line = Table().Describe(o);
  for (const ConfigTable<Opts>::Row& r : Table().rows()) {
    EXPECT_NE(line.find("t." + r.key + "="), std::string::npos) << r.key;
  }
}

TEST(ConfigText, SizesDurationsAndComments) {
  EXPECT_EQ(config_text::Size(0), "0");
  EXPECT_EQ(config_text::Size(1ull << 30), "1GiB");
  EXPECT_EQ(config_text::Size(1000), "1000");
  EXPECT_EQ(config_text::Duration(std::chrono::hours(2)), "2h");
  EXPECT_EQ(config_text::Duration(std::chrono::seconds(300)), "5m");
  EXPECT_EQ(config_text::Duration(std::chrono::microseconds(1500)), "1500us");
  EXPECT_EQ(config_text::Double(100), "100.0");
  const std::string c = config_text::Comment(std::string(30, 'a') + " " + std::string(30, 'b'), 40);
  EXPECT_EQ(c, "# " + std::string(30, 'a') + "\n# " + std::string(30, 'b') + "\n");
}

}  // namespace
}  // namespace oc
