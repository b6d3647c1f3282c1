// `dualpath serve` on the embedded default cluster, driven over HTTP on loopback: health and models, a
// conversation whose later turns load earlier turns' KV, streaming, errors in the API's shape, 429 when every
// client is busy, and a SIGTERM that ends it.
#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <vector>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/serve/serve_process.hpp"

using json = nlohmann::json;

namespace {

using server = dualpath::test::serve_process;

json conversation(const std::vector<std::pair<std::string, std::string>>& turns) {
  json messages = json::array({{{"role", "system"}, {"content", "You are a coding agent working in a repository."}}});
  for (const auto& [role, content] : turns) messages.push_back({{"role", role}, {"content", content}});
  return messages;
}

}  // namespace

TEST_CASE(
    "serve: health, models, and a conversation whose turns load the KV of the turns before, also after a "
    "restart on the same store; --verify recomputes every answer") {
  server s({"--verify", "--report", "report.json"});
  auto health = s.client().Get("/health");
  REQUIRE(health);
  CHECK(json::parse(health->body)["status"] == "ok");
  auto models = s.client().Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body)["data"][0]["id"] == "tiny");

  std::vector<std::pair<std::string, std::string>> turns{
      {"user", "Read the file src/main.rs and tell me what the program does, step by step, in detail."}};
  uint32_t last_cached = 0;
  for (int t = 0; t < 3; ++t) {
    auto r = s.chat({{"model", "tiny"}, {"messages", conversation(turns)}, {"max_tokens", 12}});
    REQUIRE(r);
    REQUIRE_MESSAGE(r->status == 200, r->body);
    const auto j = json::parse(r->body);
    CHECK(j["object"] == "chat.completion");
    CHECK(j["choices"][0]["message"]["role"] == "assistant");
    const auto& u = j["usage"];
    CHECK(u["completion_tokens"].get<int>() >= 1);
    CHECK(u["completion_tokens"].get<int>() <= 12);
    CHECK(u["total_tokens"] == u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
    const uint32_t cached = u["prompt_tokens_details"]["cached_tokens"].get<uint32_t>();
    if (t == 0) CHECK(cached == 0);    // a fresh store: nothing to load
    else CHECK(cached > last_cached);  // the earlier turns' prompt blocks were persisted and are loaded
    last_cached = cached;
    turns.emplace_back("assistant", j["choices"][0]["message"]["content"].get<std::string>());
    turns.emplace_back("user", "Now explain turn " + std::to_string(t + 1) + " again, with the error handling.");
  }
  // A fourth turn, whose prompt the server started again below is sent once more.
  auto last = s.chat({{"model", "tiny"}, {"messages", conversation(turns)}, {"max_tokens", 12}});
  REQUIRE(last);
  REQUIRE(last->status == 200);
  const auto n = s.verified_answers(4);
  CHECK(n.at("equal") == 4);
  CHECK(n.at("different") == 0);
  CHECK(n.at("unchecked") == 0);

  // The store outlives the server: the conversation resumed by a new server process on the same store loads
  // every full block of its prompt, which the old one persisted. The answers in it are encoded to their own
  // generated ids again (saved beside the store), else the blocks after the first answer would miss.
  const uint32_t prompt_before = json::parse(last->body)["usage"]["prompt_tokens"].get<uint32_t>();
  CHECK(s.stop() == 0);
  // serve --report: the four answers as the turns of a run, with the latencies their client saw.
  const auto report = json::parse(dualpath::test::slurp(s.dir.path / "report.json"));
  const auto& run = report["runs"][0];
  CHECK(report["requests"] == 4);
  CHECK(run["turns"] == 4);
  CHECK(run["verified_turns"] == 4);
  CHECK(run["mismatched_turns"] == 0);
  CHECK(run["ttft_s"]["p50"].get<double>() > 0);
  CHECK(run["e2e_s"]["p50"].get<double>() >= run["ttft_s"]["p50"].get<double>());
  CHECK(run["inter_token_s"]["p50"].get<double>() > 0);
  const auto& paths = run["path_requests"];
  CHECK(paths["pe"].get<int>() + paths["de"].get<int>() + paths["split"].get<int>() == 4);
  s.start();
  auto resumed = s.chat({{"model", "tiny"}, {"messages", conversation(turns)}, {"max_tokens", 4}});
  REQUIRE(resumed);
  REQUIRE_MESSAGE(resumed->status == 200, resumed->body);
  const uint32_t cached = json::parse(resumed->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<uint32_t>();
  CHECK(cached >= prompt_before / 16 * 16);  // the embedded default cluster's 16-token blocks
}

TEST_CASE("serve: a stream is Server-Sent Events in the chunk format, usage last, then [DONE]") {
  server s;
  auto r = s.chat({{"model", "tiny"},
                   {"messages", conversation({{"user", "Say something."}})},
                   {"max_tokens", 6},
                   {"stream", true},
                   {"stream_options", {{"include_usage", true}}}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").find("text/event-stream") == 0);
  std::vector<std::string> data;
  for (size_t at = 0; (at = r->body.find("data: ", at)) != std::string::npos;) {
    const size_t end = r->body.find("\n\n", at);
    data.push_back(r->body.substr(at + 6, end - at - 6));
    at = end;
  }
  REQUIRE(data.size() >= 4);
  CHECK(data.back() == "[DONE]");
  CHECK(json::parse(data.front())["choices"][0]["delta"]["role"] == "assistant");
  const auto usage = json::parse(data[data.size() - 2]);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"].get<int>() <= 6);
  const auto finish = json::parse(data[data.size() - 3]);
  CHECK(finish["object"] == "chat.completion.chunk");
  CHECK(!finish["choices"][0]["finish_reason"].is_null());
}

TEST_CASE("serve: text completions take a prompt as text or as token ids") {
  server s;
  for (const json& prompt : {json("def main():\n    "), json::array({104, 105, 32, 116, 104, 101, 114, 101})}) {
    auto r = s.client().Post("/v1/completions", json{{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 4}}.dump(),
                             "application/json");
    REQUIRE(r);
    REQUIRE_MESSAGE(r->status == 200, r->body);
    const auto j = json::parse(r->body);
    CHECK(j["object"] == "text_completion");
    CHECK(j["choices"][0]["text"].is_string());
    CHECK(j["usage"]["prompt_tokens"].get<int>() >= 8);
  }
  auto past =
      s.client().Post("/v1/completions", json{{"model", "tiny"}, {"prompt", {1, 100000}}}.dump(), "application/json");
  REQUIRE(past);
  CHECK(past->status == 400);
  CHECK(json::parse(past->body)["error"]["param"] == "prompt");
}

TEST_CASE("serve: the Responses API, as Codex speaks it, answered whole and as a stream of events") {
  server s;
  const json body{
      {"model", "tiny"},
      {"instructions", "You are a coding agent."},
      {"input", json::array({{{"type", "message"},
                              {"role", "user"},
                              {"content", json::array({{{"type", "input_text"}, {"text", "List files."}}})}}})},
      {"store", false},
      {"max_output_tokens", 5}};
  auto whole = s.client().Post("/v1/responses", body.dump(), "application/json");
  REQUIRE(whole);
  REQUIRE_MESSAGE(whole->status == 200, whole->body);
  const auto j = json::parse(whole->body);
  CHECK(j["object"] == "response");
  CHECK(j["status"] == "completed");
  CHECK(j["usage"]["output_tokens"].get<int>() <= 5);
  json streamed = body;
  streamed["stream"] = true;
  auto events = s.client().Post("/v1/responses", streamed.dump(), "application/json");
  REQUIRE(events);
  REQUIRE(events->status == 200);
  CHECK(events->body.find("event: response.created\n") == 0);
  CHECK(events->body.find("event: response.output_text.done\n") != std::string::npos);
  CHECK(events->body.find("event: response.completed\n") != std::string::npos);
}

TEST_CASE("serve: errors are the API's JSON with 400, 404 and 429, and SIGTERM ends the server") {
  server s({"--clients", "1"});
  const auto error_of = [](const httplib::Result& r) { return json::parse(r->body)["error"]; };
  auto unknown = s.chat({{"model", "gpt-9"}, {"messages", conversation({{"user", "hi"}})}});
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  CHECK(error_of(unknown)["param"] == "model");
  auto hot = s.chat({{"model", "tiny"}, {"messages", conversation({{"user", "hi"}})}, {"temperature", 2.5}});
  REQUIRE(hot);
  CHECK(hot->status == 400);
  CHECK(error_of(hot)["param"] == "temperature");
  auto broken = s.client().Post("/v1/chat/completions", "{\"model\": ", "application/json");
  REQUIRE(broken);
  CHECK(broken->status == 400);
  CHECK(error_of(broken)["code"] == "invalid_json");
  auto nowhere = s.client().Get("/v1/nowhere");
  REQUIRE(nowhere);
  CHECK(nowhere->status == 404);
  CHECK(error_of(nowhere)["type"] == "not_found_error");

  // One client, eight requests at once: each takes hundreds of decode steps, so while one is answered the
  // others find no client free and are told to come back.
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> burst;
  for (int i = 0; i < 8; ++i)
    burst.emplace_back([&] {
      auto r = s.chat({{"model", "tiny"},
                       {"messages", conversation({{"user", "Write a long answer."}})},
                       {"max_tokens", 300},
                       {"ignore_eos", true}});
      if (r && r->status == 200) ++ok;
      else if (r && r->status == 429 && r->get_header_value("Retry-After") == "1" &&
               json::parse(r->body)["error"]["type"] == "rate_limit_error")
        ++busy;
      else ++other;
    });
  for (auto& t : burst) t.join();
  CHECK(ok >= 1);
  CHECK(busy >= 1);
  CHECK(other == 0);

  CHECK(s.stop() == 0);  // drained: a stop asked for and done (docs/design.md §18)
}
