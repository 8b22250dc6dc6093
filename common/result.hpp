// The result of a fallible operation: a value, or an error message that says what failed and
// what to do. [[nodiscard]]: a dropped error is a bug.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace safe {

struct Error {
  std::string message;
  bool refused = false;  // the other side said no on purpose (a policy), rather than failing
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}       // NOLINT: implicit, so `return value;` works
  Result(Error error) : v_(std::move(error)) {}   // NOLINT: implicit, so `return Error{...};` works
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // "" when ok.
  const std::string& error() const {
    static const std::string none;
    return ok() ? none : std::get<1>(v_).message;
  }
  // The error was a refusal (Error::refused).
  bool refused() const { return !ok() && std::get<1>(v_).refused; }

 private:
  std::variant<T, Error> v_;
};

// Success without a value.
struct Done {};
using Status = Result<Done>;
inline Status ok_status() { return Done{}; }

}  // namespace safe
