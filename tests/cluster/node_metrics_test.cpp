// docs/design.md §15: every `dualpath node` process serves its own node's metrics (--metrics-port): scraped
// over real HTTP while a multi-process run goes on, its SNIC, CNIC and write-back counters move.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.hpp"
#include "runtime_fixtures.hpp"
#include "tests/cluster/hand_nodes.hpp"
#include "tests/observe/http_get.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

TEST_CASE("dualpath node --metrics-port: each node process's endpoint answers during the run, its counters move") {
  test::scratch_dir dir;
  const std::string secret = "node-metrics-test-secret";
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.config.provider = "tcp";
  o.config.secret = secret;
  o.policy = "dualpath";
  o.processes = true;
  o.node_registry = "127.0.0.1:0";
  o.scripts = scripts(8, 8, 1);  // a few seconds: the nodes sample 4 times a second, the test scrapes 5
  o.progress_every_s = 0.2;
  const uint32_t nodes = o.config.prefill_nodes + o.config.decode_nodes;
  std::vector<uint16_t> ports;
  for (uint32_t n = 0; n < nodes; ++n) ports.push_back(http_get::free_port());
  std::vector<int> pids;
  o.on_registry = [&](const std::string& at) {
    for (uint32_t n = 0; n < nodes; ++n)
      pids.push_back(hand_nodes::start_node(at, n, 10000, secret, {"--metrics-port", std::to_string(ports[n])}));
  };
  // Per node, the largest values any scrape saw (scraped at every progress report, bounded by the run).
  std::vector<double> snic(nodes, -1), cnic(nodes, -1), unpersisted(nodes, -1);
  std::vector<int> answered(nodes, 0);
  o.on_progress = [&](const run_progress&) {
    for (uint32_t n = 0; n < nodes; ++n) {
      const auto text = http_get::get(ports[n]);
      if (text.find("200 OK") == std::string::npos) continue;
      ++answered[n];
      const std::string node = "node=\"" + std::to_string(n) + "\"";
      snic[n] = std::max(snic[n], http_get::sample(text, "dualpath_snic_read_bytes_total{" + node + "}"));
      cnic[n] = std::max(
          cnic[n], http_get::sample(text, "dualpath_cnic_bytes_total{class=\"kv\",direction=\"out\"," + node + "}"));
      unpersisted[n] =
          std::max(unpersisted[n], http_get::sample(text, "dualpath_unpersisted_blocks_total{" + node + "}"));
    }
  };
  const auto s = run_cluster(o);
  REQUIRE(pids.size() == nodes);
  for (int pid : pids) CHECK(hand_nodes::exit_status(pid, 10) == 0);
  check_turns_right(s, 64, 64);
  for (uint32_t n = 0; n < nodes; ++n) {
    CAPTURE(n);
    CHECK(answered[n] >= 1);
    CHECK(snic[n] >= 0);  // present from the first sample on
    CHECK(cnic[n] >= 0);
    CHECK(unpersisted[n] == 0);
  }
  // Reads went through the SNICs and KV crossed the CNICs while the run went on, as the nodes counted.
  CHECK(*std::max_element(snic.begin(), snic.end()) > 0);
  CHECK(*std::max_element(cnic.begin(), cnic.end()) > 0);
  MESSAGE("scrapes answered per node: ", answered[0], ", ", answered[1], ", ", answered[2],
          "; SNIC bytes seen: ", snic[0], ", ", snic[1], ", ", snic[2]);
}
