// End to end on the cpu backend: real store files, real libfabric endpoints, real math.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cluster/cluster.hpp"
#include "core/status.hpp"
#include "core/faults.hpp"
#include "core/model_catalog.hpp"
#include "core/trace.hpp"
#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

run_summary run(const cluster_config& c, const std::string& policy, uint32_t agents = 4, uint32_t turns = 4) {
  run_options o;
  o.config = c;
  o.policy = policy;
  o.scripts = scripts(agents, turns, 1);
  return run_cluster(o);
}

}  // namespace

TEST_CASE("dualpath on 1P2D: every verified turn matches a full recompute and both paths carry requests") {
  test::scratch_dir dir;
  const auto s = run(small_cluster(dir.path, 2), "dualpath");
  check_turns_right(s, 16, 16);
  CHECK(s.path_pe > 0);
  CHECK(s.path_de + s.path_split > 0);
  CHECK(s.hit_blocks > 0);  // blocks persisted by decode are hit by later turns
  CHECK(s.persisted_blocks > 0);
  REQUIRE(s.snic_bytes.size() == 3);
  CHECK(s.snic_bytes[1] + s.snic_bytes[2] > 0);  // a decode node's SNIC read KV
  // Every byte read from block files went through a SNIC; write-back left through the decode nodes' SNICs only
  // (docs/design.md §15).
  CHECK(s.store_read_bytes == s.snic_bytes[0] + s.snic_bytes[1] + s.snic_bytes[2]);
  REQUIRE(s.snic_write_bytes.size() == 3);
  CHECK(s.snic_write_bytes[0] == 0);
  CHECK(s.snic_write_bytes[1] > 0);
  CHECK(s.snic_write_bytes[2] > 0);
  // SNIC balance per 1 s window over the run, and the working set.
  CHECK(s.snic_time.windows.size() == size_t(std::ceil(s.jct_s - 1e-9)));
  CHECK(s.snic_time.rate_windows > 0);
  CHECK(s.snic_time.rate_max_over_avg_mean >= 1.0);
  CHECK(s.snic_time.rate_max_over_avg_mean <= 3.0);  // P + D
  CHECK(s.ws_tokens > 0);
  CHECK(s.ws_bytes > s.ws_tokens);
}

TEST_CASE("dualpath on 1P1D matches a full recompute too") {
  test::scratch_dir dir;
  const auto s = run(small_cluster(dir.path, 1), "dualpath", 3, 3);
  check_turns_right(s, 9, 9);
}

TEST_CASE("basic reads nothing through a decode node's SNIC; oracle reads nothing at all") {
  test::scratch_dir dir;
  const auto basic = run(small_cluster(dir.path / "b", 2), "basic", 3, 3);
  CHECK(basic.mismatched_turns == 0);
  CHECK(basic.path_de + basic.path_split == 0);
  CHECK(basic.snic_bytes[0] > 0);
  CHECK(basic.snic_bytes[1] == 0);
  CHECK(basic.snic_bytes[2] == 0);
  CHECK(basic.snic_write_bytes[0] == 0);
  CHECK(basic.snic_write_bytes[1] + basic.snic_write_bytes[2] > 0);
  // The oracle keeps the blocks it persists in DRAM: it hits them without reading a single block file, and
  // every turn still equals a full recompute (docs/design.md §7.7).
  const auto oracle = run(small_cluster(dir.path / "o", 2), "oracle", 3, 3);
  check_turns_right(oracle, 9, 9);
  CHECK(oracle.hit_blocks > 0);
  CHECK(oracle.store_read_bytes == 0);
  for (auto b : oracle.snic_bytes) CHECK(b == 0);
  for (auto b : oracle.snic_write_bytes) CHECK(b == 0);  // no SNIC either way
}

TEST_CASE("layerwise, dualpath_nosched, round_robin and split give the same tokens as a full recompute") {
  test::scratch_dir dir;
  for (const char* p : {"layerwise", "dualpath_nosched", "round_robin", "split"}) {
    CAPTURE(p);
    const auto s = run(small_cluster(dir.path / p, 2), p, 3, 3);
    check_turns_right(s, 9, 9);
  }
}

TEST_CASE("a corrupt block in the store is detected, recomputed and counted; tokens stay right") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  const auto first = run(c, "dualpath", 2, 3);
  REQUIRE(first.persisted_blocks > 0);
  // Flip one payload byte in every stored block: each becomes a checksum mismatch.
  size_t flipped = 0;
  for (auto& f : fs::recursive_directory_iterator(c.store_dir)) {
    if (!f.is_regular_file() || f.file_size() < 8192) continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(4096 + 100);
    char b = 0;
    io.read(&b, 1);
    b = char(b ^ 0x5a);
    io.seekp(4096 + 100);
    io.write(&b, 1);
    ++flipped;
  }
  REQUIRE(flipped > 0);
  const auto second = run(c, "dualpath", 2, 3);  // same seed: same prompts, hits on the corrupt blocks
  CHECK(second.failed_turns == 0);
  CHECK(second.corrupt_blocks_recomputed > 0);
  CHECK(second.verified_turns == 6);
  CHECK(second.mismatched_turns == 0);
}

TEST_CASE("fault seam compute_step: a failed layer fails its turns with the cause; the run goes on and ends") {
  test::scratch_dir dir;
  faults::scoped armed(faults::point::compute_step, 1, 3);  // the 4th backend call of the run fails
  const auto s = run(small_cluster(dir.path, 2), "dualpath", 2, 2);
  CHECK(faults::fired(faults::point::compute_step) >= 1);
  // A failed turn ends its agent (its context is broken); every other turn still runs and is right.
  CHECK(s.failed_turns >= 1);
  CHECK(s.turns + s.failed_turns <= 4);
  CHECK(s.verified_turns == s.turns);
  CHECK(s.first_error.find("injected compute fault") != std::string::npos);
  CHECK(s.mismatched_turns == 0);
}

TEST_CASE("fault seam storage_read: a block read that fails with EIO is recomputed; tokens stay right") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  const auto first = run(c, "dualpath", 2, 3);
  REQUIRE(first.persisted_blocks > 0);
  const uint64_t before = faults::fired(faults::point::storage_read);
  faults::scoped armed(faults::point::storage_read, 0);  // every block read of this run fails as EIO
  const auto second = run(c, "dualpath", 2, 3);
  CHECK(faults::fired(faults::point::storage_read) > before);
  check_turns_right(second, 6, 6);
  CHECK(second.corrupt_blocks_recomputed > 0);
}

TEST_CASE("bad configuration is refused with the key and the reason") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  c.hbm_gb = 1e-9;
  run_options o;
  o.config = c;
  o.scripts = scripts(1, 1, 0);
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("hardware.hbm_gb"), user_error);
  o.config = small_cluster(dir.path, 2);
  o.policy = "fastest";
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("known: basic"), user_error);
}

TEST_CASE("online mode: Poisson arrivals replay every agent from turn 0") {
  test::scratch_dir dir;
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.policy = "dualpath";
  o.scripts = scripts(4, 3, 1);
  double t = 0;
  for (auto& s : o.scripts) s.start_s = (t += 0.05);  // staggered arrivals, as --mode online draws them
  const auto s = run_cluster(o);
  CHECK(s.turns == 12);
  CHECK(s.mismatched_turns == 0);
  CHECK(s.jct_s >= 0.2);  // the last agent cannot finish before it arrives
}

TEST_CASE("Mooncake replay: equal hash ids give equal tokens, so later requests hit earlier blocks") {
  test::scratch_dir dir;
  std::vector<mooncake_request> trace = {
      {0, 700, 4, {1, 2}}, {1000, 1100, 4, {1, 2, 3}}, {1500, 600, 4, {9, 10}}, {2500, 1030, 4, {1, 2, 3}}};
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.config.snic_gb_per_s = 0;  // uncapped: each request is done long before the next arrives
  o.policy = "dualpath";
  for (size_t i = 0; i < trace.size(); ++i) {
    agent_script s;
    s.agent = uint32_t(i);
    s.fixed_prompt = mooncake_tokens(trace[i], find_model("tiny").vocab);
    CHECK(s.fixed_prompt->size() == trace[i].input_length);
    turn_shape shape;
    shape.prompt = s.fixed_prompt->size();
    shape.gen = 4;
    s.turns = {shape};
    s.start_s = trace[i].timestamp_ms / 1000.0;
    s.verify_every = 1;
    o.scripts.push_back(s);
  }
  // Shared ids share tokens: requests 0 and 1 agree on their first 1024 tokens, 2 shares nothing.
  CHECK(std::equal(o.scripts[0].fixed_prompt->begin(), o.scripts[0].fixed_prompt->begin() + 512,
                   o.scripts[1].fixed_prompt->begin()));
  CHECK((*o.scripts[2].fixed_prompt)[0] != (*o.scripts[0].fixed_prompt)[0]);
  const auto s = run_cluster(o);
  CHECK(s.turns == 4);
  CHECK(s.mismatched_turns == 0);
  // How much of the first replay overlaps depends on the machine's speed; a second replay over the same store
  // does not: every request finds the blocks the first one persisted, shared prefixes included.
  const auto again = run_cluster(o);
  CHECK(again.mismatched_turns == 0);
  CHECK(again.hit_blocks >= 700 / 16 + 1024 / 16);
}

TEST_CASE("bounded memory: tiny DRAM buffers and HBM make work wait, nothing is dropped") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  c.dram_buffer_gb = 0.0005;  // about 24 Full Block slots per node: a few requests at a time
  c.hbm_gb = 0.0005;          // about one request's KV per decode engine
  const auto s = run(c, "dualpath", 4, 4);
  CHECK(s.turns == 16);
  CHECK(s.failed_turns == 0);
  CHECK(s.mismatched_turns == 0);
  CHECK(s.hit_blocks > 0);
}

TEST_CASE("a scripted [[schedule.switch]] takes effect for requests not yet assigned") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  c.switches.push_back({0.0, "balanced_pe"});  // due at once: every request is assigned under balanced_pe
  const auto s = run(c, "dualpath", 3, 3);
  CHECK(s.turns == 9);
  CHECK(s.mismatched_turns == 0);
  CHECK(s.path_de + s.path_split == 0);
  CHECK(s.snic_bytes[1] + s.snic_bytes[2] == 0);
}

TEST_CASE("emulated all-to-all: model-class traffic between decode engines every step, tokens unchanged") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  c.model_traffic_kb = 16;
  c.cnic_gb_per_s = 0.05;  // kv and model traffic share capped CNICs
  const auto s = run(c, "dualpath", 3, 3);
  CHECK(s.turns == 9);
  CHECK(s.failed_turns == 0);
  CHECK(s.mismatched_turns == 0);
}

TEST_CASE("a request larger than an engine's HBM fails with a message instead of hanging") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 1);
  c.hbm_gb = 0.00005;  // three 16 KiB Full Blocks: every prompt here needs more
  run_options o;
  o.config = c;
  o.policy = "dualpath";
  o.scripts = scripts(2, 2, 0);
  const auto s = run_cluster(o);
  // Agent 0's first turn (46 tokens with its generation) still fits; every larger turn fails, and an
  // agent stops at its first failed turn.
  CHECK(s.failed_turns == 2);
  CHECK(s.turns == 1);
  CHECK(s.first_error.find("HBM") != std::string::npos);
}

TEST_CASE("a run that stops making progress ends with a message instead of hanging") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 1);
  c.timeout_s = 2;
  c.snic_gb_per_s = 1e-6;  // 1 kB/s: the SNIC pays for a read after letting it through, so the second read
                           // on the same node waits tens of seconds
  run_options o;
  o.config = c;
  o.policy = "basic";  // every read on the prefill node's SNIC
  o.scripts = scripts(1, 3, 0);
  // Whichever deadline fires first ends it: the node's own deadline for the read (the turn fails with the
  // reason), the engine's wait for the node, or the launcher's wait for any turn (the run throws).
  std::string message;
  try {
    message = run_cluster(o).first_error;
  } catch (const user_error& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK((message.find("run stalled: no progress for 2 s") != std::string::npos ||
         message.find("storage reads did not finish in time") != std::string::npos ||
         message.find("request_timeout") != std::string::npos));
}

TEST_CASE("a turn that computes for longer than the stall bound is progress, not a stall") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 1);
  c.backend = backend_kind::modeled;
  c.mfu = 3e-8;  // each prefill layer of a ~45-token append sleeps about half a second: a pass takes ~2 s
  c.timeout_s = 1.5;
  c.snic_gb_per_s = 1;
  run_options o;
  o.config = c;
  o.policy = "basic";
  o.scripts = scripts(1, 2, 0);
  const auto s = run_cluster(o);
  CHECK(s.turns == 2);
  CHECK(s.failed_turns == 0);
  CHECK(s.jct_s > 2 * c.timeout_s);  // no turn finished for longer than the bound, and the run went on
}

TEST_CASE("modeled backend: every Layer Block is checked on arrival in PE and DE HBM, none corrupt") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 2);
  c.backend = backend_kind::modeled;  // no math; KV bytes are a function of (layer, position, token) and really move
  c.mfu = 0.5;
  const auto s = run(c, "dualpath", 3, 3);
  CHECK(s.turns == 9);
  CHECK(s.verified_turns == 0);  // token recompute needs real math
  CHECK(s.kv_verified_blocks > 0);
  CHECK(s.kv_corrupt_blocks == 0);
  CHECK(s.hit_blocks > 0);
  CHECK(s.path_pe + s.path_de == 9);
}
