#include "api/chat_request.hpp"

#include <set>

namespace dualpath::api {

namespace detail {

// Thrown inside the readers, turned into their answer at the top (refusal_of).
struct refusal {
  api_error error;
};

void refuse(const std::string& param, const std::string& message, const std::string& code) {
  throw refusal{bad_field(param, message, code)};
}

}  // namespace detail

namespace {

using json = nlohmann::ordered_json;
using detail::refusal;
using detail::refuse;

void only_keys(const json& j, const std::string& where, const std::set<std::string>& known) {
  for (const auto& [k, v] : j.items()) {
    if (known.count(k)) continue;
    std::string field = where;
    if (!field.empty()) field += '.';
    field += k;
    refuse(field, "is not supported by this server", "unsupported_field");
  }
}

// A message's content: a string, null (an assistant that only calls tools), or a list of text parts.
std::string content_of(const json& m, const std::string& where) {
  if (!m.contains("content") || m["content"].is_null()) return "";
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) refuse(where + ".content", "must be a string or a list of text parts");
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const auto part = where + ".content[" + std::to_string(i) + "]";
    if (!c[i].is_object() || c[i].value("type", "") != "text" || !c[i].contains("text") || !c[i]["text"].is_string())
      refuse(part, "only {\"type\": \"text\", \"text\": ...} parts are supported");
    text += c[i]["text"].get<std::string>();
  }
  return text;
}

text::chat_message message_of(const json& m, const std::string& where) {
  if (!m.is_object()) refuse(where, "must be an object");
  only_keys(m, where, {"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"});
  if (!m.contains("role") || !m["role"].is_string()) refuse(where + ".role", "is required");
  text::chat_message out;
  out.role = m["role"].get<std::string>();
  if (out.role == "developer") out.role = "system";  // the newer name of the same role
  if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool")
    refuse(where + ".role", "must be system, developer, user, assistant or tool (got '" + out.role + "')");
  out.content = content_of(m, where);
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
    out.reasoning_content = m["reasoning_content"].get<std::string>();
  if (out.role == "tool") out.tool_call_id = m.value("tool_call_id", "");
  if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
    if (out.role != "assistant" || !m["tool_calls"].is_array())
      refuse(where + ".tool_calls", "is a list, on assistant messages only");
    for (size_t k = 0; k < m["tool_calls"].size(); ++k) {
      const json& t = m["tool_calls"][k];
      const auto tw = where + ".tool_calls[" + std::to_string(k) + "]";
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
          !t["function"]["name"].is_string())
        refuse(tw, "must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
      out.tool_calls.push_back(
          {t.value("id", ""), t["function"]["name"].get<std::string>(), t["function"].value("arguments", json("{}"))});
    }
  }
  return out;
}

uint32_t positive(const json& v, const std::string& param, uint32_t limit) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1) refuse(param, "must be a positive integer");
  if (v.get<int64_t>() > int64_t(limit)) refuse(param, "must be at most " + std::to_string(limit));
  return uint32_t(v.get<int64_t>());
}

// A sampling field that this server's greedy decoding honours only at its neutral value.
void neutral_only(const json& body, const char* key, double neutral, const std::string& why) {
  if (!body.contains(key) || body[key].is_null()) return;
  if (!body[key].is_number() || body[key].get<double>() != neutral)
    refuse(key, "only " + json(neutral).dump() + " is supported (" + why + ")", "unsupported_value");
}

// The generation fields chat and text completions share.
void read_generation(const json& body, const request_limits& limits, generation& gen) {
  gen.max_tokens = limits.max_tokens_default;
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (body.contains(key) && !body[key].is_null()) gen.max_tokens = positive(body[key], key, limits.max_tokens_limit);
  // Sampling (gpu/sampling.hpp): a temperature in [0, 2] (0 is greedy), a nucleus in (0, 1], a seed that makes
  // a sampled answer reproducible.
  if (body.contains("temperature") && !body["temperature"].is_null()) {
    const json& t = body["temperature"];
    if (!t.is_number() || !(t.get<double>() >= 0 && t.get<double>() <= 2)) refuse("temperature", "must be in 0..2");
    gen.temperature = t.get<float>();
  }
  if (body.contains("top_p") && !body["top_p"].is_null()) {
    const json& p = body["top_p"];
    if (!p.is_number() || !(p.get<double>() > 0 && p.get<double>() <= 1)) refuse("top_p", "must be in (0, 1]");
    gen.top_p = p.get<float>();
  }
  neutral_only(body, "frequency_penalty", 0, "no penalties");
  neutral_only(body, "presence_penalty", 0, "no penalties");
  if (body.contains("n") && !body["n"].is_null() && body["n"] != 1)
    refuse("n", "only 1 is supported", "unsupported_value");
  if (body.contains("logprobs") && body["logprobs"].is_boolean() && body["logprobs"].get<bool>())
    refuse("logprobs", "is not supported", "unsupported_value");
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) refuse("seed", "must be an integer");
    gen.seed = uint64_t(body["seed"].get<int64_t>());
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) gen.stop.push_back(s.get<std::string>());
    else if (s.is_array() && s.size() <= 4)
      for (const auto& x : s) {
        if (!x.is_string() || x.get<std::string>().empty()) refuse("stop", "must be non-empty strings");
        gen.stop.push_back(x.get<std::string>());
      }
    else refuse("stop", "must be a string or a list of up to 4 strings");
  }
  if (body.contains("ignore_eos") && !body["ignore_eos"].is_null()) {
    if (!body["ignore_eos"].is_boolean()) refuse("ignore_eos", "must be true or false");
    gen.ignore_eos = body["ignore_eos"].get<bool>();
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) refuse("stream", "must be true or false");
    gen.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& o = body["stream_options"];
    if (!o.is_object()) refuse("stream_options", "must be an object");
    only_keys(o, "stream_options", {"include_usage"});
    gen.include_usage = o.value("include_usage", false);
  }
}

chat_request parse(const json& body, const request_limits& limits) {
  if (!body.is_object()) refuse("body", "must be a JSON object");
  only_keys(body, "",
            {"model",
             "messages",
             "max_tokens",
             "max_completion_tokens",
             "temperature",
             "top_p",
             "seed",
             "stop",
             "n",
             "stream",
             "stream_options",
             "tools",
             "tool_choice",
             "parallel_tool_calls",
             "chat_template_kwargs",
             "user",
             "frequency_penalty",
             "presence_penalty",
             "logprobs",
             "metadata",
             "store",
             "ignore_eos"});
  chat_request r;
  if (!body.contains("model") || !body["model"].is_string()) refuse("model", "is required");
  r.model = body["model"].get<std::string>();
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    refuse("messages", "must be a non-empty list");
  for (size_t i = 0; i < body["messages"].size(); ++i)
    r.prompt.messages.push_back(message_of(body["messages"][i], "messages[" + std::to_string(i) + "]"));
  read_generation(body, limits, r.gen);
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) refuse("tools", "must be a list");
    for (size_t i = 0; i < body["tools"].size(); ++i)
      if (!body["tools"][i].is_object() || body["tools"][i].value("type", "") != "function")
        refuse("tools[" + std::to_string(i) + "]", "must be {\"type\": \"function\", \"function\": {...}}");
    r.prompt.tools = body["tools"];
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    if (!c.is_string() || (c != "auto" && c != "none"))
      refuse("tool_choice", "only \"auto\" and \"none\" are supported", "unsupported_value");
    if (c == "none") r.prompt.tools = json::array();
  }
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    const json& k = body["chat_template_kwargs"];
    if (!k.is_object()) refuse("chat_template_kwargs", "must be an object");
    only_keys(k, "chat_template_kwargs", {"enable_thinking"});
    if (k.contains("enable_thinking")) r.prompt.enable_thinking = k["enable_thinking"].get<bool>();
  }
  r.prompt.add_generation_prompt = true;
  return r;
}

}  // namespace

namespace detail {
void read_generation_fields(const nlohmann::ordered_json& body, const request_limits& limits, generation& gen) {
  read_generation(body, limits, gen);
}
void refuse_unknown(const nlohmann::ordered_json& body, const std::string& where, const std::set<std::string>& known) {
  only_keys(body, where, known);
}
api_error refusal_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const refusal& r) {
    return r.error;
  } catch (const json::exception& x) {
    return api_error{400, std::string("a field has the wrong type: ") + x.what(), std::nullopt, "invalid_type"};
  }
}
}  // namespace detail

std::variant<chat_request, api_error> parse_chat_request(const std::string& body, const request_limits& limits) {
  return detail::read_body<chat_request>(body, [&](const json& j) { return parse(j, limits); });
}

}  // namespace dualpath::api
