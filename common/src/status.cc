#include "oc/common/status.h"

#include <fmt/core.h>

namespace oc {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kOutOfRange:
      return "OutOfRange";
    case Code::kPermissionDenied:
      return "PermissionDenied";
    case Code::kUnauthenticated:
      return "Unauthenticated";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kCorruption:
      return "Corruption";
    case Code::kIOError:
      return "IOError";
    case Code::kUnimplemented:
      return "Unimplemented";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string_view SubjectName(Subject subject) {
  switch (subject) {
    case Subject::kNone:
      return "";
    case Subject::kBucket:
      return "bucket";
    case Subject::kKey:
      return "key";
    case Subject::kUpload:
      return "upload";
    case Subject::kPart:
      return "part";
    case Subject::kDescriptor:
      return "descriptor";
    case Subject::kSignature:
      return "signature";
    case Subject::kAccessKey:
      return "access-key";
    case Subject::kDigest:
      return "digest";
    case Subject::kRange:
      return "range";
    case Subject::kEntity:
      return "entity";
  }
  return "";
}

Status::Status(Code code, Subject subject, std::string field, std::string message) {
  if (code != Code::kOk) {
    rep_ = std::make_unique<Rep>(
        Rep{code, subject, std::move(field), std::move(message), /*detail=*/nullptr});
  }
}

std::unique_ptr<Status::Rep> Status::CopyRep(const Rep& rep) {
  return std::make_unique<Rep>(Rep{rep.code, rep.subject, rep.field, rep.message,
                                   rep.detail ? rep.detail->Clone() : nullptr});
}

Status::Status(const Status& other) : rep_(other.rep_ ? CopyRep(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    rep_ = other.rep_ ? CopyRep(*other.rep_) : nullptr;
  }
  return *this;
}

Status Status::WithSubject(Subject subject) const {
  if (ok()) {
    return Status();
  }
  Status out(*this);
  out.rep_->subject = subject;
  return out;
}

Status Status::WithDetail(std::unique_ptr<StatusDetail> detail) const {
  if (ok()) {
    return Status();
  }
  Status out(*this);
  out.rep_->detail = std::move(detail);
  return out;
}

std::string Status::ToString() const {
  if (ok()) {
    return "OK";
  }
  std::string out(CodeName(rep_->code));
  if (rep_->subject != Subject::kNone) {
    out += fmt::format(" subject={}", SubjectName(rep_->subject));
  }
  if (!rep_->field.empty()) {
    out += fmt::format(" field={}", rep_->field);
  }
  if (!rep_->message.empty()) {
    out += ": ";
    out += rep_->message;
  }
  if (rep_->detail != nullptr) {
    out += fmt::format(" [{}]", rep_->detail->ToString());
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

}  // namespace oc
