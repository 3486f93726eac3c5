#pragma once
// Routing (STYLE 3.6 step 2): method x addressed level (service, bucket, object) x
// sub-resource query parameter x copy source -> the S3 operation, read from the route columns
// of the operation table (s3_ops.def, op_table.h). Of the rows a request matches, the most
// specific wins: one requiring a sub-resource over one that does not, then one requiring
// x-amz-copy-source over one that does not; so the rows' order does not matter.
//
// Addressing: virtual-host style when the Host header (port removed) ends with
// "." + virtual_host_domain, the bucket being the part before it; otherwise path style
// ("/bucket/key"). The operations endpoints (/healthz, /readyz, /stats, /metrics) answer only
// GETs carrying no S3 credentials (no Authorization header, no X-Amz-Credential), so a signed
// request for a bucket called "stats" still reaches S3.
//
// A request naming a sub-resource we do not serve (?tagging on a bucket, ?versioning on PUT,
// ?policy, ?lifecycle, ... : IsSubresource) beyond the one its row requires routes to
// kNotImplemented, never to a plain operation that would answer a wrong success. A method that
// no row at the addressed level answers routes to kMethodNotAllowed.
// Pure; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "op_table.h"

namespace oc::gateway {

struct Route {
  S3Op op = S3Op::kBadRequest;  // its row (RowOf) says how to read the body, who may call it
  std::string bucket;
  std::string key;
};

struct RouteInput {
  std::string_view method;  // "GET"
  std::string_view host;    // Host header, may carry ":port"
  std::string_view path;    // percent-decoded path
  const std::vector<std::pair<std::string, std::string>>* query = nullptr;  // decoded
  bool has_copy_source = false;  // x-amz-copy-source present
  bool has_credentials = false;  // Authorization header or X-Amz-Credential present
};

// `virtual_host_domain` empty disables virtual-host addressing.
Route RouteRequest(const RouteInput& in, std::string_view virtual_host_domain);

}  // namespace oc::gateway
