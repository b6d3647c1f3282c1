#pragma once
// The project's one error type (docs/design.md §14): a `status` is a code plus a message naming what and
// where; `result<T>` is a value or a status. Code that fails for a reason the caller can act on returns
// one of these; a status of code `bad_input` thrown as `user_error` is how the CLI exits with code 2.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace dualpath {

enum class errc : uint8_t {
  ok = 0,
  bad_input,    // the user's to fix: a malformed config, trace or argument; a missing file
  not_found,    // a block or file that is not there (a storage miss)
  corrupt,      // bytes that fail their checksum or format check
  io,           // the OS refused a read or write (EIO, ENOSPC, EROFS, ...)
  timeout,      // a bounded wait ran out
  unavailable,  // a peer is gone or unreachable; a resource cannot be had
  capacity,     // a request larger than the whole resource (HBM, DRAM buffer)
  transfer,     // a fabric transfer completed with an error
  compute,      // the compute backend refused a pass or step
  internal,     // a bug: an index out of range, a broken invariant
};

// Stable lower-case name of a code ("ok", "bad_input", ...), for logs and reports.
const char* errc_name(errc c);

class [[nodiscard]] status {
 public:
  status() = default;
  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static status success() { return {}; }

  bool ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message" ("ok" when ok).
  std::string to_string() const;

 private:
  errc code_ = errc::ok;
  std::string message_;
};

// A value, or the status that says why there is none.
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : value_(std::move(value)) {}
  result(status s) : status_(std::move(s)) {
    if (status_.ok()) status_ = status(errc::internal, "result built from an ok status without a value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const status& error() const { return status_; }
  T& value() & { return checked(); }
  const T& value() const& { return const_cast<result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return checked(); }

 private:
  T& checked() {
    if (!value_) throw std::logic_error("result has no value: " + status_.to_string());
    return *value_;
  }
  std::optional<T> value_;
  status status_;
};

// Errors that are the user's to fix (bad input, missing file, unreachable peer). The CLI prints the
// message and exits with code 2; anything else escaping to main is a bug.
class user_error : public std::runtime_error {
 public:
  explicit user_error(const std::string& message) : std::runtime_error(message) {}
  explicit user_error(const status& s) : std::runtime_error(s.message()) {}
};

// Throws user_error when `s` is not ok; returns the value of a result otherwise.
inline void throw_if_error(const status& s) {
  if (!s.ok()) throw user_error(s);
}
template <class T>
T value_or_throw(result<T> r) {
  if (!r.ok()) throw user_error(r.error());
  return std::move(r).value();
}

// Exit code of the CLI for a user_error.
inline constexpr int exit_bad_input = 2;

}  // namespace dualpath
