#pragma once
// UTF-8 as RFC 3629 defines it: the only encoding S3 accepts for object keys, and the one our
// XML responses declare. A well-formed sequence is the shortest encoding of a code point in
// U+0000..U+10FFFF other than the surrogates U+D800..U+DFFF; overlong forms (C0 80 for NUL,
// E0 80 80...), encoded surrogates (ED A0 80..ED BF BF, CESU-8), code points past U+10FFFF,
// stray continuation bytes and truncated sequences are not.
// Thread safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oc {

struct Utf8Char {
  uint32_t code_point = 0;
  uint32_t length = 0;  // bytes, 1..4
};

// Decodes the character at the start of `text`. nullopt if `text` is empty or does not start
// with a well-formed sequence.
std::optional<Utf8Char> DecodeUtf8(std::string_view text);

// True when all of `text` is well-formed UTF-8 (the empty string is).
bool IsValidUtf8(std::string_view text);

// Appends the UTF-8 encoding of `code_point`. REQUIRES: a scalar value (<= U+10FFFF, not a
// surrogate).
void AppendUtf8(uint32_t code_point, std::string* out);

}  // namespace oc
