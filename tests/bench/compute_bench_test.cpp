// `dualpath bench compute` at toy shapes: the step's FLOPs as the cost model counts them, and its roofline
// ratio beside the bandwidth ratio (docs/experiments.md, "`dualpath bench compute`").
#include <doctest/doctest.h>

#include "bench/compute_bench.hpp"
#include "core/cost_model.hpp"
#include "core/model_catalog.hpp"
#include "core/status.hpp"

using namespace dualpath;

namespace {

bench::compute_bench_options toy(const char* backend) {
  bench::compute_bench_options o;
  o.backend = backend;
  o.model = "tiny";
  o.context = 60;
  o.append = 4;
  o.decode_batch = 2;
  o.repeats = 1;
  return o;
}

}  // namespace

TEST_CASE("bench compute: a decode step's FLOPs and its roofline against the bandwidth alone") {
  const auto r = bench::run_compute_bench(toy("cpu"));
  const model_spec& m = find_model("tiny");
  CHECK(r.decode_linear_flops == doctest::Approx(2.0 * m.active_params * 2));
  // Both requests decode at position context + append.
  CHECK(r.decode_attention_flops == doctest::Approx(2.0 * attention_flops_per_token(m, 64)));
  CHECK(r.decode_kv_bytes == doctest::Approx(2.0 * 64 * m.kv_bytes_per_token_layer * m.layers));
  REQUIRE(r.decode_vs_bandwidth > 0);
  // The roofline time of each part is at least its bytes over the bandwidth, round by round, so its median ratio is
  // at least the bandwidth's.
  CHECK(r.decode_vs_roof >= r.decode_vs_bandwidth);
  CHECK(r.to_json().find("\"decode_vs_roof\"") != std::string::npos);
}

TEST_CASE("bench compute: the modeled backend has no roofs of this machine, so no roofline ratio") {
  const auto r = bench::run_compute_bench(toy("modeled"));
  CHECK(r.decode_step_s > 0);
  CHECK(r.decode_vs_bandwidth == 0);
  CHECK(r.decode_vs_roof == 0);
}

TEST_CASE("bench compute: options it cannot run are a user error") {
  auto o = toy("cpu");
  o.append = 0;
  CHECK_THROWS_AS(bench::run_compute_bench(o), user_error);
}
