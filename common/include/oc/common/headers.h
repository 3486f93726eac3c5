#pragma once
// The one way a block of HTTP headers is seen across modules. HeaderField views a header as
// received (the gateway's Request, the SigV4 RequestView, the descriptor decoder all take
// HeaderFields over the same parsed bytes, so no layer copies them into a type of its own);
// HeaderList owns headers being built to send (the descriptor encoder, the client, the
// gateway's responses). HeaderViews() turns the second into the first.
// Thread safety: plain values; the views are valid while the bytes they point at are.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oc {

// A header as received: names in any case, values as sent (untrimmed). Both are views.
struct HeaderField {
  constexpr HeaderField() = default;
  constexpr HeaderField(std::string_view n, std::string_view v) : name(n), value(v) {}

  std::string_view name;
  std::string_view value;
};

// Headers to send: owned names (lowercase by convention) and values, in order.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Views of every header in `headers`, in order. The views point into `headers`.
std::vector<HeaderField> HeaderViews(const HeaderList& headers);

// The value of the first header named `name` (ASCII case-insensitive), or nullopt.
std::optional<std::string_view> FindHeader(std::span<const HeaderField> headers,
                                           std::string_view name);

}  // namespace oc
