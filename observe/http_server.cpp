#include "observe/http_server.hpp"

#include <httplib.h>

#include <memory>
#include <mutex>

#include "observe/http_listener.hpp"

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
  std::mutex handling;                      // handlers run one at a time
  std::unique_ptr<http_listener> listener;  // last: stopped before the server it runs goes
};

http_server::http_server(const std::string& host, uint16_t port, const std::string& flag, const std::string& what,
                         handler h)
    : impl_(std::make_unique<impl>()) {
  auto& s = impl_->server;
  s.new_task_queue = [] { return new httplib::ThreadPool(serve_threads); };
  s.set_read_timeout(io_budget_s, 0);
  s.set_write_timeout(io_budget_s, 0);
  s.set_payload_max_length(max_body_bytes);
  s.set_keep_alive_max_count(1);  // one request per connection: nothing idles on a socket between scrapes
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

  impl_->listener = std::make_unique<http_listener>(s, host, port, flag, what);
}

http_server::~http_server() = default;

uint16_t http_server::port() const { return impl_->listener->port(); }

}  // namespace dualpath::observe
