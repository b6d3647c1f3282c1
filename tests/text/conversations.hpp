#pragma once
// Conversations for the chat-template parity test, drawn from a seed: system prompts or none, tools or none,
// many turns, thinking in content or apart, tool calls (arguments as the API's JSON text or as objects),
// runs of tool results, odd whitespace and non-ASCII text. As JSON in the API's shape (what the reference
// renders) and as the chat_prompt the C++ renders.
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "text/chat_template.hpp"

namespace dualpath::test {

using ojson = nlohmann::ordered_json;

inline ojson draw_conversation(std::mt19937_64& rng) {
  static const std::vector<std::string> texts = {
      "Fix the failing test in src/parser.rs.",
      "  leading and trailing spaces  ",
      "line one\nline two\n\n",
      "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe8\xaf\xb7\xe5\xb8\xae\xe6\x88\x91\xe7\x9c\x8b\xe7\x9c\x8b",
      "Emoji \xf0\x9f\x98\x80 and \"quotes\" and \\backslashes\\",
      "\ttabbed\t",
      "",
      "What does `make test` run?",
      "<tool_response>\nnot really a tool response\n</tool_response>",
      "Done. All 12 tests pass.",
      "\xc2\xa0nbsp around\xc2\xa0",
      "{\"json\": [1, 2.5, true, null]}"};
  const auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const auto chance = [&](int percent) { return int(rng() % 100) < percent; };
  ojson c;
  ojson messages = ojson::array();
  if (chance(70)) messages.push_back({{"role", "system"}, {"content", "You are a coding agent. " + pick(texts)}});
  const bool tools = chance(50);
  if (tools) {
    ojson list = ojson::array();
    list.push_back(
        {{"type", "function"},
         {"function",
          {{"name", "read_file"},
           {"description", "Read a file \xe2\x80\x94 returns its text"},
           {"parameters",
            {{"type", "object"},
             {"properties", {{"path", {{"type", "string"}}}, {"limit", {{"type", "integer"}, {"default", 200}}}}},
             {"required", ojson::array({"path"})}}}}}});
    if (chance(60))
      list.push_back({{"type", "function"},
                      {"function",
                       {{"name", "run_shell"},
                        {"description", "Run a command; timeout in seconds"},
                        {"parameters",
                         {{"type", "object"},
                          {"properties", {{"cmd", {{"type", "string"}}}, {"timeout", {{"type", "number"}}}}},
                          {"additionalProperties", false}}}}}});
    c["tools"] = list;
  }
  const int rounds = 1 + int(rng() % 6);
  for (int r = 0; r < rounds; ++r) {
    messages.push_back({{"role", "user"}, {"content", pick(texts)}});
    if (r + 1 == rounds && chance(50)) break;  // ends on the user's turn: the model answers next
    if (tools && chance(50)) {
      ojson calls = ojson::array();
      const int n = 1 + int(rng() % 2);
      for (int k = 0; k < n; ++k) {
        ojson args = {{"path", "src/" + std::to_string(rng() % 100) + ".rs"}, {"limit", 50 + int(rng() % 3) * 0.5}};
        calls.push_back({{"id", "call_" + std::to_string(k)},
                         {"type", "function"},
                         {"function", {{"name", "read_file"}, {"arguments", chance(70) ? ojson(args.dump()) : args}}}});
      }
      messages.push_back({{"role", "assistant"}, {"content", chance(50) ? "" : pick(texts)}, {"tool_calls", calls}});
      for (int k = 0; k < n; ++k)
        messages.push_back({{"role", "tool"}, {"tool_call_id", "call_" + std::to_string(k)}, {"content", pick(texts)}});
    }
    ojson answer = {{"role", "assistant"}};
    const int style = int(rng() % 3);
    if (style == 0) answer["content"] = pick(texts);
    if (style == 1) answer["content"] = "<think>\n" + pick(texts) + "\n</think>\n\n" + pick(texts);
    if (style == 2) {
      answer["content"] = pick(texts);
      answer["reasoning_content"] = " " + pick(texts) + "\n";
    }
    messages.push_back(answer);
  }
  c["messages"] = messages;
  c["add_generation_prompt"] = chance(80);
  if (chance(30)) c["enable_thinking"] = chance(50);
  return c;
}

// The C++ side of a drawn conversation.
inline text::chat_prompt prompt_of(const ojson& c, const std::string& bos) {
  text::chat_prompt p;
  for (const auto& m : c["messages"]) {
    text::chat_message msg;
    msg.role = m["role"].get<std::string>();
    msg.content = m.value("content", "");
    if (m.contains("reasoning_content")) msg.reasoning_content = m["reasoning_content"].get<std::string>();
    msg.tool_call_id = m.value("tool_call_id", "");
    if (m.contains("tool_calls"))
      for (const auto& t : m["tool_calls"])
        msg.tool_calls.push_back(
            {t["id"].get<std::string>(), t["function"]["name"].get<std::string>(), t["function"]["arguments"]});
    p.messages.push_back(std::move(msg));
  }
  if (c.contains("tools")) p.tools = c["tools"];
  p.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  if (c.contains("enable_thinking")) p.enable_thinking = c["enable_thinking"].get<bool>();
  p.bos_token = bos;
  return p;
}

}  // namespace dualpath::test
