#include "serve/server.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <mutex>
#include <optional>

#include "actors/serve_client.hpp"
#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/completion_request.hpp"
#include "api/responses.hpp"
#include "cluster/calibration.hpp"
#include "cluster/embedded.hpp"
#include "core/stop_signals.hpp"
#include "observe/http_listener.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/system_config.hpp"
#include "serve/served_model.hpp"
#include "text/utf8.hpp"

namespace dualpath::serve {

namespace {

using ojson = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const ojson& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const api::api_error& e) {
  if (e.http_status == 429) res.set_header("Retry-After", "1");
  send_json(res, e.http_status, ojson(e.body()));
}

// The serving clients not answering a request now. A request finds one at once or is answered 429: the
// cluster's own queue is the scheduler's, bounded by the pool's size.
class client_pool {
 public:
  explicit client_pool(uint32_t n) {
    for (uint32_t i = n; i-- > 0;) free_.push_back(i);
  }
  std::optional<uint32_t> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return std::nullopt;
    const uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }
  void give(uint32_t i) {
    std::lock_guard lock(mutex_);
    free_.push_back(i);
  }

 private:
  std::mutex mutex_;
  std::vector<uint32_t> free_;
};

// What a request's turn gave, as the API's answer: cut at the end-of-turn token, whole characters, cut at a
// stop string, tool calls taken out.
api::chat_answer answer_of(const served_model& m, const api::generation& gen, bool tools,
                           const protocol::turn_result& r, uint32_t block_tokens) {
  api::chat_answer a;
  a.prompt_tokens = r.prompt_tokens;
  a.cached_tokens = std::min(r.valid_hit_blocks * block_tokens, r.prompt_tokens);
  // The answer ends before the first special token (the end of the turn), which is counted but not text.
  const auto end =
      std::find_if(r.generated.begin(), r.generated.end(), [&](int32_t id) { return m.tokenizer.is_special(id); });
  const bool ended = end != r.generated.end();
  const std::vector<int32_t> kept(r.generated.begin(), end);
  a.completion_tokens = uint32_t(kept.size() + (ended ? 1 : 0));
  text::utf8_stream whole;
  std::string content = whole.push(m.tokenizer.decode(kept));
  content += whole.finish();
  auto [cut, stopped] = api::cut_at_stop(content, gen.stop);
  a.content = std::move(cut);
  a.finish_reason = ended || stopped ? "stop" : "length";
  if (tools) {
    auto parsed = text::parse_answer(m.family, a.content);
    if (!parsed.tool_calls.empty()) {
      a.content = std::move(parsed.content);
      a.tool_calls = std::move(parsed.tool_calls);
      a.finish_reason = "tool_calls";
    }
  }
  return a;
}

api::api_error model_not_found(const std::string& asked, const std::string& served) {
  return {404, "model '" + asked + "' does not exist; this server serves '" + served + "'", std::string("model"),
          "model_not_found"};
}

}  // namespace

void run_server(const serve_options& o) {
  const run_mode mode = run_mode_of(o.policy);
  if (mode.bypass()) throw user_error("serve: the oracle policy is for experiments; serve with another policy");
  observe::check_ipv4(o.host, "serve --listen");  // before the cluster is built, not after
  const auto& c = o.config;
  const cluster::run_base base = cluster::prepare_run(c, "cluster configuration");
  const served_model model = load_served_model(c.model, o.chat_template, base.spec.vocab);
  auto ios = cluster::embedded_data_planes(base, c, mode);
  const cluster::on_exit stop_nodes_first{[&] {
    for (auto& io : ios) io->stop();
  }};
  protocol::system_config cfg;
  caf::actor_system sys{cfg};
  auto view = cluster::make_view(base, c, mode);
  actors::scheduler_options sched;
  sched.policy = mode.scheduler_policy;
  sched.params = cluster::scheduler_params(base, c, mean_turn{}, mode);
  sched.charge_expiry_s = 4 * c.timeout_s;
  view->scheduler = actors::spawn_scheduler(sys, sched);
  std::vector<caf::actor> all{caf::actor_cast<caf::actor>(view->scheduler)};
  std::vector<actors::serve_client_actor> clients;
  for (uint32_t i = 0; i < o.clients; ++i) {
    clients.push_back(actors::spawn_serve_client(sys, view, i));
    view->clients.push_back(caf::actor_cast<actors::client_actor>(clients.back()));
    all.push_back(caf::actor_cast<caf::actor>(clients.back()));
  }
  const cluster::on_exit stop_actors{[&] {
    for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }};
  std::vector<std::shared_ptr<runtime::ep_rounds>> ep;
  cluster::spawn_embedded_nodes(sys, base, view, ios, ep, all);

  client_pool pool(o.clients);
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> serial{0};
  const api::request_limits limits{o.max_tokens_default, o.max_tokens_limit};
  const int64_t started = int64_t(std::time(nullptr));

  httplib::Server http;
  http.new_task_queue = [n = o.clients + 2] { return new httplib::ThreadPool(n); };
  http.set_payload_max_length(4 << 20);
  http.set_read_timeout(10, 0);
  http.set_write_timeout(10, 0);
  http.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    if (draining) send_json(res, 503, {{"status", "draining"}});
    else send_json(res, 200, {{"status", "ok"}});
  });
  http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    send_json(
        res, 200,
        {{"object", "list"},
         {"data",
          ojson::array({{{"id", model.name}, {"object", "model"}, {"created", started}, {"owned_by", "dualpath"}}})}});
  });
  // A prompt's ids as one turn of a free serving client: its result, or the API error that answers instead.
  const auto run_turn = [&](const std::vector<int32_t>& ids,
                            uint32_t gen) -> std::variant<protocol::turn_result, api::api_error> {
    if (draining) return api::api_error{503, "the server is shutting down", std::nullopt, "draining"};
    for (const int32_t id : ids)
      if (uint32_t(id) >= view->vocab)
        return api::bad_field("prompt",
                              fmt::format("token id {} is past the model's vocabulary ({})", id, view->vocab));
    // Refused here as the client's 400, before a serving client is taken (submit_turn would fail it as a 503).
    if (!view->fits_decode_engine(schedule::make_request_info(0, ids.size(), gen, 0, view->geometry).kv_bytes))
      return api::bad_field("messages",
                            fmt::format("the prompt ({} tokens) and max_tokens ({}) need more KV than a decode "
                                        "engine holds",
                                        ids.size(), gen),
                            "context_length_exceeded");
    const auto slot = pool.take();
    if (!slot) return api::api_error{429, "every serving client is busy; retry", std::nullopt, "busy"};
    protocol::turn_payload ask;
    ask.tokens = ids;
    ask.gen = gen;
    std::optional<protocol::turn_result> result;
    std::string failure;
    {
      caf::scoped_actor self{sys};
      const auto wait = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(o.request_timeout_s));
      self->request(clients[*slot], wait, atom::ask_v, encode(ask))
          .receive([&](const protocol::envelope<schema::TurnResult>& e) { result = decode(e); },
                   [&](caf::error& err) { failure = protocol::describe(err); });
    }
    pool.give(*slot);
    if (!result || !result->error.empty())
      return api::api_error{503, "the cluster did not answer: " + (result ? result->error : failure), std::nullopt,
                            "cluster_error"};
    return *std::move(result);
  };
  // The answer of a finished turn, named and logged: `kind` is the id's prefix (chatcmpl, cmpl).
  const auto answer_for = [&](const char* kind, const std::string& asked_as, const api::generation& gen, bool tools,
                              const protocol::turn_result& r) {
    auto a = answer_of(model, gen, tools, r, view->geometry.block_tokens);
    a.model = asked_as;
    a.id = fmt::format("{}-{:x}{:04x}", kind, started, serial++);
    a.created = int64_t(std::time(nullptr));
    spdlog::info("serve: {} prompt {} cached {} generated {} ({} path)", a.id, a.prompt_tokens, a.cached_tokens,
                 a.completion_tokens, schedule::to_string(r.path));
    return a;
  };
  const auto send_stream = [](httplib::Response& res, const std::vector<std::string>& events) {
    std::string body;
    for (const auto& e : events) body += e;
    res.status = 200;
    res.set_header("Cache-Control", "no-store");
    res.set_content(body, "text/event-stream");
  };

  // A conversation (chat completions, or responses when `responses`): rendered, run, answered in its API's shape.
  const auto serve_conversation = [&](httplib::Response& res, std::variant<api::chat_request, api::api_error> parsed,
                                      bool responses) {
    if (auto* e = std::get_if<api::api_error>(&parsed)) return send_error(res, *e);
    auto& chat = std::get<api::chat_request>(parsed);
    if (chat.model != model.name) return send_error(res, model_not_found(chat.model, model.name));
    chat.prompt.bos_token = model.bos_token;
    const auto ids = model.tokenizer.encode(text::render_chat(model.family, chat.prompt));
    if (!ids) return send_error(res, api::bad_field(responses ? "input" : "messages", ids.error().message()));
    auto turn = run_turn(ids.value(), chat.gen.max_tokens);
    if (auto* e = std::get_if<api::api_error>(&turn)) return send_error(res, *e);
    const auto answer = answer_for(responses ? "resp" : "chatcmpl", chat.model, chat.gen, !chat.prompt.tools.empty(),
                                   std::get<protocol::turn_result>(turn));
    if (!chat.gen.stream)
      return send_json(res, 200, responses ? api::response_json(answer) : api::completion_json(answer));
    send_stream(res, responses ? api::response_events(answer) : api::stream_events(answer, chat.gen.include_usage));
  };
  http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    serve_conversation(res, api::parse_chat_request(req.body, limits), false);
  });
  http.Post("/v1/responses", [&](const httplib::Request& req, httplib::Response& res) {
    serve_conversation(res, api::parse_responses_request(req.body, limits), true);
  });
  http.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    auto parsed = api::parse_completion_request(req.body, limits);
    if (auto* e = std::get_if<api::api_error>(&parsed)) return send_error(res, *e);
    auto& c = std::get<api::completion_request>(parsed);
    if (c.model != model.name) return send_error(res, model_not_found(c.model, model.name));
    std::vector<int32_t> ids = c.ids;
    if (!c.given_as_ids) {
      auto encoded = model.tokenizer.encode(c.text);
      if (!encoded) return send_error(res, api::bad_field("prompt", encoded.error().message()));
      ids = std::move(encoded.value());
    }
    auto turn = run_turn(ids, c.gen.max_tokens);
    if (auto* e = std::get_if<api::api_error>(&turn)) return send_error(res, *e);
    const auto answer = answer_for("cmpl", c.model, c.gen, false, std::get<protocol::turn_result>(turn));
    if (!c.gen.stream) return send_json(res, 200, api::text_completion_json(answer));
    send_stream(res, api::text_stream_events(answer, c.gen.include_usage));
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
  spdlog::info("serve: {} on http://{}:{}/v1 ({} clients, policy {})", model.name, o.host, listener->port(), o.clients,
               o.policy);
  if (o.on_listening) o.on_listening(listener->port());
  while (!stop_requested()) sleep_unless_stopped(std::chrono::milliseconds(200));
  draining = true;
  spdlog::info("serve: stopping (signal {}): no new requests, answering those in flight", stop_requested());
  listener.reset();
}

}  // namespace dualpath::serve
