#include "gpu/cpu_backend.hpp"
#include "gpu/batched_pass.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "gpu/cpu_attention.hpp"
#include "gpu/cpu_kernels.hpp"
#include "gpu/cpu_gemm.hpp"
#include "gpu/cpu_team.hpp"

namespace dualpath::gpu {

namespace {

// A layer's weight matrices as the GEMM reads them (cpu_gemm.hpp); norms and biases stay in the dense_model.
struct linear_layer {
  cpu::gemm::weights wqkv, wo, wgu, wdown;
};

// What every pass of one backend shares: the weights, the team of threads and the attention's scratch.
struct cpu_context {
  const dense_model& d;
  const std::vector<linear_layer>& layers;
  const cpu::gemm::weights& lm_head;
  cpu_team& team;
  cpu_attention& attention;
  const cpu::gemm& gemm;
  // Where the linear layers' and the attention's seconds are counted (atomic: parts() may be read, and fit()'s
  // calibration run, from another thread than the engine's).
  std::atomic<double>& linear_s;
  std::atomic<double>& attention_s;
};

// Adds the seconds from its construction to its end to `to`: two clock reads a GEMM or an attention call
// (about 40 of each in a decode step of 20 ms).
class part_timer {
 public:
  explicit part_timer(std::atomic<double>& to) : to_(to), t0_(std::chrono::steady_clock::now()) {}
  ~part_timer() {  // one writer at a time (the thread running the pass): a load and a store, no lock
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    to_.store(to_.load(std::memory_order_relaxed) + dt, std::memory_order_relaxed);
  }
  part_timer(const part_timer&) = delete;
  part_timer& operator=(const part_timer&) = delete;

 private:
  std::atomic<double>& to_;
  std::chrono::steady_clock::time_point t0_;
};

// Work below these sizes stays on the calling thread: waking the team would cost more than it saves.
constexpr uint64_t min_flops_per_thread = 1 << 21;     // a GEMM's column block
constexpr uint64_t max_streaming_rows = 16;            // a decode step's: the GEMM streams its weights
constexpr uint64_t min_elements_per_thread = 1 << 15;  // a row kernel's rows × width

// y[rows, out] = x[rows, in] · w[out, in]^T + beta·y, the output columns split over the team. The GEMM's
// order of sums does not depend on the rows (cpu_gemm.hpp), so a token decoded in a batch of any size matches
// a full recompute of its context bit for bit in these layers.
void linear(const cpu_context& c, const float* x, const cpu::gemm::weights& w, float* y, uint64_t rows, float beta) {
  const part_timer timer(c.linear_s);
  // Column blocks stay multiples of 16 floats so every thread's GEMM runs whole vector tiles.
  const uint64_t blocks = (w.out + 15) / 16;
  // A decode step's few rows stream the weights: shared out by their bytes. More rows are shared by FLOPs.
  const uint64_t block_bytes = w.in * 16 * w.element_bytes();
  const uint64_t grain = rows <= max_streaming_rows ? (min_stream_bytes_per_thread + block_bytes - 1) / block_bytes
                                                    : min_flops_per_thread / (2 * rows * w.in * 16) + 1;
  c.team.split(
      blocks,
      [&](size_t b, size_t e, unsigned) {
        c.gemm.multiply(x, rows, w, b * 16, std::min<uint64_t>(w.out, e * 16), beta, y);
      },
      grain);
}

// One batch moving through the layers: the residual stream of every new token plus scratch space.
class cpu_batch {
 public:
  cpu_batch(cpu_context c, std::vector<prefill_item> items) : c_(c), d_(c.d), m_(c.d.spec), items_(std::move(items)) {
    for (const auto& it : items_) {
      row0_.push_back(rows_);
      for (size_t i = 0; i < it.tokens.size(); ++i) {
        const int32_t tok = it.tokens[i];
        if (tok < 0 || uint32_t(tok) >= m_.vocab)
          throw std::invalid_argument(
              fmt::format("request {}: token {} outside the vocabulary (0..{})", it.request_id, tok, m_.vocab - 1));
        pos_.push_back(uint32_t(it.cached + i));
      }
      rows_ += it.tokens.size();
    }
    angles_ = cpu::rope_table(pos_.data(), rows_, m_.head_dim, m_.rope_theta);
    x_.resize(rows_ * m_.hidden);
    uint64_t r = 0;
    for (const auto& it : items_)
      for (int32_t tok : it.tokens)
        std::memcpy(&x_[(r++) * m_.hidden], &d_.embed[uint64_t(tok) * m_.hidden], m_.hidden * sizeof(float));
  }

  const std::vector<prefill_item>& items() const { return items_; }

  void layer(uint32_t l, const std::vector<const std::vector<kv_span>*>& cached,
             const std::vector<std::byte*>& new_kv) {
    const dense_layer& L = d_.layers.at(l);
    const linear_layer& lw = c_.layers.at(l);
    const uint64_t H = m_.hidden, hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd,
                   W = Q + 2 * KV, I = m_.intermediate;
    if (rows_ == 0) return;
    const float eps = float(m_.rms_eps);
    const uint64_t row_grain = min_elements_per_thread / W + 1;
    xn_.resize(rows_ * H);
    qkv_.resize(rows_ * W);
    c_.team.split(
        rows_,
        [&](size_t b, size_t e, unsigned) {
          cpu::rmsnorm(&x_[b * H], L.attn_norm.data(), &xn_[b * H], e - b, uint32_t(H), eps);
          for (size_t r = b; r < e; ++r) std::memcpy(&qkv_[r * W], L.bqkv.data(), W * sizeof(float));
        },
        row_grain);
    linear(c_, xn_.data(), lw.wqkv, qkv_.data(), rows_, 1.0f);
    c_.team.split(
        rows_,
        [&](size_t b, size_t e, unsigned) {
          // A row's query heads and then its key heads, side by side: one call rotates both.
          cpu::rope(&qkv_[b * W], e - b, W, m_.heads + m_.kv_heads, angles_, b);
        },
        row_grain);

    std::vector<attention_request> requests(items_.size());
    for (size_t r = 0; r < items_.size(); ++r) {
      const auto& it = items_[r];
      if (span_tokens(*cached[r]) != it.cached)
        throw std::invalid_argument(fmt::format("request {} layer {}: cached spans cover {} tokens, expected {}",
                                                it.request_id, l, span_tokens(*cached[r]), it.cached));
      requests[r] = {row0_[r], it.tokens.size(), it.cached, *cached[r]};
      requests[r].spans.push_back(kv_span{new_kv[r], uint32_t(it.tokens.size())});
    }
    // Store the new tokens' K and V (bf16, as every later reader will see them).
    c_.team.split(
        items_.size(),
        [&](size_t b, size_t e, unsigned) {
          for (size_t r = b; r < e; ++r)
            for (uint64_t i = 0; i < items_[r].tokens.size(); ++i) {
              auto* dst = reinterpret_cast<uint16_t*>(new_kv[r] + i * m_.kv_bytes_per_token_layer);
              const float* row = &qkv_[(row0_[r] + i) * W];
              cpu::f32_to_bf16(row + Q, dst, KV);
              cpu::f32_to_bf16(row + Q + KV, dst + KV, KV);
            }
        },
        rows_ * W < min_elements_per_thread ? items_.size() : 1);
    attn_.resize(rows_ * Q);
    {
      const part_timer timer(c_.attention_s);
      c_.attention.run(qkv_.data(), attn_.data(), requests);
    }
    linear(c_, attn_.data(), lw.wo, x_.data(), rows_, 1.0f);  // residual: x += attn · Wo^T

    gu_.resize(rows_ * 2 * I);
    act_.resize(rows_ * I);
    c_.team.split(
        rows_,
        [&](size_t b, size_t e, unsigned) {
          cpu::rmsnorm(&x_[b * H], L.mlp_norm.data(), &xn_[b * H], e - b, uint32_t(H), eps);
        },
        row_grain);
    linear(c_, xn_.data(), lw.wgu, gu_.data(), rows_, 0.0f);
    c_.team.split(
        rows_, [&](size_t b, size_t e, unsigned) { cpu::silu_mul(&gu_[b * 2 * I], &act_[b * I], e - b, uint32_t(I)); },
        row_grain);
    linear(c_, act_.data(), lw.wdown, x_.data(), rows_, 1.0f);
  }

  std::vector<int32_t> finish() {
    std::vector<int32_t> out(items_.size(), -1);
    std::vector<uint64_t> emit;
    for (size_t r = 0; r < items_.size(); ++r)
      if (items_[r].emit_token && !items_[r].tokens.empty()) emit.push_back(r);
    if (emit.empty()) return out;
    const uint64_t H = m_.hidden, V = m_.vocab;
    std::vector<float> last(emit.size() * H), normed(emit.size() * H), logits(emit.size() * V);
    for (size_t e = 0; e < emit.size(); ++e) {
      const uint64_t row = row0_[emit[e]] + items_[emit[e]].tokens.size() - 1;
      std::memcpy(&last[e * H], &x_[row * H], H * sizeof(float));
    }
    cpu::rmsnorm(last.data(), d_.final_norm.data(), normed.data(), emit.size(), uint32_t(H), float(m_.rms_eps));
    linear(c_, normed.data(), c_.lm_head, logits.data(), emit.size(), 0.0f);
    for (size_t e = 0; e < emit.size(); ++e) {
      const float* lg = &logits[e * V];
      const auto& item = items_[emit[e]];
      out[emit[e]] = pick_token(lg, V, item.sample, item.next_position());
      if (auto* dst = items_[emit[e]].logits) dst->assign(lg, lg + V);
    }
    return out;
  }

 private:
  cpu_context c_;
  const dense_model& d_;
  const model_spec& m_;
  std::vector<prefill_item> items_;
  std::vector<uint64_t> row0_;
  std::vector<uint32_t> pos_;
  cpu::rope_angles angles_;  // every row's rotary angles, for all the layers
  uint64_t rows_ = 0;
  std::vector<float> x_, xn_, qkv_, attn_, gu_, act_;
};

class cpu_backend : public compute_backend {
 public:
  explicit cpu_backend(dense_model d) : d_(std::move(d)), attention_(d_.spec, team_) {
    // The weight matrices move into the GEMM's layout (one copy of them: the dense_model's are released).
    const uint64_t H = d_.spec.hidden, Q = uint64_t(d_.spec.heads) * d_.spec.head_dim,
                   KV = uint64_t(d_.spec.kv_heads) * d_.spec.head_dim, I = d_.spec.intermediate;
    for (auto& L : d_.layers)
      layers_.push_back({gemm_.prepare(std::move(L.wqkv), Q + 2 * KV, H), gemm_.prepare(std::move(L.wo), H, Q),
                         gemm_.prepare(std::move(L.wgu), 2 * I, H), gemm_.prepare(std::move(L.wdown), H, I)});
    lm_head_ = gemm_.prepare(std::move(d_.lm_head), d_.spec.vocab, H);
    spdlog::debug(
        "cpu backend: linear layers on {}, {} MB of weights in {}",
        gemm_.lanes() ? fmt::format("the {}-lane GEMM", gemm_.lanes()) : std::string("sgemm (no AVX2 and FMA here)"),
        decode_weight_bytes() >> 20, lm_head_.bf16() ? "bf16" : "fp32");
  }
  const model_spec& model() const override { return d_.spec; }
  backend_kind kind() const override { return backend_kind::cpu; }

  std::unique_ptr<prefill_pass> begin_prefill(std::vector<prefill_item> items) override {
    return std::make_unique<batched_pass<cpu_batch>>(d_.spec.layers, context(), std::move(items));
  }

  std::vector<int32_t> decode_step(std::vector<decode_item>& items) override {
    auto c = context();
    return decode_as_prefill<cpu_batch>(d_.spec, items, c);
  }

  flops_fit fit() const override {
    std::call_once(fit_once_, [this] { fit_ = calibrate(); });
    return fit_;
  }

 private:
  // Times two prefill passes of different sizes and fits seconds = fixed + flops·slope through them.
  flops_fit calibrate() const {
    // Warm-up with the small pass: pages in the weights and starts the BLAS threads.
    auto c = context();
    const flops_fit f = fit_prefill_time<cpu_batch>(d_.spec, 16, 128, 16, 1, 1e-15, c);
    spdlog::debug("cpu backend fit for {}: {:.1f} GFLOP/s marginal, {:.2f} ms fixed", d_.spec.name,
                  1e-9 / f.seconds_per_flop, f.fixed_s * 1e3);
    return f;
  }

  cpu_context context() const { return {d_, layers_, lm_head_, team_, attention_, gemm_, linear_s_, attention_s_}; }
  part_times parts() const override { return {linear_s_.load(), attention_s_.load()}; }
  uint64_t decode_weight_bytes() const override {
    uint64_t bytes = lm_head_.bytes();
    for (const auto& l : layers_) bytes += l.wqkv.bytes() + l.wo.bytes() + l.wgu.bytes() + l.wdown.bytes();
    return bytes;
  }

  dense_model d_;
  mutable cpu_team team_;
  mutable cpu_attention attention_;
  cpu::gemm gemm_;
  std::vector<linear_layer> layers_;
  cpu::gemm::weights lm_head_;
  mutable std::atomic<double> linear_s_{0}, attention_s_{0};  // parts()
  mutable std::once_flag fit_once_;
  mutable flops_fit fit_;
};

}  // namespace

std::unique_ptr<compute_backend> make_cpu_backend(dense_model model) {
  // Every GEMM runs single-threaded inside one task of a backend's team (cpu_team.hpp); OpenBLAS's own
  // threads would only spin beside them.
  openblas_set_num_threads(1);
  return std::make_unique<cpu_backend>(std::move(model));
}

}  // namespace dualpath::gpu
