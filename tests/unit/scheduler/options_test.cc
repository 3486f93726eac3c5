#include "oc/sched/options.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "oc/common/config.h"

namespace oc::sched {
namespace {

const std::string kModel = "Llama-3.1-8B";

double MustEstimate(uint64_t context, uint64_t cached, const std::string& model = kModel) {
  Result<double> r = EstimateComputeUs(DefaultComputeTable(), model, context, cached);
  EXPECT_TRUE(r.has_value()) << r.status();
  return r.has_value() ? *r : -1;
}

TEST(ComputeTable, DefaultIsValidAndHoldsTableA8) {
  EXPECT_TRUE(ValidateComputeTable(DefaultComputeTable()).ok());
  EXPECT_EQ(DefaultComputeTable().size(), 8u);
}

// Table A8 figures exactly at the listed points (per-layer ms x 1000).
TEST(ComputeTable, ListedPointsAreExact) {
  struct Row {
    uint64_t context, cached;
    double us;
  };
  for (const Row& row :
       {Row{4096, 2048, 5790}, Row{4096, 3584, 1980}, Row{16384, 8192, 29870},
        Row{16384, 14336, 8800}, Row{32768, 16384, 80910}, Row{32768, 28672, 23850},
        Row{65536, 32768, 271020}, Row{65536, 57344, 75750}}) {
    SCOPED_TRACE(row.context);
    EXPECT_DOUBLE_EQ(MustEstimate(row.context, row.cached), row.us);
  }
}

TEST(ComputeTable, InterpolatesAndClamps) {
  struct Row {
    std::string name;
    uint64_t context, cached;
    double us;
  };
  const std::vector<Row> rows = {
      // Between hit rates at one context: 4096 at 68.75% hits is halfway 0.5..0.875.
      {"hit midpoint", 4096, 2816, (5790 + 1980) / 2.0},
      // Between contexts at one hit rate: 8192 is a third of the way 4096..16384.
      {"context third", 8192, 4096, 5790 + (29870 - 5790) / 3.0},
      // Both: 24576 (halfway 16K..32K) at 68.75% hits.
      {"bilinear", 24576, 16896, ((29870 + 8800) / 2.0 + (80910 + 23850) / 2.0) / 2.0},
      // Outside the table: clamped to the nearest listed value.
      {"short context", 1024, 512, 5790},
      {"long context", 131072, 65536, 271020},
      {"low hit rate", 16384, 0, 29870},
      {"full hit", 16384, 16384, 8800},
      // Context unknown: taken as the cached tokens (a full hit).
      {"unknown context", 0, 32768, 23850},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_NEAR(MustEstimate(row.context, row.cached), row.us, 1e-6);
  }
}

TEST(ComputeTable, Errors) {
  EXPECT_EQ(EstimateComputeUs(DefaultComputeTable(), "gpt-2", 4096, 2048).error().code(),
            Code::kNotFound);
  EXPECT_EQ(EstimateComputeUs(DefaultComputeTable(), kModel, 4096, 4097).error().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(EstimateComputeUs(DefaultComputeTable(), kModel, 0, 0).error().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(EstimateComputeUs({}, kModel, 4096, 2048).error().code(), Code::kNotFound);
}

TEST(ComputeTable, ParsesRows) {
  Result<ComputeTableRow> r = ParseComputeTableRow("Llama-3.1-70B, 8192 ,0.5,  12000.5");
  ASSERT_TRUE(r.has_value()) << r.status();
  EXPECT_EQ(r->model, "Llama-3.1-70B");
  EXPECT_EQ(r->context_tokens, 8192u);
  EXPECT_EQ(r->hit_rate, 0.5);
  EXPECT_EQ(r->per_layer_compute_us, 12000.5);
  for (const char* bad : {"", "m,1,0.5", "m,1,0.5,1,2", "m,-1,0.5,10", "m,1,x,10", "m,1,0.5,",
                          "m,1.5,0.5,10", "m,1,0.5,nan"}) {
    SCOPED_TRACE(bad);
    Result<ComputeTableRow> b = ParseComputeTableRow(bad);
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().field(), "scheduler.compute_table");
  }
}

TEST(ComputeTable, ValidateRejectsBadRows) {
  const std::vector<std::vector<ComputeTableRow>> tables = {
      {{"", 4096, 0.5, 10}},   {{"m", 0, 0.5, 10}},   {{"m", 4096, 1.5, 10}},
      {{"m", 4096, -0.1, 10}}, {{"m", 4096, 0.5, 0}}, {{"m", 4096, 0.5, 10}, {"m", 4096, 0.5, 20}},
  };
  for (size_t i = 0; i < tables.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_FALSE(ValidateComputeTable(tables[i]).ok());
  }
}

TEST(SchedulerOptions, DefaultsValidate) { EXPECT_TRUE(SchedulerOptions{}.Validate().ok()); }

TEST(SchedulerOptions, ValidateNamesTheKey) {
  struct Row {
    std::string key;
    void (*mutate)(SchedulerOptions&);
  };
  const std::vector<Row> rows = {
      {"scheduler.cap_gbps", [](SchedulerOptions& o) { o.cap_gbps = 0; }},
      {"scheduler.cap_gbps", [](SchedulerOptions& o) { o.cap_gbps = 1.0 / 0.0; }},
      {"scheduler.margin_gbps", [](SchedulerOptions& o) { o.margin_gbps = -1; }},
      {"scheduler.epoch", [](SchedulerOptions& o) { o.epoch = std::chrono::microseconds(0); }},
      {"scheduler.drr_quantum", [](SchedulerOptions& o) { o.drr_quantum_bytes = 0; }},
      {"scheduler.compute_table", [](SchedulerOptions& o) { o.compute_table[0].hit_rate = 2; }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.key);
    SchedulerOptions o;
    row.mutate(o);
    Status s = o.Validate();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.field(), row.key);
  }
}

TEST(SchedulerOptions, ApplyConfigReadsEveryKey) {
  Result<Config> config = Config::Parse(R"(
[scheduler]
cap_gbps = 40
margin_gbps = 2.5
epoch = "250us"
policy = "bw-prop"
work_conserving = true
drr_quantum = "256KiB"
pace_part = "64KiB"
default_model = "Mistral-7B"
compute_table = ["Mistral-7B, 8192, 0.5, 4000", "Mistral-7B, 8192, 0.9, 1000"]
)");
  ASSERT_TRUE(config.has_value()) << config.status();
  SchedulerOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_EQ(o.cap_gbps, 40);
  EXPECT_EQ(o.margin_gbps, 2.5);
  EXPECT_EQ(o.epoch, std::chrono::microseconds(250));
  EXPECT_EQ(o.policy, Policy::kBwProp);
  EXPECT_TRUE(o.work_conserving);
  EXPECT_EQ(o.drr_quantum_bytes, 256u << 10);
  EXPECT_EQ(o.pace_part_bytes, 64u << 10);
  EXPECT_EQ(o.default_model, "Mistral-7B");
  ASSERT_EQ(o.compute_table.size(), 2u);
  EXPECT_EQ(o.compute_table[1].per_layer_compute_us, 1000);
  EXPECT_TRUE(config->CheckNoUnknownKeys().ok());
}

TEST(SchedulerOptions, ApplyConfigReadsFixedAtAdmission) {
  Result<Config> config = Config::Parse("[scheduler]\nfixed_at_admission = true\n");
  ASSERT_TRUE(config.has_value()) << config.status();
  SchedulerOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_TRUE(o.fixed_at_admission);
  EXPECT_FALSE(o.work_conserving);
  Result<Config> both =
      Config::Parse("[scheduler]\nfixed_at_admission = true\nwork_conserving = true\n");
  ASSERT_TRUE(both.has_value());
  Status s = ApplyConfig(*both, &o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "scheduler.fixed_at_admission");
}

TEST(SchedulerOptions, ApplyConfigReadsPaceFirstLayer) {
  Result<Config> config = Config::Parse("[scheduler]\npace_first_layer = true\n");
  ASSERT_TRUE(config.has_value()) << config.status();
  SchedulerOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_TRUE(o.pace_first_layer);
  Result<Config> bad = Config::Parse("[scheduler]\npace_first_layer = \"yes\"\n");
  ASSERT_TRUE(bad.has_value());
  Status s = ApplyConfig(*bad, &o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "scheduler.pace_first_layer");
}

TEST(SchedulerOptions, ApplyConfigErrorsLeaveOptionsUntouched) {
  const std::vector<std::string> bad = {
      "[scheduler]\npolicy = \"fastest\"\n",
      "[scheduler]\ncap_gbps = \"fast\"\n",
      "[scheduler]\ncap_gbps = 0\n",
      "[scheduler]\nepoch = \"10\"\n",
      "[scheduler]\ncompute_table = [\"m, 1, 0.5\"]\n",
      "[scheduler]\nwork_conserving = 1\n",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE(text);
    Result<Config> config = Config::Parse(text);
    ASSERT_TRUE(config.has_value()) << config.status();
    SchedulerOptions o;
    o.cap_gbps = 42;
    Status s = ApplyConfig(*config, &o);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(o.cap_gbps, 42);
  }
}

// Θ is the KV engine's ([kv] layerwise_threshold): a [scheduler] Θ would be a second one that
// nothing reads, so it is an unknown key (a startup error in the servers).
TEST(SchedulerOptions, ThetaIsNotASchedulerKey) {
  Result<Config> config = Config::Parse("[scheduler]\nlayerwise_threshold = \"64MiB\"\n");
  ASSERT_TRUE(config.has_value());
  SchedulerOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_EQ(o.layerwise_threshold_bytes, SchedulerOptions{}.layerwise_threshold_bytes);
  Status unknown = config->CheckNoUnknownKeys();
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.ToString().find("scheduler.layerwise_threshold"), std::string::npos) << unknown;
}

TEST(SchedulerOptions, UnknownKeyIsCaught) {
  Result<Config> config = Config::Parse("[scheduler]\ncap_gpbs = 10\n");
  ASSERT_TRUE(config.has_value());
  SchedulerOptions o;
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_FALSE(config->CheckNoUnknownKeys().ok());
}

// conf/scheduler.toml lists every key with its default: applying it changes nothing and leaves no
// key unread.
TEST(SchedulerOptions, ShippedConfMatchesTheDefaults) {
  Result<Config> config = Config::LoadFile(OC_SCHEDULER_CONF);
  ASSERT_TRUE(config.has_value()) << config.status();
  SchedulerOptions o;
  o.cap_gbps = 1;  // every field must come back from the file
  o.margin_gbps = 1;
  o.epoch = std::chrono::microseconds(1);
  o.policy = Policy::kEqual;
  o.work_conserving = true;
  o.fixed_at_admission = true;
  o.pace_first_layer = true;
  o.drr_quantum_bytes = 1;
  o.pace_part_bytes = 1;
  o.default_model = "x";
  o.compute_table = {{"x", 1, 0.5, 1}};
  ASSERT_TRUE(ApplyConfig(*config, &o).ok());
  EXPECT_TRUE(config->CheckNoUnknownKeys().ok());
  const SchedulerOptions d;
  EXPECT_EQ(o.cap_gbps, d.cap_gbps);
  EXPECT_EQ(o.margin_gbps, d.margin_gbps);
  EXPECT_EQ(o.epoch, d.epoch);
  EXPECT_EQ(o.policy, d.policy);
  EXPECT_EQ(o.work_conserving, d.work_conserving);
  EXPECT_EQ(o.fixed_at_admission, d.fixed_at_admission);
  EXPECT_EQ(o.pace_first_layer, d.pace_first_layer);
  EXPECT_EQ(o.drr_quantum_bytes, d.drr_quantum_bytes);
  EXPECT_EQ(o.pace_part_bytes, d.pace_part_bytes);
  EXPECT_EQ(o.default_model, d.default_model);
  ASSERT_EQ(o.compute_table.size(), d.compute_table.size());
  for (size_t i = 0; i < d.compute_table.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(o.compute_table[i].model, d.compute_table[i].model);
    EXPECT_EQ(o.compute_table[i].context_tokens, d.compute_table[i].context_tokens);
    EXPECT_EQ(o.compute_table[i].hit_rate, d.compute_table[i].hit_rate);
    EXPECT_EQ(o.compute_table[i].per_layer_compute_us, d.compute_table[i].per_layer_compute_us);
  }
}

// bench/data/objectcache-table-a8.csv is the one copy of the paper's Table A8 that the TTFT
// emulator reads; the built-in default repeats its per-layer column (ms there, µs here), so the
// two cannot drift apart. The total column (what the emulator uses, / 32 layers) must round to
// the per-layer column, as the paper prints it to 0.01 ms.
TEST(ComputeTable, DefaultMatchesTableA8Csv) {
  std::ifstream in(OC_TABLE_A8_CSV);
  ASSERT_TRUE(in) << OC_TABLE_A8_CSV;
  std::vector<std::string> header;
  std::vector<std::map<std::string, double>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) {
      fields.push_back(f);
    }
    if (header.empty()) {
      header = fields;
      continue;
    }
    ASSERT_EQ(fields.size(), header.size()) << line;
    std::map<std::string, double>& row = rows.emplace_back();
    for (size_t i = 0; i < fields.size(); ++i) {
      row[header[i]] = std::stod(fields[i]);
    }
  }
  const std::vector<ComputeTableRow> table = DefaultComputeTable();
  ASSERT_EQ(rows.size(), table.size());
  for (std::map<std::string, double>& row : rows) {
    SCOPED_TRACE(testing::Message() << row["context_tokens"] << " @ " << row["hit_rate"]);
    const auto it = std::find_if(table.begin(), table.end(), [&](const ComputeTableRow& t) {
      return static_cast<double>(t.context_tokens) == row["context_tokens"] &&
             t.hit_rate == row["hit_rate"];
    });
    ASSERT_NE(it, table.end());
    EXPECT_EQ(it->model, kModel);
    EXPECT_NEAR(it->per_layer_compute_us, row["per_layer_compute_ms"] * 1000, 1e-6);
    EXPECT_NEAR(row["total_compute_ms"] / 32, row["per_layer_compute_ms"], 0.005 + 1e-9);
  }
}

}  // namespace
}  // namespace oc::sched
