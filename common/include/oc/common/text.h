#pragma once
// ASCII text helpers every module parses with: trimming, case folding, hex digits and
// percent-decoding. One implementation each, so that an HTTP header, an XML element, a
// descriptor field and a config value are trimmed and compared the same way. Bytes >= 0x80
// are never case-folded or treated as whitespace (no locale is consulted).
// Thread safety: pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oc {

// HTTP optional whitespace (RFC 9110 "OWS"): space and horizontal tab. Trim's default.
inline constexpr std::string_view kHttpWhitespace = " \t";
// XML white space (XML 1.0 "S"): space, tab, CR and LF.
inline constexpr std::string_view kXmlWhitespace = " \t\r\n";

// `s` without the leading and trailing characters that are in `whitespace`; a view into `s`.
std::string_view Trim(std::string_view s, std::string_view whitespace = kHttpWhitespace);

// 'A'..'Z' to 'a'..'z'; every other byte unchanged.
constexpr char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
// `s` with AsciiLower applied to every byte.
std::string AsciiLower(std::string_view s);

// True when `a` and `b` have the same length and are equal after AsciiLower.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

namespace text_internal {
// The value of every byte as a hex digit, -1 for non-hex: a table, because the branches of a
// range test mispredict on random hex (they cost ~85% of decoding 3584 chunk hashes).
inline constexpr std::array<int8_t, 256> kHexDigitValues = [] {
  std::array<int8_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    t[i] = -1;
  }
  for (int i = 0; i < 10; ++i) {
    t['0' + i] = static_cast<int8_t>(i);
  }
  for (int i = 0; i < 6; ++i) {
    t['a' + i] = static_cast<int8_t>(10 + i);
    t['A' + i] = static_cast<int8_t>(10 + i);
  }
  return t;
}();
}  // namespace text_internal

// The value 0..15 of the hex digit `c` (either case), or -1 when `c` is not a hex digit.
constexpr int HexDigit(char c) { return text_internal::kHexDigitValues[static_cast<uint8_t>(c)]; }

// Returned by PercentDecodeAppend when every escape was well-formed.
inline constexpr size_t kPercentDecodeOk = std::string_view::npos;

// Appends `in` to `out` with every %XX escape (either hex case) replaced by its byte; every
// other byte, '+' included (RFC 3986: SigV4 clients encode a space as %20), is copied as is.
// Returns kPercentDecodeOk, or the offset in `in` of the first '%' that is not followed by two
// hex digits (`out` then holds the decoding of what came before it).
size_t PercentDecodeAppend(std::string_view in, std::string& out);
// PercentDecodeAppend into a new string; nullopt when an escape is malformed.
std::optional<std::string> PercentDecode(std::string_view in);

}  // namespace oc
