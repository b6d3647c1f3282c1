#pragma once
// Strings for the tokenizer's parity test: code, prose, CJK, emoji, whitespace runs, numbers, combining marks
// (what NFC composes) and special tokens, mixed at random from a seed. Code comes from this repository's own
// sources, so the corpus holds real code without a copy of anyone else's.
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace dualpath::test {

inline std::vector<std::string> source_lines(const std::vector<std::string>& files) {
  std::vector<std::string> lines;
  for (const auto& f : files) {
    std::ifstream in(std::string(DUALPATH_SOURCE_DIR) + "/" + f);
    for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  }
  return lines;
}

// `n` strings; `specials` are the tokenizer's own special tokens, cut in and written whole.
inline std::vector<std::string> parity_corpus(size_t n, uint64_t seed, const std::vector<std::string>& specials) {
  static const std::vector<std::string> fragments = {
      "Hello, world!",
      "The quick brown fox jumps over the lazy dog.",
      "I'm sure they'll say we'd've DONE it",
      "caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9",
      "e\xcc\x81",
      "A\xcc\x8a",
      "\xe1\x84\x80\xe1\x85\xa1",
      "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82",
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88",
      "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xeb\xac\xb8\xec\x9e\xa5",
      "\xe2\x80\x9c\xe5\xbc\x95\xe5\x8f\xb7\xe2\x80\x9d\xe3\x80\x81\xe3\x80\x8a\xe4\xb9\xa6\xe3\x80\x8b",
      "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80",
      "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7",
      "\xf0\x9f\x98\x80",
      "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
      "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6",
      "\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5",
      "\xe2\x9d\xa4\xef\xb8\x8f",
      "   ",
      "\t\t",
      "\r\n",
      "\n\n\n",
      " \xc2\xa0 ",
      "\xe3\x80\x80",
      "\xe2\x80\x83",
      "    indented",
      "12345678",
      "3.14159",
      "1,000,000",
      "0x1f",
      "$HOME/.config",
      "a+b=c;",
      "{\"key\": [1, 2, 3]}",
      "<div class=\"x\">",
      "==>",
      "...",
      "--flag=value",
      "\\n",
      "'quoted'",
  };
  static const std::vector<std::string> code =
      source_lines({"text/tokenizer.cpp", "core/cluster_config.cpp", "bench/experiments/scaled64k.py", "docs/design.md",
                    "scripts/install-deps.sh", "protocol/interfaces.hpp"});
  static const std::vector<std::string> separators = {"", " ", "\n", "  ", "\t"};
  std::mt19937_64 rng(seed);
  const auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::vector<std::string> out;
  while (out.size() < n) {
    std::string s;
    const int parts = 1 + int(rng() % 6);
    for (int p = 0; p < parts; ++p) {
      const uint64_t kind = rng() % 10;
      if (kind < 4) {
        s += pick(fragments);
      } else if (kind < 7) {
        const size_t at = rng() % code.size(), len = 1 + rng() % 6;
        for (size_t i = at; i < at + len && i < code.size(); ++i) s += code[i];
      } else if (kind < 8 && !specials.empty()) {
        const std::string sp = pick(specials);
        s += rng() % 4 == 0 ? sp.substr(0, sp.size() - 1) : sp;  // now and then a cut-off one: plain text
      } else if (kind < 9) {
        s += std::string(1 + rng() % 12, " \t\n"[rng() % 3]);  // a whitespace run
      } else {
        s += std::to_string(rng() % 100000000);
      }
      s += pick(separators);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace dualpath::test
