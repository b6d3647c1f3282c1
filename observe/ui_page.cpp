#include "observe/ui_page.hpp"
#include "protocol/errors.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>

#include "core/secret.hpp"
#include "schedule/policy.hpp"
#include "ui_page_html.hpp"  // generated from observe/ui/page.html (observe/CMakeLists.txt)

namespace dualpath::observe {

using namespace dualpath::protocol;
using namespace dualpath::report;

double eta_seconds(uint64_t done, uint64_t total, double elapsed_s) {
  if (done == 0 || total == 0 || done >= total) return 0;
  const double frac = double(done) / double(total);
  return elapsed_s * (1 - frac) / frac;
}

std::string to_json(const ui_state& s) {
  using json = nlohmann::ordered_json;  // keys in the order written: /state reads as documented
  json nodes = json::array();
  for (const auto& n : s.nodes) {
    json engines = json::array();
    for (const auto& e : n.engines)
      engines.push_back({{"engine", e.engine}, {"seq", e.seq}, {"tok", e.tok}, {"free_hbm", e.free_hbm}});
    nodes.push_back({{"node", n.node},
                     {"role", n.prefill ? "prefill" : "decode"},
                     {"read_bytes_per_s", n.read_bytes_per_s},
                     {"read_bytes", n.read_bytes},
                     {"read_q", n.read_q},
                     {"in_flight", n.in_flight},
                     {"engines", engines}});
  }
  json j = {{"run", s.run},
            {"policy", s.policy},
            {"policies", s.policies},
            {"running", s.running},
            {"secret_required", s.secret_required},
            {"turns", {{"done", s.turns_done}, {"total", s.turns_total}, {"failed", s.failed_turns}}},
            {"elapsed_s", s.elapsed_s},
            {"eta_s", eta_seconds(s.turns_done, s.turns_total, s.elapsed_s)},
            {"waiting", s.waiting},
            {"ttft_s", {{"count", s.ttft_count}, {"p50", s.ttft.p50}, {"p90", s.ttft.p90}, {"p99", s.ttft.p99}}},
            {"paths", {{"pe", s.path_pe}, {"de", s.path_de}, {"split", s.path_split}}},
            {"snic_cap_bytes_per_s", s.snic_cap_bytes_per_s},
            {"refused_posts", s.refused_posts},
            {"nodes", nodes}};
  if (!s.last_switch_name.empty())
    j["last_switch"] = {{"policy", s.last_switch_name},
                        {"ok", s.last_switch.ok},
                        {"active", s.last_switch.active},
                        {"message", s.last_switch.message}};
  return j.dump();
}

struct ui_page::impl {
  std::string secret;
  mutable std::mutex mu;  // the state: the launcher's thread writes, the server's thread reads
  ui_state s;
  std::vector<double> ttfts;
  std::vector<std::pair<uint64_t, std::chrono::steady_clock::time_point>> last_snic;  // per node
  std::mutex set_mu;  // held while a switch is in flight, so detaching waits for it
  policy_setter set;
  std::unique_ptr<http_server> server;  // last: stopped first, while what it reads still exists
};

ui_page::ui_page(const std::string& host, uint16_t port, std::string secret) : impl_(std::make_unique<impl>()) {
  impl_->secret = std::move(secret);
  impl_->s.secret_required = !impl_->secret.empty();
  impl_->s.policies = schedule::policy_names();
  impl_->server = std::make_unique<http_server>(host, port, "--ui-port", "the cluster page",
                                                [this](const http_request& req) { return handle(req); });
}

ui_page::~ui_page() { impl_->server.reset(); }

uint16_t ui_page::port() const { return impl_->server->port(); }

ui_page::attachment ui_page::begin_run(const cluster_config& c, const std::string& run_policy, uint64_t turns_total,
                                       policy_setter set) {
  {
    std::lock_guard<std::mutex> lock(impl_->set_mu);
    impl_->set = std::move(set);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  ui_state& s = impl_->s;
  ui_state fresh;
  fresh.run = run_policy;
  fresh.turns_total = turns_total;
  fresh.running = true;
  fresh.secret_required = s.secret_required;
  fresh.policies = s.policies;
  fresh.refused_posts = s.refused_posts;  // refusals count over the page's life, like the control port's
  fresh.snic_cap_bytes_per_s = c.snic_gb_per_s * 1e9;
  for (uint32_t n = 0; n < c.total_nodes(); ++n) {
    ui_node node;
    node.node = n;
    node.prefill = n < c.prefill_nodes;
    for (uint32_t e = 0; e < c.engines_per_node; ++e) node.engines.push_back({n * c.engines_per_node + e, 0, 0, 0});
    fresh.nodes.push_back(node);
  }
  s = std::move(fresh);
  impl_->ttfts.clear();
  impl_->last_snic.assign(c.total_nodes(), {0, std::chrono::steady_clock::now()});
  return attachment(this);
}

ui_page::attachment::~attachment() {
  if (!page_) return;
  {
    std::lock_guard<std::mutex> lock(page_->impl_->set_mu);
    page_->impl_->set = nullptr;
  }
  std::lock_guard<std::mutex> lock(page_->impl_->mu);
  page_->impl_->s.running = false;
}

void ui_page::observe_turn(const report::turn_record& r) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  ui_state& s = impl_->s;
  ++s.turns_done;
  if (!r.error.empty()) {
    ++s.failed_turns;  // counted, not in the distributions (§15)
    return;
  }
  impl_->ttfts.push_back(r.ttft_s);
  switch (r.path) {
    case schedule::read_path::pe: ++s.path_pe; break;
    case schedule::read_path::de: ++s.path_de; break;
    case schedule::read_path::split: ++s.path_split; break;
  }
}

void ui_page::update(const report::run_progress& p, double elapsed_s,
                     const std::optional<protocol::scheduler_counters>& stats, const std::vector<snic_sample>& snics) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(impl_->mu);
  ui_state& s = impl_->s;
  s.turns_done = p.turns_done;
  s.turns_total = p.turns_total;
  s.elapsed_s = elapsed_s;
  for (size_t n = 0; n < snics.size() && n < s.nodes.size(); ++n) {
    // The rate over at least a second: reads come in bursts, and a shorter window flickers between 0 and peaks.
    auto& [bytes, at] = impl_->last_snic[n];
    const double dt = std::chrono::duration<double>(now - at).count();
    if (dt >= 1.0) {
      s.nodes[n].read_bytes_per_s = double(snics[n].read_bytes > bytes ? snics[n].read_bytes - bytes : 0) / dt;
      bytes = snics[n].read_bytes;
      at = now;
    }
    s.nodes[n].read_bytes = snics[n].read_bytes;
    s.nodes[n].read_q = snics[n].read_q;
  }
  if (!stats) return;
  s.policy = stats->policy;
  s.waiting = stats->waiting;
  for (const auto& l : stats->nodes) {
    if (l.node.node >= s.nodes.size()) continue;
    ui_node& n = s.nodes[l.node.node];
    n.in_flight = l.in_flight;
    if (snics.size() <= l.node.node) n.read_q = l.node.read_q;  // the scheduler's view of a remote node
    n.engines.clear();
    for (const auto& e : l.node.engines) n.engines.push_back({e.engine, e.seq, e.tok, e.free_hbm});
  }
}

ui_state ui_page::state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  ui_state s = impl_->s;
  s.ttft = summarize(impl_->ttfts);
  s.ttft_count = impl_->ttfts.size();
  return s;
}

http_response ui_page::handle(const http_request& req) {
  http_response r;
  if (req.method == "GET" && (req.path == "/" || req.path == "/index.html")) {
    r.content_type = "text/html; charset=utf-8";
    r.body = ui_page_html;
  } else if (req.method == "GET" && req.path == "/state") {
    r.content_type = "application/json";
    r.body = to_json(state());
  } else if (req.path == "/policy") {
    // JSON only: a cross-site form cannot send it without the browser asking first (a CORS preflight this
    // server never grants), so another page open in the user's browser cannot switch the policy.
    if (req.method == "POST" && req.content_type.rfind("application/json", 0) == 0) return post_policy(req.body);
    if (req.method == "POST") {
      r.status = 400;
      r.body = "POST /policy takes Content-Type: application/json\n";
      return r;
    }
    r.status = 405;
    r.body = "POST {\"policy\": NAME, \"secret\": S} here\n";
  } else {
    r.status = 404;
    r.body = "the page is at /, its state at /state\n";
  }
  return r;
}

// The control port's guard (docs/design.md §13): the secret typed into the page is turned into the control
// proof and compared with the expected one in constant time; a refusal is logged (never the secret) and
// counted. The switch itself is the scheduler's `policy set`, as `dualpath ctl policy set` sends it.
http_response ui_page::post_policy(const std::string& body) {
  http_response r;
  r.content_type = "application/json";
  auto answer = [&](int status, const nlohmann::json& j) {
    r.status = status;
    r.body = j.dump();
    return r;
  };
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("policy") || !j["policy"].is_string())
    return answer(400, {{"ok", false}, {"message", "POST {\"policy\": NAME, \"secret\": S}"}});
  const std::string name = j["policy"].get<std::string>();
  const std::string given = j.contains("secret") && j["secret"].is_string() ? j["secret"].get<std::string>() : "";
  if (!impl_->secret.empty() && !proof_matches(secret_proof(impl_->secret, secret_purpose::control),
                                               secret_proof(given, secret_purpose::control))) {
    uint64_t n = 0;
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      n = ++impl_->s.refused_posts;
    }
    spdlog::warn("cluster page: refused 'policy set {}': wrong cluster secret ({} refused so far)", name, n);
    return answer(403, {{"ok", false}, {"message", "wrong cluster secret"}});
  }
  policy_status st;
  {
    std::lock_guard<std::mutex> lock(impl_->set_mu);
    if (!impl_->set) return answer(503, {{"ok", false}, {"message", "no run is in progress"}});
    st = impl_->set(name);
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->s.last_switch = st;
    impl_->s.last_switch_name = name;
  }
  return answer(st.ok ? 200 : 400, {{"ok", st.ok}, {"active", st.active}, {"message", st.message}});
}

ui_page::policy_setter scheduler_policy_setter(caf::actor_system& sys, const protocol::scheduler_actor& scheduler,
                                               std::chrono::milliseconds timeout) {
  return [&sys, scheduler, timeout](const std::string& name) {
    policy_status st;
    st.message = "the scheduler did not answer";
    {
      caf::scoped_actor self{sys};
      self->request(scheduler, timeout, atom::policy_v, atom::set_v, name)
          .receive([&](const envelope<schema::PolicyStatus>& e) { st = decode(e); },
                   [&](const caf::error& e) { st.message = "the scheduler did not answer: " + describe(e); });
    }
    // A scoped actor leaves this thread holding the system's logger (thread-local), and the actor system's
    // destructor waits for the logger to go: the server's thread outlives the run, so it lets go here.
    caf::logger::set_current_actor_system(nullptr);
    return st;
  };
}

}  // namespace dualpath::observe
