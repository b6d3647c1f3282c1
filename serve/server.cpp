#include "serve/server.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <optional>
#include <thread>

#include "actors/serve_client.hpp"
#include "observe/serve_metrics.hpp"
#include "serve/answer.hpp"
#include "serve/answer_check.hpp"
#include "serve/served_report.hpp"
#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
#include "api/responses.hpp"
#include "cluster/calibration.hpp"
#include "cluster/cluster.hpp"
#include "cluster/embedded.hpp"
#include "cluster/node_events.hpp"
#include "cluster/node_processes.hpp"
#include "core/stop_signals.hpp"
#include "observe/http_listener.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "protocol/system_config.hpp"
#include "serve/served_model.hpp"

namespace dualpath::serve {

namespace {

using ojson = nlohmann::ordered_json;

api::api_error model_not_found(const std::string& asked, const std::string& served) {
  return {404, "model '" + asked + "' does not exist; this server serves '" + served + "'", std::string("model"),
          "model_not_found"};
}

bool loopback(const std::string& host) { return host.rfind("127.", 0) == 0; }

// docs/design.md §18: "Authorization: Bearer KEY" on every request once a key is set; compared in constant time.
bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string got = req.get_header_value("Authorization");
  const std::string want = "Bearer " + key;
  if (got.size() != want.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff |= uint8_t(got[i] ^ want[i]);
  return diff == 0;
}

// A node's gauges a cancelled request must give back: its free buffer slots and each of its engines' free HBM
// (by local index; engine ids are node * engines_per_node + local).
void set_buffers(observe::serve_metrics& m, uint32_t node, uint32_t slots_free, uint32_t slots_total,
                 const std::vector<uint64_t>& hbm_free, uint32_t engines_per_node) {
  m.set_free_slots(node, slots_free, slots_total);
  for (uint32_t l = 0; l < hbm_free.size(); ++l) m.set_free_hbm(node * engines_per_node + l, hbm_free[l]);
}

// An embedded cluster's data planes, read when /metrics is asked (node processes report theirs: node_watch).
void sample_embedded_buffers(observe::serve_metrics& m, const std::vector<std::unique_ptr<runtime::node_io>>& ios,
                             uint32_t engines_per_node) {
  for (const auto& io : ios) {
    const auto st = io->stats();
    set_buffers(m, io->node(), st.slots_free, st.slots_total, io->hbm_free(), engines_per_node);
  }
}

// Each node's turns in flight and SNIC read queue, as the scheduler sees them when /metrics is asked (a short
// deadline: a busy scheduler leaves the last sample).
void sample_scheduler(caf::actor_system& sys, const actors::cluster_view& view, observe::serve_metrics& m) {
  caf::scoped_actor self{sys};
  self->request(view.scheduler, std::chrono::milliseconds(200), atom::stats_v)
      .receive(
          [&](const protocol::envelope<schema::SchedulerStats>& e) {
            for (const auto& n : protocol::decode(e).nodes) m.set_node_load(n.node.node, n.in_flight, n.node.read_q);
          },
          [](caf::error&) {});
}

// Node processes lost and joined again while serving (docs/design.md §13): the scheduler stops sending work to
// a lost node and takes it back once it rejoins.
struct node_watch {
  caf::scoped_actor self;
  const actors::cluster_view& view;
  cluster::node_processes* nodes;  // none: an embedded cluster
  observe::serve_metrics& metrics;
  std::vector<std::pair<uint32_t, std::string>> lost;
  uint32_t losses = 0;
  std::chrono::steady_clock::time_point next_sample{};
  node_watch(caf::actor_system& sys, const actors::cluster_view& v, cluster::node_processes* n,
             observe::serve_metrics& m)
      : self(sys), view(v), nodes(n), metrics(m) {}

  void poll() {
    if (!nodes) return;
    for (auto& [node, how] : nodes->poll_lost()) {
      spdlog::warn("serve: {}; going on without node {}", how, node);
      metrics.count_node("lost");
      lost.emplace_back(node, how);
      nodes->announce_lost(node);
      if (const auto why = cluster::without_nodes(view, lost); !why.empty())
        spdlog::error("serve: {}: requests fail until a node of that role rejoins", why);
      if (auto s = cluster::tell_lost(self, view, node, ++losses); !s) spdlog::error("serve: {}", s.message());
    }
    for (const uint32_t node : nodes->poll_rejoined()) {
      lost.erase(std::remove_if(lost.begin(), lost.end(), [&](const auto& l) { return l.first == node; }), lost.end());
      if (auto s = cluster::tell_rejoined(self, view, node); !s) spdlog::error("serve: {}", s.message());
      else spdlog::info("serve: node {} rejoined", node);
      metrics.count_node("rejoined");
    }
    sample_buffers();
  }

  // The node processes' free slots and HBM into /metrics every 2 s (asked from this thread, which owns `nodes`).
  void sample_buffers() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_sample) return;
    next_sample = now + std::chrono::seconds(2);
    const auto all = nodes->buffers();
    if (!all) return spdlog::debug("serve: {}", all.error().message());
    for (const auto& n : all.value())
      set_buffers(metrics, n.node, n.slots_free, n.slots_total, n.hbm_free, view.config.engines_per_node);
  }
};

}  // namespace

serve_summary run_server(const serve_options& o) {
  const run_mode mode = run_mode_of(o.policy);
  if (mode.bypass()) throw user_error("serve: the oracle policy is for experiments; serve with another policy");
  observe::check_ipv4(o.host, "serve --listen");  // before the cluster is built, not after
  if (!loopback(o.host) && o.api_key.empty())
    throw user_error("serve --listen " + o.host + ": serving beyond loopback needs an API key (--api-key or " +
                     "DUALPATH_API_KEY)");
  const auto& c = o.config;
  if (o.processes) cluster::check_processes(c, mode, o.node_program, o.node_registry);
  const std::string secret = cluster::launch_secret(c, o.processes, o.node_registry, false);
  const cluster::run_base base = cluster::prepare_run(c, "cluster configuration");
  const served_model model = load_served_model(c.model, o.chat_template, base.spec.vocab);
  std::optional<answer_checker> checker;
  if (o.verify) checker.emplace(base.backend_options);
  std::vector<std::unique_ptr<runtime::node_io>> ios;  // node processes build their own
  if (!o.processes) ios = cluster::embedded_data_planes(base, c, mode);
  const cluster::on_exit stop_nodes_first{[&] {
    for (auto& io : ios) io->stop();
  }};
  protocol::system_config cfg;
  caf::actor_system sys{cfg};
  auto view = cluster::make_view(base, c, mode, o.processes);
  actors::scheduler_options sched;
  sched.policy = mode.scheduler_policy;
  sched.params = cluster::scheduler_params(base, c, mean_turn{}, mode);
  sched.charge_expiry_s = 4 * c.timeout_s;
  view->scheduler = actors::spawn_scheduler(sys, sched);
  std::vector<caf::actor> all{caf::actor_cast<caf::actor>(view->scheduler)};
  observe::serve_metrics metrics;
  const uint32_t clients = o.clients ? o.clients : c.serve_max_requests;
  const uint32_t waiting = std::min(clients, c.serve_max_waiting ? c.serve_max_waiting : clients);
  serving_context ctx(sys, model, *view, {clients, waiting, c.serve_max_queued_tokens});
  ctx.request_timeout_s = o.request_timeout_s;
  ctx.max_tokens_cap = o.max_tokens_cap;
  ctx.started = int64_t(std::time(nullptr));
  ctx.metrics = &metrics;
  if (checker) ctx.checker = &*checker;
  // The answers' ids live beside the blocks they keyed, so a server started again on this store finds both.
  const std::string answers_file = c.store_dir + "/serve-answers.json";
  if (const auto loaded = ctx.answers.load(answers_file); !loaded && loaded.code() != errc::not_found)
    spdlog::warn("serve: the answers' ids are not taken from {}", loaded.message());
  served_report report(o.report_file.empty() ? 0 : 1'000'000);  // without --report, only the count
  ctx.report = &report;
  for (uint32_t i = 0; i < clients; ++i) {
    ctx.clients.push_back(actors::spawn_serve_client(sys, view, i));
    view->clients.push_back(caf::actor_cast<actors::client_actor>(ctx.clients.back()));
    all.push_back(caf::actor_cast<caf::actor>(ctx.clients.back()));
  }
  const cluster::on_exit stop_actors{[&] {
    for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }};
  std::vector<std::shared_ptr<runtime::ep_rounds>> ep;
  std::unique_ptr<cluster::node_processes> nodes;  // stopped before the actors above
  if (o.processes)
    nodes = std::make_unique<cluster::node_processes>(
        sys, *view, cluster::node_launch{o.node_program, o.node_registry, o.on_registry, secret});
  else cluster::spawn_embedded_nodes(sys, base, view, ios, ep, all);
  node_watch watch{sys, *view, nodes.get(), metrics};

  const api::request_limits limits{o.max_tokens_default, o.max_tokens_limit};
  httplib::Server http;
  http.new_task_queue = [n = clients + 4] { return new httplib::ThreadPool(n); };
  http.set_payload_max_length(4 << 20);
  // A stream is many small writes (a chunk a token, then the usage and [DONE]): without TCP_NODELAY each
  // write after the first waits for the client's delayed ACK, up to 40 ms at the end of every answer.
  http.set_tcp_nodelay(true);
  http.set_read_timeout(10, 0);
  http.set_write_timeout(10, 0);
  if (!o.api_key.empty())
    http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
      if (authorized(req, o.api_key)) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res,
                 {401, "a valid API key is required (Authorization: Bearer ...)", std::nullopt, "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    });
  http.set_logger(
      [&](const httplib::Request& req, const httplib::Response& res) { metrics.count_response(req.path, res.status); });
  http.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    if (ctx.draining) send_json(res, 503, {{"status", "draining"}});
    else send_json(res, 200, {{"status", "ok"}});
  });
  http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    metrics.set_running(ctx.admit.running(), clients);
    sample_embedded_buffers(metrics, ios, c.engines_per_node);
    sample_scheduler(sys, *view, metrics);
    if (checker) {
      const auto n = checker->counts();
      metrics.set_verified(n.verified, n.mismatched, n.skipped);
    }
    res.set_content(metrics.text(), "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"object", "list"},
               {"data", ojson::array({{{"id", model.name},
                                       {"object", "model"},
                                       {"created", ctx.started},
                                       {"owned_by", "dualpath"},
                                       {"vocab_size", view->vocab}}})}});
  });

  // A conversation (chat completions, or responses): rendered by the family's template and answered.
  const auto serve_conversation = [&](const httplib::Request& req, httplib::Response& res,
                                      std::variant<api::chat_request, api::api_error> parsed, api_kind kind) {
    if (auto* e = std::get_if<api::api_error>(&parsed)) return send_error(res, *e);
    auto& chat = std::get<api::chat_request>(parsed);
    if (chat.model != model.name) return send_error(res, model_not_found(chat.model, model.name));
    chat.prompt.bos_token = model.bos_token;
    const auto ids = encode_conversation(model, chat.prompt, ctx.answers);
    const char* field = kind == api_kind::responses ? "input" : "messages";
    if (!ids) return send_error(res, api::bad_field(field, ids.error().message()));
    answer_turn(ctx, req, res, {kind, chat.model, ids.value(), chat.gen, uint32_t(chat.prompt.tools.size())});
  };
  http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    serve_conversation(req, res, api::parse_chat_request(req.body, limits), api_kind::chat);
  });
  http.Post("/v1/responses", [&](const httplib::Request& req, httplib::Response& res) {
    serve_conversation(req, res, api::parse_responses_request(req.body, limits), api_kind::responses);
  });
  http.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    auto parsed = api::parse_completion_request(req.body, limits);
    if (auto* e = std::get_if<api::api_error>(&parsed)) return send_error(res, *e);
    auto& cr = std::get<api::completion_request>(parsed);
    if (cr.model != model.name) return send_error(res, model_not_found(cr.model, model.name));
    std::vector<int32_t> ids = cr.ids;
    if (!cr.given_as_ids) {
      auto encoded = model.tokenizer.encode(cr.text);
      if (!encoded) return send_error(res, api::bad_field("prompt", encoded.error().message()));
      ids = std::move(encoded.value());
    }
    answer_turn(ctx, req, res, {api_kind::text, cr.model, std::move(ids), cr.gen, 0, cr.return_token_ids});
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 404   ? "no route " + req.method + " " + req.path
                             : res.status == 413 ? "the body is larger than 4 MiB"
                                                 : "the request was refused";
    send_error(res, {res.status, what, std::nullopt, res.status == 404 ? "not_found" : "invalid_request"});
  });

  std::optional<observe::http_listener> listener;
  listener.emplace(http, o.host, o.port, "serve --listen", "the OpenAI API");
  spdlog::info("serve: {} on http://{}:{}/v1 ({} clients, policy {})", model.name, o.host, listener->port(), clients,
               o.policy);
  if (o.on_listening) o.on_listening(listener->port());
  while (!stop_requested()) {
    sleep_unless_stopped(std::chrono::milliseconds(200));
    watch.poll();
  }
  // docs/design.md §18: no new requests (503), those in flight answered within the drain bound, then exit.
  ctx.draining = true;
  spdlog::info("serve: stopping (signal {}): no new requests, answering those in flight", stop_requested());
  const auto drain_until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.drain_s);
  while (ctx.admit.running() > 0 && std::chrono::steady_clock::now() < drain_until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (ctx.admit.running() > 0)
    spdlog::warn("serve: {} requests still in flight after {} s; cancelled", ctx.admit.running(), o.drain_s);
  listener.reset();
  if (const auto saved = ctx.answers.save(answers_file); !saved) spdlog::warn("serve: {}", saved.message());
  if (nodes)
    if (const auto stopped = nodes->stop(); !stopped) spdlog::warn("serve: {}", stopped.message());
  serve_summary out;
  if (checker) {
    checker->settle(std::chrono::milliseconds(500));
    const auto n = checker->counts();
    out.verified = n.verified;
    out.mismatched = n.mismatched;
    out.unchecked = n.skipped;
  }
  out.requests = report.answered();
  if (!o.report_file.empty()) {
    auto j = report.json(o.policy, c.prefill_nodes);
    if (checker) {
      j["runs"][0]["verified_turns"] = out.verified + out.mismatched;
      j["runs"][0]["mismatched_turns"] = out.mismatched;
    }
    std::ofstream file(o.report_file, std::ios::trunc);
    file << j.dump(2) << "\n";
    if (!file) spdlog::error("serve --report {}: cannot write the report", o.report_file);
  }
  return out;
}

}  // namespace dualpath::serve
