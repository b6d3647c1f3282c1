#pragma once
// Helpers for the core tests: test data and running the built `dualpath`.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/common/scratch_dir.hpp"

namespace dualpath::test {

inline std::string data_file(const std::string& name) { return std::string(DUALPATH_CORE_TEST_DATA) + "/" + name; }

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct run_result {
  int rc = -1;
  std::string out;
  std::string err;
};

inline std::string binary() {
  const char* env = std::getenv("DUALPATH_BINARY");
  return env && *env ? env : DUALPATH_BINARY_DEFAULT;
}

// Runs `dualpath ARGS` (ARGS already shell-quoted), capturing stdout, stderr and the exit code.
inline run_result run_cli(const std::string& args) {
  static scratch_dir dir;
  const std::string err_file = dir.file("stderr.txt");
  const std::string cmd = "'" + binary() + "' " + args + " 2>'" + err_file + "'";
  run_result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_text(err_file);
  return r;
}

}  // namespace dualpath::test
