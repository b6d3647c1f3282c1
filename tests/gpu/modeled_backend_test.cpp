#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/cost_model.hpp"
#include "core/roofline.hpp"
#include "core/status.hpp"
#include "gpu/backend.hpp"
#include "gpu/gpu_profile.hpp"

using namespace dualpath;
using namespace dualpath::gpu;

namespace {

// The modeled backend of catalog model `model` on an H800 at `mfu`.
std::unique_ptr<compute_backend> modeled(const std::string& model, double mfu = 0.4) {
  backend_options o;
  o.kind = backend_kind::modeled;
  o.model = model;
  o.gpu_profile = "h800";
  o.mfu = mfu;
  return make_backend(o);
}

}  // namespace

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

// The stream's definition, one 32-bit word after the other: fmix32 over a counter from the low half of the
// token's splitmix64 seed of (layer, position, token), xored with the high half.
static std::vector<std::byte> stream_by_definition(uint32_t layer, uint32_t position, int32_t token, uint32_t bytes) {
  uint64_t s =
      (uint64_t(layer) << 48) ^ (uint64_t(position) << 16) ^ (uint64_t(uint32_t(token)) * 0x2545f4914f6cdd1dull);
  s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ull;
  s = (s ^ (s >> 27)) * 0x94d049bb133111ebull;
  s ^= s >> 31;
  const uint32_t lo = uint32_t(s), hi = uint32_t(s >> 32);
  std::vector<std::byte> out(bytes);
  for (uint32_t i = 0, k = 1; i < bytes; i += 4, ++k) {
    uint32_t z = lo + k * 0x9e3779b9u;
    z = (z ^ (z >> 16)) * 0x85ebca6bu;
    z = (z ^ (z >> 13)) * 0xc2b2ae35u;
    z = (z ^ (z >> 16)) ^ hi;
    std::memcpy(out.data() + i, &z, std::min<uint32_t>(4, bytes - i));
  }
  return out;
}

TEST_CASE(
    "modeled KV: every form (8, 4 or 1 words at a time) equals the stream word by word, and a check finds any changed "
    "byte") {
  // 0 is the widest form this CPU runs; 4 and 1 the narrower ones (a width the CPU lacks falls to one it has).
  for (uint32_t words : {0u, 4u, 1u}) {
    for (uint32_t bytes : {1u, 7u, 8u, 9u, 31u, 32u, 33u, 63u, 64u, 65u, 127u, 128u, 200u, 656u, 1152u}) {
      CAPTURE(words);
      CAPTURE(bytes);
      std::vector<std::byte> got(bytes);
      modeled_kv_fill(5, 1234, -3, got.data(), bytes, words);
      CHECK(got == stream_by_definition(5, 1234, -3, bytes));
      // Three tokens of a block, each checked: every byte of every token matters.
      const int32_t tokens[] = {11, 12, 13};
      std::vector<std::byte> block(3 * uint64_t(bytes));
      for (uint32_t t = 0; t < 3; ++t)
        modeled_kv_fill(2, 40 + t, tokens[t], block.data() + t * uint64_t(bytes), bytes, words);
      CHECK(modeled_kv_matches(2, 40, tokens, 3, block.data(), bytes, words));
      CHECK_FALSE(modeled_kv_matches(3, 40, tokens, 3, block.data(), bytes, words));  // another layer
      CHECK_FALSE(modeled_kv_matches(2, 41, tokens, 3, block.data(), bytes, words));  // shifted positions
      uint32_t caught = 0;
      for (uint64_t at = 0; at < block.size(); ++at) {
        block[at] ^= std::byte{0x10};
        caught += !modeled_kv_matches(2, 40, tokens, 3, block.data(), bytes, words);
        block[at] ^= std::byte{0x10};
      }
      CHECK(caught == block.size());
    }
  }
}

TEST_CASE("modeled backend emits modeled KV and tokens for a big catalog model") {
  auto be = modeled("deepseek-v3.2", 1.0);
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
  auto be = modeled("tiny");
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
  auto be = modeled("qwen2.5-32b", 0.5);
  const auto& m = be->model();
  const double predicted = prefill_pass_seconds(m, find_gpu_profile("h800"), 0.5, {{0, 64}});
  CHECK(predicted >= be->fit().seconds(prefill_flops(m, 0, 64)));  // the roofline is never below the compute roof
  std::vector<std::byte> out(uint64_t(64) * m.kv_bytes_per_token_layer);
  prefill_item item{1, 0, std::vector<int32_t>(64, 3), false};
  auto pass = be->begin_prefill({item});
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {out.data()});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= predicted * 0.99);
  CHECK(pass->finish()[0] == -1);
}

TEST_CASE("modeled decode sleeps for the roofline, not for its FLOPs") {
  // A memory-bound step: 8 qwen2.5-32b requests at 32K tokens read ~69 GB of KV and 32.5 GB of weights, about
  // 30 ms on an H800, while their FLOPs take ~2 ms. Sleeping at least the roofline's time shows the backend
  // calls it; the loose upper bound only catches a sleep of the wrong order.
  auto be = modeled("qwen2.5-32b", 0.4);
  const auto& m = be->model();
  const uint32_t position = 32768;
  const std::vector<uint64_t> positions(8, position);
  const double predicted = decode_step_seconds(m, find_gpu_profile("h800"), 0.4, positions);
  double flops = 0;
  for (auto p : positions) flops += flops_per_token(m, p + 1);
  CHECK(predicted >= 10 * be->fit().seconds(flops));
  // The modeled backend only counts span tokens, so every layer's span may point at the same small buffer.
  std::vector<std::byte> kv(m.kv_bytes_per_token_layer), out(uint64_t(8) * m.layers * m.kv_bytes_per_token_layer);
  std::vector<decode_item> batch(8);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].request_id = i;
    batch[i].token = 1;
    batch[i].position = position;
    batch[i].kv.assign(m.layers, {kv_span{kv.data(), position}});
    batch[i].new_kv = out.data() + i * m.layers * m.kv_bytes_per_token_layer;
  }
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(be->decode_step(batch).size() == 8);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= predicted * 0.99);
  CHECK(took < predicted * 20 + 1.0);
}
