// The HTTP server behind the metrics and the live page (observe/http_server.hpp), over real sockets: what a
// handler sees of a request, the bounds on what a peer may send, and a slow handler's answer still reaching
// the peer.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.hpp"
#include "observe/http_server.hpp"
#include "tests/observe/http_get.hpp"

using namespace dualpath::observe;

namespace {

struct recorder {
  std::mutex mu;
  std::vector<http_request> seen;
  http_server::handler handler() {
    return [this](const http_request& r) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(r);
      return http_response{200, "text/plain", "seen " + r.path};
    };
  }
};

}  // namespace

TEST_CASE("http_server: a handler sees method, path, query, content type and body") {
  recorder rec;
  http_server server("127.0.0.1", 0, "--test", "a test", rec.handler());
  const std::string got = http_get::get(server.port(), "/state?x=1");
  CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(got.find("Cache-Control: no-store") != std::string::npos);
  CHECK(got.find("\r\n\r\nseen /state") != std::string::npos);
  const std::string posted = http_get::request(server.port(), "POST", "/policy", "abcd", "application/json");
  CHECK(posted.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  std::lock_guard<std::mutex> lock(rec.mu);
  REQUIRE(rec.seen.size() == 2);
  CHECK(rec.seen[0].method == "GET");
  CHECK(rec.seen[0].path == "/state");
  CHECK(rec.seen[0].query == "x=1");
  CHECK(rec.seen[1].method == "POST");
  CHECK(rec.seen[1].body == "abcd");
  CHECK(rec.seen[1].content_type == "application/json");
}

TEST_CASE("http_server: malformed and oversized requests are refused before any handler runs") {
  recorder rec;
  http_server server("127.0.0.1", 0, "--test", "a test", rec.handler());
  CHECK(http_get::send_raw(server.port(), "nonsense\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
  // A body over the 64 KB bound is answered 413 without reading it.
  const std::string big = "POST /policy HTTP/1.1\r\nHost: a\r\nContent-Length: 9999999\r\n\r\n";
  CHECK(http_get::send_raw(server.port(), big).rfind("HTTP/1.1 413", 0) == 0);
  // A request head over the 8 KB bound gets no answer but an error or a closed connection.
  const std::string head =
      http_get::send_raw(server.port(), "GET / HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n");
  CHECK(head.rfind("HTTP/1.1 200", 0) != 0);
  std::lock_guard<std::mutex> lock(rec.mu);
  CHECK(rec.seen.empty());
}

TEST_CASE("http_server: a silent peer holds no one else up; a bad address or a taken port is named") {
  recorder rec;
  http_server server("127.0.0.1", 0, "--test", "a test", rec.handler());
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  CHECK(http_get::get(server.port(), "/after").find("seen /after") != std::string::npos);
  ::close(silent);
  CHECK_THROWS_WITH_AS(http_server("localhost", 0, "--ui-port", "the page", rec.handler()),
                       doctest::Contains("--ui-port: 'localhost' is not an IPv4 address"), dualpath::user_error);
  CHECK_THROWS_WITH_AS(http_server("127.0.0.1", server.port(), "--ui-port", "the page", rec.handler()),
                       doctest::Contains("--ui-port: cannot serve the page on 127.0.0.1:"), dualpath::user_error);
}

TEST_CASE("http_server: a handler that takes longer than a connection's budget still gets its answer out") {
  http_server server("127.0.0.1", 0, "--test", "a test", [](const http_request&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // over the 2 s a request may take to arrive
    return http_response{200, "text/plain", "late but whole"};
  });
  const auto t0 = std::chrono::steady_clock::now();
  const std::string out = http_get::get(server.port(), "/");  // a 5 s receive bound
  MESSAGE("answer after ", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), " s, ",
          out.size(), " bytes");
  CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(out.find("\r\n\r\nlate but whole") != std::string::npos);
}
