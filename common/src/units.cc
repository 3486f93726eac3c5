#include "oc/common/units.h"

#include <array>
#include <charconv>
#include <cmath>

#include <fmt/core.h>

namespace oc {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

// Splits "<number><spaces><unit>" and parses the number (digits with an optional
// fraction). Returns false on any other shape.
bool SplitNumber(std::string_view text, double* number, std::string_view* unit) {
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return false;
  }
  const std::string_view digits = text.substr(0, i);
  if (digits.front() == '.' || digits.back() == '.') {
    return false;
  }
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *number);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) {
    return false;
  }
  while (i < text.size() && text[i] == ' ') {
    ++i;
  }
  *unit = text.substr(i);
  return true;
}

}  // namespace

Result<uint64_t> ParseUint64(std::string_view text, std::string_view field) {
  uint64_t value = 0;
  if (text.empty()) {
    return Status::InvalidArgument(std::string(field), "empty number");
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return Status::InvalidArgument(std::string(field),
                                   fmt::format("not an unsigned 64-bit integer: '{}'", text));
  }
  return value;
}

Result<uint64_t> ParseSize(std::string_view text, std::string_view field) {
  static constexpr std::array<Unit, 10> kUnits{{
      {"", 1.0},
      {"B", 1.0},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024},
  }};
  // Plain integers keep full 64-bit precision.
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    return ParseUint64(text, field);
  }
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) {
    return Status::InvalidArgument(std::string(field), fmt::format("not a size: '{}'", text));
  }
  for (const Unit& u : kUnits) {
    if (u.name == unit) {
      const double bytes = std::round(number * u.factor);
      if (!(bytes < 18446744073709551616.0)) {
        return Status::InvalidArgument(std::string(field), fmt::format("too large: '{}'", text));
      }
      return static_cast<uint64_t>(bytes);
    }
  }
  return Status::InvalidArgument(std::string(field),
                                 fmt::format("unknown size unit '{}' in '{}'", unit, text));
}

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text, std::string_view field) {
  static constexpr std::array<Unit, 6> kUnits{{
      {"ns", 1.0},
      {"us", 1e3},
      {"ms", 1e6},
      {"s", 1e9},
      {"m", 60e9},
      {"h", 3600e9},
  }};
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit) || unit.empty()) {
    return Status::InvalidArgument(std::string(field),
                                   fmt::format("not a duration (e.g. '30s'): '{}'", text));
  }
  for (const Unit& u : kUnits) {
    if (u.name == unit) {
      const double ns = std::round(number * u.factor);
      if (!(ns < 9.2e18)) {
        return Status::InvalidArgument(std::string(field), fmt::format("too large: '{}'", text));
      }
      return std::chrono::nanoseconds(static_cast<int64_t>(ns));
    }
  }
  return Status::InvalidArgument(std::string(field),
                                 fmt::format("unknown duration unit '{}' in '{}'", unit, text));
}

std::string FormatSize(uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t i = 0;
  while (value >= 1024.0 && i + 1 < kNames.size()) {
    value /= 1024.0;
    ++i;
  }
  if (i == 0) {
    return fmt::format("{} B", bytes);
  }
  return fmt::format("{:.2f} {}", value, kNames[i]);
}

}  // namespace oc
