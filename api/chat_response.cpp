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

json chunk(const chat_answer& a, json choices) {
  return {{"id", a.id},
          {"object", "chat.completion.chunk"},
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

std::vector<std::string> stream_events(const chat_answer& a, bool include_usage) {
  std::vector<std::string> out;
  const auto choice = [](json delta, json finish) {
    return json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}});
  };
  out.push_back(event(chunk(a, choice({{"role", "assistant"}, {"content", ""}}, nullptr))));
  if (!a.content.empty()) out.push_back(event(chunk(a, choice({{"content", a.content}}, nullptr))));
  if (!a.tool_calls.empty())
    out.push_back(event(chunk(a, choice({{"tool_calls", tool_calls_json(a, true)}}, nullptr))));
  out.push_back(event(chunk(a, choice(json::object(), a.finish_reason))));
  if (include_usage) {
    json last = chunk(a, json::array());
    last["usage"] = usage_json(a);
    out.push_back(event(last));
  }
  out.push_back("data: [DONE]\n\n");
  return out;
}

json text_completion_json(const chat_answer& a) {
  return {
      {"id", a.id},
      {"object", "text_completion"},
      {"created", a.created},
      {"model", a.model},
      {"choices",
       json::array({{{"index", 0}, {"text", a.content}, {"logprobs", nullptr}, {"finish_reason", a.finish_reason}}})},
      {"usage", usage_json(a)}};
}

std::vector<std::string> text_stream_events(const chat_answer& a, bool include_usage) {
  std::vector<std::string> out;
  const auto piece = [&](const std::string& text, json finish) {
    json j{{"id", a.id}, {"object", "text_completion"}, {"created", a.created}, {"model", a.model}};
    j["choices"] = json::array({{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish}}});
    return event(j);
  };
  if (!a.content.empty()) out.push_back(piece(a.content, nullptr));
  out.push_back(piece("", a.finish_reason));
  if (include_usage) {
    json last{{"id", a.id},       {"object", "text_completion"}, {"created", a.created},
              {"model", a.model}, {"choices", json::array()},    {"usage", usage_json(a)}};
    out.push_back(event(last));
  }
  out.push_back("data: [DONE]\n\n");
  return out;
}

std::pair<std::string, bool> cut_at_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t at = std::string::npos;
  for (const auto& s : stops) at = std::min(at, text.find(s));
  if (at == std::string::npos) return {text, false};
  return {text.substr(0, at), true};
}

}  // namespace dualpath::api
