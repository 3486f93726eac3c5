// objectcache._native's exceptions: one class per S3 error family, all under ObjectCacheError,
// and the one mapping from a liboc_client Status to them (MakeError, Raise). Errors cross the
// language boundary as data: the Status code and the gateway's S3 code pick the class by table,
// and the fields travel as attributes.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "binding.h"

namespace oc::python {
namespace {

// ------------------------------------------------------------------------------------------
// Exceptions: one class per S3 error family, all under ObjectCacheError; the builtin each also
// derives from lets generic Python code catch them (a Timeout is a TimeoutError).

struct ErrorClass {
  const char* name;
  const char* base;     // another row, or nullptr for ObjectCacheError's base (Exception)
  const char* builtin;  // builtins name also derived from, or nullptr
  const char* doc;
};

constexpr ErrorClass kErrorClasses[] = {
    {"ObjectCacheError", nullptr, nullptr,
     "Base of every objectcache error. Attributes: code (the client's status code name), "
     "s3_code and http_status (the gateway's answer, None for local errors), field (the "
     "header or argument at fault, or None), message."},
    {"InvalidArgument", "ObjectCacheError", "ValueError", "400: a malformed request or argument."},
    {"OutOfRange", "ObjectCacheError", "IndexError",
     "A range or layer past the end (wait_layer of a layer a partial hit did not deliver)."},
    {"InvalidRange", "OutOfRange", nullptr, "416: a Range starting past the end of an object."},
    {"AccessDenied", "ObjectCacheError", "PermissionError", "403 AccessDenied."},
    {"AuthenticationError", "ObjectCacheError", "PermissionError",
     "403: SignatureDoesNotMatch or InvalidAccessKeyId."},
    {"NotFound", "ObjectCacheError", nullptr, "404."},
    {"NoSuchBucket", "NotFound", nullptr, "404 NoSuchBucket."},
    {"NoSuchKey", "NotFound", nullptr, "404 NoSuchKey."},
    {"AlreadyExists", "ObjectCacheError", nullptr,
     "409 BucketAlreadyOwnedByYou / BucketAlreadyExists."},
    {"PreconditionFailed", "ObjectCacheError", nullptr,
     "412, or 409 for a state that forbids the call (BucketNotEmpty)."},
    {"Unavailable", "ObjectCacheError", "ConnectionError",
     "503, or the gateway or data plane cannot be reached."},
    {"SlowDown", "Unavailable", nullptr,
     "503 SlowDown still answered after the client's retry budget."},
    {"Timeout", "Unavailable", "TimeoutError", "A wait passed its timeout."},
    {"TransportError", "ObjectCacheError", "OSError", "A socket read or write failed."},
    {"ResourceExhausted", "ObjectCacheError", nullptr,
     "A configured limit was reached (requests in flight, body size)."},
    {"Corruption", "ObjectCacheError", nullptr, "An answer or stored bytes failed their checks."},
    {"Unimplemented", "ObjectCacheError", "NotImplementedError", "501 NotImplemented."},
    {"InternalError", "ObjectCacheError", nullptr, "500 or another server failure."},
};

// The classes, created once at import; references kept for the life of the process.
std::map<std::string, PyObject*, std::less<>>& Classes() {
  static auto* classes = new std::map<std::string, PyObject*, std::less<>>();
  return *classes;
}

// S3 error codes -> class (docs/protocol.md and the gateway's error table name them).
constexpr std::pair<std::string_view, const char*> kS3Codes[] = {
    {"NoSuchBucket", "NoSuchBucket"},
    {"NoSuchKey", "NoSuchKey"},
    {"NoSuchUpload", "NotFound"},
    {"AccessDenied", "AccessDenied"},
    {"SignatureDoesNotMatch", "AuthenticationError"},
    {"InvalidAccessKeyId", "AuthenticationError"},
    {"BucketAlreadyOwnedByYou", "AlreadyExists"},
    {"BucketAlreadyExists", "AlreadyExists"},
    {"BucketNotEmpty", "PreconditionFailed"},
    {"PreconditionFailed", "PreconditionFailed"},
    {"InvalidRange", "InvalidRange"},
    {"SlowDown", "SlowDown"},
    {"ServiceUnavailable", "Unavailable"},
    {"NotImplemented", "Unimplemented"},
    {"InternalError", "InternalError"},
};

const char* ClassForCode(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kFailedPrecondition:
      return "PreconditionFailed";
    case Code::kOutOfRange:
      return "OutOfRange";
    case Code::kPermissionDenied:
      return "AccessDenied";
    case Code::kUnauthenticated:
      return "AuthenticationError";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kCorruption:
      return "Corruption";
    case Code::kIOError:
      return "TransportError";
    case Code::kUnimplemented:
      return "Unimplemented";
    default:
      return "InternalError";
  }
}

// liboc_client writes a gateway error as "<S3 code> (HTTP <status>): <message>" (client.h).
struct S3Answer {
  std::string code;
  int http_status = 0;
  std::string message;
};
std::optional<S3Answer> ParseS3Answer(std::string_view text) {
  const size_t open = text.find(" (HTTP ");
  if (open == std::string_view::npos || open == 0 ||
      text.substr(0, open).find(' ') != std::string_view::npos) {
    return std::nullopt;
  }
  const size_t close = text.find("): ", open);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  S3Answer a;
  a.code = std::string(text.substr(0, open));
  for (char c : text.substr(open + 7, close - open - 7)) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    a.http_status = a.http_status * 10 + (c - '0');
  }
  a.message = std::string(text.substr(close + 3));
  return a;
}

}  // namespace

void CreateErrorClasses(py::module_& m) {
  py::module_ builtins = py::module_::import("builtins");
  for (const ErrorClass& e : kErrorClasses) {
    PyObject* base = e.base == nullptr ? PyExc_Exception : Classes().at(e.base);
    py::tuple bases = e.builtin == nullptr
                          ? py::make_tuple(py::handle(base))
                          : py::make_tuple(py::handle(base), builtins.attr(e.builtin));
    const std::string qualified = std::string("objectcache.") + e.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), e.doc, bases.ptr(), nullptr);
    if (cls == nullptr) {
      throw py::error_already_set();
    }
    Classes()[e.name] = cls;
    m.add_object(e.name, py::handle(cls));
  }
}

py::object MakeError(const Status& status, bool timeout) {
  const std::optional<S3Answer> s3 = ParseS3Answer(status.message());
  const char* name = ClassForCode(status.code());
  if (timeout) {
    name = "Timeout";
  } else if (s3.has_value()) {
    for (const auto& [code, cls] : kS3Codes) {
      if (code == s3->code) {
        name = cls;
      }
    }
  }
  const std::string text = status.ToString();
  py::object error = py::reinterpret_borrow<py::object>(Classes().at(name))(text);
  error.attr("code") = py::str(std::string(CodeName(status.code())));
  error.attr("s3_code") = s3 ? py::object(py::str(s3->code)) : py::none();
  error.attr("http_status") = s3 ? py::object(py::int_(s3->http_status)) : py::none();
  error.attr("field") =
      status.field().empty() ? py::none() : py::object(py::str(std::string(status.field())));
  error.attr("message") = py::str(s3 ? s3->message : std::string(status.message()));
  return error;
}

void Raise(const Status& status, bool timeout) {
  py::object error = MakeError(status, timeout);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

}  // namespace oc::python
