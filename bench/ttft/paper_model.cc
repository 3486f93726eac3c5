#include "paper_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace oc::bench::ttft {
namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) {
    fields.push_back(f);
  }
  return fields;
}

// The whole field must be a number.
bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) {
    return false;
  }
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

}  // namespace

Result<std::vector<A8Row>> LoadTableA8(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::IOError("cannot open " + path);
  }
  std::vector<A8Row> rows;
  int context_col = -1, hit_col = -1, total_col = -1;
  bool have_header = false;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    const std::vector<std::string> fields = SplitCsv(line);
    const std::string where = path + ":" + std::to_string(lineno);
    if (!have_header) {
      for (int i = 0; i < static_cast<int>(fields.size()); ++i) {
        if (fields[i] == "context_tokens") context_col = i;
        if (fields[i] == "hit_rate") hit_col = i;
        if (fields[i] == "total_compute_ms") total_col = i;
      }
      if (context_col < 0 || hit_col < 0 || total_col < 0) {
        return Status::InvalidArgument(
            "table-a8", where + ": wants columns context_tokens, hit_rate, total_compute_ms");
      }
      have_header = true;
      continue;
    }
    const int need = std::max({context_col, hit_col, total_col});
    double context = 0, hit = 0, total = 0;
    if (static_cast<int>(fields.size()) <= need || !ParseDouble(fields[context_col], &context) ||
        !ParseDouble(fields[hit_col], &hit) || !ParseDouble(fields[total_col], &total) ||
        context < 1 || hit < 0 || hit > 1 || total <= 0) {
      return Status::InvalidArgument("table-a8", where + ": malformed row: " + line);
    }
    rows.push_back({static_cast<uint64_t>(context), hit, total});
  }
  if (rows.empty()) {
    return Status::InvalidArgument("table-a8", path + ": no rows");
  }
  return rows;
}

double PaperComputeMsPerLayer(const std::vector<A8Row>& table, uint64_t context, double hit) {
  const A8Row* lo = nullptr;
  const A8Row* hi = nullptr;
  for (const A8Row& r : table) {
    if (r.context != context) continue;
    if (std::fabs(r.hit - hit) < 1e-9) return r.total_ms / kPaperLayers;
    (r.hit < 0.7 ? lo : hi) = &r;
  }
  if (lo == nullptr || hi == nullptr) return 0;
  const double u_lo = (1 - lo->hit) * static_cast<double>(context);
  const double u_hi = (1 - hi->hit) * static_cast<double>(context);
  const double slope = (lo->total_ms - hi->total_ms) / (u_lo - u_hi);
  const double u = (1 - hit) * static_cast<double>(context);
  return (hi->total_ms + slope * (u - u_hi)) / kPaperLayers;
}

double Eq3(bool layerwise, int layers, double x, double c) {
  if (!layerwise) return layers * (x + c);
  return x + (layers - 1) * std::max(x, c) + c;
}

}  // namespace oc::bench::ttft
