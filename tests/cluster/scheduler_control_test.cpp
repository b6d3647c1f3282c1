// Policy switching over the real control port: two actor systems in one process talk over loopback.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <set>

#include "actors/scheduler.hpp"
#include "cluster/control_client.hpp"
#include "protocol/system_config.hpp"
#include "core/status.hpp"
#include "tests/observe/http_get.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath;
using namespace dualpath::cluster;
namespace sch = dualpath::schedule;

namespace {

sch::node_snapshot group(uint32_t node, uint32_t engines, uint64_t read_q) {
  sch::node_snapshot n;
  n.node = node;
  n.read_q = read_q;
  for (uint32_t i = 0; i < engines; ++i) n.engines.push_back({node * 100 + i, node, 0, 0, uint64_t(1) << 40});
  return n;
}

}  // namespace

TEST_CASE("policy switch over the control port: new assignments follow it, nothing lost or duplicated") {
  system_config server_cfg, client_cfg;
  caf::actor_system server{server_cfg};
  caf::actor_system client_sys{client_cfg};

  scheduler_options o;
  o.params.alpha_tokens = 1000;
  o.params.beta_tokens = 50;  // one request of 100 tokens fills an engine
  o.params.kv_bytes_per_token = 1;
  auto s = spawn_scheduler(server, o);
  const std::string secret = "control-test-secret-0123";
  control_gate gate{secret_proof(secret, secret_purpose::control)};
  const uint16_t port = publish_control(server, s, 0, "127.0.0.1", gate);
  REQUIRE(port != 0);

  caf::scoped_actor self{server};
  const auto pe = group(1, 4, /*read_q*/ uint64_t(1) << 40);  // PE SNIC far behind: dualpath reads via DE
  std::multiset<uint64_t> seen;
  // The engines finished every request assigned so far and say so: their charges end (docs/design.md §7.1).
  auto report_all = [&] {
    for (auto [kind, node] : {std::pair{sch::role::prefill, pe}, std::pair{sch::role::decode, group(5, 4, 0)}}) {
      sch::group_report r;
      r.node = node;
      r.node.kind = kind;
      r.read_acked.assign(seen.begin(), seen.end());
      r.acked.assign(node.engines.size(), r.read_acked);
      self->send(s, atom::report_v, encode(r));
    }
  };
  auto fetch = [&] {
    std::vector<sch::assignment> out;
    self->request(s, std::chrono::seconds(5), atom::fetch_v, encode_fetch(1))
        .receive([&](const envelope<schema::Assignments>& e) { out = decode(e); },
                 [&](const caf::error& err) { FAIL(server.render(err)); });
    return out;
  };
  constexpr uint64_t n = 20;
  for (uint64_t i = 0; i < n; ++i) {
    const auto r = sch::test::make_request(i, /*append*/ 100, /*len*/ 1100, /*kv_bytes*/ 1024, /*hit_blocks*/ 4,
                                           /*hit_bytes*/ 4000);
    self->request(s, std::chrono::seconds(5), atom::submit_v, encode(r))
        .receive([](uint64_t) {}, [&](const caf::error& err) { FAIL(server.render(err)); });
  }

  // A stranger without the cluster's secret gets nothing done, and is counted (docs/design.md §13).
  control_client stranger_ctl(client_sys, "127.0.0.1", port, "not-the-secret-at-all", std::chrono::seconds(3));
  CHECK_THROWS_WITH_AS(stranger_ctl.set_policy("balanced_pe"), doctest::Contains("wrong cluster secret"), user_error);
  CHECK_THROWS_WITH_AS(stranger_ctl.stats(), doctest::Contains("wrong cluster secret"), user_error);
  CHECK(gate.refused->commands == 2);

  control_client ctl(client_sys, "127.0.0.1", port, secret, std::chrono::seconds(3));
  CHECK(ctl.get_policy().active == "balanced");

  // One round: all four waiting requests come back, each on the read path the active policy picks.
  auto fetch_four_on = [&](sch::read_path path) {
    report_all();
    auto got = fetch();
    REQUIRE(got.size() == 4);
    for (const auto& a : got) {
      CHECK(a.path == path);
      seen.insert(a.request.id);
    }
  };
  fetch_four_on(sch::read_path::de);

  auto st = ctl.set_policy("balanced_pe");
  CHECK(st.ok);
  CHECK(st.active == "balanced_pe");
  fetch_four_on(sch::read_path::pe);

  st = ctl.set_policy("no_such_policy");
  CHECK_FALSE(st.ok);
  CHECK(st.active == "balanced_pe");
  CHECK(st.known == sch::policy_names());

  CHECK(ctl.set_policy("rr_queue").ok);
  for (int round = 0; round < 10 && seen.size() < n; ++round) {
    report_all();
    for (const auto& a : fetch()) seen.insert(a.request.id);
  }
  CHECK(seen.size() == n);
  CHECK(std::set<uint64_t>(seen.begin(), seen.end()).size() == n);  // no duplicates
  const auto c = ctl.stats();
  CHECK(c.policy == "rr_queue");
  CHECK(c.submitted == n);
  CHECK(c.assigned == n);
  CHECK(c.waiting == 0);
  CHECK(c.switches == 2);
  CHECK(c.refused_commands == 2);

  // A CAF node that publishes some other actor on the port is refused.
  auto stranger = server.spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
  const auto other = server.middleman().publish(stranger, 0, "127.0.0.1", true);
  REQUIRE(other);
  CHECK_THROWS_WITH_AS(control_client(client_sys, "127.0.0.1", *other, secret, std::chrono::seconds(3)),
                       doctest::Contains("not a DualPath scheduler control port"), user_error);
  self->send_exit(stranger, caf::exit_reason::user_shutdown);

  self->send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_CASE("ctl fails fast against a dead port or a silent peer") {
  system_config cfg;
  caf::actor_system sys{cfg};
  const uint16_t dead = http_get::free_port();
  CHECK_THROWS_WITH_AS(control_client(sys, "127.0.0.1", dead, "s", std::chrono::seconds(2)),
                       doctest::Contains("cannot connect"), user_error);
  http_get::silent_listener silent;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(control_client(sys, "127.0.0.1", silent.port, "s", std::chrono::milliseconds(300)),
                       doctest::Contains("not a DualPath scheduler control port"), user_error);
  // Bounded by the deadline (generous margin; the point is that it returns at all).
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK_THROWS_AS(parse_host_port("localhost", "--connect"), user_error);
  CHECK_THROWS_AS(parse_host_port("h:0", "--connect"), user_error);
  CHECK(parse_host_port("127.0.0.1:4242", "--connect") == std::make_pair(std::string("127.0.0.1"), uint16_t(4242)));
}
