#pragma once
// The storage RPC's calls as types: for each op whose request is one frame of fields, the
// fields in wire order, the Store method the server runs with them and whether a client may
// retry the call on a fresh connection. Shared by the server (server_unary_calls.cc decodes
// the request and runs the method; server_object_streams.cc opens writers and readers), the
// client (remote_call.h encodes the same fields and decodes the reply) and ValidateBody
// (validate_body.cc), so the three cannot disagree on a call's shape.
//
// A unary call's reply is what its Store method returns: an empty reply body for Status, the
// encoded T for Result<T>, an error frame for any non-OK status (wire.h, kError). Adding one
// is an Op in wire.h and a row in UnaryCalls below; docs/protocol.md "Storage RPC" lists them.
//
// Thread safety: types and pure functions only.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/status.h"
#include "oc/storage/store.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

// Whether a client may run a call again after its request frame went out and the connection
// broke before the reply: once more on a fresh connection when it failed on a pooled one
// (docs/decisions/remote-store-placement-retry.md) and, in shared placement, once more on another
// server (docs/decisions/remote-store-shared-placement.md). Each call's row below says it, from
// what the call does; RepeatableAfterSend is the only reader. A call whose frame never went out
// (kNotSentField, remote_call.h) runs elsewhere whatever its row says: nothing reached a server.
enum class Retry {
  // A mutation whose second run could answer otherwise than the first, or undo or add to what
  // the first did. CreateBucket, DeleteBucket and AbortMultipartUpload would answer
  // BucketAlreadyExists, NoSuchBucket or NoSuchUpload for their own success.
  // CreateMultipartUpload would make a second upload and orphan the first. Copy decides its
  // conditions against a destination the first run may have written (If-None-Match then fails
  // a copy that was done). CompleteMultipartUpload finds its upload gone and recognises its own
  // object only while that is still the key's current one. They answer kUnavailable (503).
  kNo,
  // A mutation whose second run leaves what the first left and answers what its caller takes
  // for the same outcome: replacing an object's tags or a bucket's lifecycle configuration;
  // Delete (an absent key is success to S3 callers); DeleteIf (a second run finds the version
  // gone or replaced and removes nothing); a descriptor PUT pulled from the client (KvPutRetry).
  kIdempotent,
  // A call that changes nothing on the server: a read, opening a stream.
  kIfPooled,
};

// True if a call under rule `r` may be sent again after its request frame went out.
constexpr bool RepeatableAfterSend(Retry r) { return r != Retry::kNo; }

namespace internal {

// What a client passes for a request field of type T: a view that encodes to the same
// bytes (std::string_view for std::string, std::span<const E> for std::vector<E>).
template <typename T>
struct WireParam {
  using type = const T&;
};
template <>
struct WireParam<std::string> {
  using type = std::string_view;
};
template <typename E>
struct WireParam<std::vector<E>> {
  using type = std::span<const E>;
};

template <typename M>
struct MethodReturn;
template <typename R, typename... A>
struct MethodReturn<R (Store::*)(A...)> {
  using type = R;
};

}  // namespace internal

// One call: `kOp`, the Store method `kMethod` the server runs, the client's retry rule and
// the request fields in wire order.
template <Op kOp, auto kMethod, Retry kRetry, typename... Fields>
struct Call {
  static constexpr Op op = kOp;
  static constexpr Retry retry = kRetry;
  // The decoded request (the server's side).
  using Request = std::tuple<Fields...>;
  // The same fields as the client holds them; encodes to the same bytes as Request.
  using Params = std::tuple<typename internal::WireParam<Fields>::type...>;
  // The Store method's return type: Status or Result<T>.
  using Return = typename internal::MethodReturn<decltype(kMethod)>::type;

  static Return Run(Store& store, const Request& request) {
    return std::apply([&store](const Fields&... f) { return (store.*kMethod)(f...); }, request);
  }
};

// --- The unary calls: request frame in, one reply frame out ---
using CreateBucketCall =
    Call<Op::kCreateBucket, &Store::CreateBucket, Retry::kNo, std::string, std::string>;
using DeleteBucketCall = Call<Op::kDeleteBucket, &Store::DeleteBucket, Retry::kNo, std::string>;
using HeadBucketCall = Call<Op::kHeadBucket, &Store::HeadBucket, Retry::kIfPooled, std::string>;
using ListBucketsCall = Call<Op::kListBuckets, &Store::ListBuckets, Retry::kIfPooled>;
using HeadCall = Call<Op::kHead, &Store::Head, Retry::kIfPooled, ObjectKey>;
using HeadManyCall =
    Call<Op::kHeadMany, &Store::HeadMany, Retry::kIfPooled, std::string, std::vector<std::string>>;
using DeleteCall = Call<Op::kDelete, &Store::Delete, Retry::kIdempotent, ObjectKey>;
using DeleteIfCall =
    Call<Op::kDeleteIf, &Store::DeleteIf, Retry::kIdempotent, ObjectKey, ObjectVersionMatch>;
using SetLifecycleCall = Call<Op::kSetLifecycle, &Store::SetBucketLifecycle, Retry::kIdempotent,
                              std::string, std::string>;
using GetLifecycleCall =
    Call<Op::kGetLifecycle, &Store::GetBucketLifecycle, Retry::kIfPooled, std::string>;
using CopyCall = Call<Op::kCopy, &Store::Copy, Retry::kNo, ObjectKey, ObjectKey,
                      std::optional<PutOptions>, WriteConditions>;
using ListCall = Call<Op::kList, &Store::List, Retry::kIfPooled, std::string, ListOptions>;
using CreateUploadCall =
    Call<Op::kCreateUpload, &Store::CreateMultipartUpload, Retry::kNo, ObjectKey, PutOptions>;
using CompleteUploadCall =
    Call<Op::kCompleteUpload, &Store::CompleteMultipartUpload, Retry::kNo, ObjectKey, std::string,
         std::vector<CompletedPart>, CompleteOptions>;
using AbortUploadCall =
    Call<Op::kAbortUpload, &Store::AbortMultipartUpload, Retry::kNo, ObjectKey, std::string>;
using ListPartsCall = Call<Op::kListParts, &Store::ListParts, Retry::kIfPooled, ObjectKey,
                           std::string, uint32_t, uint32_t>;
using ListUploadsCall = Call<Op::kListUploads, &Store::ListMultipartUploads, Retry::kIfPooled,
                             std::string, ListUploadsOptions>;
using PutTagsCall = Call<Op::kPutTags, &Store::PutObjectTags, Retry::kIdempotent, ObjectKey, Tags>;
using KvDataPlaneCall = Call<Op::kKvDataPlane, &Store::DataPlane, Retry::kIfPooled, std::string>;
// Unary on the wire; the server adds its own figures to the store's (ServeStats).
using StatsCall = Call<Op::kStats, &Store::Stats, Retry::kIfPooled>;

// The served store's identity (Store::identity, which cannot fail). Read-only.
struct ServerInfoCall {
  static constexpr Op op = Op::kServerInfo;
  static constexpr Retry retry = Retry::kIfPooled;
  using Request = std::tuple<>;
  using Params = std::tuple<>;
  using Return = Result<StoreIdentity>;
  static Return Run(Store& store, const Request& /*request*/) { return store.identity(); }
};

template <typename... Calls>
struct CallList {};
// Every unary call the server answers with ServeUnary (StatsCall is served by ServeStats).
using UnaryCalls =
    CallList<CreateBucketCall, DeleteBucketCall, HeadBucketCall, ListBucketsCall, HeadCall,
             HeadManyCall, DeleteCall, CopyCall, ListCall, CreateUploadCall, CompleteUploadCall,
             AbortUploadCall, ListPartsCall, ListUploadsCall, PutTagsCall, KvDataPlaneCall,
             ServerInfoCall, DeleteIfCall, SetLifecycleCall, GetLifecycleCall>;

// --- Calls that open a stream: the request is one frame, the rest is hand-written ---
// Opening a writer creates nothing on the server, so it may be retried like a read. Its
// commit never is: the body went out piece by piece from a caller that keeps none of it (the
// gateway streams a PUT's body, a copy across servers streams from a reader).
using PutBeginCall = Call<Op::kPutBegin, &Store::Put, Retry::kIfPooled, ObjectKey, PutOptions>;
using UploadPartBeginCall = Call<Op::kUploadPartBegin, &Store::UploadPart, Retry::kIfPooled,
                                 ObjectKey, std::string, uint32_t, PutOptions>;
using GetCall = Call<Op::kGet, &Store::Get, Retry::kIfPooled, ObjectKey, ByteRange>;

// --- The descriptor calls (hand-written, remote_kv.cc), whose rules sit here with the rest ---
// A descriptor PUT with a data-plane target moves no byte over the RPC: the server pulls the
// chunks from the client's registered memory, which holds them until the client has its
// answer, so another server can pull them again; chunks are named by hash and committed all or
// nothing, so a second run stores the same objects (with create-if-absent it reports those
// the first run wrote as existing). Without a target the chunks stream from the HTTP body,
// consumed as they are sent: never repeated. (A probe changes nothing; a descriptor GET's
// request is sent again only if it never went out whole, SendKvRequest: after that its plan
// and first bytes may have reached the caller.)
constexpr Retry KvPutRetry(bool from_target) {
  return from_target ? Retry::kIdempotent : Retry::kNo;
}

// Decodes a request body into `request`; kInvalidArgument naming the first bad field, or
// for trailing bytes.
template <typename... Fields>
Status DecodeRequest(ByteSpan body, std::tuple<Fields...>* request) {
  return std::apply([body](Fields&... f) { return DecodeBody(body, &f...); }, *request);
}

namespace internal {

// True if a request field held as P binds to an argument of type A without a temporary: a
// reference field must get exactly its type (a converted argument would leave the tuple
// holding a reference to a temporary that dies at once); views convert by value.
template <typename P, typename A>
inline constexpr bool kBindsDirectly =
    !std::is_reference_v<P> || std::is_same_v<std::remove_cvref_t<P>, std::remove_cvref_t<A>>;

template <typename Params, typename... Args, size_t... I>
constexpr bool AllBindDirectly(std::index_sequence<I...>) {
  return (kBindsDirectly<std::tuple_element_t<I, Params>, Args> && ...);
}

}  // namespace internal

// The client's parameters of call C, checked at compile time: one argument per request
// field, each binding to its field without a temporary.
template <typename C, typename... Args>
typename C::Params MakeParams(const Args&... args) {
  using Params = typename C::Params;
  static_assert(sizeof...(Args) == std::tuple_size_v<Params>, "one argument per request field");
  static_assert(internal::AllBindDirectly<Params, Args...>(std::index_sequence_for<Args...>{}),
                "a request field would bind to a converted temporary: pass its exact type");
  return Params(args...);
}

// Builds a call's request frame from the client's parameters.
template <typename C>
void EncodeRequest(std::vector<std::byte>* out, uint64_t request_id,
                   const typename C::Params& params) {
  std::apply([&](const auto&... f) { EncodeFrame(out, C::op, 0, request_id, f...); }, params);
}

// The reply body of a unary call: empty for Status, T for Result<T>.
template <typename R>
struct ReplyValue;
template <>
struct ReplyValue<Status> {
  using type = void;
};
template <typename T>
struct ReplyValue<Result<T>> {
  using type = T;
};

}  // namespace oc::storage::rpc
