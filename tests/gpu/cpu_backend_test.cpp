#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "core/status.hpp"
#include "gpu/bf16.hpp"
#include "gpu/cpu_kernels.hpp"
#include "gpu/cpu_backend.hpp"
#include "gpu/cpu_team.hpp"
#include "gpu/model_loader.hpp"
#include "kv_pages.hpp"
#include "reference_model.hpp"

using namespace testkv;

namespace {

model_spec qwen_tiny() {  // the Qwen2 variant: tiny with QKV bias
  model_spec m = find_model("tiny");
  m.name = "tiny-qwen2";
  m.runnable = true;
  m.qkv_bias = true;
  m.rope_theta = 1000000.0;
  m.rms_eps = 1e-6;
  return m;
}

// Heads 16 wide: the prefill tiles' products stay on sgemm and decode takes the portable kernels, on any CPU
// (the AVX-512 kernels are built for 32, 64 and 128).
model_spec narrow_heads_tiny() {
  model_spec m = find_model("tiny");
  m.name = "tiny-16-wide-heads";
  m.heads *= 2;
  m.kv_heads *= 2;
  m.head_dim /= 2;
  return m;
}

// The logits within `bound` (relative) of the reference's, and the token picked from them its argmax.
void check_against(const std::vector<float>& logits, int32_t picked, const reference::result& ref,
                   double bound = 1e-4) {
  CHECK(rel_error(logits, ref.logits) < bound);
  CHECK(picked == argmax(ref.logits.data(), ref.logits.size()));
}

std::unique_ptr<compute_backend> cpu_for(const model_weights& w) { return make_cpu_backend(make_dense_model(w)); }

// A context's KV prefilled into one buffer a layer, as a recompute holds it; `next` is the token it emits.
struct one_buffer {
  std::vector<std::vector<std::byte>> layers;
  int32_t next = -1;
};
one_buffer prefill_one_buffer(compute_backend& be, const std::vector<int32_t>& tokens) {
  const auto& m = be.model();
  one_buffer kv{std::vector<std::vector<std::byte>>(
      m.layers, std::vector<std::byte>(tokens.size() * m.kv_bytes_per_token_layer))};
  prefill_item item;
  item.tokens = tokens;
  item.emit_token = true;
  auto pass = be.begin_prefill({item});
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {kv.layers[l].data()});
  kv.next = pass->finish().at(0);
  return kv;
}

// A decode item feeding `token` after `position` tokens whose KV is in `kv` (per layer, its spans); the token's
// new KV goes to `new_kv`, its logits to `logits` where given.
decode_item decode_over(std::vector<std::vector<kv_span>> kv, int32_t token, uint32_t position, std::byte* new_kv,
                        std::vector<float>* logits = nullptr) {
  decode_item d;
  d.token = token;
  d.position = position;
  d.kv = std::move(kv);
  d.new_kv = new_kv;
  d.logits = logits;
  return d;
}

// Cuts of a 150-key context into spans: one span; pages of 16; uneven pieces with an empty one among them.
const std::vector<std::vector<uint32_t>> span_cuts{
    {150}, {16, 16, 16, 16, 16, 16, 16, 16, 16, 6}, {5, 1, 0, 60, 63, 21}};

// One layer's buffer of `bytes`-wide rows as spans of the sizes in `cut`.
std::vector<kv_span> cut_into_spans(std::vector<std::byte>& layer, const std::vector<uint32_t>& cut, uint64_t bytes) {
  std::vector<kv_span> spans;
  uint64_t at = 0;
  for (uint32_t n : cut) spans.push_back({layer.data() + at * bytes, n}), at += n;
  return spans;
}

}  // namespace

TEST_CASE("cpu backend matches the plain reference implementation (Llama and Qwen2 variants, narrow heads)") {
  for (const model_spec& spec : {find_model("tiny"), qwen_tiny(), narrow_heads_tiny()}) {
    CAPTURE(spec.name);
    const auto w = generate_weights(spec, 11);
    auto be = cpu_for(w);
    const auto tokens = random_tokens(41, spec.vocab, 5);
    const auto ref = reference::forward(w, tokens);

    paged_kv kv(spec);
    request req{&kv, 0, tokens};
    const auto next = prefill(*be, {&req});
    // The narrow variant lands at 1.24e-4 whichever products its tiles run (sgemm here either way, and
    // the other two variants forced onto sgemm stay under 1e-4): the bound is the model's, not the path's.
    check_against(req.logits, next[0], ref, spec.head_dim < 32 ? 2e-4 : 1e-4);
    // The stored KV is the reference's K and V (bf16), layer by layer.
    const uint32_t kvw = spec.kv_heads * spec.head_dim;
    double worst = 0;
    for (uint32_t l = 0; l < spec.layers; ++l)
      for (uint32_t t = 0; t < tokens.size(); ++t) {
        const auto* p = reinterpret_cast<const uint16_t*>(kv.slot(l, t));
        for (uint32_t i = 0; i < kvw; ++i) {
          worst = std::max(worst, double(std::abs(bf16_to_float(p[i]) - ref.k[l][t][i])));
          worst = std::max(worst, double(std::abs(bf16_to_float(p[kvw + i]) - ref.v[l][t][i])));
        }
      }
    CHECK(worst < 0.05);  // at most a bf16 rounding flip on values of order 1
  }
}

TEST_CASE("layer-wise prefill over cached KV equals a full prefill, over many turns of a trajectory") {
  const auto w = generate_weights(find_model("tiny"), 3);
  auto be = cpu_for(w);
  const auto& m = be->model();
  paged_kv kv(m);  // the agent's KV across turns, as storage would hold it
  std::vector<int32_t> context;
  for (int turn = 0; turn < 5; ++turn) {
    CAPTURE(turn);
    const auto user = random_tokens(9 + 13 * turn, m.vocab, 100 + turn);
    request layerwise{&kv, uint32_t(context.size()), user};
    const int32_t first = prefill(*be, {&layerwise})[0];
    context.insert(context.end(), user.begin(), user.end());

    paged_kv scratch(m);
    request full{&scratch, 0, context};
    const int32_t expect = prefill(*be, {&full})[0];
    CHECK(first == expect);
    CHECK(rel_error(layerwise.logits, full.logits) < 1e-3);

    // Decode a few tokens over the paged KV; each must match a full prefill of the same context.
    int32_t tok = first;
    for (int step = 0; step < 4; ++step) {
      std::vector<std::vector<float>> dl;
      const int32_t next = decode(*be, {&kv}, {tok}, {uint32_t(context.size())}, &dl)[0];
      context.push_back(tok);
      paged_kv again(m);
      request check{&again, 0, context};
      CHECK(next == prefill(*be, {&check})[0]);
      CHECK(rel_error(dl[0], check.logits) < 1e-3);
      tok = next;
    }
  }
  CHECK(context.size() > 100);  // spans crossed several Layer Blocks
}

TEST_CASE("chunked prefill equals unchunked prefill") {
  const auto w = generate_weights(find_model("tiny"), 4);
  auto be = cpu_for(w);
  const auto& m = be->model();
  const auto prompt = random_tokens(150, m.vocab, 77);  // > one 128-row attention tile

  paged_kv whole(m);
  request one{&whole, 0, prompt};
  const int32_t expect = prefill(*be, {&one})[0];

  paged_kv chunked(m);
  uint32_t done = 0;
  int32_t got = -2;
  for (uint32_t size : {37u, 64u, 49u}) {
    request c{&chunked, done, std::vector<int32_t>(prompt.begin() + done, prompt.begin() + done + size)};
    c.emit = done + size == prompt.size();
    const int32_t t = prefill(*be, {&c})[0];
    if (!c.emit) CHECK(t == -1);
    if (c.emit) {
      got = t;
      CHECK(rel_error(c.logits, one.logits) < 1e-3);
    }
    done += size;
  }
  CHECK(got == expect);
  // The KV of both runs agrees (up to bf16 rounding flips).
  double worst = 0;
  for (uint32_t l = 0; l < m.layers; ++l)
    for (uint32_t t = 0; t < prompt.size(); ++t) {
      const auto* a = reinterpret_cast<const uint16_t*>(whole.slot(l, t));
      const auto* b = reinterpret_cast<const uint16_t*>(chunked.slot(l, t));
      for (uint32_t i = 0; i < m.kv_bytes_per_token_layer / 2; ++i)
        worst = std::max(worst, double(std::abs(bf16_to_float(a[i]) - bf16_to_float(b[i]))));
    }
  CHECK(worst < 0.05);
}

TEST_CASE("a batch of different requests equals each request alone") {
  const auto w = generate_weights(qwen_tiny(), 9);
  auto be = cpu_for(w);
  const auto& m = be->model();
  struct shape {
    uint32_t cached, fresh;
  };
  const std::vector<shape> shapes{{0, 20}, {33, 7}, {70, 1}, {16, 140}};
  std::vector<paged_kv> kv_batch, kv_alone;
  std::vector<std::vector<int32_t>> prompts;
  for (size_t r = 0; r < shapes.size(); ++r) {
    prompts.push_back(random_tokens(shapes[r].cached + shapes[r].fresh, m.vocab, 500 + r));
    for (auto* store : {&kv_batch, &kv_alone}) {
      store->emplace_back(m);
      if (shapes[r].cached) {  // the cached prefix, computed once
        request pre{&store->back(), 0, std::vector<int32_t>(prompts[r].begin(), prompts[r].begin() + shapes[r].cached)};
        prefill(*be, {&pre});
      }
    }
  }
  std::vector<request> batch, alone;
  for (size_t r = 0; r < shapes.size(); ++r) {
    std::vector<int32_t> fresh(prompts[r].begin() + shapes[r].cached, prompts[r].end());
    batch.push_back({&kv_batch[r], shapes[r].cached, fresh});
    alone.push_back({&kv_alone[r], shapes[r].cached, fresh});
  }
  batch[2].emit = false;
  alone[2].emit = false;
  std::vector<request*> ptrs;
  for (auto& b : batch) ptrs.push_back(&b);
  const auto together = prefill(*be, ptrs);
  for (size_t r = 0; r < shapes.size(); ++r) {
    CAPTURE(r);
    CHECK(together[r] == prefill(*be, {&alone[r]})[0]);
    if (batch[r].emit) CHECK(rel_error(batch[r].logits, alone[r].logits) < 1e-3);
  }
  CHECK(together[2] == -1);

  // Batched decode equals single decodes too.
  std::vector<paged_kv*> kvb;
  std::vector<int32_t> toks;
  std::vector<uint32_t> pos;
  for (size_t r = 0; r < shapes.size(); ++r) {
    kvb.push_back(&kv_batch[r]);
    toks.push_back(int32_t(r + 1));
    pos.push_back(shapes[r].cached + shapes[r].fresh);
  }
  const auto dec = decode(*be, kvb, toks, pos);
  for (size_t r = 0; r < shapes.size(); ++r) CHECK(dec[r] == decode(*be, {&kv_alone[r]}, {toks[r]}, {pos[r]})[0]);
}

TEST_CASE("cpu backend rejects malformed passes") {
  auto be = make_backend({backend_kind::cpu, "tiny"});
  paged_kv kv(be->model());
  std::vector<std::byte> out(1 << 16);
  auto pass = be->begin_prefill({prefill_item{1, 16, {1, 2}, true}});
  CHECK_THROWS_AS(pass->run_layer(0, {kv.spans(0, 15)}, {out.data()}), std::invalid_argument);
  CHECK_THROWS_AS(be->begin_prefill({prefill_item{1, 0, {int32_t(be->model().vocab)}, true}}), std::invalid_argument);
  auto pass2 = be->begin_prefill({prefill_item{1, 0, {1}, true}});
  CHECK_THROWS_AS(pass2->finish(), std::logic_error);
  CHECK_THROWS_AS(make_backend({backend_kind::cpu, "deepseek-v3.2"}), user_error);
  CHECK_THROWS_AS(make_backend({backend_kind::cpu, "qwen2.5-32b"}),
                  user_error);  // Llama-style but far too big to generate
}

TEST_CASE("cpu backend fit is measured and positive") {
  auto be = make_backend({backend_kind::cpu, "tiny"});
  const auto f = be->fit();
  CHECK(f.seconds_per_flop > 0);
  CHECK(f.seconds(1e9) > f.seconds(1e6));
  CHECK(be->fit().seconds_per_flop == f.seconds_per_flop);  // cached, not re-measured
}

TEST_CASE("the cpu backend counts its passes' seconds in linear layers and in attention, within the pass") {
  auto be = make_backend({backend_kind::cpu, "tiny"});
  CHECK(be->parts().linear_s == 0);
  CHECK(be->parts().attention_s == 0);
  const model_spec& m = be->model();
  std::vector<std::byte> kv(64 * uint64_t(m.kv_bytes_per_token_layer));
  prefill_item item{1, 0, {}, true};
  for (int32_t t = 0; t < 48; ++t) item.tokens.push_back(t + 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto pass = be->begin_prefill({item});
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {kv.data()});
  pass->finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after_prefill = be->parts();
  CHECK(after_prefill.linear_s > 0);
  CHECK(after_prefill.attention_s > 0);
  CHECK(after_prefill.linear_s + after_prefill.attention_s <= wall);  // both are timed inside the pass

  // A decode step over the prefill's KV adds to both.
  std::vector<std::byte> new_kv(m.layers * uint64_t(m.kv_bytes_per_token_layer));
  std::vector<std::vector<std::byte>> layer_kv(m.layers, kv);
  std::vector<std::vector<kv_span>> spans;
  for (uint32_t l = 0; l < m.layers; ++l) spans.push_back({kv_span{layer_kv[l].data(), 48}});
  std::vector<decode_item> items{decode_over(std::move(spans), 7, 48, new_kv.data())};
  be->decode_step(items);
  CHECK(be->parts().linear_s > after_prefill.linear_s);
  CHECK(be->parts().attention_s > after_prefill.attention_s);

  auto modeled = make_backend({backend_kind::modeled, "tiny"});
  CHECK(modeled->parts().linear_s == 0);  // a backend that does not time its parts says zero
}

TEST_CASE("the reference agrees over several key blocks and query tiles, and decode after them") {
  // 1,100 tokens: the last query tiles see three 512-key blocks, so the online softmax carries its running
  // maximum and sum across blocks; the decode step then reads the bf16 KV directly (both attention paths).
  // With 16-wide heads the tiles' products run on sgemm instead of the AVX-512 kernels.
  for (const model_spec& spec : {find_model("tiny"), narrow_heads_tiny()}) {
    CAPTURE(spec.name);
    const auto w = generate_weights(spec, 21);
    auto be = cpu_for(w);
    const auto tokens = random_tokens(1100, spec.vocab, 8);
    const auto ref = reference::forward(w, tokens);
    paged_kv kv(spec);
    request req{&kv, 0, tokens};
    const int32_t next = prefill(*be, {&req})[0];
    check_against(req.logits, next, ref);

    auto longer = tokens;
    longer.push_back(next);
    const auto ref2 = reference::forward(w, longer);
    std::vector<std::vector<float>> dl;
    const int32_t after = decode(*be, {&kv}, {next}, {uint32_t(tokens.size())}, &dl)[0];
    check_against(dl[0], after, ref2);
  }
}

TEST_CASE("a cpu team runs every task once, splits ranges whole, and passes a task's exception on") {
  cpu_team team(3);
  CHECK(team.size() == 3);
  for (size_t tasks : {0, 1, 2, 7, 100}) {
    std::vector<std::atomic<int>> ran(tasks);
    std::vector<std::atomic<int>> members(team.size());
    team.run(tasks, [&](size_t t, unsigned member) {
      ++ran[t];
      ++members.at(member);
    });
    for (auto& r : ran) CHECK(r.load() == 1);
  }
  std::vector<std::atomic<int>> covered(1001);
  team.split(covered.size(), [&](size_t b, size_t e, unsigned) {
    for (size_t i = b; i < e; ++i) ++covered[i];
  });
  for (auto& c : covered) CHECK(c.load() == 1);
  CHECK_THROWS_WITH_AS(team.run(50,
                                [](size_t t, unsigned) {
                                  if (t == 17) throw std::runtime_error("task 17 failed");
                                }),
                       "task 17 failed", std::runtime_error);
  // The team still works after a failed run.
  std::atomic<int> after{0};
  team.run(20, [&](size_t, unsigned) { ++after; });
  CHECK(after.load() == 20);
}

TEST_CASE("a decode step's logits do not depend on how its KV is cut into spans, bit for bit") {
  // A decode engine holds a request's KV in pages, a recompute in one buffer: both must give the same bits,
  // or a sampled token can come out differently (docs/design.md §10). Both head widths: the AVX-512 kernels
  // (32 wide) where the CPU has them, the portable ones (16 wide).
  for (const model_spec& spec : {find_model("tiny"), narrow_heads_tiny()}) {
    CAPTURE(spec.name);
    const auto w = generate_weights(spec, 4);
    auto be = cpu_for(w);
    const auto& m = be->model();
    const uint64_t bytes = m.kv_bytes_per_token_layer;
    const auto prompt = random_tokens(150, m.vocab, 77);  // more than two blocks of 64 keys and a part
    auto kv = prefill_one_buffer(*be, prompt);
    const auto& cuts = span_cuts;
    std::vector<std::vector<float>> logits(cuts.size());
    for (size_t c = 0; c < cuts.size(); ++c) {
      std::vector<std::vector<kv_span>> spans;
      for (uint32_t l = 0; l < m.layers; ++l) spans.push_back(cut_into_spans(kv.layers[l], cuts[c], bytes));
      std::vector<std::byte> fresh(m.layers * bytes);
      std::vector<decode_item> step{
          decode_over(std::move(spans), kv.next, uint32_t(prompt.size()), fresh.data(), &logits[c])};
      be->decode_step(step);
    }
    for (size_t c = 1; c < cuts.size(); ++c) {
      CAPTURE(c);
      REQUIRE(logits[c].size() == logits[0].size());
      CHECK(logits[c] == logits[0]);
    }
  }
}

TEST_CASE("a decode step's logits are the same bits alone, in a batch and on one thread, over several key chunks") {
  // Decode attention cuts a request's keys into chunks by its length alone and merges them in order
  // (gpu/cpu_attention.cpp), so the batch a token is decoded in, and how the team's tasks fall, change no bit:
  // an engine's batch of 8 and a recompute's batch of 1 give the same token (docs/design.md §10).
  const auto w = generate_weights(find_model("tiny"), 12);
  auto be = cpu_for(w);
  const auto& m = be->model();
  const std::vector<size_t> lengths{1300, 600, 2000};  // 3, 2 and 4 chunks of 512 keys
  std::vector<std::vector<int32_t>> prompts;
  std::vector<one_buffer> kvs;
  for (size_t r = 0; r < lengths.size(); ++r) {
    prompts.push_back(random_tokens(lengths[r], m.vocab, 90 + r));
    kvs.push_back(prefill_one_buffer(*be, prompts.back()));
  }
  auto step = [&](compute_backend& b, const std::vector<size_t>& which) {
    std::vector<std::vector<float>> logits(which.size());
    std::vector<std::vector<std::byte>> fresh(which.size(),
                                              std::vector<std::byte>(m.layers * m.kv_bytes_per_token_layer));
    std::vector<decode_item> items;
    for (size_t i = 0; i < which.size(); ++i) {
      const one_buffer& kv = kvs[which[i]];
      const uint32_t keys = uint32_t(lengths[which[i]]);
      std::vector<std::vector<kv_span>> spans;
      for (uint32_t l = 0; l < m.layers; ++l) spans.push_back({kv_span{kv.layers[l].data(), keys}});
      items.push_back(decode_over(std::move(spans), kv.next, keys, fresh[i].data(), &logits[i]));
    }
    b.decode_step(items);
    return logits;
  };
  const auto together = step(*be, {0, 1, 2});
  const char* cap = std::getenv("DUALPATH_CPU_THREADS");  // kept for the tests after this one
  const std::string kept = cap ? cap : "";
  setenv("DUALPATH_CPU_THREADS", "1", 1);
  auto one_thread = cpu_for(w);
  if (cap) setenv("DUALPATH_CPU_THREADS", kept.c_str(), 1);
  else unsetenv("DUALPATH_CPU_THREADS");
  for (size_t r = 0; r < lengths.size(); ++r) {
    CAPTURE(r);
    REQUIRE(together[r].size() == m.vocab);
    CHECK(step(*be, {r})[0] == together[r]);
    CHECK(step(*one_thread, {r})[0] == together[r]);
  }
}

TEST_CASE("a prefill over cached KV gives the same bits whichever way the cache is cut into spans") {
  // A prefill engine reads hits as Layer Blocks (pages) where another pass may have them in one buffer. Both
  // kinds of new-token count: one token (the decode kernels) and twenty (the prefill tiles).
  const auto w = generate_weights(find_model("tiny"), 6);
  auto be = cpu_for(w);
  const auto& m = be->model();
  const uint64_t bytes = m.kv_bytes_per_token_layer;
  const auto context = random_tokens(150, m.vocab, 91);
  auto kv = prefill_one_buffer(*be, context);
  const auto& cuts = span_cuts;
  for (const size_t fresh : {size_t(1), size_t(20)}) {
    CAPTURE(fresh);
    const auto more = random_tokens(fresh, m.vocab, 92);
    std::vector<std::vector<float>> logits(cuts.size());
    for (size_t c = 0; c < cuts.size(); ++c) {
      prefill_item item;
      item.cached = uint32_t(context.size());
      item.tokens = more;
      item.emit_token = true;
      item.logits = &logits[c];
      std::vector<std::byte> out(fresh * bytes);
      auto pass = be->begin_prefill({item});
      for (uint32_t l = 0; l < m.layers; ++l)
        pass->run_layer(l, {cut_into_spans(kv.layers[l], cuts[c], bytes)}, {out.data()});
      pass->finish();
    }
    for (size_t c = 1; c < cuts.size(); ++c) {
      CAPTURE(c);
      CHECK(logits[c] == logits[0]);
    }
  }
}
