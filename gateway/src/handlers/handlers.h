#pragma once
// The S3 operation handlers, one function per operation named after it (STYLE 3.2), in files
// by concern: bucket_handlers.cc, object_handlers.cc, multipart_handlers.cc, acl_handlers.cc,
// attributes_handlers.cc, tagging_handlers.cc, objectcache_handlers.cc, admin_handlers.cc.
// Each is named in its operation's row (s3_ops.def), which also says which thread runs it
// (the Store pool for all that touch the Store). They take the routed and authenticated
// Request, whose access Dispatch / OpenUpload checked by the row, call the Store, and return a
// Response (errors included). They never touch the network: the session reads bodies and
// writes responses.
// Thread safety: handlers share only the HandlerEnv, whose members are thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "access.h"
#include "auth/checksum.h"
#include "metrics.h"
#include "oc/gateway/options.h"
#include "oc/storage/store.h"
#include "request.h"
#include "s3/s3_headers.h"

namespace oc::gateway {

class DeferredTracker;   // deferred_response.h
class LifecycleConfigs;  // lifecycle/lifecycle_configs.h
class LifecycleWorker;   // lifecycle/lifecycle_worker.h

struct HandlerEnv {
  storage::Store* store = nullptr;
  // Where descriptor transfers run (the store's descriptor executor, or the server's own in
  // front of a store without one: Store::descriptor_executor). Never null while serving.
  BoundedExecutor* descriptors = nullptr;
  // Counts the deferred responses of descriptor tasks (deferred_response.h).
  DeferredTracker* deferred = nullptr;
  const GatewayOptions* options = nullptr;
  Access* access = nullptr;
  Metrics* metrics = nullptr;
  std::string effective_config_json;  // for /stats, secrets omitted
  // The buckets' lifecycle configurations (the lifecycle handlers, x-amz-expiration) and the
  // worker executing them (its counters in /stats and /metrics); null in handler tests that
  // need neither.
  LifecycleConfigs* lifecycle = nullptr;
  const LifecycleWorker* lifecycle_worker = nullptr;
};

// PutObject, UploadPart and the descriptor PUT stream their body (BodyPolicy::kUpload,
// kDescriptorUpload): the row's open function checks the headers and opens the Store writer;
// the session appends the body; the row's finish function renders the reply after Commit.
struct UploadStart {
  std::unique_ptr<storage::ObjectWriter> writer;  // null: `error` is the response
  Response error;
  // A descriptor PUT's report (the chunks its x-oc-if-none-match found existing), filled by
  // the time the writer's Commit returns; null for the other uploads.
  std::shared_ptr<const storage::KvPutReport> kv_report;
  // The upload's x-amz-checksum-* (a header or the trailer), which the session computes over
  // the decoded body and checks before Commit (400 BadDigest, nothing stored, on a mismatch);
  // null when the request declared none (docs/decisions/s3-checksums-verified-on-upload.md).
  std::unique_ptr<auth::Checksum> checksum;
  std::string checksum_expected;  // the header's base64 value; "" when it comes as a trailer
};

// The handler column of s3_ops.def: `handle` for an operation whose body (if any) is read
// before it runs, or the `open`/`finish` pair of a streamed upload; exactly one of the two.
struct OpHandler {
  Response (*handle)(HandlerEnv& env, Request& req) = nullptr;
  UploadStart (*open)(HandlerEnv& env, Request& req, uint64_t body_bytes) = nullptr;
  Response (*finish)(HandlerEnv& env, Request& req, const UploadStart& start,
                     Result<storage::ObjectMeta> committed) = nullptr;
};
const OpHandler& HandlerOf(S3Op op);

// The access check of the operation's row (Access::Check with its access class), then its
// handler. For every operation whose row has a `handle` (dispatch.cc).
Response Dispatch(HandlerEnv& env, Request& req);
// The access check of the upload's row, then its `open`; its `finish` (dispatch.cc).
UploadStart OpenUpload(HandlerEnv& env, Request& req, uint64_t body_bytes);
Response FinishUpload(HandlerEnv& env, Request& req, const UploadStart& start,
                      Result<storage::ObjectMeta> committed);

// Bucket operations.
Response HandleListBuckets(HandlerEnv& env, Request& req);
Response HandleCreateBucket(HandlerEnv& env, Request& req);
Response HandleDeleteBucket(HandlerEnv& env, Request& req);
Response HandleHeadBucket(HandlerEnv& env, Request& req);
Response HandleGetBucketLocation(HandlerEnv& env, Request& req);
Response HandleGetBucketAcl(HandlerEnv& env, Request& req);
Response HandleGetBucketVersioning(HandlerEnv& env, Request& req);
Response HandleListObjects(HandlerEnv& env, Request& req);
Response HandleListObjectsV2(HandlerEnv& env, Request& req);
// Every object as its one version, VersionId "null" (S3 on an unversioned bucket).
Response HandleListObjectVersions(HandlerEnv& env, Request& req);
// Object operations.
Response HandleGetObject(HandlerEnv& env, Request& req);
Response HandleHeadObject(HandlerEnv& env, Request& req);
Response HandleDeleteObject(HandlerEnv& env, Request& req);
Response HandleDeleteObjects(HandlerEnv& env, Request& req);
Response HandleCopyObject(HandlerEnv& env, Request& req);
Response HandleGetObjectAcl(HandlerEnv& env, Request& req);
// ETag, Checksum, ObjectParts, StorageClass, ObjectSize (attributes_handlers.cc).
Response HandleGetObjectAttributes(HandlerEnv& env, Request& req);
// ACL writes (acl_handlers.cc): `x-amz-acl: private` is the no-op it is here (every bucket and
// object is owner-only); other canned ACLs, x-amz-grant-* headers and grant bodies are 501.
Response HandlePutBucketAcl(HandlerEnv& env, Request& req);
Response HandlePutObjectAcl(HandlerEnv& env, Request& req);
// The x-amz-acl and x-amz-grant-* headers of CreateBucket (`bucket`), PutObject, CopyObject and
// CreateMultipartUpload: nothing when absent or owner-only (private, and for objects
// bucket-owner-full-control); else the answer, 400 InvalidBucketAclWithObjectOwnership
// (CreateBucket) or AccessControlListNotSupported naming the header, as S3 with ACLs disabled.
std::optional<Response> CheckAclHeaders(const Request& req, bool bucket);
// Bucket lifecycle (lifecycle_handlers.cc). Put requires Content-MD5 or an x-amz-checksum-*
// header (400 InvalidRequest naming Content-MD5 without, BadDigest when it does not match);
// Get answers 404 NoSuchLifecycleConfiguration for a bucket without one.
Response HandlePutBucketLifecycleConfiguration(HandlerEnv& env, Request& req);
Response HandleGetBucketLifecycleConfiguration(HandlerEnv& env, Request& req);
Response HandleDeleteBucketLifecycle(HandlerEnv& env, Request& req);
// x-amz-expiration for the request's object as `meta` describes it, when an enabled rule of
// its bucket's configuration expires it (GetObject, HeadObject, PutObject).
void AddExpirationHeader(HandlerEnv& env, const Request& req, const storage::ObjectMeta& meta,
                         Response* res);
// Object tagging (tagging_handlers.cc).
Response HandleGetObjectTagging(HandlerEnv& env, Request& req);
Response HandlePutObjectTagging(HandlerEnv& env, Request& req);
Response HandleDeleteObjectTagging(HandlerEnv& env, Request& req);
// Object uploads (object_handlers.cc): PutObject and UploadPart open their writer; both
// answer with the ETag.
UploadStart OpenPutObject(HandlerEnv& env, Request& req, uint64_t body_bytes);
UploadStart OpenUploadPart(HandlerEnv& env, Request& req, uint64_t body_bytes);
Response FinishPutObject(HandlerEnv& env, Request& req, const UploadStart& start,
                         Result<storage::ObjectMeta> committed);
// Descriptor requests (objectcache_handlers.cc, docs/protocol.md). The PUT streams like
// PutObject.
Response HandleGetObjectCache(HandlerEnv& env, Request& req);
UploadStart OpenPutObjectCache(HandlerEnv& env, Request& req, uint64_t body_bytes);
Response FinishPutObjectCache(HandlerEnv& env, Request& req, const UploadStart& start,
                              Result<storage::ObjectMeta> committed);
// Multipart operations.
Response HandleCreateMultipartUpload(HandlerEnv& env, Request& req);
Response HandleCompleteMultipartUpload(HandlerEnv& env, Request& req);
Response HandleAbortMultipartUpload(HandlerEnv& env, Request& req);
Response HandleListParts(HandlerEnv& env, Request& req);
Response HandleListMultipartUploads(HandlerEnv& env, Request& req);
Response HandleUploadPartCopy(HandlerEnv& env, Request& req);
// Operations endpoints (admin_handlers.cc).
Response HandleHealthz(HandlerEnv& env, Request& req);
Response HandleReadyz(HandlerEnv& env, Request& req);
Response HandleStats(HandlerEnv& env, Request& req);
Response HandleMetrics(HandlerEnv& env, Request& req);
// The router's answers to a request no other row serves (admin_handlers.cc): 501
// NotImplemented, 405 MethodNotAllowed, 400 InvalidRequest.
Response HandleNotImplemented(HandlerEnv& env, Request& req);
Response HandleMethodNotAllowed(HandlerEnv& env, Request& req);
Response HandleBadRequest(HandlerEnv& env, Request& req);

// Shared helpers (handler_util.cc).
// PutOptions from Content-Type, x-amz-meta-*, Cache-Control, Content-Disposition,
// Content-Encoding (aws-chunked removed), Content-Language, Expires.
storage::PutOptions PutOptionsFromHeaders(const Request& req);
// Adds ETag, Last-Modified, Content-Type, x-amz-meta-* and stored headers of `meta`, but not
// its stored checksum (AddChecksumHeaders).
void AddObjectHeaders(const storage::ObjectMeta& meta, Response* res);
// The checksum an upload declares (PutObject, UploadPart): one x-amz-checksum-<algorithm>
// header, or the trailer req.checksum_trailer, consistent with x-amz-sdk-checksum-algorithm
// when that is sent. Sets start->checksum (and checksum_expected for a header); nothing when
// the request declares none. Returns 400 InvalidRequest naming the header for two checksums,
// a value that is not the base64 of the algorithm's digest, or an unknown or disagreeing
// x-amz-sdk-checksum-algorithm.
std::optional<Response> ParseUploadChecksum(const Request& req, UploadStart* start);
// The MD5 digest (16 raw bytes) of `data`: Content-MD5 of XML bodies.
std::string Md5Of(std::string_view data);
// True when the request asks for stored checksums (x-amz-checksum-mode: ENABLED).
bool ChecksumModeEnabled(const Request& req);
// The stored x-amz-checksum-<algorithm> of `meta` and its x-amz-checksum-type
// (ChecksumTypeOfValue); nothing when it has none.
void AddChecksumHeaders(const storage::ObjectMeta& meta, Response* res);
// The stored checksum among `headers` (an x-amz-checksum-<algorithm> entry), if any.
const std::pair<std::string, std::string>* StoredChecksum(
    const std::vector<std::pair<std::string, std::string>>& headers);
// S3's name of a checksum type: "COMPOSITE" or "FULL_OBJECT".
std::string_view ChecksumTypeName(storage::ChecksumType type);
// The type of a stored checksum value: COMPOSITE for a "-N" checksum of checksums, else
// FULL_OBJECT (a single PUT's, or a FULL_OBJECT multipart upload's).
std::string_view ChecksumTypeOfValue(std::string_view value);
// The partNumber query parameter: 1..kMaxPartNumber, else kInvalidArgument naming it.
Result<uint32_t> ParsePartNumber(const Request& req);
// The If-Match, If-None-Match, If-Modified-Since and If-Unmodified-Since headers, each name
// preceded by `prefix` ("" or "x-amz-copy-source-").
Conditions ConditionsOf(const Request& req, std::string_view prefix);
// The write conditions of PutObject, CopyObject and CompleteMultipartUpload: If-None-Match
// (S3 takes only "*" on a write) and If-Match, decided by the store at the commit
// (storage::WriteConditions). Returns 501 NotImplemented naming If-None-Match for any other
// value, else fills *out.
std::optional<Response> WriteConditionsOf(const Request& req, storage::WriteConditions* out);
// The source of CopyObject and UploadPartCopy: x-amz-copy-source, "[/]bucket/key" percent-encoded
// (with "?versionId=null" accepted), and the caller's read access to it. `error` is set to the
// response instead: InvalidArgument for a malformed header or key, NotImplemented for another
// version, the access check's answer.
struct CopySource {
  storage::ObjectKey key;
  std::optional<Response> error;
};
CopySource ParseCopySource(HandlerEnv& env, const Request& req);
// The x-amz-tagging header (PutObject, CopyObject, CreateMultipartUpload): its tags, nullopt
// when absent; or in `error` the answer to a malformed header or a set over S3's limits
// (400 InvalidTag naming the header).
struct TaggingHeader {
  std::optional<storage::Tags> tags;
  std::optional<Response> error;
};
TaggingHeader TaggingHeaderOf(const Request& req);
// Owner element value: the bucket owner's access key.
void AppendOwner(class XmlWriter& xml, std::string_view id);
// AccessControlPolicy granting FULL_CONTROL to `owner` only (GetBucketAcl, GetObjectAcl).
Response OwnerOnlyAcl(std::string_view owner);

}  // namespace oc::gateway
