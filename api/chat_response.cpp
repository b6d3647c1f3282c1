#include "api/chat_response.hpp"

namespace dualpath::api {

namespace {

using json = nlohmann::ordered_json;

json usage_json(const chat_answer& a) {
  return {{"prompt_tokens", a.prompt_tokens},
          {"completion_tokens", a.completion_tokens},
          {"total_tokens", a.prompt_tokens + a.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", a.cached_tokens}}}};
}

json tool_calls_json(const chat_answer& a, bool with_index) {
  json calls = json::array();
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    const auto& c = a.tool_calls[i];
    const std::string args = c.arguments.is_string() ? c.arguments.get<std::string>() : c.arguments.dump();
    json call = with_index ? json{{"index", i}} : json::object();
    call["id"] = c.id;
    call["type"] = "function";
    call["function"] = {{"name", c.name}, {"arguments", args}};
    calls.push_back(call);
  }
  return calls;
}

// A stream's event body: a chat chunk, or with `text` a text completion's piece.
json chunk(const chat_answer& a, json choices, bool text = false) {
  return {{"id", a.id},
          {"object", text ? "text_completion" : "chat.completion.chunk"},
          {"created", a.created},
          {"model", a.model},
          {"choices", std::move(choices)}};
}

std::string event(const json& j) { return "data: " + j.dump() + "\n\n"; }

}  // namespace

json completion_json(const chat_answer& a) {
  json message{{"role", "assistant"}, {"content", a.content}};
  if (!a.tool_calls.empty()) message["tool_calls"] = tool_calls_json(a, false);
  return {{"id", a.id},
          {"object", "chat.completion"},
          {"created", a.created},
          {"model", a.model},
          {"choices", json::array({{{"index", 0}, {"message", message}, {"finish_reason", a.finish_reason}}})},
          {"usage", usage_json(a)}};
}

json text_completion_json(const chat_answer& a) {
  json choice{{"index", 0}, {"text", a.content}, {"logprobs", nullptr}, {"finish_reason", a.finish_reason}};
  if (a.token_ids) choice["token_ids"] = *a.token_ids;
  return {{"id", a.id},
          {"object", "text_completion"},
          {"created", a.created},
          {"model", a.model},
          {"choices", json::array({std::move(choice)})},
          {"usage", usage_json(a)}};
}

chat_stream::chat_stream(chat_answer head, bool include_usage, bool text_completion)
    : head_(std::move(head)), usage_(include_usage), text_(text_completion) {}

namespace {

// One choice of a chunk: a chat delta, or a text completion's piece.
json choice_of(bool text, json delta_or_text, json finish) {
  if (text)
    return json::array(
        {{{"index", 0}, {"text", std::move(delta_or_text)}, {"logprobs", nullptr}, {"finish_reason", finish}}});
  return json::array({{{"index", 0}, {"delta", std::move(delta_or_text)}, {"finish_reason", std::move(finish)}}});
}

}  // namespace

std::vector<std::string> chat_stream::begin() {
  if (text_) return {};
  return {event(chunk(head_, choice_of(false, {{"role", "assistant"}, {"content", ""}}, nullptr)))};
}

std::vector<std::string> chat_stream::delta(const std::string& text, const std::vector<int32_t>& ids) {
  const bool with_ids = text_ && head_.token_ids && !ids.empty();
  if (text.empty() && !with_ids) return {};
  sent_ += text.size();
  json choice = choice_of(text_, text_ ? json(text) : json{{"content", text}}, nullptr);
  if (with_ids) {
    choice[0]["token_ids"] = ids;
    ids_sent_ += ids.size();
  }
  return {event(chunk(head_, std::move(choice), text_))};
}

std::vector<std::string> chat_stream::end(const chat_answer& whole) {
  std::vector<int32_t> rest_ids;
  if (whole.token_ids && whole.token_ids->size() > ids_sent_)
    rest_ids.assign(whole.token_ids->begin() + ptrdiff_t(ids_sent_), whole.token_ids->end());
  auto out = delta(whole.content.size() > sent_ ? whole.content.substr(sent_) : std::string(), rest_ids);
  if (!text_ && !whole.tool_calls.empty())
    out.push_back(event(chunk(head_, choice_of(false, {{"tool_calls", tool_calls_json(whole, true)}}, nullptr))));
  out.push_back(event(chunk(head_, choice_of(text_, text_ ? json("") : json::object(), whole.finish_reason), text_)));
  if (usage_) {
    json last = chunk(head_, json::array(), text_);
    last["usage"] = usage_json(whole);
    out.push_back(event(last));
  }
  out.push_back("data: [DONE]\n\n");
  return out;
}

std::vector<std::string> all_events(answer_stream& s, const chat_answer& a) {
  auto out = s.begin();
  for (auto& e : s.end(a)) out.push_back(std::move(e));
  return out;
}

std::pair<std::string, bool> cut_at_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t at = std::string::npos;
  for (const auto& s : stops) at = std::min(at, text.find(s));
  if (at == std::string::npos) return {text, false};
  return {text.substr(0, at), true};
}

}  // namespace dualpath::api
