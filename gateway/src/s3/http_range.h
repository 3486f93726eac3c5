#pragma once
// The HTTP Range header of a GET (RFC 7233), as S3 applies it: one byte range
// ("bytes=a-b", "bytes=a-", "bytes=-n"). A header with another unit, bad syntax, a > b, or
// several ranges is ignored and the whole object is served with 200 (RFC 7233 3.1 lets a
// server ignore Range; S3 ignores multi-range requests the same way). A well-formed range
// that starts at or past the end (or "bytes=-0", or any range of an empty object) is
// unsatisfiable: 416 InvalidRange with Content-Range "bytes */size".
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string_view>

namespace oc::gateway {

struct HttpRange {
  uint64_t first = 0;              // "a" of bytes=a-b; unused for a suffix
  std::optional<uint64_t> last;    // "b"; nullopt for "a-"
  std::optional<uint64_t> suffix;  // "n" of bytes=-n
};

// nullopt when the header is to be ignored (see above).
std::optional<HttpRange> ParseRangeHeader(std::string_view header);

struct ResolvedRange {
  bool satisfiable = false;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Resolves `range` against an object of `size` bytes, clamping the end.
ResolvedRange ResolveRange(const HttpRange& range, uint64_t size);

}  // namespace oc::gateway
