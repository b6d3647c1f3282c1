// api/responses: a Codex-style Responses request read into a conversation, and the answer as a response object
// and as its stream of events.
#include <doctest/doctest.h>

#include <algorithm>

#include "api/responses.hpp"
#include "tests/api/answers.hpp"

using namespace dualpath;
using namespace dualpath::api;
using ojson = nlohmann::ordered_json;

TEST_CASE("responses request: instructions, message items, function calls and outputs, tools in chat form") {
  const auto parsed = parse_responses_request(R"({"model": "m", "instructions": "Be an agent.", "input": [
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
      {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"cmd\": \"ls\"}"},
      {"type": "function_call_output", "call_id": "c1", "output": "a.rs\nb.rs"},
      {"type": "reasoning", "summary": []},
      {"role": "developer", "content": "keep going"}],
    "tools": [{"type": "function", "name": "shell", "description": "run", "parameters": {"type": "object"}}],
    "tool_choice": "auto", "parallel_tool_calls": false, "store": false, "stream": true,
    "include": [], "prompt_cache_key": "session-1", "max_output_tokens": 30, "reasoning": {"effort": "low"}})",
                                              {16, 512});
  if (auto* e = std::get_if<api_error>(&parsed)) FAIL(e->message);
  const auto& r = std::get<chat_request>(parsed);
  REQUIRE(r.prompt.messages.size() == 5);
  CHECK(r.prompt.messages[0].role == "system");
  CHECK(r.prompt.messages[0].content == "Be an agent.");
  CHECK(r.prompt.messages[1].content == "list files");
  CHECK(r.prompt.messages[2].role == "assistant");
  REQUIRE(r.prompt.messages[2].tool_calls.size() == 1);
  CHECK(r.prompt.messages[2].tool_calls[0].name == "shell");
  CHECK(r.prompt.messages[3].role == "tool");
  CHECK(r.prompt.messages[3].tool_call_id == "c1");
  CHECK(r.prompt.messages[4].role == "system");
  CHECK(r.prompt.tools[0]["function"]["name"] == "shell");
  CHECK(r.gen.max_tokens == 30);
  CHECK(r.gen.stream);
  const auto text = parse_responses_request(R"({"model": "m", "input": "hi"})", {16, 512});
  CHECK(std::get<chat_request>(text).prompt.messages[0].content == "hi");
  test::check_refused_fields(
      {{R"({"model": "m", "input": "hi", "store": true})", "store"},
       {R"({"model": "m", "input": [{"type": "image", "url": "x"}]})", "input[0].type"},
       {R"({"model": "m", "input": "hi", "tools": [{"type": "custom", "name": "x"}]})", "tools[0]"},
       {R"({"model": "m", "input": "hi", "tools": [{"type": "namespace", "name": "n", "tools": [
                                   {"type": "function"}]}]})",
        "tools[0].tools[0]"},
       {R"({"model": "m", "input": "hi", "temperature": 3})", "temperature"},
       {R"({"model": "m", "input": "hi", "background": true})", "background"},
       {R"({"model": "m"})", "input"}},
      [](const std::string& body) {
        return parse_responses_request(body, {16, 512});
      });
}

TEST_CASE("responses answer: the object, and created, deltas, done and completed with usage, numbered") {
  chat_answer a = test::answer("resp-1", "done", 10, 2);
  a.cached_tokens = 8;
  a.tool_calls.push_back({"c9", "shell", ojson("{\"cmd\": \"ls\"}")});
  const auto j = response_json(a);
  CHECK(j["object"] == "response");
  CHECK(j["status"] == "completed");
  REQUIRE(j["output"].size() == 2);
  CHECK(j["output"][0]["content"][0]["text"] == "done");
  CHECK(j["output"][1]["type"] == "function_call");
  CHECK(j["output"][1]["call_id"] == "c9");
  CHECK(j["usage"]["input_tokens_details"]["cached_tokens"] == 8);
  const auto events = response_events(a);
  std::vector<std::string> names;
  int last = -1;
  for (const auto& e : events) {
    names.push_back(e.substr(7, e.find('\n') - 7));
    const auto data = ojson::parse(e.substr(e.find("data: ") + 6));
    CHECK(data["type"] == names.back());
    CHECK(data["sequence_number"].get<int>() == last + 1);
    last = data["sequence_number"].get<int>();
  }
  CHECK(names.front() == "response.created");
  CHECK(names.back() == "response.completed");
  CHECK(std::count(names.begin(), names.end(), "response.output_text.delta") == 1);
  CHECK(std::count(names.begin(), names.end(), "response.output_item.done") == 2);
  CHECK(ojson::parse(events.back().substr(events.back().find("data: ") + 6))["response"]["usage"]["total_tokens"] ==
        12);
}

TEST_CASE("responses request: Codex's tools, a namespace of functions and a hosted search, and its metadata") {
  const auto parsed = parse_responses_request(R"({"model": "m", "input": "hi", "stream": true,
    "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
              {"type": "namespace", "name": "multi_agent_v1", "description": "sub-agents",
               "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}},
                         {"type": "function", "name": "send_input", "parameters": {"type": "object"}}]},
              {"type": "web_search", "external_web_access": false}],
    "client_metadata": {"turn_id": "t1"}, "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}})",
                                              {16, 512});
  if (auto* e = std::get_if<api_error>(&parsed)) FAIL(e->message);
  const auto& tools = std::get<chat_request>(parsed).prompt.tools;
  // The namespace's functions by their own names; the hosted search is not offered (this server runs none).
  REQUIRE(tools.size() == 3);
  CHECK(tools[0]["function"]["name"] == "exec_command");
  CHECK(tools[1]["function"]["name"] == "close_agent");
  CHECK(tools[2]["function"]["name"] == "send_input");
}
