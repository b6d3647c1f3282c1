#include "apps/serve_load.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "actors/agent_client.hpp"
#include "core/status.hpp"
#include "core/turn_tokens.hpp"

namespace dualpath::cli {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

double since(clock::time_point t0, clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); }

// A client for one request, with the server's key when there is one: the read timeout bounds a silent stream
// (the server sends a comment every 2 s), the turn's deadline bounds the whole of it.
std::unique_ptr<httplib::Client> client_of(const load_target& t) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(10, 0);
  c->set_tcp_nodelay(true);  // the request's header and body go out at once, not a delayed ACK apart
  if (!t.api_key.empty()) c->set_bearer_token_auth(t.api_key);
  return c;
}

// Server-Sent Events as they arrive: each whole event's data lines are handed over, a partial one waits.
class sse_reader {
 public:
  template <class OnData>
  void feed(const char* data, size_t n, OnData&& on_data) {
    buf_.append(data, n);
    for (size_t end; (end = buf_.find("\n\n")) != std::string::npos;) {
      const std::string event = buf_.substr(0, end);
      buf_.erase(0, end + 2);
      for (size_t at = 0; at < event.size();) {
        size_t eol = event.find('\n', at);
        if (eol == std::string::npos) eol = event.size();
        if (event.compare(at, 6, "data: ") == 0) on_data(event.substr(at + 6, eol - at - 6));
        at = eol + 1;
      }
    }
  }

 private:
  std::string buf_;
};

// One streamed text completion as the client saw it.
struct turn_outcome {
  int status = 0;     // HTTP status (0: no response)
  std::string error;  // "" when answered whole
  std::vector<int32_t> generated;
  uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::optional<clock::time_point> first, second, last;  // chunks with text or ids
  std::vector<double> gaps;                              // between those chunks, seconds
};

std::string error_message(const std::string& body) {
  const auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message"))
    return j["error"]["message"].is_string() ? j["error"]["message"].get<std::string>() : j["error"].dump();
  return body.substr(0, 200);
}

// `hang_up`: the connection is closed once the first token has come (the outcome is then not an answer).
turn_outcome send_turn(const load_target& t, const std::string& model, const std::vector<int32_t>& prompt, uint32_t gen,
                       clock::time_point deadline, bool hang_up = false) {
  turn_outcome out;
  const json body{{"model", model},
                  {"prompt", prompt},
                  {"max_tokens", gen},
                  {"stream", true},
                  {"stream_options", {{"include_usage", true}}},
                  {"ignore_eos", true},  // the trace's generation length, as `run` makes it
                  {"return_token_ids", true}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string refused;  // a non-200 answer's body
  bool ended = false;   // data: [DONE] seen
  sse_reader sse;
  const auto on_data = [&](const std::string& data) {
    if (data == "[DONE]") return void(ended = true);
    const auto j = json::parse(data, nullptr, false);
    if (!j.is_object()) return void(out.error = "a stream event that is not a JSON object");
    if (j.contains("error")) return void(out.error = error_message(data));
    if (j.contains("usage") && j["usage"].is_object()) {
      const auto& u = j["usage"];
      out.prompt_tokens = u.value("prompt_tokens", 0u);
      out.completion_tokens = u.value("completion_tokens", 0u);
      if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object())
        out.cached_tokens = u["prompt_tokens_details"].value("cached_tokens", 0u);
    }
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
    const auto& c = j["choices"][0];
    // A chunk with text or new ids is a token the client has seen (a modeled model's ids make no text).
    const bool has_text =
        c.contains("text") && c["text"].is_string() && !c["text"].get_ref<const std::string&>().empty();
    const bool has_ids = c.contains("token_ids") && c["token_ids"].is_array() && !c["token_ids"].empty();
    if (has_ids)
      for (const auto& id : c["token_ids"]) out.generated.push_back(id.get<int32_t>());
    if (!has_text && !has_ids) return;
    const auto now = clock::now();
    if (out.first) {
      if (!out.second) out.second = now;
      out.gaps.push_back(since(*out.last, now));
    } else {
      out.first = now;
    }
    out.last = now;
  };
  req.response_handler = [&](const httplib::Response& r) {
    out.status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (out.status != 200) {
      if (refused.size() < 4096) refused.append(data, n);
      return true;
    }
    sse.feed(data, n, on_data);
    if (hang_up && out.first) return false;
    return out.error.empty() && clock::now() < deadline;
  };
  auto client = client_of(t);
  const auto res = client->send(req);
  if (out.status != 200 && out.status != 0) {
    out.error = fmt::format("HTTP {}: {}", out.status, error_message(refused));
  } else if (!res && out.error.empty()) {
    out.status = 0;
    out.error = clock::now() >= deadline ? "not answered within the request timeout"
                                         : "the connection failed: " + httplib::to_string(res.error());
  } else if (out.error.empty() && !ended) {
    out.status = 0;
    out.error = "the stream ended before [DONE]";
  } else if (!out.error.empty() && out.status == 200) {
    out.status = 503;  // an error event inside the stream: the cluster failed the turn
  }
  return out;
}

// A sample of the server's Prometheus text (0 when absent).
double metric_value(const std::string& text, const std::string& series) {
  const size_t at = text.find(series + " ");
  return at == std::string::npos ? 0.0 : std::strtod(text.c_str() + at + series.size() + 1, nullptr);
}

std::string metrics_text(const load_target& t) {
  const auto r = client_of(t)->Get("/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

// Everything the agents share while the load runs.
struct load_run {
  const load_target& t;
  const served_model_info& model;
  const std::vector<workload_agent>& agents;
  const workload_options& w;
  clock::time_point t0 = clock::now();
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0}, failed{0}, hung_up{0};
  std::mutex mu;
  std::vector<report::turn_record> records;
  std::vector<double> gaps;
  std::map<int, uint64_t> errors;

  load_run(const load_target& target, const served_model_info& m, const std::vector<workload_agent>& a,
           const workload_options& options)
      : t(target), model(m), agents(a), w(options) {}

  void count_error(int status) {
    std::lock_guard lock(mu);
    ++errors[status];
  }

  // One agent's conversation, turn after turn; it ends at its first failed turn.
  void converse(const workload_agent& a) {
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(a.start_s)));
    std::vector<int32_t> context;
    for (uint32_t turn = 0; turn < a.turns.size(); ++turn) {
      const auto& shape = a.turns[turn];
      const auto prompt = a.mooncake ? actors::mooncake_tokens(*a.mooncake, model.vocab)
                                     : turn_prompt(context, shape, w.seed + t.token_seed, a.index, turn, model.vocab);
      const uint32_t gen = std::max<uint32_t>(1, shape.gen);
      if (t.cancel_share > 0 && cancel_draw(a.index, turn) < t.cancel_share)
        if (send_turn(t, model.name, prompt, gen, deadline_from(clock::now()), true).first) ++hung_up;
      const auto submitted = clock::now();
      const auto deadline = deadline_from(submitted);
      turn_outcome o = send_turn(t, model.name, prompt, gen, deadline);
      // Busy: come back as the server says (Retry-After: 1), within the request's deadline; each 429 counts.
      while (o.status == 429 && clock::now() + std::chrono::seconds(1) < deadline) {
        count_error(429);
        std::this_thread::sleep_for(std::chrono::seconds(1));
        o = send_turn(t, model.name, prompt, gen, deadline);
      }
      if (!o.error.empty()) count_error(o.status);
      report::turn_facts f;
      f.agent = a.index;
      f.turn = turn;
      f.error = o.error;
      f.prompt_tokens = o.prompt_tokens ? o.prompt_tokens : uint32_t(prompt.size());
      f.generated_tokens = o.completion_tokens;
      f.block_tokens = 1;  // the server reports cached tokens, not blocks
      f.hit_blocks = o.cached_tokens;
      report::turn_stamps s;
      s.submitted = since(t0, submitted);
      if (o.first) s.first_token = since(t0, *o.first);
      if (o.second) s.second_token = since(t0, *o.second);
      if (o.last) s.last_token = since(t0, *o.last);
      s.done = since(t0, clock::now());
      {
        std::lock_guard lock(mu);
        records.push_back(report::make_turn_record(f, s));
        gaps.insert(gaps.end(), o.gaps.begin(), o.gaps.end());
      }
      ++done;
      if (!o.error.empty()) {
        ++failed;
        return;
      }
      context = next_context(prompt, shape, o.generated);
      if (w.tool_time && shape.tool_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(shape.tool_ms));
    }
  }

  clock::time_point deadline_from(clock::time_point start) const {
    return start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(t.request_timeout_s));
  }

  // The same turns are hung up on in every run of one workload and seed.
  double cancel_draw(uint32_t agent, uint32_t turn) const {
    std::mt19937_64 rng((w.seed + t.token_seed) * 0x9e3779b97f4a7c15ull ^ (uint64_t(agent) << 32) ^ turn ^ 0x5eed);
    return std::uniform_real_distribution<double>(0, 1)(rng);
  }

  void work() {
    for (size_t i; (i = next++) < agents.size();) converse(agents[i]);
  }
};

}  // namespace

nlohmann::json load_result::extra() const {
  json errors = json::object();
  for (const auto& [status, n] : errors_by_status) errors[status ? std::to_string(status) : "connection"] = n;
  return {{"client", "bench serve"},
          {"requests_per_s", requests_per_s},
          {"output_tokens_per_s", output_tokens_per_s},
          {"goodput_rps", goodput_rps},
          {"cached_tokens", cached_tokens},
          {"cached_share", prompt_tokens ? double(cached_tokens) / double(prompt_tokens) : 0.0},
          {"hung_up", hung_up},
          {"errors_by_status", errors}};
}

served_model_info ask_model(const load_target& t) {
  const auto r = client_of(t)->Get("/v1/models");
  const std::string where = fmt::format("bench serve: http://{}:{}/v1/models", t.host, t.port);
  if (!r) throw user_error(where + ": no answer (" + httplib::to_string(r.error()) + ")");
  if (r->status != 200) throw user_error(fmt::format("{}: HTTP {}: {}", where, r->status, error_message(r->body)));
  const auto j = json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    throw user_error(where + ": no model in the answer");
  served_model_info m;
  m.name = j["data"][0]["id"].get<std::string>();
  m.vocab = j["data"][0].value("vocab_size", 0u);
  if (m.vocab == 0) throw user_error(where + ": the model's vocab_size is not given; is this `dualpath serve`?");
  return m;
}

load_result run_load(const load_target& t, const served_model_info& model, const std::vector<workload_agent>& agents,
                     const workload_options& w, const std::string& label,
                     const std::function<void(uint64_t, uint64_t, uint64_t)>& on_progress) {
  uint64_t total = 0;
  for (const auto& a : agents) total += a.turns.size();
  const std::string before = metrics_text(t);
  load_run run(t, model, agents, w);
  // One thread a conversation at once: the concurrency, or every agent (at most 1,024: more wait their turn).
  const size_t workers = std::min<size_t>({agents.size(), t.concurrency ? t.concurrency : agents.size(), 1024});
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers; ++i) threads.emplace_back([&run] { run.work(); });
  std::atomic<bool> over{false};
  std::thread progress([&] {
    while (!over) {
      for (int i = 0; i < 10 && !over; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (on_progress) on_progress(run.done, total, run.failed);
    }
  });
  for (auto& th : threads) th.join();
  over = true;
  progress.join();

  load_result out;
  auto& s = out.summary;
  s.policy = label;
  report::summarize_turns(s, run.records);
  s.inter_token = report::summarize(run.gaps);
  // The read paths are the server's to know: its counters' growth over this run.
  const std::string after = metrics_text(t);
  const auto grew = [&](const char* path) {
    const std::string series = fmt::format("dualpath_serve_read_path_requests_total{{path=\"{}\"}}", path);
    return uint64_t(std::max(0.0, metric_value(after, series) - metric_value(before, series)));
  };
  s.path_pe = grew("pe");
  s.path_de = grew("de");
  s.path_split = grew("split");
  out.errors_by_status = run.errors;
  out.hung_up = run.hung_up;
  uint64_t generated = 0, good = 0;
  for (const auto& r : run.records) {
    if (!r.error.empty()) continue;
    generated += r.generated_tokens;
    out.prompt_tokens += r.prompt_tokens;
    out.cached_tokens += r.hit_tokens;
    if (r.ttft_s <= t.slo.ttft_s && (!r.has_tpot || r.tpot_s <= t.slo.tpot_s)) ++good;
  }
  if (s.jct_s > 0) {
    out.requests_per_s = double(s.turns) / s.jct_s;
    out.output_tokens_per_s = double(generated) / s.jct_s;
    out.goodput_rps = double(good) / s.jct_s;
  }
  return out;
}

}  // namespace dualpath::cli
