#include "core/status.hpp"

namespace dualpath {

const char* errc_name(errc c) {
  switch (c) {
    case errc::ok: return "ok";
    case errc::bad_input: return "bad_input";
    case errc::not_found: return "not_found";
    case errc::corrupt: return "corrupt";
    case errc::io: return "io";
    case errc::timeout: return "timeout";
    case errc::unavailable: return "unavailable";
    case errc::capacity: return "capacity";
    case errc::transfer: return "transfer";
    case errc::compute: return "compute";
    case errc::internal: return "internal";
  }
  return "unknown";
}

std::string status::to_string() const {
  if (ok()) return "ok";
  return std::string(errc_name(code_)) + ": " + message_;
}

}  // namespace dualpath
