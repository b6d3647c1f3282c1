#include "bench/compute_bench.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "core/cost_model.hpp"
#include "core/huge_pages.hpp"
#include "core/status.hpp"
#include "gpu/backend.hpp"
#include "gpu/bf16.hpp"
#include "gpu/cpu_team.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/linear_shapes.hpp"

// OpenBLAS's pthread build stops its worker threads with this (its own fork handler does); exported, though not
// in cblas.h. Weak, so a BLAS without it links and runs (its threads then idle as that BLAS makes them).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace dualpath::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Decode steps timed in each round of the decode bench.
constexpr uint32_t decode_steps_per_round = 5;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// sgemm over the linear layers of one transformer layer at M = rows (QKV, O, gate+up, down).
class sgemm_probe {
 public:
  sgemm_probe(const model_spec& m, uint32_t rows) : rows_(rows), shapes_(gpu::layer_linear_shapes(m)) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (const auto& s : shapes_) {
      x_.emplace_back(rows * s.in);
      w_.emplace_back(s.out * s.in);
      y_.emplace_back(rows * s.out);
      for (auto& v : x_.back()) v = u(rng);
      for (auto& v : w_.back()) v = u(rng);
      flops_ += 2.0 * rows * s.in * s.out;
    }
  }
  double gflop_per_s() {  // one timed round over every shape, with OpenBLAS's own threads on every core
    const int saved = openblas_get_num_threads();
    openblas_set_num_threads(int(gpu::usable_cores()));
    const auto t0 = clock_type::now();
    uint32_t rounds = 0;
    do {  // at least 0.1 s: one round at small shapes is too short to time on a shared machine
      for (size_t i = 0; i < shapes_.size(); ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows_), int(shapes_[i].out), int(shapes_[i].in), 1.0f,
                    x_[i].data(), int(shapes_[i].in), w_[i].data(), int(shapes_[i].in), 0.0f, y_[i].data(),
                    int(shapes_[i].out));
      ++rounds;
    } while (since(t0) < 0.1);
    const double seconds = since(t0);
    openblas_set_num_threads(saved);
    // OpenBLAS's workers keep polling (sched_yield) for a while after a threaded call, and the backend timed next
    // runs on the same cores: with them polling, a decode step took 6.5 ms instead of 2.8 in 4 of 6 runs, a prefill
    // 20.8 ms instead of 10.4 in one, and the bandwidth probe read 33-40 GB/s instead of 50+ in 4 of 10. Stopped
    // here, they start again at the next probe's first threaded call.
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    return flops_ * rounds / seconds / 1e9;
  }

 private:
  uint32_t rows_;
  std::array<gpu::linear_shape, 4> shapes_;
  std::vector<std::vector<float>> x_, w_, y_;
  double flops_ = 0;
};

// Read bandwidth of this machine's memory with every core reading its share of a buffer far larger than
// the caches: the roof of a memory-bound decode step.
class bandwidth_probe {
 public:
  explicit bandwidth_probe(uint64_t bytes) : data_(bytes / sizeof(float), 1.0f) {}
  double gb_per_s() {
    std::vector<float> sums(team_.size());
    const auto t0 = clock_type::now();
    team_.split(data_.size(), [&](size_t b, size_t e, unsigned member) {
      float acc = 0;
      for (size_t i = b; i < e; i += 16) acc += data_[i];  // one load per cache line: the lines, not the adds
      sums[member] = acc;
    });
    const double seconds = since(t0);
    if (sums[0] < 0) throw std::logic_error("bandwidth probe: impossible sum");  // keeps the loads
    return double(data_.size() * sizeof(float)) / seconds / 1e9;
  }

 private:
  gpu::cpu_team team_;
  // On huge pages, as the weights and the resident KV it is the yardstick for: on 4 KB pages it read 2-9% less
  // (docs/experiments.md), which flattered the decode ratio.
  std::vector<float, huge_page_allocator<float>> data_;
};

}  // namespace

compute_bench_result run_compute_bench(const compute_bench_options& o) {
  if (o.append == 0) throw user_error("bench compute: --append must be at least 1");
  if (o.decode_batch == 0) throw user_error("bench compute: --decode-batch must be at least 1");
  if (o.repeats == 0) throw user_error("bench compute: --repeats must be at least 1");
  gpu::backend_options bo;
  bo.kind = value_or_throw(parse_backend_kind(o.backend));
  bo.model = o.model;
  bo.gpu_profile = o.gpu_profile;
  bo.mfu = o.mfu;
  bo.seed = o.seed;
  auto be = gpu::make_backend(bo);
  const model_spec& m = be->model();
  const uint64_t bpt = m.kv_bytes_per_token_layer, total = uint64_t(o.context) + o.append;

  // KV of the context for every layer: random bf16 values of unit scale (timing does not depend on them).
  // The modeled backend never reads KV, so all layers share one buffer there (big models stay cheap).
  const bool modeled = be->kind() == backend_kind::modeled;
  std::vector<std::vector<std::byte>> kv(modeled ? 1 : m.layers, std::vector<std::byte>(total * bpt));
  std::mt19937 rng(uint32_t(o.seed));
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& layer : kv)
    for (uint64_t i = 0; !modeled && i + 1 < layer.size(); i += 2) {
      const uint16_t h = gpu::float_to_bf16(u(rng));
      std::memcpy(&layer[i], &h, 2);
    }
  // Every pass reads its KV where the backend keeps it (device memory for cuda) and writes new KV there too, as
  // an engine does in its HBM: the bench times the kernels, not a host-to-device upload per layer.
  std::vector<std::shared_ptr<std::byte>> resident;
  for (auto& layer : kv)  // modeled never reads KV: its one buffer needs no second copy
    resident.push_back(modeled ? std::shared_ptr<std::byte>(layer.data(), [](std::byte*) {})
                               : be->resident_copy(layer.data(), layer.size()));
  auto layer_kv = [&](uint32_t l) { return resident[modeled ? 0 : l].get(); };
  std::vector<int32_t> tokens(o.append);
  for (auto& t : tokens) t = int32_t(rng() % m.vocab);

  const std::vector<std::byte> zeros(std::max<uint64_t>(o.append, uint64_t(o.decode_batch) * m.layers) * bpt);
  auto new_kv = be->resident_copy(zeros.data(), uint64_t(o.append) * bpt);
  auto prefill_once = [&] {
    auto pass = be->begin_prefill({gpu::prefill_item{1, o.context, tokens, true}});
    for (uint32_t l = 0; l < m.layers; ++l)
      pass->run_layer(l, {{gpu::kv_span{layer_kv(l), o.context}}}, {new_kv.get()});
    pass->finish();
  };
  auto dec_out = be->resident_copy(zeros.data(), uint64_t(o.decode_batch) * m.layers * bpt);
  // Each decode request reads KV of its own, as in a server (one copy shared by all would stay in cache and
  // flatter the memory-bound step); copies of the prefill's KV, since values do not change the timing. A decode
  // engine holds a request's KV in pages, one per Full Block of block_tokens tokens and every layer, wherever
  // its arena had room (docs/design.md §10), so a request's keys for a layer come as one span per page, pages
  // in no particular order: here each request's pages sit in a shuffled order in one buffer.
  const uint64_t page_tokens = m.block_tokens ? m.block_tokens : total, pages = (total + page_tokens - 1) / page_tokens,
                 page_bytes = page_tokens * m.layers * bpt;
  std::vector<std::shared_ptr<std::byte>> dec_kv;
  std::vector<std::vector<uint64_t>> slot(o.decode_batch);  // request r's page p sits at slot[r][p]
  for (uint32_t r = 0; !modeled && r < o.decode_batch; ++r) {
    slot[r].resize(pages);
    std::iota(slot[r].begin(), slot[r].end(), uint64_t(0));
    std::shuffle(slot[r].begin(), slot[r].end(), rng);
    std::vector<std::byte> host(pages * page_bytes);
    for (uint64_t p = 0; p < pages; ++p)
      for (uint32_t l = 0; l < m.layers; ++l) {
        const uint64_t rows = std::min(page_tokens, total - p * page_tokens);
        std::memcpy(&host[slot[r][p] * page_bytes + l * page_tokens * bpt], &kv[l][p * page_tokens * bpt], rows * bpt);
      }
    dec_kv.push_back(be->resident_copy(host.data(), host.size()));
  }
  auto request_kv = [&](uint32_t r, uint32_t l) {
    std::vector<gpu::kv_span> spans;
    if (modeled) return std::vector<gpu::kv_span>{{layer_kv(l), uint32_t(total)}};
    for (uint64_t p = 0; p < pages; ++p)
      spans.push_back({dec_kv[r].get() + slot[r][p] * page_bytes + l * page_tokens * bpt,
                       uint32_t(std::min(page_tokens, total - p * page_tokens))});
    return spans;
  };
  // The step's requests, built once: an engine keeps each request's page list from step to step.
  std::vector<gpu::decode_item> items(o.decode_batch);
  for (uint32_t r = 0; r < o.decode_batch; ++r) {
    items[r].request_id = r;
    items[r].token = tokens[r % tokens.size()];
    items[r].position = uint32_t(total);
    for (uint32_t l = 0; l < m.layers; ++l) items[r].kv.push_back(request_kv(r, l));
    items[r].new_kv = dec_out.get() + uint64_t(r) * m.layers * bpt;
  }
  auto decode_once = [&] { be->decode_step(items); };

  compute_bench_result res;
  res.backend = to_string(be->kind());
  res.model = m.name;
  res.context = o.context;
  res.append = o.append;
  res.decode_batch = o.decode_batch;
  // The roofs of the machine the backend runs on: sgemm and a memory sweep for cpu, cuBLAS and a device copy
  // for cuda; none for modeled, whose times are the cost model's.
  std::function<double()> gemm_roof, memory_roof;
  std::unique_ptr<sgemm_probe> probe;
  std::unique_ptr<bandwidth_probe> memory;
  std::unique_ptr<gpu::cuda_yardsticks> device;
  if (be->kind() == backend_kind::cpu) {
    probe = std::make_unique<sgemm_probe>(m, o.append);
    memory = std::make_unique<bandwidth_probe>(uint64_t(1) << 30);
    gemm_roof = [&] { return probe->gflop_per_s(); };
    memory_roof = [&] { return memory->gb_per_s(); };
  } else if (be->kind() == backend_kind::cuda) {
    device = std::make_unique<gpu::cuda_yardsticks>(m, o.append, 0);
    gemm_roof = [&] { return device->gemm_gflop_per_s(); };
    memory_roof = [&] { return device->copy_gb_per_s(); };
  }
  prefill_once();  // warm-up (page in weights, start threads)
  if (gemm_roof) gemm_roof(), memory_roof();
  // Each part alternates with its yardstick and the ratio is taken per round, so that load from elsewhere
  // on the machine hits both sides of a ratio alike.
  const double flops = prefill_flops(m, o.context, o.append);
  std::vector<double> pt, dt, sg, bw, prefill_ratio, decode_ratio;
  for (uint32_t r = 0; r < o.repeats; ++r) {
    const auto t0 = clock_type::now();
    prefill_once();
    pt.push_back(since(t0));
    if (!gemm_roof) continue;
    sg.push_back(gemm_roof());
    prefill_ratio.push_back(flops / pt.back() / 1e9 / sg.back());
  }
  // A decode step reads every weight once, as the backend holds them, and the KV of every request.
  res.decode_kv_bytes = double(o.decode_batch) * total * bpt * m.layers;
  const double weight_bytes = double(be->decode_weight_bytes());
  res.decode_bytes = weight_bytes + res.decode_kv_bytes;
  res.decode_linear_flops = 2.0 * m.active_params * o.decode_batch;
  res.decode_attention_flops = double(o.decode_batch) * attention_flops_per_token(m, total);
  const double gemm_gflop_per_s = median(sg);
  // The step's seconds at bandwidth `gb_per_s` if it only read its bytes, and its roofline seconds: each part
  // bound by its bytes or its FLOPs. The roofline is at least the bytes' time; the max keeps that so in floating
  // point too (the parts' sum may round an ulp below the whole's quotient), so every round's roofline ratio is at
  // least its bandwidth ratio.
  auto bytes_s = [&](double gb_per_s) { return res.decode_bytes / (gb_per_s * 1e9); };
  auto roof_s = [&](double gb_per_s) {
    const double bw = gb_per_s * 1e9, gemm = gemm_gflop_per_s * 1e9;
    return std::max(bytes_s(gb_per_s), std::max(res.decode_kv_bytes / bw, res.decode_attention_flops / gemm) +
                                           std::max(weight_bytes / bw, res.decode_linear_flops / gemm));
  };
  std::vector<double> roof_ratio;
  decode_once();
  const auto parts_before = be->parts();
  double timed_s = 0;  // every timed step's seconds, for the parts' means
  for (uint32_t r = 0; r < o.repeats; ++r) {
    // Steps back to back, as an engine runs them, and their median: the first after the probe's sweep of 1 GB
    // finds the team asleep and the caches holding the probe's lines (docs/experiments.md, `bench compute`).
    std::vector<double> steps;
    for (uint32_t i = 0; i < decode_steps_per_round; ++i) {
      const auto t0 = clock_type::now();
      decode_once();
      steps.push_back(since(t0));
      timed_s += steps.back();
    }
    dt.push_back(median(steps));
    if (!memory_roof) continue;
    bw.push_back(memory_roof());
    decode_ratio.push_back(bytes_s(bw.back()) / dt.back());
    if (gemm_gflop_per_s > 0) roof_ratio.push_back(roof_s(bw.back()) / dt.back());
  }
  // Where a step's time goes, as the backend counts it: means over the timed steps (the probe rounds between
  // them are not counted).
  const auto parts_after = be->parts();
  const double timed_steps = double(o.repeats) * decode_steps_per_round;
  res.decode_linear_s = (parts_after.linear_s - parts_before.linear_s) / timed_steps;
  res.decode_attention_s = (parts_after.attention_s - parts_before.attention_s) / timed_steps;
  if (res.decode_linear_s > 0 || res.decode_attention_s > 0)
    res.decode_other_s = std::max(0.0, timed_s / timed_steps - res.decode_linear_s - res.decode_attention_s);
  res.prefill_s = median(pt);
  res.prefill_tokens_per_s = o.append / res.prefill_s;
  res.gflop_per_s = flops / res.prefill_s / 1e9;
  res.decode_step_s = median(dt);
  res.decode_tokens_per_s = o.decode_batch / res.decode_step_s;
  res.sgemm_gflop_per_s = median(sg);
  res.prefill_vs_sgemm = median(prefill_ratio);
  res.memory_gb_per_s = median(bw);
  res.decode_vs_bandwidth = median(decode_ratio);
  res.decode_vs_roof = median(roof_ratio);
  const auto fit = be->fit();
  res.fit_gflop_per_s = fit.seconds_per_flop > 0 ? 1e-9 / fit.seconds_per_flop : 0;
  return res;
}

std::string compute_bench_result::to_json() const {
  nlohmann::json j = {{"backend", backend},
                      {"model", model},
                      {"context", context},
                      {"append", append},
                      {"decode_batch", decode_batch},
                      {"prefill_s", prefill_s},
                      {"prefill_tokens_per_s", prefill_tokens_per_s},
                      {"gflop_per_s", gflop_per_s},
                      {"decode_step_s", decode_step_s},
                      {"decode_tokens_per_s", decode_tokens_per_s},
                      {"sgemm_gflop_per_s", sgemm_gflop_per_s},
                      {"prefill_vs_sgemm", prefill_vs_sgemm},
                      {"decode_bytes", decode_bytes},
                      {"decode_kv_bytes", decode_kv_bytes},
                      {"memory_gb_per_s", memory_gb_per_s},
                      {"decode_vs_bandwidth", decode_vs_bandwidth},
                      {"decode_linear_flops", decode_linear_flops},
                      {"decode_attention_flops", decode_attention_flops},
                      {"decode_vs_roof", decode_vs_roof},
                      {"decode_linear_s", decode_linear_s},
                      {"decode_attention_s", decode_attention_s},
                      {"decode_other_s", decode_other_s},
                      {"fit_gflop_per_s", fit_gflop_per_s}};
  return j.dump(2) + "\n";
}

std::string compute_bench_result::to_text() const {
  std::string out = fmt::format("backend {}  model {}  context {}  append {}\n", backend, model, context, append);
  out += fmt::format("prefill   {:10.1f} tokens/s  {:8.3f} s/pass  {:8.1f} GFLOP/s (model FLOPs)\n",
                     prefill_tokens_per_s, prefill_s, gflop_per_s);
  out += fmt::format("decode    {:10.1f} tokens/s  {:8.4f} s/step (batch {})\n", decode_tokens_per_s, decode_step_s,
                     decode_batch);
  if (decode_linear_s > 0 || decode_attention_s > 0)
    out +=
        fmt::format("          {:10.2f} ms attention  {:6.2f} ms linear layers  {:6.2f} ms the rest (a step's means)\n",
                    decode_attention_s * 1e3, decode_linear_s * 1e3, decode_other_s * 1e3);
  const bool gpu = backend == "cuda";
  if (sgemm_gflop_per_s > 0)
    out +=
        fmt::format("{}{:10.1f} GFLOP/s on the model's linear shapes  (prefill = {:.2f}x {})\n",
                    gpu ? "cublas    " : "sgemm     ", sgemm_gflop_per_s, prefill_vs_sgemm, gpu ? "cuBLAS" : "sgemm");
  if (memory_gb_per_s > 0)
    out += fmt::format("memory    {:10.1f} GB/s {}  (decode reads {:.0f} MB a step: {:.2f}x the bandwidth)\n",
                       memory_gb_per_s, gpu ? "device copy" : "read", decode_bytes / 1e6, decode_vs_bandwidth);
  if (decode_vs_roof > 0)
    out += fmt::format("roofline  {:10.2f}x  (decode step against its parts' roofs: bytes/bandwidth or FLOPs/{})\n",
                       decode_vs_roof, gpu ? "cuBLAS" : "sgemm");
  out += fmt::format("fit       {:10.1f} GFLOP/s marginal (the batcher's FLOPs->time curve)\n", fit_gflop_per_s);
  return out;
}

}  // namespace dualpath::bench
