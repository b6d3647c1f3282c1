// docs/design.md §6: the roofline. Decode steps are memory-bound, a batch shares one read of the weights,
// long prefills are compute-bound, every layer pays the launch cost.
#include <doctest/doctest.h>

#include <vector>

#include "core/cost_model.hpp"
#include "core/hardware.hpp"
#include "core/model_catalog.hpp"
#include "core/roofline.hpp"
#include "core/status.hpp"

using namespace dualpath;

namespace {

// The time a pass would take if only its FLOPs counted (no memory roof, no launches).
double flop_time(const model_spec& m, const roofline& r, const std::vector<prefill_chunk>& chunks) {
  return m.layers * r.flop_seconds(prefill_layer_work(m, r.weight_bytes_per_param, chunks).flops);
}

}  // namespace

TEST_CASE("roofline: a ds-27b decode step at an 8K context is memory-bound") {
  const auto& m = find_model("ds-27b");
  const auto r = make_roofline(find_gpu("h800"), 0.4);
  const double step = decode_step_seconds(m, r, {8192});
  const double flops_only = flop_time(m, r, {{8192, 1}});
  CHECK(step >= 10 * flops_only);
  // It is the weights' read: 2.3e9 FP8 parameters at 3.35 TB/s, plus 5 µs per layer.
  const double weights = m.active_params / 3350e9;
  CHECK(step >= weights + m.layers * 5e-6);
  CHECK(step < 1.2 * (weights + m.layers * 5e-6));
  // The same through the GPU profile.
  CHECK(decode_step_seconds(m, find_gpu("h800"), 0.4, {8192}) == doctest::Approx(step));
}

TEST_CASE("roofline: a 64-request decode step costs far less than 64 single steps") {
  const auto& m = find_model("ds-27b");
  const auto r = make_roofline(find_gpu("h800"), 0.4);
  const double one = decode_step_seconds(m, r, {8192});
  const double batch = decode_step_seconds(m, r, std::vector<uint64_t>(64, 8192));
  CHECK(batch > one);
  CHECK(batch * 8 < 64 * one);
}

TEST_CASE("roofline: a 16K-token prefill is compute-bound") {
  const auto& m = find_model("ds-27b");
  const auto r = make_roofline(find_gpu("h800"), 0.4);
  const std::vector<prefill_chunk> chunks{{0, 16384}};
  const auto w = prefill_layer_work(m, r.weight_bytes_per_param, chunks);
  CHECK(r.flop_seconds(w.flops) >= 10 * r.byte_seconds(w.bytes()));
  CHECK(prefill_pass_seconds(m, r, chunks) == doctest::Approx(flop_time(m, r, chunks) + m.layers * 5e-6));
  // Above the memory roof the pass time is the compute-bound slope of the fit: FLOPs / (peak · MFU).
  CHECK(flop_time(m, r, chunks) == doctest::Approx(prefill_flops(m, 0, 16384) / (989e12 * 0.4)));
}

TEST_CASE("roofline: a decode step is a pass of one-token chunks, launches count per layer") {
  const auto& m = find_model("qwen2.5-32b");
  const auto r = make_roofline(find_gpu("a100"), 0.5);
  CHECK(prefill_layer_work(m, 2, {{1000, 1}}).flops * m.layers == doctest::Approx(flops_per_token(m, 1001)));
  CHECK(decode_step_seconds(m, r, {1000, 50}) == doctest::Approx(prefill_pass_seconds(m, r, {{1000, 1}, {50, 1}})));
  CHECK(prefill_pass_seconds(m, r, {}) == 0);
  CHECK(prefill_pass_seconds(m, r, {{7, 0}}) == 0);
  // BF16 weights on the A100: twice the bytes of FP8.
  CHECK(layer_weight_bytes(m, 2) == doctest::Approx(2 * 32.5e9 / 64));
  const auto slow_launch = make_roofline(find_gpu("a100"), 0.5, 1e-3);
  CHECK(decode_step_seconds(m, slow_launch, {10}) ==
        doctest::Approx(decode_step_seconds(m, r, {10}) + m.layers * (1e-3 - 5e-6)));
  CHECK_THROWS_AS(make_roofline(find_gpu("h800"), 0), user_error);
  CHECK_THROWS_AS(make_roofline(find_gpu("h800"), 0.5, -1), user_error);
}

TEST_CASE("roofline: attention reads the cached KV; DSA only what the indexer picks, plus its keys") {
  const auto& qwen = find_model("qwen2.5-32b");
  // GQA: every cached token's 4 KB per layer, and the new token's KV written.
  CHECK(layer_kv_bytes(qwen, {8192, 1}) == doctest::Approx(8193.0 * 4096));
  const auto& d27 = find_model("ds-27b");  // top-k 1024, 656 B per token and layer, indexer keys of 128 B
  CHECK(layer_kv_bytes(d27, {8192, 1}) == doctest::Approx(1024.0 * 656 + 8192.0 * 128 + (656 + 128)));
  CHECK(layer_kv_bytes(d27, {500, 1}) == doctest::Approx(500.0 * 656 + 500.0 * 128 + (656 + 128)));
  // A chunk of many queries reads at most the whole cached context once.
  CHECK(layer_kv_bytes(d27, {8192, 100}) == doctest::Approx(8192.0 * (656 + 128) + 100.0 * (656 + 128)));
}
