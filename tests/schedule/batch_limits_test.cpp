// docs/design.md §7.6: what bounds a prefill pass. The quota's scope (one layer's attention by default, all
// layers' attention, or the whole forward pass), the run modes without a quota, and the engine's free HBM.
#include <doctest/doctest.h>

#include <map>

#include "core/cost_model.hpp"
#include "core/model_catalog.hpp"
#include "schedule/batcher.hpp"

using namespace dualpath;
using namespace dualpath::schedule;

TEST_CASE("quota scopes: one layer's attention is all layers' attention over the layer count") {
  const auto& m = find_model("deepseek-v3.2");
  const flops_fit fit{0.002, 1.0 / 400e12};
  const auto layer = quota_estimate(quota_scope_kind::layer, m, fit);
  const auto attention = quota_estimate(quota_scope_kind::attention, m, fit);
  const auto forward = quota_estimate(quota_scope_kind::forward, m, fit);
  const double attn = attention_prefill_flops(m, 32000, 500);
  CHECK(layer(32000, 500) == doctest::Approx(fit.b * attn / 61));
  CHECK(attention(32000, 500) == doctest::Approx(fit.seconds(attn)));
  CHECK(forward(32000, 500) == doctest::Approx(fit.seconds(prefill_flops(m, 32000, 500))));
  CHECK(layer(32000, 500) < attention(32000, 500));
  CHECK(attention(32000, 500) < forward(32000, 500));
}

TEST_CASE("quota scope layer: the batch's attention time of one layer stays within the quota") {
  // 300 ms per layer × 61 layers: about 61 times the batch the all-layers scope admits.
  const auto& m = find_model("deepseek-v3.2");
  const flops_fit fit{0, 1.0 / 400e12};
  const prefill_batcher per_layer(quota_estimate(quota_scope_kind::layer, m, fit), 0.3);
  const prefill_batcher all_layers(quota_estimate(quota_scope_kind::attention, m, fit), 0.3);
  std::deque<prefill_work> q1, q2;
  for (uint64_t i = 0; i < 400; ++i) {
    q1.push_back({i, 32000, 400});
    q2.push_back({i, 32000, 400});
  }
  const auto wide = per_layer.next_batch(q1);
  const auto narrow = all_layers.next_batch(q2);
  double layer_s = 0;
  uint64_t wide_tokens = 0, narrow_tokens = 0;
  for (const auto& e : wide) {
    layer_s += fit.b * attention_prefill_flops(m, e.cached, e.bsz) / m.layers;
    wide_tokens += e.bsz;
  }
  for (const auto& e : narrow) narrow_tokens += e.bsz;
  CHECK(layer_s <= 0.3);
  CHECK(layer_s > 0.29);  // the chunk fills the quota
  CHECK(wide_tokens > 50 * narrow_tokens);
}

TEST_CASE("no quota: the framework's batch takes every ready request") {
  const prefill_batcher b([](uint64_t, uint64_t bsz) { return double(bsz); }, no_quota_s);
  std::deque<prefill_work> q{{1, 0, 100000}, {2, 5, 200000}, {3, 9, 1}};
  const auto batch = b.next_batch(q);
  REQUIRE(batch.size() == 3);
  CHECK(batch[1].bsz == 200000);
  CHECK(q.empty());
}

TEST_CASE("HBM budget: a pass stops before its requests' HBM exceeds what is free") {
  const prefill_batcher b([](uint64_t, uint64_t) { return 0.0; }, no_quota_s);
  std::map<uint64_t, uint64_t> need{{1, 400}, {2, 300}, {3, 500}, {4, 100}};
  hbm_budget hbm{1000, [&](const prefill_work& w) { return need.at(w.request); }};
  std::deque<prefill_work> q{{1, 0, 10}, {2, 0, 10}, {3, 0, 10}, {4, 0, 10}};
  auto batch = b.next_batch(q, &hbm);
  REQUIRE(batch.size() == 2);  // 400 + 300; request 3 would make 1200, and 4 waits behind it (FIFO)
  CHECK(batch[1].request == 2);
  REQUIRE(q.size() == 2);
  CHECK(q.front().request == 3);
  // A head that does not fit alone still comes out, alone: the engine decides whether it waits or fails.
  hbm.free_bytes = 200;
  batch = b.next_batch(q, &hbm);
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].request == 3);
  // A request that fits alone is never held back by a batch-mate that would not.
  hbm.free_bytes = 100;
  batch = b.next_batch(q, &hbm);
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].request == 4);
}

TEST_CASE("HBM budget and quota together: the chunked head keeps its HBM, the next request waits for room") {
  const prefill_batcher b([](uint64_t, uint64_t bsz) { return 0.001 * double(bsz); }, 0.05);
  hbm_budget hbm{1000, [](const prefill_work& w) { return w.request == 1 ? uint64_t(900) : uint64_t(200); }};
  std::deque<prefill_work> q{{1, 0, 30}, {2, 0, 10}};
  auto batch = b.next_batch(q, &hbm);  // 30 ms for request 1; request 2 fits the quota (10 ms) but not the HBM
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].bsz == 30);
  batch = b.next_batch(q, &hbm);
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].request == 2);
}
