#pragma once
// Answers of POST /v1/chat/completions (docs/design.md §18): the completion object, and the same answer as the
// Server-Sent Events of a stream (a role chunk, content, the finish reason, usage when asked, [DONE]).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
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
  // Text completions asked with `return_token_ids`: the generated ids, in the choice (whole) or, streamed, each
  // chunk's new ids in that chunk, so a client can carry them into its next prompt exactly and see its first
  // token when it comes even where it makes no text (as `bench serve` does). In a stream's head: present (empty)
  // when the ids are asked for.
  std::optional<std::vector<int32_t>> token_ids;
};

nlohmann::ordered_json completion_json(const chat_answer& a);
// The same answer for POST /v1/completions: object "text_completion", choices[].text.
nlohmann::ordered_json text_completion_json(const chat_answer& a);

// An answer written as Server-Sent Events while it is made (docs/design.md §18): begin() once, delta() for
// each piece of content as it becomes final (with the ids generated since the last delta, which a text
// completion asked with `return_token_ids` carries even where they make no text yet), end() with the whole answer (content not yet sent goes out
// first, then tool calls, the finish reason, usage, the end of the stream). Each event is one string.
class answer_stream {
 public:
  virtual ~answer_stream() = default;
  virtual std::vector<std::string> begin() = 0;
  virtual std::vector<std::string> delta(const std::string& text, const std::vector<int32_t>& ids) = 0;
  virtual std::vector<std::string> end(const chat_answer& whole) = 0;
};

// Chat completion chunks (a role chunk first), or with `text_completion` the pieces of POST /v1/completions;
// each "data: ...\n\n", the last "data: [DONE]\n\n". `head` gives the id, model and creation time;
// `include_usage` adds a chunk with no choices and the usage before the end.
class chat_stream final : public answer_stream {
 public:
  chat_stream(chat_answer head, bool include_usage, bool text_completion = false);
  std::vector<std::string> begin() override;
  std::vector<std::string> delta(const std::string& text, const std::vector<int32_t>& ids) override;
  std::vector<std::string> end(const chat_answer& whole) override;

 private:
  chat_answer head_;
  bool usage_, text_;
  size_t sent_ = 0;      // content bytes written so far
  size_t ids_sent_ = 0;  // generated ids written so far (text completions with `return_token_ids`)
};

// Every event of a finished answer at once: begin, end.
std::vector<std::string> all_events(answer_stream& s, const chat_answer& a);
inline std::vector<std::string> stream_events(const chat_answer& a, bool include_usage) {
  chat_stream s(a, include_usage);
  return all_events(s, a);
}
inline std::vector<std::string> text_stream_events(const chat_answer& a, bool include_usage) {
  chat_stream s(a, include_usage, true);
  return all_events(s, a);
}

// `text` up to the first of `stops`, and whether one was found.
std::pair<std::string, bool> cut_at_stop(const std::string& text, const std::vector<std::string>& stops);

}  // namespace dualpath::api
