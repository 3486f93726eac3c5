// objectcache._native's exceptions: one class per S3 error family, all under ObjectCacheError,
// and the one mapping from a liboc_client Status to them (MakeError, Raise). Errors cross the
// language boundary as data: liboc_client's ErrorInfo (oc/client/errors.h: S3 code, HTTP
// status, request id, timed out) and the Status code pick the class from ONE table,
// kErrorClasses, and travel as attributes; no message is parsed.
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "binding.h"
#include "oc/client/errors.h"

namespace oc::python {
namespace {

// ------------------------------------------------------------------------------------------
// One row per exception class: its place in the hierarchy, the builtin it also derives from
// (so generic Python code can catch it: a Timeout is a TimeoutError), and which errors map to
// it. An error goes to the Timeout row when its ErrorInfo says timed_out; else to the row
// listing its S3 code; else to the row of its Status code; else to InternalError.

struct ErrorClass {
  const char* name;
  const char* base;     // another row, or nullptr for ObjectCacheError's base (Exception)
  const char* builtin;  // builtins name also derived from, or nullptr
  Code code;            // the Status code this class stands for (kOk: none)
  std::array<std::string_view, 3> s3_codes;  // the S3 error codes mapped here
  bool timed_out;                            // the class of waits that passed their timeout
  const char* doc;
};

constexpr Code kNoCode = Code::kOk;

// One row per class, laid out as a table.
// clang-format off
constexpr ErrorClass kErrorClasses[] = {
    {"ObjectCacheError", nullptr, nullptr, kNoCode, {}, false,
     "Base of every objectcache error. Attributes: code (the client's status code name), "
     "s3_code, http_status and request_id (the gateway's answer, None for errors without "
     "one), timed_out (a wait passed its timeout; the request may still complete), field (the "
     "header or argument at fault, or None), message."},
    {"InvalidArgument", "ObjectCacheError", "ValueError", Code::kInvalidArgument, {}, false,
     "400: a malformed request or argument."},
    {"OutOfRange", "ObjectCacheError", "IndexError", Code::kOutOfRange, {}, false,
     "A range or layer past the end (wait_layer of a layer a partial hit did not deliver)."},
    {"InvalidRange", "OutOfRange", nullptr, kNoCode, {"InvalidRange"}, false,
     "416: a Range starting past the end of an object."},
    {"AccessDenied", "ObjectCacheError", "PermissionError", Code::kPermissionDenied,
     {"AccessDenied"}, false, "403 AccessDenied."},
    {"AuthenticationError", "ObjectCacheError", "PermissionError", Code::kUnauthenticated,
     {"SignatureDoesNotMatch", "InvalidAccessKeyId"}, false,
     "403: SignatureDoesNotMatch or InvalidAccessKeyId."},
    {"NotFound", "ObjectCacheError", nullptr, Code::kNotFound, {"NoSuchUpload"}, false, "404."},
    {"NoSuchBucket", "NotFound", nullptr, kNoCode, {"NoSuchBucket"}, false, "404 NoSuchBucket."},
    {"NoSuchKey", "NotFound", nullptr, kNoCode, {"NoSuchKey"}, false, "404 NoSuchKey."},
    {"AlreadyExists", "ObjectCacheError", nullptr, Code::kAlreadyExists,
     {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}, false,
     "409 BucketAlreadyOwnedByYou / BucketAlreadyExists."},
    {"PreconditionFailed", "ObjectCacheError", nullptr, Code::kFailedPrecondition,
     {"BucketNotEmpty", "PreconditionFailed"}, false,
     "412, or 409 for a state that forbids the call (BucketNotEmpty)."},
    {"Unavailable", "ObjectCacheError", "ConnectionError", Code::kUnavailable,
     {"ServiceUnavailable"}, false, "503, or the gateway or data plane cannot be reached."},
    {"SlowDown", "Unavailable", nullptr, kNoCode, {"SlowDown"}, false,
     "503 SlowDown still answered after the client's retry budget."},
    {"Timeout", "Unavailable", "TimeoutError", kNoCode, {}, true,
     "A wait passed its timeout; the request may still complete (wait again)."},
    {"TransportError", "ObjectCacheError", "OSError", Code::kIOError, {}, false,
     "A socket read or write failed or timed out."},
    {"ResourceExhausted", "ObjectCacheError", nullptr, Code::kResourceExhausted, {}, false,
     "A configured limit was reached (requests in flight, body size)."},
    {"Corruption", "ObjectCacheError", nullptr, Code::kCorruption, {}, false,
     "An answer or stored bytes failed their checks."},
    {"Unimplemented", "ObjectCacheError", "NotImplementedError", Code::kUnimplemented,
     {"NotImplemented"}, false, "501 NotImplemented."},
    {"InternalError", "ObjectCacheError", nullptr, Code::kInternal, {"InternalError"}, false,
     "500 or another server failure."},
};
// clang-format on

// The classes, created once at import; references kept for the life of the process.
std::map<std::string, PyObject*, std::less<>>& Classes() {
  static auto* classes = new std::map<std::string, PyObject*, std::less<>>();
  return *classes;
}

const char* ClassFor(const Status& status, const client::ErrorInfo* info) {
  for (const ErrorClass& e : kErrorClasses) {
    if (info != nullptr && info->timed_out && e.timed_out) {
      return e.name;
    }
  }
  if (info != nullptr && !info->s3_code.empty()) {
    for (const ErrorClass& e : kErrorClasses) {
      for (std::string_view code : e.s3_codes) {
        if (!code.empty() && code == info->s3_code) {
          return e.name;
        }
      }
    }
  }
  for (const ErrorClass& e : kErrorClasses) {
    if (e.code != kNoCode && e.code == status.code()) {
      return e.name;
    }
  }
  return "InternalError";
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

py::object MakeError(const Status& status) {
  const client::ErrorInfo* info = client::ErrorInfoOf(status);
  const bool answered = info != nullptr && info->http_status != 0;
  py::object error =
      py::reinterpret_borrow<py::object>(Classes().at(ClassFor(status, info)))(status.ToString());
  error.attr("code") = py::str(std::string(CodeName(status.code())));
  error.attr("s3_code") = answered ? py::object(py::str(info->s3_code)) : py::none();
  error.attr("http_status") = answered ? py::object(py::int_(info->http_status)) : py::none();
  error.attr("request_id") = info != nullptr && !info->request_id.empty()
                                 ? py::object(py::str(info->request_id))
                                 : py::none();
  error.attr("timed_out") = py::bool_(info != nullptr && info->timed_out);
  error.attr("field") =
      status.field().empty() ? py::none() : py::object(py::str(std::string(status.field())));
  error.attr("message") = py::str(std::string(status.message()));
  return error;
}

void Raise(const Status& status) {
  py::object error = MakeError(status);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

}  // namespace oc::python
