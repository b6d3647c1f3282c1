#pragma once
// Answers of POST /v1/chat/completions (docs/design.md §18): the completion object, and the same answer as the
// Server-Sent Events of a stream (a role chunk, content, the finish reason, usage when asked, [DONE]).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/chat_template.hpp"

namespace dualpath::api {

struct chat_answer {
  std::string id;  // "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
  std::string content;
  std::vector<text::chat_tool_call> tool_calls;
  std::string finish_reason = "length";  // length, stop or tool_calls
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  uint32_t cached_tokens = 0;  // prompt tokens whose KV was loaded from storage, not recomputed
};

nlohmann::ordered_json completion_json(const chat_answer& a);
// Every event of the stream, each "data: ...\n\n", the last one "data: [DONE]\n\n".
std::vector<std::string> stream_events(const chat_answer& a, bool include_usage);

// The same answer for POST /v1/completions: object "text_completion", choices[].text.
nlohmann::ordered_json text_completion_json(const chat_answer& a);
std::vector<std::string> text_stream_events(const chat_answer& a, bool include_usage);

// `text` up to the first of `stops`, and whether one was found.
std::pair<std::string, bool> cut_at_stop(const std::string& text, const std::vector<std::string>& stops);

}  // namespace dualpath::api
