// `dualpath serve` over one process per node (docs/design.md §13, §18): node processes spawned by the server,
// or started by hand at its node registry. A conversation's turns load the blocks of the turns before across
// processes, every answer equals a full recompute, and SIGTERM stops the node processes with the server. A
// decode node killed under streaming load: every stream completes whole, its re-run tokens checked.
#include <doctest/doctest.h>

#include <filesystem>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/serve/serve_process.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using server = dualpath::test::serve_process;

// Three turns of one conversation; each after the first loads more of the turns before's blocks.
void converse(const server& s) {
  json messages = json::array({{{"role", "system"}, {"content", "You are a coding agent working in a repository."}},
                               {{"role", "user"}, {"content", "List the files of the project and what each does."}}});
  uint32_t last_cached = 0;
  for (int t = 0; t < 3; ++t) {
    auto r = s.chat({{"model", "tiny"}, {"messages", messages}, {"max_tokens", 10}});
    REQUIRE(r);
    REQUIRE_MESSAGE(r->status == 200, r->body);
    const auto j = json::parse(r->body);
    const uint32_t cached = j["usage"]["prompt_tokens_details"]["cached_tokens"].get<uint32_t>();
    CAPTURE(t);
    if (t > 0) CHECK(cached > last_cached);
    last_cached = cached;
    messages.push_back({{"role", "assistant"}, {"content", j["choices"][0]["message"]["content"]}});
    messages.push_back({{"role", "user"}, {"content", "Now the tests of file " + std::to_string(t) + "."}});
  }
}

// The processes `pid` started (every thread's children).
std::vector<int> children_of(int pid) {
  std::vector<int> out;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "children");
    for (int child; in >> child;) out.push_back(child);
  }
  return out;
}

// Still running: there and not a zombie.
bool running(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

}  // namespace

TEST_CASE("serve --processes: node processes answer a conversation, verified, and stop with the server") {
  server s({"--processes", "--verify"});
  const auto nodes = children_of(s.pid);
  CHECK(nodes.size() == 3);  // the embedded default cluster: 1 prefill and 2 decode nodes
  converse(s);
  const auto n = s.verified_answers(3);
  CHECK(n.at("equal") == 3);
  CHECK(n.at("different") == 0);
  CHECK(s.stop() == 0);
  for (const int pid : nodes) CHECK_MESSAGE(!running(pid), "node process " << pid << " outlived the server");
}

TEST_CASE("serve --node-registry: nodes started by hand join, then the server answers; SIGTERM stops them") {
  const std::string secret = "serve-nodes-test-secret";
  server s({"--node-registry", "127.0.0.1:0"}, secret, false);
  const std::string registry = s.registry();
  REQUIRE_MESSAGE(!registry.empty(), dualpath::test::slurp(s.dir.path / "serve.log"));
  std::vector<int> nodes;
  for (uint32_t node = 0; node < 3; ++node)
    nodes.push_back(hand_nodes::start_node(registry, 2 - node, 20000, secret));  // any order
  s.wait_up();
  converse(s);
  CHECK(s.stop() == 0);
  for (const int pid : nodes) CHECK(hand_nodes::exit_status(pid, 20) == 0);  // each node stops when told
}

namespace {

// The pid of node `node` among the server's children (its command line names it).
int node_pid(const std::vector<int>& pids, uint32_t node) {
  for (const int pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string arg;
    std::vector<std::string> args;
    while (std::getline(in, arg, '\0')) args.push_back(arg);
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--node" && args[i + 1] == std::to_string(node)) return pid;
  }
  return -1;
}

}  // namespace

TEST_CASE("serve --processes: a decode node killed mid-stream; every stream completes whole and verified") {
  server s({"--processes", "--verify", "--clients", "4"});
  const auto nodes = children_of(s.pid);
  const int victim = node_pid(nodes, 2);  // a decode node of the embedded default (1 prefill, 2 decode)
  REQUIRE(victim > 0);
  // Streams of 1,500 tokens (a second or more each): the kill lands while every one of them is decoding.
  constexpr int streams = 4, each = 3, max_tokens = 1500;
  dualpath::test::stream_load load;
  load.start(s.port, streams, each, max_tokens);
  REQUIRE(s.wait_node_requests(2, 1));
  usleep(300000);  // past their first tokens
  kill(victim, SIGKILL);
  load.join();
  CHECK(load.whole == streams * each);
  CHECK_MESSAGE(load.other == 0, load.failures);
  const auto r = s.rechecked();
  MESSAGE("streams resumed after the loss: " << r.resumed << "; tokens made again and compared: " << r.rechecked
                                             << ", different: " << r.differed);
  CHECK(r.resumed >= 1);    // the streams on the killed node went on elsewhere ...
  CHECK(r.rechecked >= 1);  // ... after tokens their clients had
  CHECK(r.differed == 0);
  const auto n = s.verified_answers(streams * each);
  CHECK(n.at("equal") == streams * each);
  CHECK(n.at("different") == 0);
}
