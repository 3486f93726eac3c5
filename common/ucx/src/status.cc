#include "oc/ucx/status.h"

#include <string>
#include <utility>

#include <fmt/core.h>

namespace oc::ucx {

Status FromUcs(ucs_status_t status, std::string_view what) {
  if (status == UCS_OK || status == UCS_INPROGRESS) {
    return Status::Ok();
  }
  std::string message = fmt::format("{}: {}", what, ucs_status_string(status));
  switch (status) {
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
    case UCS_ERR_UNREACHABLE:
      return Status::InvalidArgument("", std::move(message));
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_OUT_OF_RANGE:
      return Status::ResourceExhausted("", std::move(message));
    case UCS_ERR_CANCELED:
      return Status::Cancelled(std::move(message));
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_BUSY:
      return Status::Unavailable(std::move(message));
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED:
      return Status::Unimplemented(std::move(message));
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_MESSAGE_TRUNCATED:
      return Status::IOError(std::move(message));
    default:
      return Status::IOError(std::move(message));
  }
}

}  // namespace oc::ucx
