// ErrorInfo, the typed payload of liboc_client's errors (oc/client/errors.h).
#include "oc/client/errors.h"

#include <utility>

#include "fmt/format.h"

namespace oc::client {

std::unique_ptr<StatusDetail> ErrorInfo::Clone() const {
  return std::make_unique<ErrorInfo>(*this);
}

std::string ErrorInfo::ToString() const {
  std::string out;
  if (!s3_code.empty()) {
    out = fmt::format("{}, HTTP {}", s3_code, http_status);
  }
  if (!request_id.empty()) {
    out += fmt::format("{}request {}", out.empty() ? "" : ", ", request_id);
  }
  if (timed_out) {
    out += fmt::format("{}timed out", out.empty() ? "" : ", ");
  }
  return out;
}

const ErrorInfo* ErrorInfoOf(const Status& status) {
  return dynamic_cast<const ErrorInfo*>(status.detail());
}

Status TimedOut(std::string message) {
  auto info = std::make_unique<ErrorInfo>();
  info->timed_out = true;
  return Status::Unavailable(std::move(message)).WithDetail(std::move(info));
}

}  // namespace oc::client
