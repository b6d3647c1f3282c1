#include <doctest/doctest.h>

#include <algorithm>

#include "core/bounds.hpp"
#include "core/status.hpp"
#include "core/hardware.hpp"

using namespace dualpath;

namespace {
const bound_row& row(const bounds_report& r, const std::string& name) {
  auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const bound_row& x) { return x.name == name; });
  REQUIRE(it != r.rows.end());
  return *it;
}
bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("docs/design.md §5 check values: g=8, s=1, B=50, M=500 gives 1/7 <= P/D <= 7/2") {
  const auto r = evaluate_bounds({8, 1, 50, 500, {}, {}});
  CHECK(r.feasible_hardware);
  CHECK(r.rows.size() == 6);
  CHECK(r.pd_min == doctest::Approx(1.0 / 7));
  CHECK(r.pd_max == doctest::Approx(3.5));
  CHECK(as_fraction(r.pd_min) == "1/7");
  CHECK(as_fraction(r.pd_max) == "7/2");
  // The upper bound comes from both the DE CNIC write and the DE DRAM rows; the lower from the PE CNIC write.
  CHECK(r.binding.size() == 3);
  CHECK(has(r.binding, "pe_cnic_write"));
  CHECK(has(r.binding, "de_cnic_write"));
  CHECK(has(r.binding, "de_dram"));
  CHECK_FALSE(row(r, "de_cnic_read").binding);
  CHECK(row(r, "de_cnic_read").limit == doctest::Approx(6));
  CHECK(row(r, "pe_cnic_read").holds);
  CHECK(row(r, "pe_dram").holds);
  CHECK_FALSE(r.feasible.has_value());
}

TEST_CASE("every configuration the paper ran is inside the interval, with per-link headroom") {
  for (auto [p, d] : {std::pair{1u, 1u}, {1u, 2u}, {2u, 1u}, {2u, 4u}}) {
    const auto r = evaluate_bounds({8, 1, 50, 500, p, d});
    REQUIRE(r.feasible.has_value());
    CHECK(*r.feasible);
    for (const auto& row : r.rows) CHECK(*row.headroom >= 0);
  }
  const auto r = evaluate_bounds({8, 1, 50, 500, 2u, 4u});
  // 2P4D: DE DRAM carries (3 + 2·0.5)·50 = 200 of 500 GB/s; PE CNIC write (1 + 2)·50/8 = 18.75 of 50.
  CHECK(*row(r, "de_dram").load_gb_per_s == doctest::Approx(200));
  CHECK(*row(r, "de_dram").headroom == doctest::Approx(0.6));
  CHECK(*row(r, "pe_cnic_write").load_gb_per_s == doctest::Approx(18.75));
  // Storage read bandwidth grows from P·s·B to (P+D)·s·B: 3x at 2P4D.
  CHECK(*r.pe_read_gb_per_s == doctest::Approx(100));
  CHECK(*r.dual_read_gb_per_s == doctest::Approx(300));
}

TEST_CASE("a layout outside the interval is reported infeasible with the overloaded link") {
  const auto hi = evaluate_bounds({8, 1, 50, 500, 4u, 1u});  // P/D = 4 > 7/2
  CHECK_FALSE(*hi.feasible);
  CHECK(*row(hi, "de_dram").headroom < 0);
  CHECK(*row(hi, "de_cnic_write").headroom < 0);
  CHECK(*row(hi, "de_cnic_read").headroom >= 0);
  const auto lo = evaluate_bounds({8, 1, 50, 500, 1u, 8u});  // P/D = 1/8 < 1/7
  CHECK_FALSE(*lo.feasible);
  CHECK(*row(lo, "pe_cnic_write").headroom < 0);
}

TEST_CASE("hardware that admits no layout is flagged with the reason") {
  const auto r = evaluate_bounds({8, 5, 50, 500, {}, {}});  // s > g/2
  CHECK_FALSE(r.feasible_hardware);
  CHECK_FALSE(row(r, "pe_cnic_read").holds);
  CHECK(r.infeasibility().find("exceeds g/2") != std::string::npos);
  const auto dram = evaluate_bounds({8, 1, 50, 90, {}, {}});  // 2sB = 100 > M
  CHECK_FALSE(dram.feasible_hardware);
  CHECK(dram.infeasibility().find("PE DRAM") != std::string::npos);
  // Exactly s = g/2 is allowed by the PE CNIC read row but leaves no ratio for the DE CNIC read row.
  const auto edge = evaluate_bounds({8, 4, 50, 5000, {}, {}});
  CHECK(row(edge, "pe_cnic_read").holds);
  CHECK_FALSE(edge.feasible_hardware);
}

TEST_CASE("zero, negative and half-given inputs are user errors") {
  CHECK_THROWS_AS(evaluate_bounds({0, 1, 50, 500, {}, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8.5, 1, 50, 500, {}, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8, -1, 50, 500, {}, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8, 1, 0, 500, {}, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8, 1, 50, -500, {}, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8, 1, 50, 500, 2u, {}}), user_error);
  CHECK_THROWS_AS(evaluate_bounds({8, 1, 50, 500, 0u, 2u}), user_error);
}

TEST_CASE("hardware profiles give the modeled timing and the scheduler thresholds") {
  const auto& h800 = find_gpu("h800");
  CHECK(h800.dense_tflops() == 989);
  CHECK(find_gpu("h100").dense_tflops() == 989);
  // One table for the roofline too: HBM bandwidth and the weights' bytes per parameter (docs/design.md §6).
  CHECK(h800.hbm_bytes_per_s == 3350e9);
  CHECK(h800.weight_bytes_per_param == 1);
  CHECK(find_gpu("a100").weight_bytes_per_param == 2);
  CHECK(gpu_profiles().size() == 5);
  CHECK(h800.seconds_for(989e12, 0.5) == doctest::Approx(2.0));
  CHECK_THROWS_AS(h800.seconds_for(1e12, 0), user_error);
  CHECK_THROWS_AS(find_gpu("tpu"), user_error);
  const auto& node = find_node("h800-8");
  CHECK(node.gpus == 8);
  CHECK(node.cnic_gb_per_s == 50);
  CHECK(node.snic_gb_per_s() == 50);
  CHECK(node.dram_gb_per_s == 500);
  // α: tokens of 40,016 B a 50 GB/s SNIC reads in 3 s; β: tokens at 1e11 FLOPs one GPU prefills in 5 s at MFU 0.5.
  CHECK(alpha_tokens(node, 40016, 3.0) == doctest::Approx(150e9 / 40016));
  CHECK(beta_tokens(h800, 1e11, 0.5, 5.0) == doctest::Approx(5.0 * 989e12 * 0.5 / 1e11));
  const auto r = evaluate_bounds({double(node.gpus), node.snic_ratio, node.cnic_gb_per_s, node.dram_gb_per_s, {}, {}});
  CHECK(as_fraction(r.pd_max) == "7/2");
}
