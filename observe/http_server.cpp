#include "observe/http_server.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <httplib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/status.hpp"

namespace dualpath::observe {

namespace {

constexpr time_t io_budget_s = 2;             // to arrive, and to be written
constexpr size_t max_body_bytes = 64 * 1024;  // larger bodies are answered 413
constexpr int serve_threads = 2;              // a slow handler does not block the next connection's read

http_request to_request(const httplib::Request& in) {
  http_request r;
  r.method = in.method;
  r.path = in.path;
  const size_t q = in.target.find('?');
  r.query = q == std::string::npos ? "" : in.target.substr(q + 1);
  r.content_type = in.get_header_value("Content-Type");
  r.body = in.body;
  return r;
}

}  // namespace

struct http_server::impl {
  httplib::Server server;
  std::thread thread;
  std::mutex handling;  // handlers run one at a time
  uint16_t port = 0;

  ~impl() {
    server.stop();
    if (thread.joinable()) thread.join();
  }
};

http_server::http_server(const std::string& host, uint16_t port, const std::string& flag, const std::string& what,
                         handler h)
    : impl_(std::make_unique<impl>()) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, host.c_str(), &parsed) != 1)
    throw user_error(flag + ": '" + host + "' is not an IPv4 address");
  auto& s = impl_->server;
  s.new_task_queue = [] { return new httplib::ThreadPool(serve_threads); };
  s.set_read_timeout(io_budget_s, 0);
  s.set_write_timeout(io_budget_s, 0);
  s.set_payload_max_length(max_body_bytes);
  s.set_keep_alive_max_count(1);
  // SO_REUSEADDR only: the library's default also sets SO_REUSEPORT, which lets a second server bind a port
  // that is taken and share its connections instead of failing.
  s.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });  // one request per connection: nothing idles on a socket between scrapes
  auto serve = [this, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    http_response out;
    {
      std::lock_guard<std::mutex> lock(impl_->handling);
      out = h(to_request(req));
    }
    res.status = out.status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(out.body, out.content_type.c_str());
  };
  s.Get(".*", serve);
  s.Post(".*", serve);

  const std::string at = host + ":" + std::to_string(port);
  errno = 0;
  const int bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    const std::string why = errno ? std::strerror(errno) : "the address cannot be bound";
    throw user_error(flag + ": cannot serve " + what + " on " + at + ": " + why);
  }
  impl_->port = uint16_t(bound);
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // A stop before the listener runs would be lost (the library stops only a running server), so the
  // constructor returns once it runs: at most a second, the thread's start.
  for (int i = 0; i < 1000 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

http_server::~http_server() = default;

uint16_t http_server::port() const { return impl_->port; }

}  // namespace dualpath::observe
