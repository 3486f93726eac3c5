#pragma once
// ErrorInfo: what a failed liboc_client call knew beyond its Status code, as data. Every error
// built from a gateway answer carries one (the S3 error code, the HTTP status, the request id
// the gateway gave it), and so does every wait that passed its timeout (timed_out), attached
// to the Status as its StatusDetail (oc/common/status.h). Callers read it with ErrorInfoOf;
// nothing is parsed out of messages (the Python package maps it to exception classes by one
// table: python/src/errors.cc). Errors raised before or without an answer (a refused
// connection, a socket timeout, a local check) carry none.
// Thread safety: value types and pure functions.

#include <memory>
#include <string>

#include "oc/common/status.h"

namespace oc::client {

struct ErrorInfo final : StatusDetail {
  // The answer's <Code> ("NoSuchKey", "SlowDown"); "HTTP<status>" when its body had none (HEAD);
  // "" when no answer was received.
  std::string s3_code;
  // The answer's HTTP status; 0 when no answer was received.
  unsigned http_status = 0;
  // The answer's x-amz-request-id (else the body's <RequestId>); "" when it named none.
  std::string request_id;
  // A wait (LayerHandle::WaitLayer or Wait, a caller's own bound) passed its timeout while
  // the request was still running: the request may still complete and the wait may be
  // repeated. Not set for socket timeouts, which end the request (kIOError).
  bool timed_out = false;

  std::unique_ptr<StatusDetail> Clone() const override;
  // "NoSuchKey, HTTP 404, request 6a1f..." or "timed out".
  std::string ToString() const override;
};

// The ErrorInfo `status` carries, or nullptr (OK, or an error without one).
const ErrorInfo* ErrorInfoOf(const Status& status);

// kUnavailable with `message` and ErrorInfo{timed_out = true}: a wait that passed its bound.
Status TimedOut(std::string message);

}  // namespace oc::client
