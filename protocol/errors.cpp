#include "protocol/errors.hpp"

#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

namespace dualpath::protocol {

status to_status(const caf::error& e) {
  if (!e) return {};
  if (e.category() == error_category) {
    std::string message;
    const auto& ctx = e.context();
    if (ctx.match_elements<std::string>()) message = ctx.get_as<std::string>(0);
    return status(errc(e.code()), message);
  }
  if (e.category() == caf::atom("system")) {
    const auto code = static_cast<caf::sec>(e.code());
    // CAF's context says where ("ip_connect failed", host, port): kept, it is what a user needs to see.
    const std::string text =
        caf::to_string(code) + (e.context().empty() ? std::string() : " " + caf::to_string(e.context()));
    switch (code) {
      case caf::sec::request_timeout: return status(errc::timeout, "no answer in time (" + text + ")");
      case caf::sec::request_receiver_down:
      case caf::sec::no_route_to_receiving_node:
      case caf::sec::disconnect_during_handshake:
      case caf::sec::cannot_connect_to_node: return status(errc::unavailable, "peer gone (" + text + ")");
      default: return status(errc::internal, text);
    }
  }
  if (e.category() == caf::atom("exit"))
    return status(errc::unavailable, "exited (" + caf::to_string(static_cast<caf::exit_reason>(e.code())) + ")");
  return status(errc::internal,
                "error code " + std::to_string(e.code()) + " of category " + caf::to_string(e.category()));
}

}  // namespace dualpath::protocol
