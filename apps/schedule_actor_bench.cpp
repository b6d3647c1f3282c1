#include "apps/schedule_actor_bench.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "actors/scheduler.hpp"
#include "bench/schedule_bench.hpp"
#include "core/model_catalog.hpp"
#include "core/status.hpp"
#include "protocol/system_config.hpp"

namespace dualpath::cli {

namespace sch = dualpath::schedule;
using protocol::envelope;
namespace schema = dualpath::schema;
using bench::engines_per_node;
using bench::hbm_per_engine;

namespace {

constexpr auto decode_report_every = std::chrono::milliseconds(2);
constexpr auto empty_fetch_pause = std::chrono::microseconds(200);

// What every driver of one run shares with the thread that waits for it.
struct run_shared {
  uint64_t target = 0;
  std::atomic<uint64_t> assigned{0}, fetches{0}, empty_fetches{0}, reports{0};
  std::promise<void> done;
  std::atomic<bool> finished{false};

  void count(size_t n) {
    if (assigned.fetch_add(n) + n >= target && !finished.exchange(true)) done.set_value();
  }
};

sch::node_snapshot node_of(uint32_t node, sch::role kind) {
  sch::node_snapshot n;
  n.node = node;
  n.kind = kind;
  for (uint32_t i = 0; i < engines_per_node; ++i)
    n.engines.push_back({node * engines_per_node + i, node, 0, 0, hbm_per_engine});
  return n;
}

struct held {
  uint64_t id, kv_bytes;
};

// A decode node's leader: adopts hand-offs (engine, request, KV bytes, hit bytes read here), and every 2 ms
// reports what its engines hold and finishes the older half of it.
caf::behavior decode_leader(caf::event_based_actor* self, actors::scheduler_actor scheduler, uint32_t node,
                            std::shared_ptr<run_shared> shared) {
  struct state {
    sch::group_report report;
    std::vector<std::vector<held>> live;
  };
  auto st = std::make_shared<state>();
  st->report.node = node_of(node, sch::role::decode);
  st->live.resize(engines_per_node);
  self->delayed_send(self, decode_report_every, atom::tick_v);
  return {
      [=](atom::adopt, uint32_t engine, uint64_t id, uint64_t kv_bytes, uint64_t read_bytes) {
        const uint32_t i = engine % engines_per_node;
        st->live[i].push_back({id, kv_bytes});
        auto& e = st->report.node.engines[i];
        ++e.seq;
        e.free_hbm -= std::min(e.free_hbm, kv_bytes);
        st->report.node.read_q += read_bytes;
        if (read_bytes) st->report.read_acked.push_back(id);
      },
      [=](atom::tick) {
        auto& r = st->report;
        r.acked.assign(engines_per_node, {});
        for (uint32_t i = 0; i < engines_per_node; ++i)
          for (const auto& h : st->live[i]) r.acked[i].push_back(h.id);
        self->send(scheduler, atom::report_v, protocol::encode(r));
        ++shared->reports;
        // The older half finishes: its HBM comes back; the SNIC read half of its queue.
        for (uint32_t i = 0; i < engines_per_node; ++i) {
          auto& live = st->live[i];
          const size_t gone = live.size() / 2;
          for (size_t k = 0; k < gone; ++k) r.node.engines[i].free_hbm += live[k].kv_bytes;
          live.erase(live.begin(), live.begin() + long(gone));
          r.node.engines[i].seq = uint32_t(live.size());
        }
        r.node.read_q /= 2;
        r.read_acked.clear();
        self->delayed_send(self, decode_report_every, atom::tick_v);
      },
  };
}

// A prefill node's leader: fetches, hands each assignment to its decode node's leader, reports what it was
// given (prefill over by the next report), fetches again.
caf::behavior prefill_leader(caf::event_based_actor* self, actors::scheduler_actor scheduler, uint32_t node,
                             std::shared_ptr<std::vector<caf::actor>> decode_leaders, uint32_t first_decode_node,
                             std::shared_ptr<run_shared> shared) {
  auto fetch = [=] {
    self->request(scheduler, caf::infinite, atom::fetch_v, protocol::encode_fetch(node))
        .then([=](const envelope<schema::Assignments>& e) {
          const auto out = protocol::decode(e);
          ++shared->fetches;
          sch::group_report r;
          r.node = node_of(node, sch::role::prefill);
          r.acked.resize(engines_per_node);
          for (const auto& a : out) {
            auto& eng = r.node.engines[a.pe % engines_per_node];
            ++eng.seq;
            eng.tok += a.request.append_tokens;
            r.acked[a.pe % engines_per_node].push_back(a.request.id);
            const uint64_t hit = a.request.hit_bytes;
            const uint64_t de_read = a.path == sch::read_path::de ? hit : 0;
            if (hit > de_read) r.read_acked.push_back(a.request.id);
            r.node.read_q += hit - de_read;
            self->send((*decode_leaders)[a.de_node - first_decode_node], atom::adopt_v, a.de, a.request.id,
                       a.request.kv_bytes, de_read);
          }
          self->send(scheduler, atom::report_v, protocol::encode(r));
          ++shared->reports;
          if (out.empty()) {
            ++shared->empty_fetches;
            self->delayed_send(self, empty_fetch_pause, atom::tick_v);
          } else {
            shared->count(out.size());
            self->send(self, atom::tick_v);
          }
        });
  };
  self->send(self, atom::tick_v);
  return {[=](atom::tick) { fetch(); }};
}

// The client: keeps `in_flight` encoded submits unanswered until all are sent.
caf::behavior submitter(caf::event_based_actor* self, actors::scheduler_actor scheduler,
                        std::shared_ptr<std::vector<envelope<schema::Request>>> requests, uint32_t in_flight) {
  auto next = std::make_shared<size_t>(0);
  auto send_one = std::make_shared<std::function<void()>>();
  *send_one = [=] {
    if (*next >= requests->size()) return;
    self->request(scheduler, caf::infinite, atom::submit_v, (*requests)[(*next)++]).then([=](uint64_t) {
      (*send_one)();
    });
  };
  for (uint32_t i = 0; i < in_flight; ++i) (*send_one)();
  return {[](atom::tick) {}};
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct one_run {
  double seconds = 0, cpu = 0;
  uint64_t fetches = 0, empty_fetches = 0, reports = 0;
};

one_run run_once(const schedule_actor_bench_options& o, uint32_t prefill_nodes, uint32_t decode_nodes) {
  const auto& model = find_model("deepseek-v3.2");
  const sch::policy_params params = bench::paper_scale_params();
  auto requests = std::make_shared<std::vector<envelope<schema::Request>>>();
  std::mt19937_64 rng(o.seed);
  for (uint64_t i = 0; i < o.requests; ++i)
    requests->push_back(
        protocol::encode(bench::synthetic_request(i, rng, params.kv_bytes_per_token, model.block_tokens)));

  protocol::system_config cfg;
  caf::actor_system sys{cfg};
  actors::scheduler_options so;
  so.policy = o.policy;
  so.params = params;
  auto scheduler = actors::spawn_scheduler(sys, so);
  auto shared = std::make_shared<run_shared>();
  shared->target = o.requests;
  auto finished = shared->done.get_future();

  // Every node reports once before work starts, so the scheduler knows the whole cluster.
  {
    caf::scoped_actor self{sys};
    for (uint32_t n = 0; n < prefill_nodes + decode_nodes; ++n) {
      sch::group_report r;
      r.node = node_of(n, n < prefill_nodes ? sch::role::prefill : sch::role::decode);
      r.acked.resize(engines_per_node);
      self->send(scheduler, atom::report_v, protocol::encode(r));
    }
  }
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<caf::actor> all;
  auto decode_leaders = std::make_shared<std::vector<caf::actor>>();
  for (uint32_t n = prefill_nodes; n < prefill_nodes + decode_nodes; ++n)
    decode_leaders->push_back(sys.spawn(decode_leader, scheduler, n, shared));
  all = *decode_leaders;
  all.push_back(sys.spawn(submitter, scheduler, requests, o.in_flight));
  for (uint32_t n = 0; n < prefill_nodes; ++n)
    all.push_back(sys.spawn(prefill_leader, scheduler, n, decode_leaders, prefill_nodes, shared));

  const bool ok = finished.wait_for(std::chrono::duration<double>(o.timeout_s)) == std::future_status::ready;
  one_run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = cpu_seconds() - cpu0;
  r.fetches = shared->fetches;
  r.empty_fetches = shared->empty_fetches;
  r.reports = shared->reports;
  for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
  if (!ok)
    throw std::runtime_error(fmt::format("bench schedule --actor: {} of {} requests assigned after {} s",
                                         shared->assigned.load(), o.requests, o.timeout_s));
  return r;
}

}  // namespace

schedule_actor_bench_result run_schedule_actor_bench(const schedule_actor_bench_options& o) {
  if (o.engines < 3 * engines_per_node)
    throw user_error(
        fmt::format("bench schedule --actor: --engines must be at least {}, got {}", 3 * engines_per_node, o.engines));
  if (o.requests == 0) throw user_error("bench schedule --actor: --requests must be positive");
  if (o.repeats == 0) throw user_error("bench schedule --actor: --repeats must be positive");
  if (o.in_flight == 0) throw user_error("bench schedule --actor: --in-flight must be positive");
  if (!(o.timeout_s > 0)) throw user_error("bench schedule --actor: --timeout must be positive");
  sch::make_policy(o.policy);  // unknown name: user_error with the known names
  const uint32_t nodes = o.engines / engines_per_node;
  schedule_actor_bench_result res;
  res.policy = o.policy;
  res.engines = nodes * engines_per_node;
  res.prefill_nodes = std::max<uint32_t>(1, nodes / 3);
  res.decode_nodes = nodes - res.prefill_nodes;
  res.requests = o.requests;
  std::vector<one_run> runs;
  for (uint32_t i = 0; i < o.repeats; ++i) runs.push_back(run_once(o, res.prefill_nodes, res.decode_nodes));
  std::sort(runs.begin(), runs.end(), [](const one_run& a, const one_run& b) { return a.seconds < b.seconds; });
  const one_run& med = runs[runs.size() / 2];
  res.assignments_per_s = double(o.requests) / med.seconds;
  res.cpu_us_per_assignment = med.cpu * 1e6 / double(o.requests);
  res.fetches = med.fetches;
  res.empty_fetches = med.empty_fetches;
  res.reports = med.reports;
  return res;
}

std::string schedule_actor_bench_result::to_json() const {
  nlohmann::ordered_json j;
  j["policy"] = policy;
  j["engines"] = engines;
  j["prefill_nodes"] = prefill_nodes;
  j["decode_nodes"] = decode_nodes;
  j["requests"] = requests;
  j["assignments_per_s"] = assignments_per_s;
  j["goal_assignments_per_s"] = 100000;
  j["cpu_us_per_assignment"] = cpu_us_per_assignment;
  j["fetches"] = fetches;
  j["empty_fetches"] = empty_fetches;
  j["reports"] = reports;
  return j.dump(2) + "\n";
}

std::string schedule_actor_bench_result::to_text() const {
  return fmt::format(
      "scheduler actor, policy {}: {} engines ({} prefill + {} decode nodes of 8), {} requests\n"
      "  {:.0f} assignments/s (goal ≥ 100000; median run), {:.2f} µs of process CPU per assignment\n"
      "  {} fetches ({} empty), {} reports\n",
      policy, engines, prefill_nodes, decode_nodes, requests, assignments_per_s, cpu_us_per_assignment, fetches,
      empty_fetches, reports);
}

}  // namespace dualpath::cli
