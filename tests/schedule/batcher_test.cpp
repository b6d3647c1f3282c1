// docs/design.md §7.6: compute quota, binary-searched chunk, progress for oversized requests; α/β calibration.
#include <doctest/doctest.h>

#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "core/model_catalog.hpp"
#include "schedule/batcher.hpp"

using namespace dualpath;
using namespace dualpath::schedule;

TEST_CASE("batcher: FIFO under the quota, then the largest chunk that fits") {
  // Estimate: quadratic-ish like causal attention, 1 µs × bsz × (cached + bsz).
  auto est = [](uint64_t cached, uint64_t bsz) { return 1e-6 * double(bsz) * double(cached + bsz); };
  const prefill_batcher b(est, 0.3);
  std::deque<prefill_work> q{{1, 1000, 100}, {2, 20000, 400}, {3, 0, 50}};
  const auto pass = b.next_batch(q);
  REQUIRE(pass.size() == 2);
  CHECK(pass[0].request == 1);
  CHECK(pass[0].bsz == 100);  // 0.11 s
  CHECK(pass[1].request == 2);
  double used = 0;
  for (const auto& e : pass) used += est(e.cached, e.bsz);
  CHECK(used <= 0.3);
  // The chunk is the largest that fits: one more token would overflow.
  CHECK(est(1000, 100) + est(20000, pass[1].bsz + 1) > 0.3);
  CHECK(pass[1].bsz < 400);
  // The chunked request stays at the head with its progress; request 3 waits behind it (FIFO).
  REQUIRE(q.size() == 2);
  CHECK(q[0].request == 2);
  CHECK(q[0].cached == 20000 + pass[1].bsz);
  CHECK(q[0].remaining == 400 - pass[1].bsz);
  CHECK(q[1].request == 3);

  // Draining: every pass stays under the quota and the total work is conserved.
  uint64_t done = pass[0].bsz + pass[1].bsz;
  for (int i = 0; i < 100 && !q.empty(); ++i) {
    const auto next = b.next_batch(q);
    double t = 0;
    for (const auto& e : next) {
      t += est(e.cached, e.bsz);
      done += e.bsz;
    }
    CHECK(t <= 0.3);
  }
  CHECK(q.empty());
  CHECK(done == 550);
}

TEST_CASE("batcher: a request alone above the quota still progresses") {
  const prefill_batcher b([](uint64_t, uint64_t bsz) { return 0.5 + 0.001 * double(bsz); }, 0.3);
  std::deque<prefill_work> q{{9, 0, 3}};
  for (int pass = 0; pass < 3; ++pass) {
    const auto batch = b.next_batch(q);
    REQUIRE(batch.size() == 1);
    CHECK(batch[0].bsz == 1);
  }
  CHECK(q.empty());
}

TEST_CASE("batcher with the model's attention FLOPs and a FLOPs→time fit") {
  const auto& m = find_model("qwen2.5-32b");
  const flops_fit fit{0.001, 1.0 / 400e12};  // 1 ms fixed, 400 TFLOP/s
  const prefill_batcher b(m, fit, 0.3);
  // The closed form matches the per-token sum.
  double sum = 0;
  for (uint64_t i = 1; i <= 64; ++i) sum += attention_flops_per_token(m, 5000 + i);
  CHECK(attention_prefill_flops(m, 5000, 64) == doctest::Approx(sum));
  std::deque<prefill_work> q{{1, 32000, 4000}, {2, 32000, 4000}};
  const auto pass = b.next_batch(q);
  double flops = 0;
  for (const auto& e : pass) flops += attention_prefill_flops(m, e.cached, e.bsz);
  CHECK(pass.size() >= 1);
  CHECK(fit.seconds(flops) <= 0.3 + 0.001 * double(pass.size()));
}

TEST_CASE("calibration: α, β and the FLOPs→time fit") {
  // 50 GB/s SNIC, 40,016 B/token (DeepSeek-V3.2): α = 50e9 × 3 / 40016.
  CHECK(alpha_tokens(50e9, 40016) == uint64_t(50e9 * 3 / 40016));
  CHECK(beta_tokens(20000) == 100000);
  const auto fit = fit_flops_to_time({{1e12, 0.003}, {2e12, 0.005}, {4e12, 0.009}});
  CHECK(fit.a == doctest::Approx(0.001));
  CHECK(fit.b == doctest::Approx(2e-15));
  CHECK_THROWS_AS(fit_flops_to_time({{1e12, 0.1}}), user_error);
  CHECK_THROWS_AS(fit_flops_to_time({{1e12, 0.1}, {1e12, 0.2}}), user_error);
  const auto& m = find_model("qwen2.5-32b");
  const double tps = prefill_tokens_per_s(m, fit, 32000, 400);
  CHECK(tps == doctest::Approx(400.0 / fit.seconds(prefill_flops(m, 32000, 400))));
}
