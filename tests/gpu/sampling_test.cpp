// Picking a token from logits (gpu/sampling.hpp): greedy is the largest; a draw follows the softmax at its
// temperature, stays inside the top-p nucleus, and depends only on (seed, position).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "gpu/sampling.hpp"

using dualpath::gpu::pick_token;
using dualpath::gpu::sampling;

TEST_CASE("sampling: greedy takes the largest logit, the lowest index among ties") {
  const std::vector<float> l{0.5f, 2.0f, -1.0f, 2.0f};
  CHECK(pick_token(l.data(), l.size(), {}, 0) == 1);
  CHECK(pick_token(l.data(), l.size(), {0.0f, 1.0f, 99}, 7) == 1);  // temperature 0: greedy whatever the seed
}

TEST_CASE("sampling: draws follow softmax(logits / T), are the same for the same (seed, position)") {
  const std::vector<float> l{0.0f, float(std::log(3.0))};  // probabilities 1/4 and 3/4 at T = 1
  const sampling s{1.0f, 1.0f, 42};
  int ones = 0;
  const int draws = 20000;
  for (int pos = 0; pos < draws; ++pos) ones += pick_token(l.data(), l.size(), s, pos);
  CHECK(double(ones) / draws == doctest::Approx(0.75).epsilon(0.02));
  // At T = 0.5 the odds square: 9 to 1.
  int hot = 0;
  for (int pos = 0; pos < draws; ++pos) hot += pick_token(l.data(), l.size(), {0.5f, 1.0f, 42}, pos);
  CHECK(double(hot) / draws == doctest::Approx(0.9).epsilon(0.02));
  std::vector<int32_t> a, b, c;
  for (int pos = 0; pos < 64; ++pos) {
    a.push_back(pick_token(l.data(), l.size(), s, pos));
    b.push_back(pick_token(l.data(), l.size(), s, pos));
    c.push_back(pick_token(l.data(), l.size(), {1.0f, 1.0f, 43}, pos));
  }
  CHECK(a == b);
  CHECK(a != c);  // another seed, other draws
}

TEST_CASE("sampling: top_p keeps the smallest set of likely tokens that reaches it") {
  const std::vector<float> l{3.0f, 2.9f, -5.0f, -5.0f};  // the last two together hold well under 1%
  for (int pos = 0; pos < 2000; ++pos) {
    const int32_t t = pick_token(l.data(), l.size(), {1.0f, 0.9f, 5}, pos);
    CHECK(t <= 1);
  }
  for (int pos = 0; pos < 200; ++pos) CHECK(pick_token(l.data(), l.size(), {1.0f, 0.01f, 5}, pos) == 0);
}

TEST_CASE("sampling: logits that differ in the last bits draw the same token almost always") {
  // A pass over loaded KV and a full pass give logits that differ in the last bits; tokens of nearly equal
  // probability then swap their order. The nucleus is walked in vocabulary order, so only a uniform number
  // within that difference of a boundary changes its token.
  std::vector<float> a(256), b(256);
  for (size_t i = 0; i < a.size(); ++i) {
    // Nearly uniform, as a small random model's are, with many near-equal pairs; in `b` each pair's order
    // is the other way round.
    a[i] = float(std::round(std::sin(double(i) * 1.7) * 20) / 2000);
    b[i] = a[i] + (i % 2 ? 1e-6f : -1e-6f);
  }
  int same = 0;
  const int draws = 4000;
  for (int pos = 0; pos < draws; ++pos)
    same +=
        pick_token(a.data(), a.size(), {1.0f, 0.95f, 3}, pos) == pick_token(b.data(), b.size(), {1.0f, 0.95f, 3}, pos);
  CHECK(same >= draws * 99 / 100);
}
