#pragma once
// Plain HTTP on loopback for the tests of the metrics endpoints and the live page, and a reader of the
// metrics' text format.
#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace http_get {

// Everything the peer sends until it closes (or the socket's receive timeout passes); a signal that
// interrupts a receive does not end it.
inline std::string receive_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) out.append(buf, size_t(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  return out;
}

// Sends `raw` as it is to 127.0.0.1:port and returns all the peer answers before it closes, with a 5 s
// receive bound ("" when nothing listens). With `whole`, every byte must go out (a peer may close early
// on a request it refuses, so raw probes do not ask for it).
inline std::string send_raw(uint16_t port, const std::string& raw, bool whole = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  const ssize_t sent = ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  if (whole) REQUIRE(sent == ssize_t(raw.size()));
  std::string out = receive_all(fd);
  ::close(fd);
  return out;
}

// One request to 127.0.0.1:port with a 5 s receive bound; the whole response ("" when nothing listens).
inline std::string request(uint16_t port, const std::string& method, const std::string& path,
                           const std::string& body = "", const std::string& content_type = "application/json") {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty())
    req += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return send_raw(port, req + "\r\n" + body, true);
}

// GET `path` on 127.0.0.1:port; the whole response ("" when nothing listens).
inline std::string get(uint16_t port, const std::string& path = "/metrics") { return request(port, "GET", path); }

// The value of the first sample line that starts with `series` (name and labels as exposed); -1 if none.
inline double sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// A port that was free a moment ago (bound to 0 and closed): for processes that must be told one.
inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A TCP socket listening on 127.0.0.1 that never speaks (the kernel completes connects from its backlog):
// a peer that accepts and then hangs.
struct silent_listener {
  int fd = -1;
  uint16_t port = 0;
  silent_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd); }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;
};

}  // namespace http_get
