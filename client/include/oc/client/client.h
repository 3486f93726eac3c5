#pragma once
// liboc_client: what a serving node needs to use ObjectCache as its KV-cache tier
// (docs/design.md: roles, "The descriptor", "Delivery"; docs/protocol.md is the wire contract).
//
//   auto client = Client::Open(options);            // endpoint, SigV4 credentials
//   client->PutChunks("kv", desc, chunk_major_bytes);  // N chunks in one descriptor PUT
//   auto probe = client->ProbeChunks("kv", desc);   // leading present chunks, one round trip
//   auto buffer = (*client->data_plane())->Allocate(n * l * s);
//   auto h = client->GetLayers("kv", desc, **buffer);  // descriptor GET into the buffer (UCX)
//   h->WaitLayer(0);  ...  h->Wait();                // per-layer notifications, then the end
//
// GetLayersHttp is the fallback without a data plane: the same layer-major bytes stream in
// the response body and land in caller memory at the same offsets, with the same per-layer
// notifications. Every request is signed with SigV4 (oc_sigv4's SignRequest, the code the
// gateway verifies with: docs/decisions/sigv4-shared-oc-sigv4.md) over a pool of keep-alive
// HTTP/1.1 connections.
//
// Errors: a gateway error answer becomes a Status whose code follows the HTTP status and
// S3 error code (400 -> kInvalidArgument, 403 -> kPermissionDenied or kUnauthenticated,
// 404 -> kNotFound with Subject kBucket or kKey, 409 -> kAlreadyExists or
// kFailedPrecondition, 416 -> kOutOfRange, 501 -> kUnimplemented, 503 -> kUnavailable,
// other 5xx -> kInternal), whose field is the S3 ArgumentName (the x-oc-* header at fault),
// whose message is the answer's <Message>, and whose ErrorInfo (oc/client/errors.h) holds the
// S3 code, the HTTP status and the request id. A wait that passes its timeout is kUnavailable
// with ErrorInfo::timed_out. Transport failures are kUnavailable (connection refused or
// reset) or kIOError (socket timeouts), without ErrorInfo. A 503 SlowDown answer (nothing was
// done; docs/protocol.md, "Admission") is retried with jittered exponential backoff within
// ClientOptions::slowdown_retry_budget before it is returned.
//
// Thread safety: every Client method may be called concurrently. A LayerHandle is used by
// one thread at a time; callbacks run on the data plane's progress thread (UCX) or the
// request's exchange task (HTTP, on the client's request executor) and must not block.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/client/errors.h"
#include "oc/client/options.h"
#include "oc/client/target_buffer.h"
#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/descriptor.h"

namespace oc::client {

// The gateway's answer to a descriptor GET or POST.
struct LayersResult {
  descriptor::ResponseSummary summary;  // matched chunks, mode, request id, timings
  double assigned_rate_gbps = 0;        // x-oc-assigned-rate-gbps; 0 when not paced
  uint64_t payload_bytes = 0;           // M·L·S
};

struct ProbeResult {
  uint64_t matched = 0;                        // chunks 0..matched-1 are present
  std::vector<std::optional<uint64_t>> sizes;  // per chunk, nullopt when absent
};

// One object of a ListObjectsV2 page.
struct ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as the gateway sent it, quotes removed
};

// One ListObjectsV2 page.
struct ListPage {
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;  // with a delimiter
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};

struct PutChunksResult {
  uint64_t chunks = 0;  // N: chunks stored by this request or, below, left as they were
  uint64_t bytes = 0;   // N·L·S sent
  std::string request_id;
  // One entry per chunk, in descriptor order: true where the descriptor's if_none_match
  // (create-if-absent) found the chunk already stored and left it as it was; always false
  // without it.
  std::vector<bool> existed;
};

// One descriptor GET in flight. Destroying it waits for the request to end.
class LayerHandle {
 public:
  struct State;
  explicit LayerHandle(std::unique_ptr<State> state);
  LayerHandle(LayerHandle&&) noexcept;
  LayerHandle& operator=(LayerHandle&&) noexcept;
  ~LayerHandle();

  // Blocks until layer `layer` is in the buffer: OK; the request's error if it failed first;
  // kOutOfRange if the request ended without that layer (a partial hit that matched no
  // chunk delivers no layer) or layer >= L; on timeout (default: the client's) kUnavailable
  // with ErrorInfo::timed_out (the request still runs: wait again or drop the handle).
  Status WaitLayer(uint32_t layer);
  Status WaitLayer(uint32_t layer, std::chrono::milliseconds timeout);
  // Blocks until the request ended (every layer delivered and the HTTP answer read).
  Result<LayersResult> Wait();
  // The same with its own bound: kUnavailable with ErrorInfo::timed_out when `timeout`
  // passes first (a failed request's Status never has timed_out).
  Result<LayersResult> Wait(std::chrono::milliseconds timeout);
  // Layers delivered so far.
  uint32_t layers_ready() const;
  // True once the request ended, successfully or not: Wait() returns at once.
  bool done() const;

 private:
  std::unique_ptr<State> state_;
};

// The Status a gateway error answer maps to (see the file comment), with its ErrorInfo.
// `body` is the S3 XML error body (may be empty, as for HEAD); `request_id` the answer's
// x-amz-request-id ("" to take the body's <RequestId>).
Status StatusFromS3Response(unsigned http_status, std::string_view body,
                            std::string_view request_id = {});

class Client {
 public:
  // kInvalidArgument if options.Validate() fails. Connects lazily.
  static Result<std::unique_ptr<Client>> Open(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const;
  // SlowDown answers this client retried so far (ClientOptions::slowdown_retry_budget), all
  // calls together.
  uint64_t slowdown_retries() const;

  // The UCX data plane, opened on first use; owned by the client. UCX errors as
  // DataPlane::Open.
  Result<DataPlane*> data_plane();

  // --- Plain S3 (chunk objects written one by one, tools and benchmarks) ---
  Status CreateBucket(std::string_view bucket);
  Status PutObject(std::string_view bucket, std::string_view key, ByteSpan data);
  // Reads the object (or bytes [offset, offset + length) with a Range GET when length > 0)
  // into `out`; returns the bytes read. kOutOfRange if `out` is too small.
  Result<uint64_t> GetObject(std::string_view bucket, std::string_view key, MutableByteSpan out,
                             uint64_t offset = 0, uint64_t length = 0);
  // The whole object, or bytes [offset, offset + length) when length > 0, as a string.
  // kResourceExhausted (field "body") if the answer exceeds `limit` bytes; errors as GetObject.
  Result<std::string> GetObjectBytes(std::string_view bucket, std::string_view key,
                                     uint64_t offset = 0, uint64_t length = 0,
                                     uint64_t limit = 1ull << 30);
  // Deletes the object; OK also when it did not exist (S3's DeleteObject answers 204 then).
  Status DeleteObject(std::string_view bucket, std::string_view key);
  // One ListObjectsV2 page of the keys starting with `prefix`, from `continuation_token`
  // ("" for the first page); at most `max_keys` (1..1000) keys; `delimiter` ("" for none)
  // groups keys into common prefixes. kCorruption if the answer is not a ListBucketResult.
  Result<ListPage> ListObjects(std::string_view bucket, std::string_view prefix = {},
                               std::string_view continuation_token = {}, uint32_t max_keys = 1000,
                               std::string_view delimiter = {});

  // --- Descriptor requests (docs/protocol.md) ---
  // Stores the N chunks of `d` in one PUT /{bucket}?objectcache; `chunks` is the N chunk
  // objects back to back, chunk-major, each in d.layout. d.target and d.delivery are not
  // sent. With d.if_none_match set (x-oc-if-none-match: *, docs/protocol.md "Descriptor PUT:
  // create if absent") a chunk already stored is left as it is ("first writer wins" when
  // serving nodes offload the same chunks) and PutChunksResult::existed says which; without
  // it every chunk replaces what was stored. A key list too long for the header limit is
  // sent as several PUTs, each all or nothing on its own.
  // kInvalidArgument/kDescriptor if chunks.size() != N·L·S.
  Result<PutChunksResult> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                    ByteSpan chunks);
  // The same, the server pulling bytes [offset, offset + N·L·S) of `source` over UCX (connected
  // as for GetLayers; retried once on a fresh connection if the server lost the old one).
  Result<PutChunksResult> PutChunks(std::string_view bucket, descriptor::Descriptor d,
                                    const TargetBuffer& source, uint64_t offset = 0);
  // The batch existence query: how many leading chunks of `d` are present, and each size.
  // Here and in the GETs below d.if_none_match, a PUT's field, is not sent.
  Result<ProbeResult> ProbeChunks(std::string_view bucket, const descriptor::Descriptor& d);
  // Descriptor GET into `buffer` over UCX: d.target is set to bytes [offset, offset + N·L·S)
  // of it, under the data plane's connection to the server that serves `bucket` (discovered
  // with GET /{bucket}?objectcache&data-plane and connected on first use, then reused; an
  // answer that the server lost the connection makes the next call connect again). `on_layer` runs
  // once per layer as it lands. POST is used when the headers would exceed the descriptor header
  // limit. REQUIRES: `buffer` outlives the handle.
  Result<LayerHandle> GetLayers(std::string_view bucket, descriptor::Descriptor d,
                                const TargetBuffer& buffer, LayerCallback on_layer = {},
                                uint64_t offset = 0);
  // Descriptor GET without a target: the body streams into `out` (at least N·L·S bytes) at
  // the same offsets a data-plane target would get (slices of unmatched chunks untouched),
  // layer by layer with the same notifications. REQUIRES: `out` outlives the handle.
  Result<LayerHandle> GetLayersHttp(std::string_view bucket, descriptor::Descriptor d,
                                    MutableByteSpan out, LayerCallback on_layer = {});
  // Descriptor GET of whole chunk objects into separate caller buffers, on the calling thread
  // (an adapter's own worker; LMCache's connector gives one buffer per key): the body is read
  // chunk-major (d.delivery is ignored) and chunk j's L·S bytes, its slices in kv_l2td order,
  // land in outs[j], with no staging copy. Returns M, the matched leading chunks; outs[j] for
  // j >= M is untouched. kInvalidArgument (field "outs") unless there is one span per chunk,
  // each exactly L·S bytes; answer errors as GetLayersHttp; a body cut short is kUnavailable
  // (spans before the cut may hold their bytes, but no M is returned: callers count nothing).
  Result<uint64_t> GetChunksInto(std::string_view bucket, descriptor::Descriptor d,
                                 std::span<const MutableByteSpan> outs);

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::client
