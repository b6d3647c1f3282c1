// Writes the seed corpus of every fuzz harness, DIR/<name>/seed-N and DIR/<name>/regression-N, from the
// same builders the replay test uses (tests/fuzz/seeds.hpp), so a campaign starts where the replay does;
// and for a text decoder its syntax tokens as a libFuzzer dictionary, DIR/<name>.dict.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/fuzz/harnesses.hpp"
#include "tests/fuzz/seeds.hpp"

namespace fs = std::filesystem;
using namespace dualpath::fuzz;

namespace {
void write(const fs::path& path, const bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}
// One dictionary entry: "..." with quotes, backslashes and bytes outside printable ASCII as \xNN.
std::string dict_entry(const std::string& token) {
  std::string out = "\"";
  for (unsigned char c : token) {
    if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) {
      char b[5];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  const auto regs = regressions();
  for (const auto& h : all_harnesses()) {
    const fs::path d = dir / h.name;
    fs::create_directories(d);
    const auto seeds = seeds_for(h.name);
    for (size_t i = 0; i < seeds.size(); ++i) write(d / ("seed-" + std::to_string(i)), seeds[i]);
    size_t n = 0;
    for (const auto& r : regs)
      if (std::string(r.harness) == h.name) write(d / ("regression-" + std::to_string(n++)), r.input);
    if (h.text) {
      std::ofstream dict(dir / (std::string(h.name) + ".dict"));
      for (const auto& t : tokens_for(h.name)) dict << dict_entry(t) << "\n";
    }
    std::printf("%s: %zu seeds, %zu regressions\n", h.name, seeds.size(), n);
  }
  return 0;
}
