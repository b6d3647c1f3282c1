#include "observe/http_listener.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/status.hpp"

namespace dualpath::observe {

void check_ipv4(const std::string& host, const std::string& flag) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, host.c_str(), &parsed) != 1)
    throw user_error(flag + ": '" + host + "' is not an IPv4 address");
}

http_listener::http_listener(httplib::Server& server, const std::string& host, uint16_t port, const std::string& flag,
                             const std::string& what)
    : server_(server) {
  check_ipv4(host, flag);
  server_.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  errno = 0;
  const int bound = port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    const std::string why = errno ? std::strerror(errno) : "the address cannot be bound";
    throw user_error(flag + ": cannot serve " + what + " on " + host + ":" + std::to_string(port) + ": " + why);
  }
  port_ = uint16_t(bound);
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // A stop before the listener runs would be lost (the library stops only a running server), so the
  // constructor returns once it runs: at most a second, the thread's start.
  for (int i = 0; i < 1000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

http_listener::~http_listener() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace dualpath::observe
