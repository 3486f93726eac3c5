#pragma once
// Status is the outcome of an operation: OK, or an error carrying a Code, a Subject (what
// the error is about: a bucket, a key, an upload...), an optional field (the header, query
// parameter or XML element at fault), a message, and optionally a StatusDetail: typed data a
// layer attaches for its callers (liboc_client: the gateway's S3 code, HTTP status and request
// id, or that a wait timed out; oc/client/errors.h), so that nothing is parsed out of messages.
//
// OK is a null pointer, so returning success costs nothing (leveldb). Errors are rare and
// heap-allocated. Status is a value: copyable, movable, and [[nodiscard]].
// Thread safety: a Status may be read from many threads; mutating one needs outside
// synchronisation, as for any value type.

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace oc {

enum class Code : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller sent something malformed or out of range
  kNotFound,            // the subject does not exist
  kAlreadyExists,       // the subject exists and the operation needs it not to
  kFailedPrecondition,  // state forbids it (bucket not empty, If-Match failed...)
  kOutOfRange,          // a range or offset past the end
  kPermissionDenied,    // authenticated but not allowed
  kUnauthenticated,     // credentials missing or wrong
  kResourceExhausted,   // a configured limit (size, connections, memory) was hit
  kUnavailable,         // try again: a peer is down or shutting down
  kCorruption,          // stored bytes fail their checks
  kIOError,             // the disk or the network failed
  kUnimplemented,       // a valid request we do not support
  kCancelled,           // the caller or the server gave up
  kInternal,            // a bug
};

// What an error is about; lets the gateway choose NoSuchBucket vs NoSuchKey without
// parsing messages (RocksDB's SubCode idea).
enum class Subject : uint8_t {
  kNone = 0,
  kBucket,
  kKey,
  kUpload,
  kPart,
  kDescriptor,
  kSignature,
  kAccessKey,
  kDigest,
  kRange,
  kEntity,
};

std::string_view CodeName(Code code);
std::string_view SubjectName(Subject subject);

// Typed data an error carries beyond code, subject, field and message. A module defines its
// own subclass and reads it back with dynamic_cast (liboc_client's ErrorInfoOf). Immutable
// once attached; a copied Status gets a Clone().
class StatusDetail {
 public:
  virtual ~StatusDetail() = default;
  virtual std::unique_ptr<StatusDetail> Clone() const = 0;
  // Appended to Status::ToString() in brackets, e.g. "NoSuchKey, HTTP 404, request 3f9a...".
  virtual std::string ToString() const = 0;
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, Subject subject, std::string field, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string field, std::string message) {
    return Status(Code::kInvalidArgument, Subject::kNone, std::move(field), std::move(message));
  }
  static Status NotFound(Subject subject, std::string message) {
    return Status(Code::kNotFound, subject, "", std::move(message));
  }
  static Status AlreadyExists(Subject subject, std::string message) {
    return Status(Code::kAlreadyExists, subject, "", std::move(message));
  }
  static Status FailedPrecondition(Subject subject, std::string message) {
    return Status(Code::kFailedPrecondition, subject, "", std::move(message));
  }
  static Status OutOfRange(std::string message) {
    return Status(Code::kOutOfRange, Subject::kRange, "", std::move(message));
  }
  static Status Unavailable(std::string message) {
    return Status(Code::kUnavailable, Subject::kNone, "", std::move(message));
  }
  static Status Corruption(std::string message) {
    return Status(Code::kCorruption, Subject::kNone, "", std::move(message));
  }
  static Status IOError(std::string message) {
    return Status(Code::kIOError, Subject::kNone, "", std::move(message));
  }
  static Status ResourceExhausted(std::string field, std::string message) {
    return Status(Code::kResourceExhausted, Subject::kNone, std::move(field), std::move(message));
  }
  static Status Unimplemented(std::string message) {
    return Status(Code::kUnimplemented, Subject::kNone, "", std::move(message));
  }
  static Status Cancelled(std::string message) {
    return Status(Code::kCancelled, Subject::kNone, "", std::move(message));
  }
  static Status Internal(std::string message) {
    return Status(Code::kInternal, Subject::kNone, "", std::move(message));
  }

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  Subject subject() const { return rep_ ? rep_->subject : Subject::kNone; }
  // The header, query parameter or element at fault; empty if none.
  std::string_view field() const { return rep_ ? std::string_view(rep_->field) : ""; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }

  bool IsNotFound() const { return code() == Code::kNotFound; }

  // Returns a copy with `subject` set; for layers that know what the error is about.
  Status WithSubject(Subject subject) const;
  // Returns a copy carrying `detail` (replacing any); OK stays OK, without it.
  Status WithDetail(std::unique_ptr<StatusDetail> detail) const;
  // The detail attached, or nullptr. Valid while this Status lives and is not assigned.
  const StatusDetail* detail() const { return rep_ ? rep_->detail.get() : nullptr; }
  // "InvalidArgument field=x-oc-num-layers: must be 1..1024", then " [detail]" if any.
  std::string ToString() const;

 private:
  struct Rep {
    Code code;
    Subject subject;
    std::string field;
    std::string message;
    std::unique_ptr<StatusDetail> detail;  // null for most errors
  };
  static std::unique_ptr<Rep> CopyRep(const Rep& rep);
  std::unique_ptr<Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

}  // namespace oc

// Evaluates `expr` (a Status) and returns it from the enclosing function if not OK.
#define OC_RETURN_IF_ERROR(expr)          \
  do {                                    \
    ::oc::Status oc_status_tmp_ = (expr); \
    if (!oc_status_tmp_.ok()) {           \
      return oc_status_tmp_;              \
    }                                     \
  } while (0)
