// Direct links between node processes (cluster/peer_links.hpp): three actor systems in one process over
// loopback stand for a launcher and two nodes that learned of each other through it.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "cluster/peer_links.hpp"
#include "protocol/system_config.hpp"
#include "tests/observe/http_get.hpp"

using namespace dualpath;
using namespace dualpath::cluster;
using protocol::system_config;
using std::chrono::milliseconds;

namespace {

// The launcher's part: hands out the handle a node files with it, as the registry does.
caf::behavior directory(caf::event_based_actor* self) {
  auto held = std::make_shared<caf::actor>();
  return {
      [held](caf::put_atom, const caf::actor& a) { *held = a; },
      [held](caf::get_atom) { return *held; },
  };
}

caf::behavior plus_one() {
  return {[](int x) { return x + 1; }};
}

// What node B's request to node C's actor got: the answer, or nothing (an error or no answer in time).
std::optional<int> ask(caf::actor_system& sys, const caf::actor& to, int x) {
  caf::scoped_actor self{sys};
  std::optional<int> got;
  self->request(to, milliseconds(3000), x).receive([&](int y) { got = y; }, [](const caf::error&) {});
  return got;
}

// A launcher L, a node C whose actor L files, and a node B that got C's actor from L (so B's messages to it
// travel through L). With `dial`, B dials C's link first. Then L goes away; what does B's next request get?
std::optional<int> after_launcher_gone(bool dial_first) {
  system_config cfg_l, cfg_b, cfg_c;
  auto l = std::make_unique<caf::actor_system>(cfg_l);
  caf::actor_system b{cfg_b}, c{cfg_c};
  auto dir = l->spawn(directory);
  auto port = l->middleman().publish(dir, 0, "127.0.0.1");
  REQUIRE(port);
  auto echo = c.spawn(plus_one);
  auto dir_at_c = c.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(dir_at_c);
  caf::anon_send(*dir_at_c, caf::put_atom::value, echo);
  auto dir_at_b = b.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(dir_at_b);
  caf::actor echo_at_b;
  {
    caf::scoped_actor self{b};
    for (int tries = 0; tries < 100 && !echo_at_b; ++tries) {
      self->request(*dir_at_b, milliseconds(2000), caf::get_atom::value)
          .receive([&](const caf::actor& a) { echo_at_b = a; }, [](const caf::error&) {});
      if (!echo_at_b) std::this_thread::sleep_for(milliseconds(10));
    }
  }
  REQUIRE(echo_at_b);
  CHECK(ask(b, echo_at_b, 1) == 2);  // through the launcher

  if (dial_first) {
    auto host = local_address_toward("127.0.0.1", *port);
    REQUIRE(host);
    auto link = open_link(c, *host);
    REQUIRE(link);
    protocol::node_handles peer;
    peer.node = 0;
    peer.link_host = *host;
    peer.link_port = *link;
    const status s = dial(b, peer, milliseconds(3000));
    CHECK_MESSAGE(s.ok(), s.to_string());
  }
  caf::anon_send_exit(dir, caf::exit_reason::user_shutdown);
  l.reset();  // the launcher's process ends: its connections close
  const auto got = ask(b, echo_at_b, 41);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);  // an actor system waits for its actors
  return got;
}

}  // namespace

TEST_CASE("peer links: after a dial, a node's messages to a peer it learned through the launcher go direct") {
  CHECK(after_launcher_gone(true) == 42);
  // The same without the dial: the route was the launcher's, and it is gone with it.
  CHECK(after_launcher_gone(false) == std::nullopt);
}

TEST_CASE("peer links: a dial that cannot connect fails in bounded time, naming the peer") {
  system_config cfg;
  caf::actor_system sys{cfg};
  protocol::node_handles peer;
  peer.node = 3;
  peer.link_host = "127.0.0.1";
  peer.link_port = http_get::free_port();  // nothing listens there: refused at once
  const auto began = std::chrono::steady_clock::now();
  const status s = dial(sys, peer, milliseconds(1500));
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("node 3 at 127.0.0.1:" + std::to_string(peer.link_port)) != std::string::npos);

  // A listener that accepts and never answers the handshake: given up at the timeout, not waited on.
  http_get::silent_listener listener;
  peer.link_port = listener.port;
  const auto asked = std::chrono::steady_clock::now();
  const status silent = dial(sys, peer, milliseconds(1000));
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(10));
  CHECK_FALSE(silent.ok());
  CHECK(silent.message().find("node 3") != std::string::npos);
}

TEST_CASE("peer links: the local address toward the registry, and who dials whom") {
  auto loop = local_address_toward("127.0.0.1", 4000);
  REQUIRE(loop);
  CHECK(*loop == "127.0.0.1");
  auto bad = local_address_toward("no-such-host.invalid", 4000);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code() == errc::bad_input);
  CHECK(bad.error().message().find("no-such-host.invalid") != std::string::npos);

  protocol::node_handles lower, higher, unlinked;
  lower.node = 0;
  lower.link_port = 5000;
  higher.node = 2;
  higher.link_port = 5001;
  unlinked.node = 0;
  CHECK(dials_at_wiring(1, lower));
  CHECK_FALSE(dials_at_wiring(1, higher));  // node 2 dials node 1, never both at once
  CHECK_FALSE(dials_at_wiring(1, unlinked));
  CHECK_FALSE(dials_at_wiring(0, lower));  // itself
}
