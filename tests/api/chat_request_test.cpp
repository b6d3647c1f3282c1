// api/chat_request and api/chat_response: what a chat completion request may say, what is refused by name,
// and the answer's shapes (object and stream).
#include <doctest/doctest.h>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/completion_request.hpp"
#include "tests/api/answers.hpp"

using namespace dualpath;
using namespace dualpath::api;
using ojson = nlohmann::ordered_json;

namespace {

const request_limits limits{16, 512};

chat_request ok(const std::string& body) {
  auto r = parse_chat_request(body, limits);
  if (auto* e = std::get_if<api_error>(&r)) FAIL(e->message);
  return std::get<chat_request>(r);
}

api_error refused(const std::string& body) {
  auto r = parse_chat_request(body, limits);
  REQUIRE(std::holds_alternative<api_error>(r));
  return std::get<api_error>(r);
}

}  // namespace

TEST_CASE("chat request: messages of every role, content parts, tool calls, tools and the generation fields") {
  const auto r = ok(R"({"model": "tiny", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Read "}, {"type": "text", "text": "a.rs"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "fn main() {}"}],
    "max_completion_tokens": 40, "stop": ["\n\n", "END"], "stream": true, "stream_options": {"include_usage": true},
    "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
    "tool_choice": "auto", "temperature": 0, "top_p": 1, "seed": 7, "user": "someone",
    "chat_template_kwargs": {"enable_thinking": false}})");
  CHECK(r.model == "tiny");
  REQUIRE(r.prompt.messages.size() == 4);
  CHECK(r.prompt.messages[0].role == "system");  // developer is system's newer name
  CHECK(r.prompt.messages[1].content == "Read a.rs");
  REQUIRE(r.prompt.messages[2].tool_calls.size() == 1);
  CHECK(r.prompt.messages[2].tool_calls[0].name == "read_file");
  CHECK(r.prompt.messages[2].tool_calls[0].arguments == "{\"path\": \"a.rs\"}");
  CHECK(r.prompt.messages[3].tool_call_id == "c1");
  CHECK(r.gen.max_tokens == 40);
  CHECK(r.gen.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(r.gen.stream);
  CHECK(r.gen.include_usage);
  CHECK(r.prompt.tools.size() == 1);
  CHECK(r.prompt.enable_thinking == false);
  CHECK(r.gen.seed == 7u);
  const auto hot = ok(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7,
    "top_p": 0.9})");
  CHECK(hot.gen.temperature == doctest::Approx(0.7));
  CHECK(hot.gen.top_p == doctest::Approx(0.9));
  CHECK(!hot.gen.seed);  // the server draws one
  CHECK(ok(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}]})").gen.max_tokens == 16);
  CHECK(ok(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
      "function": {"name": "f"}}], "tool_choice": "none"})")
            .prompt.tools.empty());
}

TEST_CASE("chat request: what would change the answer and is not done here is a 400 naming the field") {
  const std::string m = R"("model": "m", "messages": [{"role": "user", "content": "hi"}])";
  const std::pair<std::string, std::string> cases[] = {
      {"{" + m + ", \"temperature\": 2.5}", "temperature"},
      {"{" + m + ", \"top_p\": 0}", "top_p"},
      {"{" + m + ", \"n\": 2}", "n"},
      {"{" + m + ", \"logprobs\": true}", "logprobs"},
      {"{" + m + ", \"max_tokens\": 0}", "max_tokens"},
      {"{" + m + ", \"max_tokens\": 100000}", "max_tokens"},
      {"{" + m + ", \"response_format\": {\"type\": \"json_object\"}}", "response_format"},
      {"{" + m + ", \"tool_choice\": \"required\"}", "tool_choice"},
      {"{" + m + ", \"stream_options\": {\"include_obfuscation\": true}}", "stream_options.include_obfuscation"},
      {"{" + m + ", \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", "stop"},
      {R"({"model": "m", "messages": []})", "messages"},
      {R"({"messages": [{"role": "user", "content": "hi"}]})", "model"},
      {R"({"model": "m", "messages": [{"role": "robot", "content": "hi"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content[0]"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "hi", "tool_calls": []}]})",
       "messages[0].tool_calls"},
  };
  for (const auto& [body, param] : cases) {
    CAPTURE(body);
    const auto e = refused(body);
    CHECK(e.http_status == 400);
    REQUIRE(e.param.has_value());
    CHECK(*e.param == param);
    CHECK(e.body()["error"]["param"] == param);
    CHECK(e.body()["error"]["type"] == "invalid_request_error");
  }
  CHECK(refused("{not json").code == "invalid_json");
  CHECK(refused("[1, 2]").http_status == 400);
  CHECK(refused(R"({"model": 5, "messages": [{"role": "user", "content": "hi"}]})").http_status == 400);
}

TEST_CASE("chat response: the completion object, and the stream's chunks in order with usage last") {
  chat_answer a;
  a.id = "chatcmpl-1";
  a.model = "tiny";
  a.created = 1700000000;
  a.content = "hello";
  a.finish_reason = "stop";
  a.prompt_tokens = 40;
  a.completion_tokens = 3;
  a.cached_tokens = 32;
  const auto j = completion_json(a);
  CHECK(j["object"] == "chat.completion");
  CHECK(j["choices"][0]["message"]["content"] == "hello");
  CHECK(j["choices"][0]["finish_reason"] == "stop");
  CHECK(j["usage"]["total_tokens"] == 43);
  CHECK(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 32);
  const auto events = stream_events(a, true);
  REQUIRE(events.size() == 5);  // role, content, finish, usage, [DONE]
  const auto chunk = [&](size_t i) { return ojson::parse(events[i].substr(6)); };
  CHECK(chunk(0)["choices"][0]["delta"]["role"] == "assistant");
  CHECK(chunk(1)["choices"][0]["delta"]["content"] == "hello");
  CHECK(chunk(2)["choices"][0]["finish_reason"] == "stop");
  CHECK(chunk(3)["choices"].empty());
  CHECK(chunk(3)["usage"]["completion_tokens"] == 3);
  CHECK(events[4] == "data: [DONE]\n\n");
  CHECK(stream_events(a, false).size() == 4);
  a.tool_calls.push_back({"call_0", "read_file", ojson{{"path", "a.rs"}}});
  CHECK(completion_json(a)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{\"path\":\"a.rs\"}");
  CHECK(cut_at_stop("one\n\ntwo END", {"END", "\n\n"}) == std::pair<std::string, bool>{"one", true});
  CHECK(cut_at_stop("plain", {"x"}) == std::pair<std::string, bool>{"plain", false});
}

TEST_CASE("completion request: a prompt as text, as ids, or a list of one; several prompts refused by name") {
  const auto parse = [](const std::string& body) { return parse_completion_request(body, limits); };
  const auto text = std::get<completion_request>(parse(R"({"model": "m", "prompt": "def f():", "max_tokens": 5})"));
  CHECK(text.text == "def f():");
  CHECK_FALSE(text.given_as_ids);
  CHECK(text.gen.max_tokens == 5);
  const auto ids = std::get<completion_request>(parse(R"({"model": "m", "prompt": [1, 2, 3], "stream": true})"));
  CHECK(ids.given_as_ids);
  CHECK(ids.ids == std::vector<int32_t>{1, 2, 3});
  CHECK(ids.gen.stream);
  CHECK(std::get<completion_request>(parse(R"({"model": "m", "prompt": [[7, 8]]})")).ids == std::vector<int32_t>{7, 8});
  CHECK(std::get<completion_request>(parse(R"({"model": "m", "prompt": ["one"]})")).text == "one");
  test::check_refused_fields({{R"({"model": "m", "prompt": ["a", "b"]})", "prompt"},
                              {R"({"model": "m", "prompt": [1, -2]})", "prompt"},
                              {R"({"model": "m", "prompt": ""})", "prompt"},
                              {R"({"model": "m"})", "prompt"},
                              {R"({"model": "m", "prompt": "x", "echo": true})", "echo"},
                              {R"({"model": "m", "prompt": "x", "logprobs": 2})", "logprobs"},
                              {R"({"model": "m", "prompt": "x", "suffix": "y"})", "suffix"},
                              {R"({"model": "m", "prompt": "x", "temperature": -1})", "temperature"}},
                             parse);
}

TEST_CASE("completion response: text_completion objects and their stream") {
  const chat_answer a = test::answer("cmpl-1", "x = 1", 4, 5);
  const auto j = text_completion_json(a);
  CHECK(j["object"] == "text_completion");
  CHECK(j["choices"][0]["text"] == "x = 1");
  CHECK(j["choices"][0]["finish_reason"] == "length");
  const auto events = text_stream_events(a, true);
  REQUIRE(events.size() == 4);  // text, finish, usage, [DONE]
  CHECK(ojson::parse(events[0].substr(6))["choices"][0]["text"] == "x = 1");
  CHECK(ojson::parse(events[2].substr(6))["usage"]["total_tokens"] == 9);
}
