// The small HTTP server behind the metrics and the live page (observe/http_server.hpp): request parsing and
// its bounds, and a slow handler's answer still reaching the peer.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "observe/http_server.hpp"
#include "tests/observe/http_get.hpp"

using namespace dualpath::observe;

TEST_CASE("http_server: requests parse whole, wait for their body, and are refused past the bounds") {
  http_request r;
  CHECK(parse_http_request("GET /state?x=1 HTTP/1.1\r\nHost: a\r\n", r) == 0);  // head not yet whole
  REQUIRE(parse_http_request("GET /state?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", r) == 1);
  CHECK(r.method == "GET");
  CHECK(r.path == "/state");
  CHECK(r.query == "x=1");
  const std::string post = "POST /policy HTTP/1.1\r\ncontent-TYPE: application/json\r\nContent-Length: 4\r\n\r\n";
  CHECK(parse_http_request(post + "ab", r) == 0);  // body not yet whole
  REQUIRE(parse_http_request(post + "abcd", r) == 1);
  CHECK(r.body == "abcd");
  CHECK(r.content_type == "application/json");
  CHECK(parse_http_request("nonsense\r\n\r\n", r) == -1);
  CHECK(parse_http_request("GET noslash HTTP/1.1\r\n\r\n", r) == -1);
  CHECK(parse_http_request("POST / HTTP/1.1\r\nContent-Length: 9999999\r\n\r\n", r) == -1);
  CHECK(parse_http_request("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a'), r) == -1);
  CHECK(format_http_response({403, "text/plain", "no"}).rfind("HTTP/1.1 403 Forbidden\r\n", 0) == 0);
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
