#pragma once
// The tiny HTTP/1.1 server behind the run's metrics and its live page (docs/design.md §15). prometheus-cpp's
// own server (civetweb) could not start its worker threads inside our processes, so one thread of ours
// serves: it polls the listening socket and every open connection with a 100 ms timeout (so it stops within
// that of the destructor), answers each request once and closes the connection. Every connection is bounded
// (8 KB of head, 64 KB of body, 2 s to arrive and be answered), so a silent or slow peer holds nothing.
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

// Parses one request from the bytes received so far. 1: complete (`out` filled), 0: needs more bytes,
// -1: malformed or over the bounds above (answered 400).
int parse_http_request(const std::string& in, http_request& out);

// "HTTP/1.1 <status> <reason>" with Content-Type, Content-Length, Cache-Control: no-store and Connection: close.
std::string format_http_response(const http_response& r);

class http_server {
 public:
  using handler = std::function<http_response(const http_request&)>;
  // Binds `host:port` (an IPv4 address; port 0: any free port) and starts serving with `h`, which runs on
  // the server's thread. Throws user_error "<flag>: cannot serve <what> on host:port: why" when it cannot.
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
