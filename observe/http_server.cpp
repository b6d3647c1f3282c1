#include "observe/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/status.hpp"

namespace dualpath::observe {

namespace {

constexpr size_t max_head = 8192, max_body = 65536, max_connections = 32;
constexpr auto connection_budget = std::chrono::seconds(2);

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

// The value of header `name` (lower case) in `head`, or "" when absent; header names match case-insensitively.
std::string header(const std::string& head, const std::string& name) {
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const size_t start = at + 2, end = head.find("\r\n", start);
    const std::string line = head.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const size_t colon = line.find(':');
    if (colon == name.size()) {
      bool same = true;
      for (size_t i = 0; i < colon && same; ++i) same = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
      if (same) {
        const size_t v = line.find_first_not_of(" \t", colon + 1);
        return v == std::string::npos ? "" : line.substr(v);
      }
    }
    at = end;
  }
  return "";
}

}  // namespace

int parse_http_request(const std::string& in, http_request& out) {
  const size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) return in.size() > max_head ? -1 : 0;
  if (head_end > max_head) return -1;
  const std::string head = in.substr(0, head_end + 2);
  const size_t sp1 = head.find(' '), sp2 = sp1 == std::string::npos ? sp1 : head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || head.compare(sp2 + 1, 5, "HTTP/") != 0) return -1;
  const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.empty() || target[0] != '/') return -1;
  size_t length = 0;
  const std::string cl = header(head, "content-length");
  if (!cl.empty()) {
    if (cl.find_first_not_of("0123456789") != std::string::npos || cl.size() > 6) return -1;
    length = std::stoul(cl);
    if (length > max_body) return -1;
  }
  if (in.size() < head_end + 4 + length) return 0;
  out.method = head.substr(0, sp1);
  const size_t q = target.find('?');
  out.path = target.substr(0, q);
  out.query = q == std::string::npos ? "" : target.substr(q + 1);
  out.content_type = header(head, "content-type");
  out.body = in.substr(head_end + 4, length);
  return 1;
}

std::string format_http_response(const http_response& r) {
  return "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\nContent-Type: " + r.content_type +
         "\r\nContent-Length: " + std::to_string(r.body.size()) +
         "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" + r.body;
}

struct http_server::impl {
  struct connection {
    int fd = -1;
    std::string in, out;
    size_t sent = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  handler handle;
  int listen_fd = -1;
  uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::thread thread;
  std::vector<connection> open;

  void serve();
  void on_readable(connection& c);
  ~impl() {
    stop = true;
    if (thread.joinable()) thread.join();
    for (auto& c : open) ::close(c.fd);
    if (listen_fd >= 0) ::close(listen_fd);
  }
};

http_server::http_server(const std::string& host, uint16_t port, const std::string& flag, const std::string& what,
                         handler h)
    : impl_(std::make_unique<impl>()) {
  impl_->handle = std::move(h);
  const std::string at = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    throw user_error(flag + ": '" + host + "' is not an IPv4 address");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw user_error(flag + ": cannot serve " + what + " on " + at + ": " + why);
  }
  impl_->listen_fd = fd;
  impl_->port = ntohs(addr.sin_port);
  impl_->thread = std::thread([this] { impl_->serve(); });
}

http_server::~http_server() = default;

uint16_t http_server::port() const { return impl_->port; }

// A connection's request, once whole, is answered by the handler; the answer is sent as the socket allows.
void http_server::impl::on_readable(connection& c) {
  char buf[4096];
  bool gone = false;  // the peer closed or the socket failed
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.append(buf, size_t(n));
      if (c.in.size() > max_head + max_body) break;
      continue;
    }
    gone = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  http_request req;
  const int parsed = parse_http_request(c.in, req);
  if (parsed == 0) {
    if (gone) c.deadline = {};  // it will never be whole: dropped
    return;
  }
  http_response r;
  if (parsed < 0) {
    r.status = 400;
    r.body = "malformed request\n";
  } else {
    r = handle(req);
  }
  c.out = format_http_response(r);
  // Sending gets a budget of its own: a handler may have waited (a policy switch waits for the scheduler).
  if (!gone) c.deadline = std::chrono::steady_clock::now() + connection_budget;
}

void http_server::impl::serve() {
  while (!stop) {
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (const auto& c : open) fds.push_back({c.fd, short(c.out.empty() ? POLLIN : POLLOUT), 0});
    if (::poll(fds.data(), fds.size(), 100) < 0) continue;
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < open.size(); ++i) {
      auto& c = open[i];
      const short ev = fds[i + 1].revents;
      if (c.out.empty() && (ev & (POLLIN | POLLHUP | POLLERR))) on_readable(c);
      if (!c.out.empty() && (ev & POLLOUT)) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += size_t(n);
        else if (errno != EAGAIN && errno != EWOULDBLOCK) c.deadline = {};
      }
    }
    // Answered, failed or out of time: closed (a whole answer was sent, or the peer gets what it got).
    for (size_t i = open.size(); i-- > 0;) {
      auto& c = open[i];
      if ((!c.out.empty() && c.sent == c.out.size()) || now >= c.deadline) {
        ::close(c.fd);
        open.erase(open.begin() + long(i));
      }
    }
    if (fds[0].revents & POLLIN)
      for (int fd; (fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        if (open.size() >= max_connections) {
          ::close(fd);  // over the bound: the peer retries
          continue;
        }
        open.push_back({fd, {}, {}, 0, now + connection_budget});
      }
  }
}

}  // namespace dualpath::observe
