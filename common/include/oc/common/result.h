#pragma once
// Result<T> holds either a T or a non-OK Status, spelled like std::expected (has_value,
// value, operator*, operator->, error) so it can become std::expected under C++23.
// Constructing a Result from an OK Status is a programming error (checked).
// Thread safety: as for any value type.

#include <utility>
#include <variant>

#include "oc/common/check.h"
#include "oc/common/status.h"

namespace oc {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}        // NOLINT: implicit
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT: implicit
    OC_CHECK(!std::get<1>(v_).ok());
  }
  template <typename U>
  requires std::is_constructible_v<T, U&&> &&
      (!std::is_same_v<std::decay_t<U>, T>)&&(!std::is_same_v<std::decay_t<U>, Status>)
          Result(U&& value)
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    OC_CHECK(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    OC_CHECK(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    OC_CHECK(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; REQUIRES: !has_value().
  const Status& error() const& {
    OC_CHECK(!has_value());
    return std::get<1>(v_);
  }
  Status&& error() && {
    OC_CHECK(!has_value());
    return std::get<1>(std::move(v_));
  }
  // OK if a value is held, else the error.
  Status status() const { return has_value() ? Status::Ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace oc

#define OC_CONCAT_INNER_(a, b) a##b
#define OC_CONCAT_(a, b) OC_CONCAT_INNER_(a, b)

// OC_ASSIGN_OR_RETURN(auto x, F()); or OC_ASSIGN_OR_RETURN(x, F());
// Evaluates F() (a Result); returns its error from the enclosing function, else moves
// the value into the left-hand side.
#define OC_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto OC_CONCAT_(oc_result_, __LINE__) = (expr);               \
  if (!OC_CONCAT_(oc_result_, __LINE__).has_value()) {          \
    return std::move(OC_CONCAT_(oc_result_, __LINE__)).error(); \
  }                                                             \
  lhs = std::move(OC_CONCAT_(oc_result_, __LINE__)).value()
