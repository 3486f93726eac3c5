#pragma once
// FromUcs: the one place a ucs_status_t becomes an oc::Status (house style: foreign errors are
// translated once, at the seam). Both ends of the data plane (the storage server's UcxDataPlane
// and the client's UcxReceiver) call it; nothing above them sees a UCX status.
// Thread safety: a pure function.

#include <ucs/type/status.h>

#include <string_view>

#include "oc/common/status.h"

namespace oc::ucx {

// OK for UCS_OK and UCS_INPROGRESS. Otherwise an error whose message is "`what`: <UCX's text>":
// kInvalidArgument (bad parameter or address, unreachable), kResourceExhausted (no memory or
// resources, a limit exceeded), kCancelled, kUnavailable (timeouts, reset, rejected, busy),
// kUnimplemented, and kIOError for everything else.
Status FromUcs(ucs_status_t status, std::string_view what);

}  // namespace oc::ucx
