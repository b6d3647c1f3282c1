#include "serve/served_model.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/read_file.hpp"
#include "core/status.hpp"
#include "text/byte_tokenizer.hpp"

namespace dualpath::serve {

namespace fs = std::filesystem;

namespace {

std::string token_text(const nlohmann::json& config, const char* key) {
  if (!config.contains(key)) return "";
  const auto& t = config[key];
  return t.is_string() ? t.get<std::string>() : t.is_object() ? t.value("content", "") : std::string();
}

}  // namespace

served_model load_served_model(const std::string& model, const std::string& chat_template, uint32_t vocab) {
  const fs::path dir(model);
  const bool has_files = fs::is_directory(dir) && fs::exists(dir / "tokenizer.json");
  const std::string tokenizer_origin = has_files ? (dir / "tokenizer.json").string() : "the byte-level tokenizer";
  const std::string config_origin = has_files ? (dir / "tokenizer_config.json").string() : tokenizer_origin;
  // A directory with a tokenizer but no tokenizer_config.json gets the byte-level one's (ChatML, no BOS).
  const auto cfg_text =
      has_files && fs::exists(config_origin) ? read_file(config_origin) : text::byte_tokenizer_config_json();
  if (!cfg_text) throw user_error(config_origin + " cannot be opened");
  served_model m{fs::is_directory(dir) ? dir.filename().string() : model,
                 value_or_throw(has_files ? text::tokenizer::load(tokenizer_origin)
                                          : text::tokenizer::parse(text::byte_tokenizer_json(), tokenizer_origin)),
                 text::chat_family::chatml_qwen,
                 "",
                 {}};
  if (m.name.empty()) m.name = dir.parent_path().filename().string();  // "models/x/"
  const auto config = nlohmann::json::parse(*cfg_text, nullptr, false);
  if (!config.is_object()) throw user_error(config_origin + ": not a JSON object");
  m.bos_token = token_text(config, "bos_token");
  if (!chat_template.empty()) m.family = value_or_throw(text::parse_chat_family(chat_template));
  else m.family = value_or_throw(text::detect_chat_family(config.value("chat_template", ""), config_origin));
  if (m.tokenizer.vocab_size() > vocab)
    throw user_error(tokenizer_origin + ": " + std::to_string(m.tokenizer.vocab_size()) +
                     " token ids, but the model has " + std::to_string(vocab) +
                     " (its vocabulary must hold every id the tokenizer gives)");
  for (uint32_t id = 0; id < m.tokenizer.vocab_size(); ++id)
    if (m.tokenizer.is_special(int32_t(id))) m.stop_ids.push_back(int32_t(id));
  return m;
}

}  // namespace dualpath::serve
