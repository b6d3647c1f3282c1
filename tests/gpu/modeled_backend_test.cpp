#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "gpu/backend.hpp"

using namespace dualpath;
using namespace dualpath::gpu;

TEST_CASE("modeled KV bytes are deterministic and depend on layer, position and token") {
  std::vector<std::byte> a(656), b(656), c(656), d(656);
  modeled_kv_fill(3, 100, 42, a.data(), 656);
  modeled_kv_fill(3, 100, 42, b.data(), 656);
  modeled_kv_fill(4, 100, 42, c.data(), 656);
  modeled_kv_fill(3, 101, 42, d.data(), 656);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
}

TEST_CASE("modeled backend emits modeled KV and tokens for a big catalog model") {
  backend_options o;
  o.kind = backend_kind::modeled;
  o.model = "deepseek-v3.2";
  o.gpu_profile = "h800";
  o.mfu = 1.0;
  auto be = make_backend(o);
  const auto& m = be->model();
  const uint32_t bpt = uint32_t(m.kv_bytes_per_token_layer);
  CHECK(be->fit().seconds(989e12) == doctest::Approx(1.0));

  std::vector<std::byte> cached(uint64_t(64) * bpt), out(uint64_t(3) * bpt), expect(bpt);
  prefill_item item{7, 64, {5, 6, 7}, true};
  auto pass = be->begin_prefill({item});
  for (uint32_t l = 0; l < m.layers; ++l) {
    pass->run_layer(l, {{kv_span{cached.data(), 64}}}, {out.data()});
    modeled_kv_fill(l, 66, 7, expect.data(), bpt);
    CHECK(std::equal(expect.begin(), expect.end(), out.begin() + 2 * bpt));
  }
  auto next = pass->finish();
  REQUIRE(next.size() == 1);
  CHECK(next[0] == modeled_next_token(7, 66, m.vocab));

  std::vector<std::byte> dkv(uint64_t(m.layers) * bpt);
  decode_item di;
  di.token = next[0];
  di.position = 67;
  di.kv.assign(m.layers, {kv_span{cached.data(), 64}, kv_span{out.data(), 3}});
  di.new_kv = dkv.data();
  std::vector<decode_item> batch{di};
  CHECK(be->decode_step(batch)[0] == modeled_next_token(next[0], 67, m.vocab));
  modeled_kv_fill(m.layers - 1, 67, next[0], expect.data(), bpt);
  CHECK(std::equal(expect.begin(), expect.end(), dkv.begin() + uint64_t(m.layers - 1) * bpt));
}

TEST_CASE("modeled backend rejects spans that do not cover the cached tokens and layers out of order") {
  backend_options o;
  o.kind = backend_kind::modeled;
  o.model = "tiny";
  auto be = make_backend(o);
  std::vector<std::byte> buf(1 << 16);
  auto pass = be->begin_prefill({prefill_item{1, 16, {1}, true}});
  CHECK_THROWS_AS(pass->run_layer(0, {{kv_span{buf.data(), 8}}}, {buf.data()}), std::invalid_argument);
  auto pass2 = be->begin_prefill({prefill_item{1, 0, {1}, true}});
  CHECK_THROWS_AS(pass2->run_layer(1, {{}}, {buf.data()}), std::logic_error);
  CHECK_THROWS_AS(make_backend({backend_kind::modeled, "tiny", "nope"}), user_error);
  CHECK_FALSE(parse_backend_kind("quantum").ok());
}

TEST_CASE("modeled prefill takes about the predicted time") {
  // Not a timing assertion on the machine: the sleep is the model, we only check it is not skipped.
  backend_options o;
  o.kind = backend_kind::modeled;
  o.model = "qwen2.5-32b";
  o.mfu = 0.5;
  auto be = make_backend(o);
  const auto& m = be->model();
  const double predicted = be->fit().seconds(prefill_flops(m, 0, 64));
  std::vector<std::byte> out(uint64_t(64) * m.kv_bytes_per_token_layer);
  prefill_item item{1, 0, std::vector<int32_t>(64, 3), false};
  auto pass = be->begin_prefill({item});
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {out.data()});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= predicted * 0.99);
  CHECK(pass->finish()[0] == -1);
}
