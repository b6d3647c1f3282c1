// The scheduler actor under CAF's test coordinator: deterministic message order and a virtual clock.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <doctest/doctest.h>

#include <set>

#include "actors/scheduler.hpp"
#include "core/status.hpp"
#include "test_coordinator.hpp"

using namespace dualpath;
using namespace dualpath::actors;
namespace sch = dualpath::schedule;

namespace {

struct fixture {
  fixture()
      : sys(test::test_coordinator_config(cfg)),
        self(sys, true),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  ~fixture() {
    if (s) self->send_exit(s, caf::exit_reason::user_shutdown);
    sched.run();
  }

  void start(scheduler_options opts) {
    s = spawn_scheduler(sys, std::move(opts));
    sched.run();
  }

  // A group with `engines` engines, all at `tok`, on node `node`, whose numbers count the requests of
  // `counted` that were assigned to them (and the reads of all of `counted`).
  void report(sch::role kind, uint32_t node, uint32_t engines, uint64_t tok, uint64_t read_q,
              uint64_t free_hbm = uint64_t(1) << 40, const std::vector<sch::assignment>& counted = {}) {
    sch::group_report r;
    r.node.node = node;
    r.node.kind = kind;
    r.node.read_q = read_q;
    for (uint32_t i = 0; i < engines; ++i) r.node.engines.push_back({node * 100 + i, node, 0, tok, free_hbm});
    r.acked.resize(engines);
    for (const auto& a : counted) {
      for (uint32_t i = 0; i < engines; ++i)
        if (a.pe == node * 100 + i || a.de == node * 100 + i) r.acked[i].push_back(a.request.id);
      r.read_acked.push_back(a.request.id);
    }
    self->send(s, atom::report_v, encode(r));
    sched.run();
  }

  void submit(uint64_t id, uint64_t append = 100) {
    sch::request_info r;
    r.id = id;
    r.append_tokens = append;
    r.hit_tokens = 1000;
    r.len = 1000 + append;
    r.kv_bytes = 4096;
    r.hit_blocks = 4;
    r.hit_bytes = 4000;
    self->send(s, atom::submit_v, encode(r));
    sched.run();
  }

  std::vector<sch::assignment> fetch(uint32_t node) {
    std::vector<sch::assignment> out;
    auto rh = self->request(s, caf::infinite, atom::fetch_v, encode_fetch(node));
    sched.run();
    rh.receive([&](const envelope<schema::Assignments>& e) { out = decode(e); },
               [&](const caf::error& err) { FAIL("fetch failed: " << sys.render(err)); });
    return out;
  }

  template <class Reply, class... Ts>
  Reply ask(Ts... xs) {
    Reply out;
    auto rh = self->request(s, caf::infinite, xs...);
    sched.run();
    rh.receive([&](const Reply& r) { out = r; }, [&](const caf::error& err) { FAIL(sys.render(err)); });
    return out;
  }

  policy_status get_policy() { return decode(ask<envelope<schema::PolicyStatus>>(atom::policy_v, atom::get_v)); }
  scheduler_counters stats() { return decode(ask<envelope<schema::SchedulerStats>>(atom::stats_v)); }

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::scheduler::test_coordinator& sched;
  scheduler_actor s;
};

scheduler_options options(uint64_t beta) {
  scheduler_options o;
  o.params.alpha_tokens = 1000;
  o.params.beta_tokens = beta;
  o.params.kv_bytes_per_token = 1;
  return o;
}

}  // namespace

TEST_CASE_FIXTURE(fixture, "fetch assigns FIFO within β and a later fetch waits for a fresh report") {
  start(options(/*beta*/ 250));
  report(sch::role::prefill, 1, 2, 0, 0);
  report(sch::role::decode, 4, 1, 0, 0);
  report(sch::role::decode, 5, 1, 0, 0);
  for (uint64_t i = 0; i < 8; ++i) submit(i);

  auto first = fetch(1);
  // Two engines from 0 tokens, +100 per request, β = 250: three requests each.
  REQUIRE(first.size() == 6);
  int on_pe0 = 0, on_de4 = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(first[i].request.id == i);
    CHECK(first[i].pe_node == 1);
    on_pe0 += first[i].pe == 100;
    on_de4 += first[i].de_node == 4;
  }
  CHECK(on_pe0 == 3);
  CHECK(on_de4 == 3);  // level 1 alternates between the two decode groups
  // Per node: these ids are all agent 0's, and an agent has one turn in flight (its latest placement), on
  // PE node 1 and one decode node; the engines are charged three requests each.
  {
    const auto c = stats();
    REQUIRE(c.nodes.size() == 3);
    CHECK(c.nodes[0].node.node == 1);
    CHECK(c.nodes[0].node.kind == sch::role::prefill);
    CHECK(c.nodes[0].in_flight == 1);
    CHECK(c.nodes[1].in_flight + c.nodes[2].in_flight == 1);
    REQUIRE(c.nodes[0].node.engines.size() == 2);
    CHECK(c.nodes[0].node.engines[0].seq == 3);
    CHECK(c.nodes[1].node.kind == sch::role::decode);
  }
  // The scheduler charged its snapshot: without a new report the group is still full.
  CHECK(fetch(1).empty());
  CHECK(stats().waiting == 2);

  // A report that does not count them changes nothing: the charges stay (docs/design.md §7.1).
  report(sch::role::prefill, 1, 2, 0, 0);
  CHECK(fetch(1).empty());
  CHECK(stats().pending_charges >= 2 * 6);
  // The engines counted the requests since the last report and finished them.
  report(sch::role::prefill, 1, 2, 0, 0, uint64_t(1) << 40, first);
  auto second = fetch(1);
  REQUIRE(second.size() == 2);
  std::set<uint64_t> ids;
  for (const auto& a : first) ids.insert(a.request.id);
  for (const auto& a : second) ids.insert(a.request.id);
  CHECK(ids.size() == 8);
  const auto c = stats();
  CHECK(c.submitted == 8);
  CHECK(c.assigned == 8);
  CHECK(c.waiting == 0);
  CHECK(c.fetches == 4);
  CHECK(c.prefill_engines == 2);
  CHECK(c.decode_engines == 2);
  CHECK(c.policy == "balanced");
}

TEST_CASE_FIXTURE(fixture, "a scripted switch fires on the virtual clock and changes later assignments only") {
  auto o = options(1u << 20);
  o.switches = {{2.0, "balanced_pe"}, {5.0, "balanced_split"}};
  start(o);
  report(sch::role::prefill, 1, 1, 0, /*read_q*/ 1u << 30);
  report(sch::role::decode, 5, 1, 0, 0);
  submit(1);
  auto a = fetch(1);
  REQUIRE(a.size() == 1);
  CHECK(a[0].path == sch::read_path::de);  // dualpath: the DE node's queue is shorter

  sched.advance_time(std::chrono::milliseconds(1999));
  sched.run();
  CHECK(get_policy().active == "balanced");
  submit(2);  // waits while the switch happens
  sched.advance_time(std::chrono::milliseconds(1));
  sched.run();
  CHECK(get_policy().active == "balanced_pe");
  a = fetch(1);
  REQUIRE(a.size() == 1);
  CHECK(a[0].request.id == 2);
  CHECK(a[0].path == sch::read_path::pe);  // basic: PE path although its queue is longer

  sched.advance_time(std::chrono::seconds(3));
  sched.run();
  CHECK(get_policy().active == "balanced_split");
  CHECK(stats().switches == 2);
}

TEST_CASE_FIXTURE(fixture, "an unknown policy is refused with the known names; the running policy stays") {
  start(options(1000));
  auto st = decode(ask<envelope<schema::PolicyStatus>>(atom::policy_v, atom::set_v, std::string("fastest")));
  CHECK_FALSE(st.ok);
  CHECK(st.active == "balanced");
  CHECK(st.known == sch::policy_names());
  CHECK(st.message.find("fastest") != std::string::npos);
  st = decode(ask<envelope<schema::PolicyStatus>>(atom::policy_v, atom::set_v, std::string("rr_queue")));
  CHECK(st.ok);
  CHECK(st.active == "rr_queue");
  CHECK(get_policy().active == "rr_queue");
}

TEST_CASE_FIXTURE(fixture, "a malformed request gets an error reply and the scheduler keeps serving") {
  start(options(1000));
  envelope<schema::Request> junk;
  junk.bytes = {1, 2, 3};
  auto rh = self->request(s, caf::infinite, atom::submit_v, junk);
  sched.run();
  bool failed = false;
  rh.receive([&](uint64_t) {}, [&](const caf::error&) { failed = true; });
  CHECK(failed);
  submit(7);
  CHECK(stats().waiting == 1);
}

TEST_CASE_FIXTURE(fixture,
                  "decode charges outlive stale reports, end when the engine names the request, expire on the clock") {
  auto o = options(1u << 20);
  o.charge_expiry_s = 10;
  start(o);
  report(sch::role::prefill, 1, 1, 0, 0);
  report(sch::role::decode, 5, 2, 0, 0);
  submit(1);
  submit(2);
  const auto a = fetch(1);
  REQUIRE(a.size() == 2);
  CHECK(a[0].de != a[1].de);  // level 2 spreads them over both engines
  // The decode engines have not been told yet: their reports keep both charges, so a third request
  // still sees both engines loaded and is charged on top.
  report(sch::role::decode, 5, 2, 0, 0);
  submit(3);
  report(sch::role::prefill, 1, 1, 0, 0, uint64_t(1) << 40, a);
  const auto b = fetch(1);
  REQUIRE(b.size() == 1);
  const auto before = stats().pending_charges;
  // Hand-off of request 1: its decode engine names it, which ends every charge of that request.
  report(sch::role::decode, 5, 2, 1100, 0, uint64_t(1) << 40, {a[0]});
  CHECK(stats().pending_charges < before);
  // The rest is never acknowledged: gone after the bound on the virtual clock, and counted.
  sched.advance_time(std::chrono::seconds(11));
  sched.run();
  report(sch::role::decode, 5, 2, 0, 0);
  const auto c = stats();
  CHECK(c.pending_charges == 0);
  CHECK(c.expired_charges > 0);
}

TEST_CASE("spawn_scheduler rejects unknown policy names, also in the switch list") {
  caf::actor_system_config cfg;
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  cfg.add_message_types<caf::id_block::dualpath>();
  caf::actor_system sys{cfg};
  scheduler_options o;
  o.policy = "fastest";
  CHECK_THROWS_AS(spawn_scheduler(sys, o), user_error);
  o.policy = "balanced";
  o.switches = {{1.0, "nope"}};
  CHECK_THROWS_AS(spawn_scheduler(sys, o), user_error);
  o.switches = {{-1.0, "balanced_pe"}};
  CHECK_THROWS_AS(spawn_scheduler(sys, o), user_error);
  o.switches.clear();
  o.charge_expiry_s = 0;
  CHECK_THROWS_AS(spawn_scheduler(sys, o), user_error);
}
