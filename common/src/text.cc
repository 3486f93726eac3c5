#include "oc/common/text.h"

#include <algorithm>

namespace oc {

std::string_view Trim(std::string_view s, std::string_view whitespace) {
  const size_t first = s.find_first_not_of(whitespace);
  if (first == std::string_view::npos) {
    return s.substr(s.size());
  }
  const size_t last = s.find_last_not_of(whitespace);
  return s.substr(first, last - first + 1);
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = AsciiLower(c);
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return AsciiLower(x) == AsciiLower(y);
         });
}

size_t PercentDecodeAppend(std::string_view in, std::string& out) {
  out.reserve(out.size() + in.size());
  size_t i = 0;
  while (i < in.size()) {
    const size_t pct = in.find('%', i);
    if (pct == std::string_view::npos) {
      out.append(in.data() + i, in.size() - i);
      break;
    }
    out.append(in.data() + i, pct - i);
    if (pct + 2 >= in.size()) {  // needs two more characters
      return pct;
    }
    const int hi = HexDigit(in[pct + 1]);
    const int lo = HexDigit(in[pct + 2]);
    if (hi < 0 || lo < 0) {
      return pct;
    }
    out.push_back(static_cast<char>((hi << 4) | lo));
    i = pct + 3;
  }
  return kPercentDecodeOk;
}

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  if (PercentDecodeAppend(in, out) != kPercentDecodeOk) {
    return std::nullopt;
  }
  return out;
}

}  // namespace oc
