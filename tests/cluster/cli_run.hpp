#pragma once
// Runs the built `dualpath` (ctest's DUALPATH_BINARY wins when set) in a scratch directory and keeps its exit
// code, stdout and stderr: what the CLI tests of every command check.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/scratch_dir.hpp"

namespace dualpath::test {

struct cli_result {
  int rc = -1;
  std::string out, err;
};

// The dualpath executable under test.
inline std::string binary() {
  const char* env = std::getenv("DUALPATH_BINARY");
  return env && *env ? env : DUALPATH_BINARY_DEFAULT;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

inline cli_result run_cli(const scratch_dir& w, const std::string& args) {
  const std::string bin = binary();
  const std::string out = (w.path / "stdout.txt").string(), err = (w.path / "stderr.txt").string();
  // The bound only guards against a hang: these runs take seconds, but a busy machine may stretch them many
  // times over, and no assertion here is about speed.
  const std::string cmd =
      "cd '" + w.path.string() + "' && timeout 240 '" + bin + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// Each command line of `cases` exits 2 with its message (the second of the pair) in stderr: how the CLI tests
// check that bad input is refused by name.
inline void check_refused(const scratch_dir& w, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, message] : cases) {
    CAPTURE(args);
    const auto r = run_cli(w, args);
    CHECK(r.rc == 2);
    CHECK(r.err.find(message) != std::string::npos);
  }
}

}  // namespace dualpath::test
