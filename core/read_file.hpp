#pragma once
// A whole file read into memory: cluster files, tokenizer files, model directories' JSON. Each caller says in
// its own words what the file was for when it cannot be opened.
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

namespace dualpath {

// The bytes of the file at `path`, or nothing when it cannot be opened.
inline std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace dualpath
