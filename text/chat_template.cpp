#include "text/chat_template.hpp"

#include "core/names.hpp"
#include "text/jinja_json.hpp"

namespace dualpath::text {

namespace {

constexpr const char* families[] = {"chatml_qwen", "llama3"};

// JavaScript's String#trim set (what the templates' strip, lstrip, rstrip and trim filters remove in
// transformers.js, whatever characters they are given): ASCII whitespace, NBSP, the Unicode spaces, the line
// and paragraph separators and the BOM.
bool js_space_at(const std::string& s, size_t i, size_t& len) {
  const auto c = uint8_t(s[i]);
  len = 1;
  if (c == ' ' || (c >= '\t' && c <= '\r')) return true;
  const auto starts = [&](const char* seq) {
    const std::string_view q(seq);
    if (s.compare(i, q.size(), q) != 0) return false;
    len = q.size();
    return true;
  };
  if (c == 0xc2) return starts("\xc2\xa0");
  if (c == 0xe1) return starts("\xe1\x9a\x80");
  if (c == 0xe2) {
    if (i + 2 >= s.size()) return false;
    const auto b1 = uint8_t(s[i + 1]), b2 = uint8_t(s[i + 2]);
    len = 3;
    if (b1 == 0x80 && ((b2 >= 0x80 && b2 <= 0x8a) || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf)) return true;
    if (b1 == 0x81 && b2 == 0x9f) return true;
    return false;
  }
  if (c == 0xe3) return starts("\xe3\x80\x80");
  if (c == 0xef) return starts("\xef\xbb\xbf");
  return false;
}

std::string trim_start(const std::string& s) {
  size_t i = 0, len = 0;
  while (i < s.size() && js_space_at(s, i, len)) i += len;
  return s.substr(i);
}

std::string trim_end(const std::string& s) {
  // Walk forward, remembering where the last run of spaces began.
  size_t i = 0, len = 0, end = 0;
  while (i < s.size()) {
    if (js_space_at(s, i, len)) {
      i += len;
    } else {
      ++i;
      while (i < s.size() && (uint8_t(s[i]) & 0xc0) == 0x80) ++i;
      end = i;
    }
  }
  return s.substr(0, end);
}

std::string trim(const std::string& s) { return trim_end(trim_start(s)); }

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Qwen3's template, step by step (docs/design.md §18).
std::string render_qwen(const chat_prompt& p) {
  const auto& ms = p.messages;
  std::string out;
  const bool first_is_system = !ms.empty() && ms[0].role == "system";
  if (!p.tools.empty()) {
    out += "<|im_start|>system\n";
    if (first_is_system) out += ms[0].content + "\n\n";
    out +=
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
        "function signatures within <tools></tools> XML tags:\n<tools>";
    for (const auto& tool : p.tools) out += "\n" + template_json(tool);
    out +=
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call><|im_end|>\n";
  } else if (first_is_system) {
    out += "<|im_start|>system\n" + ms[0].content + "<|im_end|>\n";
  }
  // The last user message that is a real query (not tool responses sent as a user turn).
  size_t last_query = ms.empty() ? 0 : ms.size() - 1;
  for (size_t i = ms.size(); i-- > 0;) {
    const auto& c = ms[i].content;
    if (ms[i].role == "user" && !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    const bool last = i + 1 == ms.size();
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string content = m.content, reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (const size_t end = m.content.rfind("</think>"); end != std::string::npos) {
        content = trim_start(m.content.substr(end + 8));
        std::string before = trim_end(m.content.substr(0, m.content.find("</think>")));
        const size_t open = before.rfind("<think>");
        reasoning = trim_start(open == std::string::npos ? before : before.substr(open + 7));
      }
      if (i > last_query && (last || !reasoning.empty()))
        out += "<|im_start|>assistant\n<think>\n" + trim(reasoning) + "\n</think>\n\n" + trim_start(content);
      else out += "<|im_start|>assistant\n" + content;
      for (size_t k = 0; k < m.tool_calls.size(); ++k) {
        const auto& call = m.tool_calls[k];
        if (k > 0 || !content.empty()) out += "\n";
        out += "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": ";
        out += call.arguments.is_string() ? call.arguments.get<std::string>() : template_json(call.arguments);
        out += "}\n</tool_call>";
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || ms[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || ms[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (p.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (p.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// Llama 3's template: a header per message, its content trimmed, the BOS token before the first, and the
// assistant's header at the end whatever add_generation_prompt says (the template writes it always).
std::string render_llama3(const chat_prompt& p) {
  std::string out;
  for (size_t i = 0; i < p.messages.size(); ++i) {
    const auto& m = p.messages[i];
    if (i == 0) out += p.bos_token;
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  }
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

}  // namespace

const char* to_string(chat_family f) { return families[int(f)]; }

std::string_view assistant_header(chat_family f) {
  return f == chat_family::llama3 ? "<|start_header_id|>assistant<|end_header_id|>\n\n" : "<|im_start|>assistant\n";
}
const std::vector<std::string>& chat_family_names() { return name_list<families>(); }
result<chat_family> parse_chat_family(std::string_view name) {
  return parse_enum<chat_family, families>(name, "chat template");
}

result<chat_family> detect_chat_family(const std::string& template_text, const std::string& origin) {
  if (template_text.find("<|im_start|>") != std::string::npos) return chat_family::chatml_qwen;
  if (template_text.find("<|start_header_id|>") != std::string::npos) return chat_family::llama3;
  return status(errc::bad_input, origin + ": chat_template is of no family this server renders (known: " +
                                     join_names(chat_family_names()) + "); name one with --chat-template");
}

std::string render_chat(chat_family f, const chat_prompt& p) {
  switch (f) {
    case chat_family::chatml_qwen: return render_qwen(p);
    case chat_family::llama3: return render_llama3(p);
  }
  return {};
}

parsed_answer parse_answer(chat_family f, const std::string& text) {
  parsed_answer a;
  if (f != chat_family::chatml_qwen) {
    a.content = text;
    return a;
  }
  // Every well-formed <tool_call>{json}</tool_call> becomes a call; what is not JSON with a name stays text.
  size_t at = 0;
  while (true) {
    const size_t open = text.find("<tool_call>", at);
    const size_t close = open == std::string::npos ? open : text.find("</tool_call>", open);
    if (close == std::string::npos) break;
    const auto body = nlohmann::ordered_json::parse(text.substr(open + 11, close - open - 11), nullptr, false);
    if (body.is_object() && body.contains("name") && body["name"].is_string()) {
      a.content += text.substr(at, open - at);
      chat_tool_call call;
      call.id = "call_" + std::to_string(a.tool_calls.size());
      call.name = body["name"].get<std::string>();
      call.arguments = body.contains("arguments") ? body["arguments"] : nlohmann::ordered_json::object();
      a.tool_calls.push_back(std::move(call));
    } else {
      a.content += text.substr(at, close + 12 - at);
    }
    at = close + 12;
  }
  a.content += text.substr(at);
  a.content = trim(a.content);
  return a;
}

}  // namespace dualpath::text
