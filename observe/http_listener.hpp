#pragma once
// A cpp-httplib server bound and running on a thread of its own (docs/design.md §15, §18): the one way the
// project's HTTP servers (observe/http_server.cpp, serve/server.cpp) take an address. SO_REUSEADDR only: the
// library's default also sets SO_REUSEPORT, which lets a second server bind a port that is taken and share its
// connections instead of failing.
#include <httplib.h>

#include <cstdint>
#include <string>
#include <thread>

namespace dualpath::observe {

// Throws user_error "<flag>: '<host>' is not an IPv4 address" unless it is one.
void check_ipv4(const std::string& host, const std::string& flag);

class http_listener {
 public:
  // Binds `server` (its routes set) to host:port (port 0: any free port) and runs it; returns once it runs.
  // Throws user_error "<flag>: cannot serve <what> on host:port: why" when it cannot bind.
  http_listener(httplib::Server& server, const std::string& host, uint16_t port, const std::string& flag,
                const std::string& what);
  // Stops the server: no new connections, the requests in flight answered, its threads joined.
  ~http_listener();
  http_listener(const http_listener&) = delete;
  http_listener& operator=(const http_listener&) = delete;

  uint16_t port() const { return port_; }

 private:
  httplib::Server& server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace dualpath::observe
