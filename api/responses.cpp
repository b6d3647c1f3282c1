#include "api/responses.hpp"

namespace dualpath::api {

namespace {

using json = nlohmann::ordered_json;
using detail::refuse;

// An item's text: a string, or input_text / output_text parts.
std::string item_text(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) refuse(where, "must be a string or a list of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& p = content[i];
    const std::string type = p.is_object() ? p.value("type", "") : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !p.contains("text"))
      refuse(where + "[" + std::to_string(i) + "]", "only input_text and output_text parts are supported");
    text += p["text"].get<std::string>();
  }
  return text;
}

// Tools the server runs itself in OpenAI's service (web search, file search, ...): this server runs none, so
// they are not offered to the model; a client that sends them (Codex sends web_search) still gets an answer.
bool hosted_tool(const std::string& type) {
  for (const char* t : {"web_search", "web_search_preview", "file_search", "code_interpreter", "image_generation",
                        "computer_use_preview", "mcp"})
    if (type == t) return true;
  return false;
}

// One Responses tool as the chat API writes tools: a function as it is, a namespace as the functions in it.
void read_tool(const json& t, const std::string& where, json& tools) {
  const std::string type = t.is_object() ? t.value("type", "") : "";
  if (type == "namespace") {
    if (!t.contains("tools") || !t["tools"].is_array()) refuse(where + ".tools", "a namespace needs a list of tools");
    for (size_t i = 0; i < t["tools"].size(); ++i)
      read_tool(t["tools"][i], where + ".tools[" + std::to_string(i) + "]", tools);
    return;
  }
  if (hosted_tool(type)) return;
  if (type != "function" || !t.contains("name") || !t["name"].is_string())
    refuse(where, "only function tools (and namespaces of them) are supported; hosted tools are left out");
  json fn{{"name", t["name"]}};
  if (t.contains("description")) fn["description"] = t["description"];
  if (t.contains("parameters")) fn["parameters"] = t["parameters"];
  tools.push_back({{"type", "function"}, {"function", fn}});
}

void read_input(const json& input, text::chat_prompt& prompt) {
  if (input.is_string()) {
    prompt.messages.push_back({"user", input.get<std::string>(), std::nullopt, {}, ""});
    return;
  }
  if (!input.is_array() || input.empty()) refuse("input", "must be a string or a non-empty list of items");
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) refuse(where, "must be an object");
    const std::string type = item.value("type", item.contains("role") ? "message" : "");
    if (type == "message") {
      std::string role = item.value("role", "");
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant")
        refuse(where + ".role", "must be system, developer, user or assistant");
      prompt.messages.push_back(
          {role, item_text(item.value("content", json("")), where + ".content"), std::nullopt, {}, ""});
    } else if (type == "function_call") {
      if (!item.contains("name") || !item.contains("call_id")) refuse(where, "a function_call needs name and call_id");
      // Calls of one turn join the assistant message before them, as the chat API carries them.
      if (prompt.messages.empty() || prompt.messages.back().role != "assistant")
        prompt.messages.push_back({"assistant", "", std::nullopt, {}, ""});
      prompt.messages.back().tool_calls.push_back(
          {item["call_id"].get<std::string>(), item["name"].get<std::string>(), item.value("arguments", json("{}"))});
    } else if (type == "function_call_output") {
      if (!item.contains("call_id")) refuse(where + ".call_id", "is required");
      const json& out = item.value("output", json(""));
      prompt.messages.push_back({"tool",
                                 out.is_string() ? out.get<std::string>() : item_text(out, where + ".output"),
                                 std::nullopt,
                                 {},
                                 item["call_id"].get<std::string>()});
    } else if (type == "reasoning") {
      continue;  // a model's earlier reasoning summary: the template keeps thinking only where it belongs
    } else {
      refuse(where + ".type", "'" + type + "' items are not supported (message, function_call, function_call_output)");
    }
  }
}

chat_request parse(const json& body, const request_limits& limits) {
  if (!body.is_object()) refuse("body", "must be a JSON object");
  detail::refuse_unknown(body, "",
                         {"model",       "instructions", "input",  "tools",   "tool_choice",      "parallel_tool_calls",
                          "reasoning",   "store",        "stream", "include", "prompt_cache_key", "max_output_tokens",
                          "temperature", "top_p",        "text",   "user",    "metadata",         "client_metadata",
                          "truncation",  "service_tier"});
  chat_request r;
  if (!body.contains("model") || !body["model"].is_string()) refuse("model", "is required");
  r.model = body["model"].get<std::string>();
  if (body.contains("instructions") && body["instructions"].is_string())
    r.prompt.messages.push_back({"system", body["instructions"].get<std::string>(), std::nullopt, {}, ""});
  if (!body.contains("input")) refuse("input", "is required");
  read_input(body["input"], r.prompt);
  json gen = json::object();  // the generation fields under their chat names
  for (const char* key : {"temperature", "top_p", "stream"})
    if (body.contains(key)) gen[key] = body[key];
  if (body.contains("max_output_tokens")) gen["max_tokens"] = body["max_output_tokens"];
  detail::read_generation_fields(gen, limits, r.gen);
  r.gen.include_usage = true;  // response.completed always carries it
  if (body.contains("store") && body["store"].is_boolean() && body["store"].get<bool>())
    refuse("store", "this server keeps no responses; send store: false", "unsupported_value");
  if (body.contains("text") && body["text"].is_object() && body["text"].contains("format") &&
      body["text"]["format"].value("type", "text") != "text")
    refuse("text.format", "only text is supported", "unsupported_value");
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) refuse("tools", "must be a list");
    for (size_t i = 0; i < body["tools"].size(); ++i)
      read_tool(body["tools"][i], "tools[" + std::to_string(i) + "]", r.prompt.tools);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    if (!c.is_string() || (c != "auto" && c != "none"))
      refuse("tool_choice", "only \"auto\" and \"none\" are supported", "unsupported_value");
    if (c == "none") r.prompt.tools = json::array();
  }
  if (r.prompt.messages.empty()) refuse("input", "holds no message");
  return r;
}

json usage_of(const chat_answer& a) {
  return {{"input_tokens", a.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", a.cached_tokens}}},
          {"output_tokens", a.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", a.prompt_tokens + a.completion_tokens}};
}

json message_item(const chat_answer& a, const std::string& text, const char* status) {
  json content = json::array();
  if (std::string(status) == "completed")
    content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}});
  return {{"type", "message"}, {"id", "msg_" + a.id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json call_item(const chat_answer& a, size_t i) {
  const auto& c = a.tool_calls[i];
  return {{"type", "function_call"},
          {"id", "fc_" + a.id + "_" + std::to_string(i)},
          {"call_id", c.id},
          {"name", c.name},
          {"arguments", c.arguments.is_string() ? c.arguments.get<std::string>() : c.arguments.dump()},
          {"status", "completed"}};
}

json response_with(const chat_answer& a, const char* status, json output) {
  json r{{"id", a.id},       {"object", "response"}, {"created_at", a.created},
         {"status", status}, {"model", a.model},     {"output", std::move(output)}};
  r["usage"] = std::string(status) == "completed" ? usage_of(a) : json();
  return r;
}

}  // namespace

std::variant<chat_request, api_error> parse_responses_request(const std::string& body, const request_limits& limits) {
  return detail::read_body<chat_request>(body, [&](const json& j) { return parse(j, limits); });
}

json response_json(const chat_answer& a) {
  json output = json::array();
  if (!a.content.empty() || a.tool_calls.empty()) output.push_back(message_item(a, a.content, "completed"));
  for (size_t i = 0; i < a.tool_calls.size(); ++i) output.push_back(call_item(a, i));
  return response_with(a, "completed", output);
}

void response_stream::event(std::vector<std::string>& out, const char* name, json data) {
  data["type"] = name;
  data["sequence_number"] = seq_++;
  out.push_back(std::string("event: ") + name + "\ndata: " + data.dump() + "\n\n");
}

std::vector<std::string> response_stream::begin() {
  std::vector<std::string> out;
  event(out, "response.created", {{"response", response_with(head_, "in_progress", json::array())}});
  event(out, "response.in_progress", {{"response", response_with(head_, "in_progress", json::array())}});
  return out;
}

void response_stream::open_message(std::vector<std::string>& out) {
  if (opened_) return;
  opened_ = true;
  event(out, "response.output_item.added", {{"output_index", 0}, {"item", message_item(head_, "", "in_progress")}});
  const json part{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
  event(out, "response.content_part.added",
        {{"item_id", "msg_" + head_.id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
}

std::vector<std::string> response_stream::delta(const std::string& text, const std::vector<int32_t>&) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  open_message(out);
  sent_ += text;
  event(out, "response.output_text.delta",
        {{"item_id", "msg_" + head_.id}, {"output_index", 0}, {"content_index", 0}, {"delta", text}});
  return out;
}

std::vector<std::string> response_stream::end(const chat_answer& a) {
  auto out = delta(a.content.size() > sent_.size() ? a.content.substr(sent_.size()) : std::string(), {});
  size_t index = 0;
  if (opened_ || a.tool_calls.empty()) {
    open_message(out);
    const std::string item = "msg_" + a.id;
    event(out, "response.output_text.done",
          {{"item_id", item}, {"output_index", index}, {"content_index", 0}, {"text", sent_}});
    const json part{{"type", "output_text"}, {"text", sent_}, {"annotations", json::array()}};
    event(out, "response.content_part.done",
          {{"item_id", item}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    event(out, "response.output_item.done", {{"output_index", index}, {"item", message_item(a, sent_, "completed")}});
    ++index;
  }
  for (size_t i = 0; i < a.tool_calls.size(); ++i, ++index) {
    const json item = call_item(a, i);
    event(out, "response.output_item.added", {{"output_index", index}, {"item", item}});
    event(out, "response.function_call_arguments.done",
          {{"item_id", item["id"]}, {"output_index", index}, {"arguments", item["arguments"]}});
    event(out, "response.output_item.done", {{"output_index", index}, {"item", item}});
  }
  event(out, "response.completed", {{"response", response_json(a)}});
  return out;
}

}  // namespace dualpath::api
