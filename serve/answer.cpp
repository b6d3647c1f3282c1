#include "serve/answer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <random>
#include <utility>

#include "api/answer_text.hpp"
#include "api/chat_response.hpp"
#include "api/responses.hpp"
#include "observe/serve_metrics.hpp"
#include "schedule/policy.hpp"
#include "serve/answer_check.hpp"
#include "serve/served_report.hpp"
#include "serve/peer_watch.hpp"
#include "serve/served_turn.hpp"

namespace dualpath::serve {

using ojson = nlohmann::ordered_json;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void send_json(httplib::Response& res, int status, const ojson& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const api::api_error& e) {
  if (e.http_status == 429) res.set_header("Retry-After", "1");
  send_json(res, e.http_status, ojson(e.body()));
}

namespace {

const char* prefix_of(api_kind k) { return k == api_kind::chat ? "chatcmpl" : k == api_kind::text ? "cmpl" : "resp"; }
const char* endpoint_of(api_kind k) {
  return k == api_kind::chat ? "chat_completions" : k == api_kind::text ? "completions" : "responses";
}
double seconds(clock::duration d) { return std::chrono::duration<double>(d).count(); }

api::api_error unavailable(const std::string& why) { return {503, why, std::nullopt, "cluster_error"}; }

// One answer being made: the turn, its text so far, the client's connection, and the times the client sees.
struct live_answer {
  serving_context& ctx;
  turn_ask ask;
  admission::ticket ticket;
  std::unique_ptr<served_turn> turn;
  peer_watch watch;
  api::answer_text text;
  api::chat_answer head;  // id, model, created
  clock::time_point began = clock::now(), deadline, first_token{}, second_token{}, last_token{};
  std::vector<double> gaps;         // between tokens as they arrived, seconds
  std::vector<int32_t> unsent_ids;  // with `return_token_ids`: ids a stream has not written yet
  gpu::sampling sample;             // as the engines pick its tokens (the seed drawn here when the request gave none)
  bool cancelled = false;
  bool released = false;  // from admission

  live_answer(serving_context& c, const httplib::Request& req, turn_ask a, admission::ticket t)
      : ctx(c),
        ask(std::move(a)),
        ticket(t),
        watch(req.local_port, req.remote_addr, req.remote_port),
        text([&m = c.model](const std::vector<int32_t>& ids) { return m.tokenizer.decode(ids); },
             [&m = c.model](int32_t id) { return m.tokenizer.is_special(id); }, ask.gen.stop, !ask.gen.ignore_eos) {
    deadline = began + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(c.request_timeout_s));
    head.model = ask.model;
    head.id = fmt::format("{}-{:x}{:04x}", prefix_of(ask.kind), c.started, c.serial++);
    head.created = int64_t(std::time(nullptr));
    if (ask.return_token_ids) head.token_ids.emplace();
    protocol::turn_payload p;
    p.tokens = ask.ids;
    p.gen = ask.gen.max_tokens;
    p.stream = true;  // tokens come as they are made: for the stream, a stop string, and the times
    if (!ask.gen.ignore_eos) p.stop_tokens = c.model.stop_ids;
    p.temperature = ask.gen.temperature;
    p.top_p = ask.gen.top_p;
    p.seed = ask.gen.seed ? *ask.gen.seed : std::random_device{}();
    sample = p.sampling();
    turn = std::make_unique<served_turn>(c.sys, c.clients[ticket.client], std::move(p));
  }
  ~live_answer() {
    turn.reset();  // cancels a turn not done
    release();
  }
  // The request leaves the admission count: at the end of its answer, before the client can read that end and
  // send its next request (a stream's live answer outlives its last event).
  void release() {
    if (released) return;
    released = true;
    ctx.admit.release(ticket);
  }

  // Takes the news of up to `wait`: the text that became final.
  std::string pump(milliseconds wait) {
    turn->next(wait);
    const auto ids = turn->take_tokens();
    if (!ids.empty()) {
      const auto now = clock::now();
      if (first_token == clock::time_point{}) {
        first_token = now;
        ctx.admit.started(ticket);
      } else gaps.push_back(seconds(now - last_token) / double(ids.size()));
      if (second_token == clock::time_point{} && text.tokens() + ids.size() >= 2) second_token = now;
      last_token = now;
      if (ask.return_token_ids) unsent_ids.insert(unsent_ids.end(), ids.begin(), ids.end());
    }
    std::string out = text.push(ids);
    if (text.stopped_by_string() && !turn->done()) cancel("stop_string");  // complete: the rest is not made
    if (turn->done() && !failed()) out += text.finish();
    return out;
  }
  // The turn is cancelled wherever it is (its slots and HBM go back), once.
  void cancel(const char* reason) {
    if (cancelled || turn->done()) return;
    cancelled = true;
    turn->cancel();
    spdlog::info("serve: {}: cancelled ({})", head.id, reason);
    if (ctx.metrics) ctx.metrics->count_cancelled(reason);
  }
  std::vector<int32_t> take_unsent_ids() { return std::exchange(unsent_ids, {}); }
  bool over() const { return turn->done() || text.stopped_by_string(); }
  bool failed() const { return turn->done() && !turn->result().error.empty(); }
  bool expired() const { return clock::now() > deadline; }

  api::chat_answer whole() {
    api::chat_answer a = head;
    a.prompt_tokens = uint32_t(ask.ids.size());
    a.cached_tokens = std::min<uint32_t>(turn->valid_hit_blocks() * ctx.view.geometry.block_tokens, a.prompt_tokens);
    a.completion_tokens = text.tokens();
    a.content = text.text();
    a.finish_reason = text.ended() ? "stop" : "length";
    if (ask.return_token_ids) a.token_ids = turn->tokens();
    if (ask.tools) {
      auto parsed = text::parse_answer(ctx.model.family, a.content);
      if (!parsed.tool_calls.empty()) {
        a.content = std::move(parsed.content);
        a.tool_calls = std::move(parsed.tool_calls);
        a.finish_reason = "tool_calls";
      }
    }
    return a;
  }

  // The cluster failed the turn or did not finish it in time: the client is answered 503, the report counts it.
  api::api_error failure() {
    const std::string why =
        failed() ? "the cluster did not answer: " + turn->result().error : "the request was not answered in time";
    if (ctx.report) ctx.report->count_failed(why);
    return unavailable(why);
  }

  // The answer is given: logged and counted, and its text's ids remembered for the conversation's next turn
  // (not where the text is not what the ids say: tool calls taken out, cut at a stop string, ignore_eos).
  void record(const api::chat_answer& a) {
    if (turn->done() && a.tool_calls.empty() && !text.stopped_by_string() && !ask.gen.ignore_eos) {
      const auto& g = turn->result().generated;
      const auto end = std::find_if(g.begin(), g.end(), [&](int32_t id) { return ctx.model.tokenizer.is_special(id); });
      ctx.answers.remember(ask.ids, a.content, {g.begin(), end});
    }
    // A turn the engines finished is checked against a full recompute; one cut short is not whole.
    if (ctx.checker && !cancelled && turn->done() && !failed())
      ctx.checker->submit({a.id, ask.ids, turn->result().generated, sample});
    // Cut short by a stop string, the turn never came back: its read path is not known here.
    const std::string path = turn->done() ? schedule::to_string(turn->result().path) : "";
    spdlog::info("serve: {} {} prompt {} cached {} generated {} tools {} ({} path) ttft {:.1f} ms e2e {:.1f} ms", a.id,
                 endpoint_of(ask.kind), a.prompt_tokens, a.cached_tokens, a.completion_tokens, ask.tools,
                 path.empty() ? "cancelled" : path, 1e3 * seconds(first_token - began),
                 1e3 * seconds(clock::now() - began));
    observe::served_request r{endpoint_of(ask.kind),
                              a.prompt_tokens,
                              a.cached_tokens,
                              a.completion_tokens,
                              seconds(first_token - began),
                              seconds(clock::now() - began),
                              gaps,
                              path,
                              seconds(began - ctx.up_since),
                              std::nullopt,
                              std::nullopt};
    if (second_token != clock::time_point{}) r.second_token_s = seconds(second_token - began);
    if (last_token != clock::time_point{}) r.last_token_s = seconds(last_token - began);
    if (ctx.report)
      ctx.report->add(r, turn->done() ? std::optional(turn->result().path) : std::nullopt,
                      ctx.view.geometry.block_tokens);
    if (!ctx.metrics) return;
    if (turn->rerun()) ctx.metrics->count_resumed(turn->rechecked(), turn->recheck_differed());
    ctx.metrics->request_done(r);
  }
};

std::vector<std::string>& operator+=(std::vector<std::string>& a, std::vector<std::string> b) {
  for (auto& s : b) a.push_back(std::move(s));
  return a;
}

std::string joined(const std::vector<std::string>& events) {
  std::string out;
  for (const auto& e : events) out += e;
  return out;
}

std::unique_ptr<api::answer_stream> stream_of(const live_answer& la) {
  if (la.ask.kind == api_kind::responses) return std::make_unique<api::response_stream>(la.head);
  return std::make_unique<api::chat_stream>(la.head, la.ask.gen.include_usage, la.ask.kind == api_kind::text);
}

// docs/design.md §18: events go out as the text becomes final (with tools, at the end); a stream silent for
// 2 s gets an SSE comment, which also finds out a client that hung up.
void stream_answer(httplib::Response& res, std::shared_ptr<live_answer> la, std::string first_text) {
  res.status = 200;
  res.set_header("Cache-Control", "no-store");
  auto stream = std::shared_ptr<api::answer_stream>(stream_of(*la));
  auto begun = std::make_shared<bool>(false);
  auto quiet_since = std::make_shared<clock::time_point>(clock::now());
  res.set_chunked_content_provider("text/event-stream",
                                   [la, stream, begun, quiet_since, first_text](size_t, httplib::DataSink& sink) {
                                     std::vector<std::string> events;
                                     if (!*begun) {
                                       *begun = true;
                                       events = stream->begin();
                                       if (!la->ask.tools) events += stream->delta(first_text, la->take_unsent_ids());
                                     } else {
                                       const std::string d = la->pump(milliseconds(100));
                                       if (!la->ask.tools) events += stream->delta(d, la->take_unsent_ids());
                                     }
                                     bool finished = false;
                                     if (la->failed() || (!la->over() && la->expired())) {
                                       if (!la->failed()) la->cancel("deadline");
                                       const auto e = la->failure();
                                       events.push_back("data: " + ojson(e.body()).dump() + "\n\n");
                                       events.emplace_back("data: [DONE]\n\n");
                                       finished = true;
                                     } else if (la->over()) {
                                       const auto a = la->whole();
                                       events += stream->end(a);
                                       la->record(a);
                                       finished = true;
                                     }
                                     if (finished) la->release();  // before the client can read the end
                                     if (la->watch.hung_up()) {
                                       la->cancel("hung_up");
                                       return false;
                                     }
                                     if (events.empty() && clock::now() - *quiet_since > std::chrono::seconds(2))
                                       events.emplace_back(": keep-alive\n\n");
                                     if (!events.empty()) {
                                       *quiet_since = clock::now();
                                       const std::string out = joined(events);
                                       if (!sink.write(out.data(), out.size())) {
                                         la->cancel("hung_up");
                                         return false;
                                       }
                                     }
                                     if (finished) sink.done();
                                     return true;
                                   });
}

}  // namespace

void answer_turn(serving_context& ctx, const httplib::Request& req, httplib::Response& res, turn_ask ask) {
  // The operator's cap: the answer ends at it with finish_reason "length", as at any max_tokens.
  if (ctx.max_tokens_cap) ask.gen.max_tokens = std::min(ask.gen.max_tokens, ctx.max_tokens_cap);
  if (ctx.draining) return send_error(res, {503, "the server is shutting down", std::nullopt, "draining"});
  const auto& view = ctx.view;
  for (const int32_t id : ask.ids)
    if (uint32_t(id) >= view.vocab)
      return send_error(res, api::bad_field("prompt", fmt::format("token id {} is past the model's vocabulary ({})", id,
                                                                  view.vocab)));
  // Refused here as the client's 400, before a serving client is taken (submit_turn would fail it as a 503).
  if (!view.fits_decode_engine(
          schedule::make_request_info(0, ask.ids.size(), ask.gen.max_tokens, 0, view.geometry).kv_bytes))
    return send_error(res, api::bad_field("messages",
                                          fmt::format("the prompt ({} tokens) and max_tokens ({}) need more KV than a "
                                                      "decode engine holds",
                                                      ask.ids.size(), ask.gen.max_tokens),
                                          "context_length_exceeded"));
  if (!ctx.admit.could_queue(ask.ids.size()))
    return send_error(res, api::bad_field("messages",
                                          fmt::format("the prompt ({} tokens) is longer than the server queues "
                                                      "(serve.max_queued_tokens = {})",
                                                      ask.ids.size(), ctx.admit.queued_tokens_limit()),
                                          "context_length_exceeded"));
  auto admitted = ctx.admit.admit(ask.ids.size());
  if (auto* full = std::get_if<std::string>(&admitted))
    return send_error(res, {429, "the server is at its bound of " + *full + "; retry", std::nullopt, "busy"});
  auto la = std::make_shared<live_answer>(ctx, req, std::move(ask), std::get<admission::ticket>(admitted));
  // Nothing is sent before the first token (or the end): a failure until then is still an HTTP status.
  std::string text;
  while (!(la->ask.gen.stream ? la->turn->started() : la->over()) && !la->text.stopped_by_string()) {
    text += la->pump(milliseconds(100));
    if (la->watch.hung_up()) return la->cancel("hung_up");
    if (la->expired()) {
      la->cancel("deadline");
      return send_error(res, la->failure());
    }
  }
  if (la->failed()) return send_error(res, la->failure());
  if (la->ask.gen.stream) return stream_answer(res, std::move(la), std::move(text));
  const auto a = la->whole();
  la->record(a);
  switch (la->ask.kind) {
    case api_kind::chat: return send_json(res, 200, api::completion_json(a));
    case api_kind::text: return send_json(res, 200, api::text_completion_json(a));
    case api_kind::responses: return send_json(res, 200, api::response_json(a));
  }
}

}  // namespace dualpath::serve
