// The Prometheus endpoint over real HTTP on loopback: counters move, histograms fill, gauges follow.
#include <doctest/doctest.h>

#include <string>

#include <atomic>
#include <thread>

#include "observe/metrics.hpp"
#include "tests/observe/http_get.hpp"
#include "tests/cluster/runtime_fixtures.hpp"
#include "core/status.hpp"

using namespace dualpath;

namespace {

std::string scrape(uint16_t port) {
  const auto text = http_get::get(port);
  REQUIRE(!text.empty());
  return text;
}
using http_get::sample;

}  // namespace

TEST_CASE("metrics: a scrape shows turns, latencies, SNICs, engines, the queue and the policy") {
  cluster::metrics_endpoint m("127.0.0.1", 0);
  REQUIRE(m.port() != 0);
  report::turn_record r;
  r.ttft_s = 0.3;
  r.has_tpot = true;
  r.tpot_s = 0.002;
  r.queue_s = 0.01;
  r.kv_read_s = 0.2;
  r.path = schedule::read_path::de;
  r.prompt_tokens = 100;
  r.hit_blocks = 4;
  m.observe_turn(r, 16);
  m.set_snic(2, 1000, 64);
  m.set_engine(3, "decode", 500, 2, 1 << 20);
  m.set_waiting(7);
  m.set_policy("balanced");
  const auto first = scrape(m.port());
  CHECK(first.find("200 OK") != std::string::npos);
  CHECK(sample(first, "dualpath_time_to_first_token_seconds_count") == 1);
  CHECK(sample(first, "dualpath_time_to_first_token_seconds_sum") == doctest::Approx(0.3));
  CHECK(sample(first, "dualpath_time_to_first_token_seconds_bucket{le=\"0.5\"}") == 1);
  CHECK(sample(first, "dualpath_time_to_first_token_seconds_bucket{le=\"0.25\"}") == 0);
  CHECK(sample(first, "dualpath_read_path_requests_total{path=\"de\"}") == 1);
  CHECK(sample(first, "dualpath_kv_blocks_total{outcome=\"hit\"}") == 4);
  CHECK(sample(first, "dualpath_kv_blocks_total{outcome=\"miss\"}") == 3);  // 7 prompt blocks of 16 tokens
  CHECK(sample(first, "dualpath_snic_read_bytes_total{node=\"2\"}") == 1000);
  CHECK(sample(first, "dualpath_snic_read_queue_bytes{node=\"2\"}") == 64);
  CHECK(sample(first, "dualpath_engine_tokens{engine=\"3\",role=\"decode\"}") == 500);
  CHECK(sample(first, "dualpath_requests_waiting") == 7);
  CHECK(sample(first, "dualpath_scheduler_policy_info{policy=\"balanced\"}") == 1);

  // The counters move with the running totals; the policy gauge follows a switch.
  m.observe_turn(r, 16);
  m.set_snic(2, 1500, 0);
  m.set_policy("balanced_pe");
  const auto second = scrape(m.port());
  CHECK(sample(second, "dualpath_time_to_first_token_seconds_count") == 2);
  CHECK(sample(second, "dualpath_snic_read_bytes_total{node=\"2\"}") == 1500);
  CHECK(sample(second, "dualpath_scheduler_policy_info{policy=\"balanced\"}") == 0);
  CHECK(sample(second, "dualpath_scheduler_policy_info{policy=\"balanced_pe\"}") == 1);

  // Reliability counters; the CNIC and write-back counters take running totals like the SNIC's.
  m.count_rerun(true);
  m.count_rerun(true);
  m.count_rerun(false);
  m.count_lost_node();
  m.set_cnic(2, "kv", "out", 4096);
  m.set_cnic(2, "kv", "out", 6144);
  m.set_unpersisted(2, 3);
  const auto third = scrape(m.port());
  CHECK(sample(third, "dualpath_turns_rerun_total{cause=\"node_lost\"}") == 2);
  CHECK(sample(third, "dualpath_turns_rerun_total{cause=\"fault\"}") == 1);
  CHECK(sample(third, "dualpath_nodes_lost_total") == 1);
  CHECK(sample(third, "dualpath_cnic_bytes_total{class=\"kv\",direction=\"out\",node=\"2\"}") == 6144);
  CHECK(sample(third, "dualpath_unpersisted_blocks_total{node=\"2\"}") == 3);
}

TEST_CASE("metrics: a port that is taken is refused with the address") {
  cluster::metrics_endpoint first("127.0.0.1", 0);
  try {
    cluster::metrics_endpoint second("127.0.0.1", first.port());
    FAIL("a second endpoint bound the same port");
  } catch (const user_error& e) {
    CHECK(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())) != std::string::npos);
  }
}

TEST_CASE("metrics: scraped during a real run, the counters move and the histograms fill") {
  using namespace runtime_fixtures;
  test::scratch_dir dir;
  cluster::metrics_endpoint m("127.0.0.1", 0);
  cluster::run_options o;
  o.config = small_cluster(dir.path, 2);
  o.policy = "dualpath";
  o.scripts = scripts(3, 4, 0);
  o.metrics = &m;
  std::atomic<bool> done{false};
  report::run_summary s;
  std::thread run([&] {
    s = cluster::run_cluster(o);
    done = true;
  });
  // Scrape while it runs (bounded: the run takes seconds): the endpoint answers throughout.
  int answered = 0;
  for (int i = 0; i < 600 && !done; ++i) {
    if (scrape(m.port()).find("200 OK") != std::string::npos) ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  run.join();
  const auto after = scrape(m.port());
  CHECK(s.turns == 12);
  CHECK(answered >= 1);
  CHECK(sample(after, "dualpath_turns_total{outcome=\"ok\"}") == 12);
  CHECK(sample(after, "dualpath_time_to_first_token_seconds_count") == 12);
  CHECK(sample(after, "dualpath_time_to_first_token_seconds_sum") > 0);
  double read = 0;
  for (int n = 0; n < 3; ++n)
    read += std::max(0.0, sample(after, "dualpath_snic_read_bytes_total{node=\"" + std::to_string(n) + "\"}"));
  uint64_t expect = 0;
  for (auto b : s.snic_bytes) expect += b;
  CHECK(read == doctest::Approx(double(expect)));
  CHECK(read > 0);
  CHECK(sample(after, "dualpath_scheduler_policy_info{policy=\"balanced\"}") == 1);
  // Every engine's load, as the scheduler last saw it: an idle engine's HBM is free again.
  const uint32_t engines = (o.config.prefill_nodes + o.config.decode_nodes) * o.config.engines_per_node;
  for (uint32_t e = 0; e < engines; ++e) {
    CAPTURE(e);
    CHECK(sample(after, "dualpath_hbm_free_bytes{engine=\"" + std::to_string(e) + "\"}") > 0);
  }
}
