// Fuzz harnesses of the serving front end's request readers (api/): the body of a chat completion, a text
// completion and a Responses request, as a client sends it. A reader answers every body with a request or a
// 400; an accepted conversation is then rendered by every chat template family, which must not throw either.
#include <string>

#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
#include "api/responses.hpp"
#include "tests/fuzz/harnesses.hpp"
#include "text/chat_template.hpp"

namespace dualpath::fuzz {

namespace {

constexpr api::request_limits limits{16, 1024};

std::string body_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

int conversation(const std::variant<api::chat_request, api::api_error>& r) {
  if (const auto* e = std::get_if<api::api_error>(&r)) {
    if (e->http_status != 400) throw std::logic_error("a request reader answered " + std::to_string(e->http_status));
    return refused;
  }
  const auto& req = std::get<api::chat_request>(r);
  size_t rendered = 0;
  for (const auto& f : {text::chat_family::chatml_qwen, text::chat_family::llama3})
    rendered += text::render_chat(f, req.prompt).size();
  return rendered > 0 ? accepted : refused;  // a conversation always renders to some text
}

}  // namespace

int fuzz_chat_request(const uint8_t* data, size_t size) {
  return conversation(api::parse_chat_request(body_of(data, size), limits));
}

int fuzz_responses_request(const uint8_t* data, size_t size) {
  return conversation(api::parse_responses_request(body_of(data, size), limits));
}

int fuzz_completion_request(const uint8_t* data, size_t size) {
  const auto r = api::parse_completion_request(body_of(data, size), limits);
  if (const auto* e = std::get_if<api::api_error>(&r)) {
    if (e->http_status != 400) throw std::logic_error("a request reader answered " + std::to_string(e->http_status));
    return refused;
  }
  const auto& c = std::get<api::completion_request>(r);
  if (c.given_as_ids ? c.ids.empty() : c.text.empty()) throw std::logic_error("an empty prompt was accepted");
  return accepted;
}

}  // namespace dualpath::fuzz
