// `dualpath plot REPORT.json -o DIR`: the pictures of a run, sweep or validation report (docs/design.md §15),
// drawn by apps/plot.py (Python 3 with Debian's matplotlib), which the build places beside the binary.
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "apps/command_registry.hpp"
#include "core/status.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dualpath;

struct plot_args {
  std::string report, out = "plots";
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void plot_command(const plot_args& a) {
  if (!fs::exists(a.report)) throw user_error(a.report + ": no such report");
  const fs::path script = fs::read_symlink("/proc/self/exe").parent_path() / "dualpath-plot.py";
  if (!fs::exists(script)) throw user_error("dualpath plot: " + script.string() + " is missing (rebuild the project)");
  // Debian's interpreter, which Debian's matplotlib belongs to, whatever python3 comes first on the PATH.
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = python + " " + quoted(script.string()) + " " + quoted(a.report) + " " + quoted(a.out);
  const int status = std::system(cmd.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw user_error("plot: no pictures written (the reason is above)");
}

void setup(CLI::App& root) {
  auto a = std::make_shared<plot_args>();
  auto* cmd = root.add_subcommand("plot", "Draw the pictures of a run, sweep or run-vs-sim report (PNG files)");
  cmd->add_option("report", a->report, "Report JSON (dualpath run/sim --report, or sim_validation.result.json)")
      ->required();
  cmd->add_option("-o,--out", a->out, "Directory for the PNG files")->capture_default_str();
  cmd->callback([a] { plot_command(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
