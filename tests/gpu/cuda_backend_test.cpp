// The cuda backend against the cpu backend and against itself (layer-wise vs full, chunked vs whole, batched vs
// alone, host vs device KV). Each scenario runs twice: on a real GPU where there is one (skipped elsewhere, and
// doctest reports it), and always on the same sources built over the SIMT emulator (emulated_cuda.cpp).
#include <doctest/doctest.h>

#include <functional>

#include "core/status.hpp"
#include "emulated_cuda.hpp"
#include "gpu/cpu_backend.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/model_loader.hpp"
#include "kv_pages.hpp"

#ifdef DUALPATH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace testkv;

namespace {

const bool have_gpu = cuda_available();

// bf16 GEMM inputs on the GPU vs fp32 on the cpu: logits agree to about 1e-2; the greedy token is compared
// only where the cpu's top two logits are further apart than that noise.
constexpr double cross_tol = 2e-2;

bool confident(const std::vector<float>& logits) {
  std::vector<float> v = logits;
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  double mx = 0;
  for (float f : logits) mx = std::max(mx, double(std::abs(f)));
  return v[0] - v[1] > 3 * cross_tol * mx;
}

using backend_factory = std::unique_ptr<compute_backend> (*)(dense_model, int);

std::unique_ptr<compute_backend> cpu_for(const model_weights& w) {
  return make_backend({backend_kind::cpu, w.spec.name, "h800", 0.4, 0});
}

void matches_cpu(backend_factory make, const std::vector<const char*>& models, uint32_t prompt_len) {
  for (const char* name : models) {
    CAPTURE(name);
    const auto w = generate_weights(find_model(name), 0);
    auto gpu = make(make_dense_model(w), 0);
    auto cpu = cpu_for(w);
    const auto prompt = random_tokens(prompt_len, w.spec.vocab, 8);
    paged_kv kg(w.spec), kc(w.spec);
    request rg{&kg, 0, prompt}, rc{&kc, 0, prompt};
    const auto tg = prefill(*gpu, {&rg});
    const auto tc = prefill(*cpu, {&rc});
    CHECK(rel_error(rg.logits, rc.logits) < cross_tol);
    if (confident(rc.logits)) CHECK(tg == tc);
    // Decode over host-resident paged KV.
    std::vector<std::vector<float>> lg, lc;
    const auto dg = decode(*gpu, {&kg}, {tc[0]}, {prompt_len}, &lg);
    const auto dc = decode(*cpu, {&kc}, {tc[0]}, {prompt_len}, &lc);
    CHECK(rel_error(lg[0], lc[0]) < cross_tol);
    if (confident(lc[0])) CHECK(dg == dc);
  }
}

void layerwise_equals_full(backend_factory make) {
  const auto w = generate_weights(find_model("tiny"), 3);
  auto be = make(make_dense_model(w), 0);
  paged_kv kv(w.spec);
  std::vector<int32_t> context;
  for (int turn = 0; turn < 4; ++turn) {
    CAPTURE(turn);
    const auto user = random_tokens(20 + 37 * turn, w.spec.vocab, 100 + turn);
    request layerwise{&kv, uint32_t(context.size()), user};
    const int32_t first = prefill(*be, {&layerwise})[0];
    context.insert(context.end(), user.begin(), user.end());
    paged_kv scratch(w.spec);
    request full{&scratch, 0, context};
    const int32_t expect = prefill(*be, {&full})[0];
    CHECK(rel_error(layerwise.logits, full.logits) < 1e-2);
    if (confident(full.logits)) CHECK(first == expect);
    int32_t tok = first;
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<float>> dl;
      const int32_t next = decode(*be, {&kv}, {tok}, {uint32_t(context.size())}, &dl)[0];
      context.push_back(tok);
      paged_kv again(w.spec);
      request check{&again, 0, context};
      const int32_t want = prefill(*be, {&check})[0];
      CHECK(rel_error(dl[0], check.logits) < 1e-2);
      if (confident(check.logits)) CHECK(next == want);
      tok = next;
    }
  }
}

void chunks_and_batches(backend_factory make) {
  const auto w = generate_weights(find_model("tiny"), 4);
  auto be = make(make_dense_model(w), 0);
  const auto prompt = random_tokens(200, w.spec.vocab, 77);
  paged_kv whole(w.spec), chunked(w.spec);
  request one{&whole, 0, prompt};
  prefill(*be, {&one});
  request a{&chunked, 0, std::vector<int32_t>(prompt.begin(), prompt.begin() + 90)};
  a.emit = false;
  request b{&chunked, 90, std::vector<int32_t>(prompt.begin() + 90, prompt.end())};
  std::vector<request*> both{&a};
  CHECK(prefill(*be, both)[0] == -1);
  prefill(*be, {&b});
  CHECK(rel_error(b.logits, one.logits) < 1e-2);

  // A batch of three different requests equals each alone.
  std::vector<paged_kv> kb, ka;
  std::vector<request> rb, ra;
  for (uint32_t r = 0; r < 3; ++r) {
    kb.emplace_back(w.spec);
    ka.emplace_back(w.spec);
  }
  for (uint32_t r = 0; r < 3; ++r) {
    const auto p = random_tokens(10 + 45 * r, w.spec.vocab, 900 + r);
    rb.push_back({&kb[r], 0, p});
    ra.push_back({&ka[r], 0, p});
  }
  prefill(*be, {&rb[0], &rb[1], &rb[2]});
  for (uint32_t r = 0; r < 3; ++r) {
    prefill(*be, {&ra[r]});
    CHECK(rel_error(rb[r].logits, ra[r].logits) < 1e-2);
  }
}

// Copies host KV somewhere a backend reads it and keeps it alive until the placer is destroyed.
using kv_placer = std::function<const std::byte*(compute_backend& be, const std::byte* host, size_t bytes)>;

// `copy(be, host, bytes)` makes each copy (a shared_ptr that frees it); the placer keeps them all.
template <class Copy>
kv_placer keeping(Copy copy) {
  auto kept = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  return [copy, kept](compute_backend& be, const std::byte* host, size_t bytes) {
    kept->push_back(copy(be, host, bytes));
    return static_cast<const std::byte*>(kept->back().get());
  };
}

kv_placer placer_of(const device_memory& dev) {
  return keeping([dev](compute_backend&, const std::byte* host, size_t bytes) {
    return std::shared_ptr<const void>(dev.upload(host, bytes), dev.release);
  });
}

// The backend's own resident_copy: device memory for cuda, a host copy elsewhere.
kv_placer resident_placer() {
  return keeping([](compute_backend& be, const std::byte* host, size_t bytes) {
    return std::shared_ptr<const void>(be.resident_copy(host, bytes));
  });
}

// Layer Blocks copied into device memory are read in place and give what the same blocks give from the host.
void device_resident_equals_host(backend_factory make, const kv_placer& place) {
  const auto w = generate_weights(find_model("tiny"), 5);
  auto be = make(make_dense_model(w), 0);
  const auto& m = w.spec;
  const auto prompt = random_tokens(70, m.vocab, 3);
  paged_kv host(m);
  request first{&host, 0, std::vector<int32_t>(prompt.begin(), prompt.begin() + 50)};
  prefill(*be, {&first});
  // Copy the 50 cached tokens of every layer into device memory, one Layer Block span per block.
  std::vector<std::vector<kv_span>> dev_spans(m.layers);
  for (uint32_t l = 0; l < m.layers; ++l)
    for (const auto& s : host.spans(l, 50))
      dev_spans[l].push_back({place(*be, s.data, s.tokens * m.kv_bytes_per_token_layer), s.tokens});
  const std::vector<int32_t> rest(prompt.begin() + 50, prompt.end());
  std::vector<float> from_dev, from_host;
  std::vector<std::byte> out(rest.size() * m.kv_bytes_per_token_layer);
  auto p1 = be->begin_prefill({prefill_item{1, 50, rest, true, &from_dev}});
  for (uint32_t l = 0; l < m.layers; ++l) p1->run_layer(l, {dev_spans[l]}, {out.data()});
  const auto t1 = p1->finish();
  auto p2 = be->begin_prefill({prefill_item{1, 50, rest, true, &from_host}});
  for (uint32_t l = 0; l < m.layers; ++l) p2->run_layer(l, {host.spans(l, 50)}, {out.data()});
  const auto t2 = p2->finish();
  CHECK(t1 == t2);
  CHECK(from_dev == from_host);
}

}  // namespace

TEST_CASE("cuda backend reports itself unavailable cleanly without a GPU" * doctest::skip(have_gpu)) {
  MESSAGE("no GPU: " << cuda_unavailable_reason());
  CHECK_FALSE(cuda_unavailable_reason().empty());
  CHECK_THROWS_AS(make_backend({backend_kind::cuda, "tiny"}), user_error);
}

TEST_CASE("cuda backend matches the cpu backend (tiny and small)" * doctest::skip(!have_gpu)) {
  matches_cpu(make_cuda_backend, {"tiny", "small"}, 300);
}
TEST_CASE("emulated cuda backend matches the cpu backend (tiny and small)") {
  matches_cpu(make_emulated_cuda_backend, {"tiny", "small"}, 100);
}

TEST_CASE("cuda layer-wise prefill over cached KV equals its full prefill over turns" * doctest::skip(!have_gpu)) {
  layerwise_equals_full(make_cuda_backend);
}
TEST_CASE("emulated cuda layer-wise prefill over cached KV equals its full prefill over turns") {
  layerwise_equals_full(make_emulated_cuda_backend);
}

TEST_CASE("cuda chunked prefill and batches equal the whole and the single runs" * doctest::skip(!have_gpu)) {
  chunks_and_batches(make_cuda_backend);
}
TEST_CASE("emulated cuda chunked prefill and batches equal the whole and the single runs") {
  chunks_and_batches(make_emulated_cuda_backend);
}

TEST_CASE("cuda backend reads device-resident Layer Blocks in place" * doctest::skip(!have_gpu)) {
#ifdef DUALPATH_HAVE_CUDA
  device_memory real{[](const void* host, size_t bytes) -> void* {
                       void* d = nullptr;
                       REQUIRE(cudaMalloc(&d, bytes) == cudaSuccess);
                       REQUIRE(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
                       return d;
                     },
                     [](void* d) { cudaFree(d); }};
  device_resident_equals_host(make_cuda_backend, placer_of(real));
#endif
}
TEST_CASE("emulated cuda backend reads device-resident Layer Blocks in place") {
  device_resident_equals_host(make_emulated_cuda_backend, placer_of(emulated_device_memory()));
}

TEST_CASE("cuda resident_copy places KV the backend reads in place" * doctest::skip(!have_gpu)) {
  device_resident_equals_host(make_cuda_backend, resident_placer());
}
TEST_CASE("emulated cuda and cpu resident_copy place KV the backend reads in place") {
  device_resident_equals_host(make_emulated_cuda_backend, resident_placer());
  device_resident_equals_host([](dense_model d, int) { return make_cpu_backend(std::move(d)); }, resident_placer());
}
