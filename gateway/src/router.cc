#include "router.h"

#include <algorithm>

namespace oc::gateway {
namespace {

bool HasParam(const std::vector<std::pair<std::string, std::string>>& query,
              std::string_view name) {
  return std::any_of(query.begin(), query.end(), [&](const auto& p) { return p.first == name; });
}

std::string_view StripPort(std::string_view host) {
  if (!host.empty() && host.front() == '[') {  // [::1]:9000
    const size_t close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  const size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

}  // namespace

Route RouteRequest(const RouteInput& in, std::string_view virtual_host_domain) {
  static const std::vector<std::pair<std::string, std::string>> kNoQuery;
  const auto& query = in.query != nullptr ? *in.query : kNoQuery;
  Route route;
  std::string_view path = in.path;
  if (path.empty() || path.front() != '/') {
    return route;  // kBadRequest
  }
  path.remove_prefix(1);

  // Virtual-host style: "<bucket>.<domain>".
  bool virtual_host = false;
  if (!virtual_host_domain.empty()) {
    const std::string_view host = StripPort(in.host);
    if (host.size() > virtual_host_domain.size() + 1 && host.ends_with(virtual_host_domain) &&
        host[host.size() - virtual_host_domain.size() - 1] == '.') {
      route.bucket = host.substr(0, host.size() - virtual_host_domain.size() - 1);
      route.key = path;
      virtual_host = true;
    }
  }
  if (!virtual_host) {
    if (!in.has_credentials) {
      for (const OpRow& row : kOpRows) {
        if (row.level == Level::kEndpoint && row.methods.Has(MethodOf(in.method)) &&
            path == row.query) {
          route.op = row.op;
          return route;
        }
      }
    }
    const size_t slash = path.find('/');
    route.bucket = path.substr(0, slash);
    if (slash != std::string_view::npos) {
      route.key = path.substr(slash + 1);
    }
  }

  Level level = Level::kObject;
  if (route.bucket.empty()) {
    level = Level::kService;
  } else if (route.key.empty()) {
    level = Level::kBucket;
  }

  const Method method = MethodOf(in.method);
  bool method_known = false;
  const OpRow* best = nullptr;
  int best_rank = -1;
  for (const OpRow& row : kOpRows) {
    if (row.level != level || !row.methods.Has(method)) {
      continue;
    }
    method_known = true;
    if (!row.query.empty() && !HasParam(query, row.query)) {
      continue;
    }
    if (row.copy && !in.has_copy_source) {
      continue;
    }
    // Most specific first: a sub-resource, then a copy source. Two rows of equal rank can
    // both match only when the request names two sub-resources, which is NotImplemented below
    // whichever is taken (op_table_test checks that no two rows share a shape).
    const int rank = (row.query.empty() ? 0 : 2) + (row.copy ? 1 : 0);
    if (rank > best_rank) {
      best = &row;
      best_rank = rank;
    }
  }
  if (best == nullptr) {
    route.op = method_known ? S3Op::kNotImplemented : S3Op::kMethodNotAllowed;
    return route;
  }
  // A row does not serve a request that names some other sub-resource.
  for (const auto& [name, value] : query) {
    if (name != best->query && IsSubresource(name)) {
      route.op = S3Op::kNotImplemented;
      return route;
    }
  }
  route.op = best->op;
  return route;
}

}  // namespace oc::gateway
