#pragma once
// The HTTP/1.1 server behind the run's metrics and its live page (docs/design.md §15), on cpp-httplib
// (Debian's libcpp-httplib-dev: a well-kept server with bounded reads and a worker pool, already packaged,
// and small enough to hide behind this header). Every connection is bounded: 8 KB of request head (the
// library's limit), 64 KB of body (413 past it), 2 s to arrive and 2 s to be written, so a silent or slow
// peer holds nothing; the destructor stops the server and waits for its threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace dualpath::observe {

struct http_request {
  std::string method;        // "GET", "POST", ...
  std::string path;          // without the query: "/state"
  std::string query;         // after '?', undecoded ("" when none)
  std::string content_type;  // the Content-Type header ("" when none)
  std::string body;
};

struct http_response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class http_server {
 public:
  using handler = std::function<http_response(const http_request&)>;
  // Binds `host:port` (an IPv4 address; port 0: any free port) and starts serving GET and POST with `h`, which
  // runs on the server's worker threads (one at a time: handlers need not be reentrant). Throws user_error "<flag>: cannot serve <what> on host:port: why" when it cannot.
  http_server(const std::string& host, uint16_t port, const std::string& flag, const std::string& what, handler h);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  uint16_t port() const;  // the port actually bound

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dualpath::observe
