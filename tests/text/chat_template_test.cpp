// text/chat_template without a reference: family names and detection, tool calls taken out of an answer, and
// the JSON that templates print.
#include <doctest/doctest.h>

#include "text/chat_template.hpp"
#include "text/jinja_json.hpp"

using namespace dualpath;
using namespace dualpath::text;

TEST_CASE("chat template: families by name and by the markers of their template; anything else named") {
  CHECK(parse_chat_family("llama3").value() == chat_family::llama3);
  CHECK(to_string(parse_chat_family("chatml_qwen").value()) == std::string("chatml_qwen"));
  const auto bad = parse_chat_family("mistral");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("known: chatml_qwen, llama3") != std::string::npos);
  CHECK(detect_chat_family("{{ '<|im_start|>' + role }}", "c.json").value() == chat_family::chatml_qwen);
  CHECK(detect_chat_family("<|start_header_id|>", "c.json").value() == chat_family::llama3);
  const auto none = detect_chat_family("[INST] {{ m }} [/INST]", "models/x/tokenizer_config.json");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message().find("models/x/tokenizer_config.json") != std::string::npos);
  CHECK(none.error().message().find("--chat-template") != std::string::npos);
}

TEST_CASE("chat template: a Qwen answer's tool calls come out as calls; what is not one stays text") {
  const auto a =
      parse_answer(chat_family::chatml_qwen,
                   "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n"
                   "</tool_call>\n<tool_call>\n{\"name\": \"run_shell\", \"arguments\": {\"cmd\": \"ls\"}}\n"
                   "</tool_call>");
  CHECK(a.content == "Let me look.");
  REQUIRE(a.tool_calls.size() == 2);
  CHECK(a.tool_calls[0].name == "read_file");
  CHECK(a.tool_calls[0].arguments["path"] == "a.rs");
  CHECK(a.tool_calls[1].name == "run_shell");
  CHECK(a.tool_calls[0].id != a.tool_calls[1].id);
  const auto broken = parse_answer(chat_family::chatml_qwen, "x <tool_call>not json</tool_call> y <tool_call>");
  CHECK(broken.tool_calls.empty());
  CHECK(broken.content == "x <tool_call>not json</tool_call> y <tool_call>");
  CHECK(parse_answer(chat_family::llama3, "<tool_call>{\"name\": \"f\"}</tool_call>").tool_calls.empty());
}

TEST_CASE("chat template: JSON as templates print it: given order, spaced separators, JavaScript's escapes") {
  const auto j = nlohmann::ordered_json::parse(
      R"({"z": 1, "a": [true, null, 2.5, -3], "s": "tab\t \"q\" \u00e9 \u0001", "o": {}, "e": [], "n": 1e-7})");
  CHECK(template_json(j) ==
        "{\"z\": 1, \"a\": [true, null, 2.5, -3], \"s\": \"tab\\t \\\"q\\\" \xc3\xa9 \\u0001\", \"o\": {}, "
        "\"e\": [], \"n\": 1e-7}");
  CHECK(template_json(nlohmann::ordered_json(2.0)) == "2");
}
