// The handler column of the operation table (s3_ops.def) and the two entry points that read it:
// Dispatch (operations whose body, if any, was read before they run) and OpenUpload /
// FinishUpload (streamed uploads). The access check is here, once, by the row's access class,
// so no handler can forget it.
#include <iterator>
#include <optional>
#include <utility>

#include "handlers/handlers.h"

namespace oc::gateway {
namespace {

#define OC_CALL(handle) \
  OpHandler { &handle, nullptr, nullptr }
#define OC_UPLOAD(open, finish) \
  OpHandler { nullptr, &open, &finish }
constexpr OpHandler kHandlers[] = {
#define OC_S3_OP(name, methods, level, query, copy, body, access, runs_on, handler) handler,
#define OC_S3_UNSERVED(query)
#include "s3_ops.def"
#undef OC_S3_UNSERVED
#undef OC_S3_OP
};
#undef OC_UPLOAD
#undef OC_CALL
static_assert(std::size(kHandlers) == kS3OpCount, "one handler per operation row");

}  // namespace

const OpHandler& HandlerOf(S3Op op) { return kHandlers[static_cast<size_t>(op)]; }

Response Dispatch(HandlerEnv& env, Request& req) {
  const OpHandler& handler = HandlerOf(req.route.op);
  if (handler.handle == nullptr) {
    // An upload: the session opens it (OpenUpload) instead.
    return Response::Error(S3Error::kNotImplemented);
  }
  if (std::optional<Response> denied =
          env.access->Check(req, RowOf(req.route.op).access, req.route.bucket)) {
    return std::move(*denied);
  }
  return handler.handle(env, req);
}

UploadStart OpenUpload(HandlerEnv& env, Request& req, uint64_t body_bytes) {
  const OpHandler& handler = HandlerOf(req.route.op);
  UploadStart start;
  if (handler.open == nullptr) {
    start.error = Response::Error(S3Error::kNotImplemented);
    return start;
  }
  if (std::optional<Response> denied =
          env.access->Check(req, RowOf(req.route.op).access, req.route.bucket)) {
    start.error = std::move(*denied);
    return start;
  }
  return handler.open(env, req, body_bytes);
}

Response FinishUpload(HandlerEnv& env, Request& req, const UploadStart& start,
                      Result<storage::ObjectMeta> committed) {
  return HandlerOf(req.route.op).finish(env, req, start, std::move(committed));
}

}  // namespace oc::gateway
