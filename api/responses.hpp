#pragma once
// POST /v1/responses (docs/design.md §18), the API current agent CLIs (Codex) speak: `instructions` and
// `input` items (messages, function calls and their outputs) read into the conversation a chat template renders,
// and the answer written as a response object or as the stream of Responses events (created, output item and
// content part added, text deltas, done, completed with usage).
#include <string>
#include <variant>
#include <vector>

#include "api/api_error.hpp"
#include "api/chat_request.hpp"
#include "api/chat_response.hpp"

namespace dualpath::api {

std::variant<chat_request, api_error> parse_responses_request(const std::string& body, const request_limits& limits);

nlohmann::ordered_json response_json(const chat_answer& a);

// The Responses events of an answer while it is made (answer_stream): created and in progress first; the
// message item opens with the first text; end() closes it, adds the function calls and completes. Each event
// is "event: NAME\ndata: {...}\n\n", numbered by sequence_number.
class response_stream final : public answer_stream {
 public:
  explicit response_stream(chat_answer head) : head_(std::move(head)) {}
  std::vector<std::string> begin() override;
  std::vector<std::string> delta(const std::string& text, const std::vector<int32_t>& ids) override;
  std::vector<std::string> end(const chat_answer& whole) override;

 private:
  void event(std::vector<std::string>& out, const char* name, nlohmann::ordered_json data);
  void open_message(std::vector<std::string>& out);
  chat_answer head_;
  int seq_ = 0;
  bool opened_ = false;
  std::string sent_;  // the text written so far
};

inline std::vector<std::string> response_events(const chat_answer& a) {
  response_stream s(a);
  return all_events(s, a);
}

}  // namespace dualpath::api
