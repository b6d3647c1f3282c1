#pragma once
// Chat templates in C++ (docs/design.md §18): a conversation as the prompt text a model family was trained on,
// byte for byte what the family's own Jinja template renders (transformers.js's engine), without a template
// engine in the server. One function per family; the family is chosen from the model directory's
// tokenizer_config.json or named by the user.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace dualpath::text {

enum class chat_family : uint8_t {
  chatml_qwen,  // <|im_start|>role ... <|im_end|>, tools in <tools>, calls in <tool_call> (Qwen2.5, Qwen3)
  llama3,       // <|start_header_id|>role<|end_header_id|> ... <|eot_id|> (Llama 3)
};
const char* to_string(chat_family f);
const std::vector<std::string>& chat_family_names();
result<chat_family> parse_chat_family(std::string_view name);
// The family whose template `template_text` (tokenizer_config.json's chat_template) is, by the markers it
// writes; bad_input naming `origin` when it is none of them (the user can name one with --chat-template).
result<chat_family> detect_chat_family(const std::string& template_text, const std::string& origin);

struct chat_tool_call {
  std::string id;
  std::string name;
  nlohmann::ordered_json arguments;  // the JSON text the API carries as a string, or an object
};

struct chat_message {
  std::string role;  // system, developer, user, assistant, tool
  std::string content;
  std::optional<std::string> reasoning_content;  // an assistant's thinking, when given apart from content
  std::vector<chat_tool_call> tool_calls;        // assistant
  std::string tool_call_id;                      // tool
};

struct chat_prompt {
  std::vector<chat_message> messages;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // function definitions, as the API has them
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking (Qwen3)
  std::string bos_token;                // tokenizer_config.json's, where the family writes it
};

// The prompt text of `p` in family `f`.
std::string render_chat(chat_family f, const chat_prompt& p);
// What family `f` writes before an assistant's content, in the generation prompt and in the history alike.
std::string_view assistant_header(chat_family f);

// A model's answer in family `f`, its tool calls taken out (Qwen: <tool_call>{"name", "arguments"}</tool_call>).
struct parsed_answer {
  std::string content;
  std::vector<chat_tool_call> tool_calls;
};
parsed_answer parse_answer(chat_family f, const std::string& text);

}  // namespace dualpath::text
