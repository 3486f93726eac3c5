#pragma once
// The S3 operation table (s3_ops.def) as data: the S3Op enum, and for each operation its route
// (methods x level x sub-resource x copy source), how its body is read, who may call it, and
// which thread runs it. Everything that depends on the operation reads its row: RouteRequest
// (router.cc), Access::Check (access.cc), the session (session.cc: authentication and body;
// session_body.cc: the upload's length and checksum rules; session_response.cc: the thread),
// Dispatch and OpenUpload (handlers/dispatch.cc, which also expands the handler column), and
// the metric label and access-log name (OpName). Pure data; thread-safe.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>
#include <utility>

namespace oc::gateway {

enum class S3Op : uint8_t {
#define OC_S3_OP(name, methods, level, query, copy, body, access, runs_on, handler) k##name,
#define OC_S3_UNSERVED(query)
#include "s3_ops.def"
#undef OC_S3_UNSERVED
#undef OC_S3_OP
};

// HTTP methods as bits, so a row can answer several (GetObjectCache: GET and POST).
enum class Method : uint8_t {
  kNoMethod = 0,
  kGet = 1 << 0,
  kHead = 1 << 1,
  kPut = 1 << 2,
  kPost = 1 << 3,
  kDelete = 1 << 4,
};
struct Methods {
  uint8_t bits = 0;
  constexpr Methods(Method m) : bits(static_cast<uint8_t>(m)) {}  // implicit: a row names one
  constexpr explicit Methods(uint8_t b) : bits(b) {}
  constexpr bool Has(Method m) const { return (bits & static_cast<uint8_t>(m)) != 0; }
  constexpr bool Overlaps(Methods other) const { return (bits & other.bits) != 0; }
};
constexpr Methods operator|(Methods a, Methods b) { return Methods(uint8_t(a.bits | b.bits)); }
constexpr Methods operator|(Method a, Method b) { return Methods(a) | Methods(b); }
// The bit of a request's method; kNoMethod for one no row answers (PATCH, OPTIONS, ...).
constexpr Method MethodOf(std::string_view method) {
  constexpr std::pair<std::string_view, Method> kNames[] = {{"GET", Method::kGet},
                                                            {"HEAD", Method::kHead},
                                                            {"PUT", Method::kPut},
                                                            {"POST", Method::kPost},
                                                            {"DELETE", Method::kDelete}};
  for (const auto& [name, bit] : kNames) {
    if (name == method) {
      return bit;
    }
  }
  return Method::kNoMethod;
}

// What the request addresses.
enum class Level : uint8_t {
  kService,   // "/" (no bucket)
  kBucket,    // "/bucket" or a virtual host's "/"
  kObject,    // "/bucket/key"
  kEndpoint,  // an operations path ("/healthz"): GET, path style, no S3 credentials
  kUnrouted,  // no request shape routes here: the router's answer when no row serves it
};

// How the request body is read before or while the handler runs.
enum class BodyPolicy : uint8_t {
  kNoBody,      // none expected; one sent anyway is drained (bounded) or the connection closed
  kXml,         // a small document read whole under GatewayOptions::max_xml_body_bytes and
                // checked against the payload hash or the aws-chunked signatures
  kDescriptor,  // a descriptor request: a POST's body is the descriptor, read whole like kXml;
                // a GET carries it in headers and its body, if any, is treated as kNoBody
  kUpload,      // object bytes streamed through the payload checks into a Store writer (the
                // row's open/finish pair); any length, plain chunked transfer included; an
                // upload's x-amz-checksum-* trailer is stored with the object or part
  kDescriptorUpload,  // a descriptor PUT: streamed like kUpload, but its length is fixed by
                      // the descriptor, so one without Content-Length (and not aws-chunked) is
                      // 411 MissingContentLength before any byte is read (docs/protocol.md)
};

// Who may call the operation (Access::Check). Every row names one; nothing defaults.
enum class AccessClass : uint8_t {
  kUnsigned,    // answered without authentication (the operations endpoints, a bad target)
  kAnyCaller,   // authenticated (a bad signature is refused first), then answered to anyone,
                // anonymous included: the refusals, which reveal nothing
  kSignedUser,  // any authenticated user; anonymous is AccessDenied (ListBuckets, CreateBucket)
  kBucketUser,  // the bucket must exist (else NoSuchBucket, for anyone), and the user owns it,
                // is an admin, or is granted it (gateway.grants); anonymous is AccessDenied
  kPublicRead,  // as kBucketUser, and anonymous callers too on gateway.public_read_buckets.
                // Only plain reads: ListObjectVersions, GetObjectAttributes and the ACL reads
                // stay kBucketUser, as S3 grants them apart from the reads
                // (s3:ListBucketVersions, s3:GetObjectAttributes)
};

// Which thread runs the handler.
enum class RunOn : uint8_t {
  kPool,         // the Store pool: the I/O thread never blocks on the Store (STYLE 3.6 step 5)
  kCachedReads,  // first on the I/O thread, the Store answering from memory only; on a miss,
                 // again on the pool (GatewayOptions::inline_cached_reads,
                 // Store::SupportsCachedReads)
  kIoThread,     // on the I/O thread: the handler never touches the Store
};

struct OpRow {
  S3Op op;
  std::string_view name;  // the AWS operation name: metric label, access log op=
  Methods methods;
  Level level;
  std::string_view query;  // the sub-resource the request carries; a kEndpoint row's path
  bool copy;               // only with x-amz-copy-source
  BodyPolicy body;
  AccessClass access;
  RunOn runs_on;
};

namespace op_rows {
// The short column values of s3_ops.def, visible only in this namespace.
using enum Method;
using enum Level;
using enum BodyPolicy;
using enum AccessClass;
using enum RunOn;

inline constexpr OpRow kRows[] = {
#define OC_S3_OP(name, methods, level, query, copy, body, access, runs_on, handler) \
  {S3Op::k##name, #name, methods, level, query, copy, body, access, runs_on},
#define OC_S3_UNSERVED(query)
#include "s3_ops.def"
#undef OC_S3_UNSERVED
#undef OC_S3_OP
};

inline constexpr std::string_view kUnserved[] = {
#define OC_S3_OP(name, methods, level, query, copy, body, access, runs_on, handler)
#define OC_S3_UNSERVED(query) query,
#include "s3_ops.def"
#undef OC_S3_UNSERVED
#undef OC_S3_OP
};

constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    if (static_cast<size_t>(kRows[i].op) != i) {
      return false;
    }
  }
  return true;
}
static_assert(RowsInEnumOrder(), "kRows[i] is the row of S3Op i");

}  // namespace op_rows

// Every operation's row, indexed by S3Op.
inline constexpr std::span<const OpRow> kOpRows = op_rows::kRows;
inline constexpr size_t kS3OpCount = std::size(op_rows::kRows);
// Query keys that name a sub-resource S3 defines but no row serves.
inline constexpr std::span<const std::string_view> kUnservedSubresources = op_rows::kUnserved;

constexpr const OpRow& RowOf(S3Op op) { return kOpRows[static_cast<size_t>(op)]; }
constexpr std::string_view OpName(S3Op op) { return RowOf(op).name; }

// True when `key` names a sub-resource (a different operation in S3): a query key of some
// bucket or object row, or an unserved one.
constexpr bool IsSubresource(std::string_view key) {
  for (const OpRow& row : kOpRows) {
    if ((row.level == Level::kBucket || row.level == Level::kObject) && !row.query.empty() &&
        row.query == key) {
      return true;
    }
  }
  for (std::string_view unserved : kUnservedSubresources) {
    if (unserved == key) {
      return true;
    }
  }
  return false;
}

}  // namespace oc::gateway
