// objectcache._native's argument converters (binding.h). Every Python argument becomes a C++
// value here, with the GIL held, before a call releases the GIL: the code that runs without it
// touches no Python object (docs/decisions/python-arguments.md). Kinds of error, as CPython's
// own argument parsing raises them: a buffer of the wrong kind (read-only where it is written,
// not C-contiguous, not a buffer) or a token that is not an integer is a TypeError; a size that
// does not fit, a negative or NaN timeout, a token out of range is a ValueError
// (objectcache.InvalidArgument, naming the argument, where the package has a field for it).
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "binding.h"
#include "fmt/format.h"

namespace oc::python {

// ------------------------------------------------------------------------------------------
// PinnedBuffer

PinnedBuffer::PinnedBuffer(const py::handle& object, bool writable, std::string_view what) {
  const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(object.ptr(), &view_, flags) == 0) {
    held_ = true;
    return;
  }
  // Exporters refuse in their own words and classes (bytes and memoryview: BufferError, numpy:
  // ValueError, a list: TypeError). The caller gets one TypeError naming the argument, as
  // socket.recv_into(b"") does, with the exporter's reason chained as its __cause__.
  py::error_already_set reason;
  const std::string message = fmt::format(
      "{} must be a {}C-contiguous buffer (bytearray, numpy array, mmap, ...), not {}: {}", what,
      writable ? "writable, " : "", Py_TYPE(object.ptr())->tp_name, reason.what());
  py::raise_from(reason, PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept : view_(other.view_), held_(other.held_) {
  other.held_ = false;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    view_ = other.view_;
    held_ = other.held_;
    other.held_ = false;
  }
  return *this;
}

void PinnedBuffer::Release() {
  if (held_) {
    PyBuffer_Release(&view_);
    held_ = false;
  }
}

// ------------------------------------------------------------------------------------------
// Sizes and timeouts

void CheckFits(uint64_t size, uint64_t offset, uint64_t needed, std::string_view field) {
  if (offset > size || size - offset < needed) {
    Raise(Status::InvalidArgument(
        std::string(field), fmt::format("a buffer of {} bytes does not hold {} bytes at offset {}",
                                        size, needed, offset)));
  }
}

std::optional<std::chrono::milliseconds> TimeoutArg(std::optional<double> seconds) {
  if (!seconds.has_value()) {
    return std::nullopt;
  }
  const double s = *seconds;
  if (std::isnan(s) || s < 0) {
    Raise(Status::InvalidArgument(
        "timeout", fmt::format("timeout must be a number of seconds >= 0 or None, not {}", s)));
  }
  if (s >= kMaxTimeoutSeconds) {  // inf too: a wait that long is a wait without end
    return std::chrono::milliseconds(static_cast<int64_t>(kMaxTimeoutSeconds) * 1000);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0 + 0.5));
}

// ------------------------------------------------------------------------------------------
// Token ids

std::vector<uint32_t> Tokens(const py::handle& tokens) {
  std::vector<uint32_t> out;
  if (PyObject_CheckBuffer(tokens.ptr())) {
    Py_buffer view;
    if (PyObject_GetBuffer(tokens.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
      const std::string_view format = view.format != nullptr ? view.format : "B";
      const bool u32 = view.itemsize == 4 && (format == "I" || format == "=I" || format == "<I");
      if (u32) {
        out.resize(static_cast<size_t>(view.len) / 4);
        std::memcpy(out.data(), view.buf, out.size() * 4);
        PyBuffer_Release(&view);
        return out;
      }
      PyBuffer_Release(&view);
    } else {
      PyErr_Clear();  // not C-contiguous: read element by element below
    }
  }
  // Any other buffer or iterable, element by element: each must be an integer (an int, a numpy
  // integer: anything with __index__), so a float array is refused rather than truncated.
  for (py::handle t : py::iter(tokens)) {
    if (!PyIndex_Check(t.ptr())) {
      throw py::type_error(
          fmt::format("token ids must be integers, not {}", Py_TYPE(t.ptr())->tp_name));
    }
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(t.ptr()));
    if (!index) {
      throw py::error_already_set();
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) {
      throw py::error_already_set();
    }
    if (overflow != 0 || v < 0 || v > UINT32_MAX) {
      throw py::value_error("token ids must be in [0, 2**32)");
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

}  // namespace oc::python
