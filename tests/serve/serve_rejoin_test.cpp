// `dualpath serve` over nodes started by hand (docs/design.md §13, §18): a prefill node SIGKILLed under
// streaming load and started again as the same index. Every stream completes whole, the tokens a re-run turn
// made again equal those already sent, the new process rejoins, and once the other prefill node is killed
// too the rejoined one answers alone; with --verify every answer equals a full recompute, and the decode
// nodes get back every buffer slot the dead processes held there.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/serve/serve_process.hpp"

namespace {

using server = dualpath::test::serve_process;

// The server's node events of kind `event` (lost, rejoined), once there are `at_least` (bounded: `seconds`).
double wait_nodes(const server& s, const char* event, double at_least, int seconds) {
  return s.wait_metric(std::string("dualpath_serve_nodes_total{event=\"") + event + "\"}", at_least, seconds);
}

}  // namespace

TEST_CASE("serve, 2P2D by hand: a prefill node killed mid-stream rejoins, then answers alone") {
  const std::string secret = "serve-rejoin-test-secret";
  // 2P2D of the embedded default's tiny model over tcp, timeout_s 4: a lost node's quarantine is 9 s.
  const auto cluster_file = std::filesystem::path(DUALPATH_SOURCE_DIR) / "bench" / "experiments" / "serve_2p2d.toml";
  server s({"--cluster", cluster_file.string(), "--node-registry", "127.0.0.1:0", "--verify", "--clients", "4"}, secret,
           false);
  const std::string registry = s.registry();
  REQUIRE_MESSAGE(!registry.empty(), dualpath::test::slurp(s.dir.path / "serve.log"));
  std::vector<int> nodes;
  for (uint32_t node = 0; node < 4; ++node) nodes.push_back(hand_nodes::start_node(registry, node, 20000, secret));
  s.wait_up();

  // Streams in flight on both prefill nodes when node 0 dies: prompts of 3,000 ids, most of whose time is their
  // prefill. Node 0 is started again at once and rejoins after its quarantine, while the load goes on.
  constexpr int streams = 4, each = 4, again = 3, max_tokens = 16, prompt_ids = 3000;
  dualpath::test::stream_load first;
  first.start(s.port, streams, each, max_tokens, 0, prompt_ids);
  REQUIRE(s.wait_node_requests(0, 1));  // a prefill of 3,000 ids takes longer than the sample is old
  kill(nodes[0], SIGKILL);
  CHECK(hand_nodes::exit_status(nodes[0], 5) == 128 + SIGKILL);
  CHECK(wait_nodes(s, "lost", 1, 30) == 1);
  nodes[0] = hand_nodes::start_node(registry, 0, 20000, secret);
  first.join();
  CHECK(first.whole == streams * each);
  CHECK_MESSAGE(first.other == 0, first.failures);
  CHECK(wait_nodes(s, "rejoined", 1, 120) == 1);

  // Now the other prefill node: what is left of prefill is the process that rejoined.
  kill(nodes[1], SIGKILL);
  CHECK(hand_nodes::exit_status(nodes[1], 5) == 128 + SIGKILL);
  CHECK(wait_nodes(s, "lost", 2, 30) == 2);
  dualpath::test::stream_load second;
  second.start(s.port, streams, again, 120, 1000);
  second.join();
  CHECK(second.whole == streams * again);
  CHECK_MESSAGE(second.other == 0, second.failures);

  // Nothing the dead prefill processes held on the decode nodes stays held (their DE-read and forward slots).
  for (const char* node : {"2", "3"}) {
    const std::string series = std::string("dualpath_serve_buffer_slots{node=\"") + node + "\",state=\"";
    const double total = s.wait_metric(series + "total\"}", 1, 10);
    CHECK_MESSAGE(s.wait_metric(series + "free\"}", total, 30) == total, "decode node " << node);
  }

  const double answers = streams * (each + again);
  const auto r = s.rechecked();
  MESSAGE("requests " << answers << "; streams resumed after a loss: " << r.resumed
                      << "; tokens made again and compared: " << r.rechecked << ", different: " << r.differed);
  CHECK(r.resumed >= 1);  // the requests node 0 held were run again on node 1
  CHECK(r.differed == 0);
  const auto n = s.verified_answers(answers);
  CHECK(n.at("equal") == answers);
  CHECK(n.at("different") == 0);
  CHECK(s.stop() == 0);
  for (const uint32_t node : {0u, 2u, 3u}) CHECK(hand_nodes::exit_status(nodes[node], 20) == 0);
}
