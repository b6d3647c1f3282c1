#include <doctest/doctest.h>

#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "core/model_catalog.hpp"

using namespace dualpath;

TEST_CASE("cache-compute ratio reproduces docs/design.md §6 for deepseek-v3.2 and qwen2.5-32b") {
  const auto& v32 = find_model("deepseek-v3.2");
  CHECK(v32.kv_bytes_per_token() == 40016);
  CHECK(cache_compute_ratio_gb_per_pflop(v32, 16384, 429) == doctest::Approx(12.2).epsilon(0.02));
  CHECK(cache_compute_ratio_gb_per_pflop(v32, 32721, 429) == doctest::Approx(21.6).epsilon(0.02));
  CHECK(cache_compute_ratio_gb_per_pflop(v32, 65536, 429) == doctest::Approx(35.1).epsilon(0.02));

  const auto& qwen = find_model("qwen2.5-32b");
  CHECK(qwen.kv_bytes_per_token() == 262144);
  CHECK(cache_compute_ratio_gb_per_pflop(qwen, 16384, 429) == doctest::Approx(115.8).epsilon(0.02));
  CHECK(cache_compute_ratio_gb_per_pflop(qwen, 65536, 429) == doctest::Approx(265.4).epsilon(0.02));
}

TEST_CASE("prefill FLOPs sum the causal growth of attention") {
  const auto& tiny = find_model("tiny");
  double by_token = 0;
  for (uint64_t i = 0; i < 100; ++i) by_token += flops_per_token(tiny, 50 + i + 1);
  CHECK(prefill_flops(tiny, 50, 100) == doctest::Approx(by_token).epsilon(1e-9));
  const auto& v32 = find_model("deepseek-v3.2");
  double dsa = 0;
  for (uint64_t i = 0; i < 300; ++i) dsa += flops_per_token(v32, 1900 + i + 1);
  CHECK(prefill_flops(v32, 1900, 300) == doctest::Approx(dsa).epsilon(1e-9));
}

TEST_CASE("the closed-form attention sum equals the token-by-token sum on both sides of DSA's top-k cap") {
  const auto& v32 = find_model("deepseek-v3.2");
  auto by_token = [&](uint64_t cached, uint64_t append) {
    double sum = 0;
    for (uint64_t i = 1; i <= append; ++i) sum += attention_flops_per_token(v32, cached + i);
    return sum;
  };
  for (auto [c, a] : {std::pair<uint64_t, uint64_t>{0, 1000}, {100, 1948}, {2047, 5}, {2048, 64}, {30000, 429}})
    CHECK(attention_sum_flops(v32, c, a) == doctest::Approx(by_token(c, a)).epsilon(1e-9));
  CHECK(attention_sum_flops(v32, 500, 0) == 0);
}

TEST_CASE("unknown model names are refused with the known list") {
  CHECK_THROWS_AS(find_model("gpt-7"), user_error);
  try {
    find_model("gpt-7");
  } catch (const user_error& e) {
    CHECK(std::string(e.what()).find("deepseek-v3.2") != std::string::npos);
  }
}

TEST_CASE("catalog entries carry the numbers the system needs") {
  for (const auto& m : model_catalog()) {
    INFO(m.name);
    CHECK(m.layers > 0);
    CHECK(m.kv_bytes_per_token() > 0);
    CHECK(m.active_params > 0);
    CHECK(m.block_tokens > 0);
    CHECK(m.full_block_bytes() == m.layer_block_bytes() * m.layers);
  }
  for (const char* name : {"deepseek-v3.2", "deepseek-v3", "ds-27b", "qwen2.5-32b", "tiny", "small"}) {
    CHECK_NOTHROW(find_model(name));
  }
  CHECK(find_model("ds-27b").kv_bytes_per_token() == 30 * 656);
  CHECK(find_model("deepseek-v3").kv_bytes_per_token() == 61 * 1152);
  CHECK(find_model("tiny").runnable);
  CHECK(find_model("deepseek-v3.2").block_tokens == 64);
  // DSA caps the attended tokens, so beyond top-k only the indexer grows with context.
  const auto& v32 = find_model("deepseek-v3.2");
  const double step = attention_flops_per_token(v32, 40000) - attention_flops_per_token(v32, 30000);
  CHECK(step == doctest::Approx(61 * 2.0 * 64 * 128 * 10000));
}
