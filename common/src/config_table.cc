// The text forms ConfigTable (config_table.h) prints: values as a conf file spells them, and
// comment paragraphs wrapped into '#' lines.
#include "oc/common/config_table.h"

#include <array>

#include <fmt/core.h>

namespace oc::config_text {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string Strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : ", ") + Quote(v[i]);
  }
  return out + "]";
}

std::string Size(uint64_t bytes) {
  static constexpr std::array<std::pair<uint64_t, std::string_view>, 4> kUnits{{
      {1ull << 40, "TiB"},
      {1ull << 30, "GiB"},
      {1ull << 20, "MiB"},
      {1ull << 10, "KiB"},
  }};
  if (bytes == 0) {
    return "0";
  }
  for (const auto& [unit, name] : kUnits) {
    if (bytes % unit == 0) {
      return fmt::format("{}{}", bytes / unit, name);
    }
  }
  return std::to_string(bytes);
}

std::string Duration(std::chrono::microseconds us) {
  static constexpr std::array<std::pair<int64_t, std::string_view>, 5> kUnits{{
      {3'600'000'000, "h"},
      {60'000'000, "m"},
      {1'000'000, "s"},
      {1'000, "ms"},
      {1, "us"},
  }};
  const int64_t n = us.count();
  if (n == 0) {
    return "0s";
  }
  for (const auto& [unit, name] : kUnits) {
    if (n % unit == 0) {
      return fmt::format("{}{}", n / unit, name);
    }
  }
  return fmt::format("{}us", n);
}

std::string Double(double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eEn") == std::string::npos) {
    s += ".0";  // TOML reads 1 as an integer; the key is a float
  }
  return s;
}

std::string Comment(std::string_view text, size_t width) {
  std::string out;
  std::string line = "#";
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == '\n') {  // a forced break
      out += line + "\n";
      line = "#";
      ++pos;
      continue;
    }
    size_t end = text.find_first_of(" \n", pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view word = text.substr(pos, end - pos);
    if (line.size() > 1 && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = "#";
    }
    if (!word.empty()) {
      line += " ";
      line += word;
    }
    pos = end < text.size() && text[end] == ' ' ? end + 1 : end;
  }
  if (line.size() > 1) {
    out += line + "\n";
  }
  return out;
}

}  // namespace oc::config_text
