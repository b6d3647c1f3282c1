#include "gpu/cpu_backend.hpp"
#include "gpu/batched_pass.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "gpu/cpu_kernels.hpp"

namespace dualpath::gpu {

namespace {

constexpr uint32_t query_tile = 128;  // query rows per attention tile: bounds the score matrix
// Up to this many new tokens (decode) attention reads the bf16 KV in place instead of gathering it to fp32
// for sgemm: each key is used by only a few queries, so the gather would cost more than the math.
constexpr uint64_t direct_max_queries = 2;

// y[rows, out] = x[rows, in] · w[out, in]^T + beta·y
void linear(const float* x, const float* w, float* y, uint64_t rows, uint64_t in, uint64_t out, float beta) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(out), int(in), 1.0f, x, int(in), w, int(in), beta,
              y, int(out));
}

// One batch moving through the layers: the residual stream of every new token plus scratch space.
class cpu_batch {
 public:
  cpu_batch(const dense_model& d, std::vector<prefill_item> items) : d_(d), m_(d.spec), items_(std::move(items)) {
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
    const uint64_t H = m_.hidden, hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd,
                   W = Q + 2 * KV, I = m_.intermediate;
    if (rows_ == 0) return;
    xn_.resize(rows_ * H);
    qkv_.resize(rows_ * W);
    cpu::rmsnorm(x_.data(), L.attn_norm.data(), xn_.data(), rows_, uint32_t(H), float(m_.rms_eps));
    for (uint64_t r = 0; r < rows_; ++r) std::memcpy(&qkv_[r * W], L.bqkv.data(), W * sizeof(float));
    linear(xn_.data(), L.wqkv.data(), qkv_.data(), rows_, H, W, 1.0f);
    cpu::rope(qkv_.data(), rows_, W, m_.heads, uint32_t(hd), pos_.data(), m_.rope_theta);
    cpu::rope(qkv_.data() + Q, rows_, W, m_.kv_heads, uint32_t(hd), pos_.data(), m_.rope_theta);

    attn_.assign(rows_ * Q, 0.0f);
    for (size_t r = 0; r < items_.size(); ++r) {
      const auto& it = items_[r];
      const uint64_t n = it.tokens.size(), ctx = it.cached + n;
      if (span_tokens(*cached[r]) != it.cached)
        throw std::invalid_argument(fmt::format("request {} layer {}: cached spans cover {} tokens, expected {}",
                                                it.request_id, l, span_tokens(*cached[r]), it.cached));
      // Store the new tokens' K and V (bf16, as every later reader will see them).
      for (uint64_t i = 0; i < n; ++i) {
        auto* dst = reinterpret_cast<uint16_t*>(new_kv[r] + i * m_.kv_bytes_per_token_layer);
        const float* row = &qkv_[(row0_[r] + i) * W];
        cpu::f32_to_bf16(row + Q, dst, KV);
        cpu::f32_to_bf16(row + Q + KV, dst + KV, KV);
      }
      std::vector<kv_span> spans = *cached[r];
      spans.push_back(kv_span{new_kv[r], uint32_t(n)});
      if (n <= direct_max_queries) {
        attend_direct(r, n, it.cached, ctx, spans);
        continue;
      }
      // Gather K and V into fp32 for the sgemm path.
      kf_.resize(ctx * KV);
      vf_.resize(ctx * KV);
      uint64_t t = 0;
      for (const auto& s : spans) {
        for (uint32_t i = 0; i < s.tokens; ++i, ++t) {
          const auto* src = reinterpret_cast<const uint16_t*>(s.data + uint64_t(i) * m_.kv_bytes_per_token_layer);
          cpu::bf16_to_f32(src, &kf_[t * KV], KV);
          cpu::bf16_to_f32(src + KV, &vf_[t * KV], KV);
        }
      }
      attend(r, n, it.cached, ctx);
    }
    linear(attn_.data(), L.wo.data(), x_.data(), rows_, Q, H, 1.0f);  // residual: x += attn · Wo^T

    cpu::rmsnorm(x_.data(), L.mlp_norm.data(), xn_.data(), rows_, uint32_t(H), float(m_.rms_eps));
    gu_.resize(rows_ * 2 * I);
    act_.resize(rows_ * I);
    linear(xn_.data(), L.wgu.data(), gu_.data(), rows_, H, 2 * I, 0.0f);
    cpu::silu_mul(gu_.data(), act_.data(), rows_, uint32_t(I));
    linear(act_.data(), L.wdown.data(), x_.data(), rows_, I, H, 1.0f);
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
    linear(normed.data(), d_.lm_head.data(), logits.data(), emit.size(), H, V, 0.0f);
    for (size_t e = 0; e < emit.size(); ++e) {
      const float* lg = &logits[e * V];
      const auto& item = items_[emit[e]];
      out[emit[e]] = pick_token(lg, V, item.sample, item.next_position());
      if (auto* dst = items_[emit[e]].logits) dst->assign(lg, lg + V);
    }
    return out;
  }

 private:
  // Attention of request r's n new tokens (positions cached..cached+n-1) over ctx keys, per KV-head group and
  // query tile: S = scale·Q·K^T (sgemm), causal masked softmax, O = S·V (sgemm).
  void attend(size_t r, uint64_t n, uint64_t cached, uint64_t ctx) {
    (void)ctx;
    const uint64_t hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd, W = Q + 2 * KV,
                   group = m_.heads / m_.kv_heads;
    const float scale = 1.0f / std::sqrt(float(hd));
    for (uint64_t t0 = 0; t0 < n; t0 += query_tile) {
      const uint64_t nt = std::min<uint64_t>(query_tile, n - t0), keys = cached + t0 + nt, rq = group * nt;
      qg_.resize(rq * hd);
      og_.resize(rq * hd);
      s_.resize(rq * keys);
      valid_.resize(rq);
      for (uint32_t g = 0; g < m_.kv_heads; ++g) {
        for (uint64_t hh = 0; hh < group; ++hh)
          for (uint64_t i = 0; i < nt; ++i) {
            std::memcpy(&qg_[(hh * nt + i) * hd], &qkv_[(row0_[r] + t0 + i) * W + (g * group + hh) * hd],
                        hd * sizeof(float));
            valid_[hh * nt + i] = uint32_t(cached + t0 + i + 1);
          }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rq), int(keys), int(hd), scale, qg_.data(), int(hd),
                    &kf_[g * hd], int(KV), 0.0f, s_.data(), int(keys));
        cpu::masked_softmax(s_.data(), rq, keys, valid_.data());
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rq), int(hd), int(keys), 1.0f, s_.data(), int(keys),
                    &vf_[g * hd], int(KV), 0.0f, og_.data(), int(hd));
        for (uint64_t hh = 0; hh < group; ++hh)
          for (uint64_t i = 0; i < nt; ++i)
            std::memcpy(&attn_[(row0_[r] + t0 + i) * Q + (g * group + hh) * hd], &og_[(hh * nt + i) * hd],
                        hd * sizeof(float));
      }
    }
  }

  // Attention straight over the bf16 spans: per KV head, scores for the few query rows of its group, masked
  // softmax, then the V-weighted sum; every key and value is converted once.
  void attend_direct(size_t r, uint64_t n, uint64_t cached, uint64_t ctx, const std::vector<kv_span>& spans) {
    const uint64_t hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd, W = Q + 2 * KV,
                   group = m_.heads / m_.kv_heads, rq = group * n, bpt = m_.kv_bytes_per_token_layer,
                   all = m_.kv_heads * rq;
    const float scale = 1.0f / std::sqrt(float(hd));
    s_.resize(all * ctx);
    valid_.resize(all);
    og_.assign(all * hd, 0.0f);
    qg_.resize(all * hd);
    // Query rows packed [kv head][head in group, token]; row validity is causal over the new tokens.
    for (uint32_t g = 0; g < m_.kv_heads; ++g)
      for (uint64_t row = 0; row < rq; ++row) {
        std::memcpy(&qg_[(g * rq + row) * hd], &qkv_[(row0_[r] + row % n) * W + (g * group + row / n) * hd],
                    hd * sizeof(float));
        valid_[g * rq + row] = uint32_t(cached + row % n + 1);
      }
    uint64_t j = 0;
    for (const auto& s : spans) {
      cpu::bf16_scores(qg_.data(), m_.kv_heads, rq, uint32_t(hd), s.data, s.tokens, bpt, 0, scale, s_.data(), ctx, j);
      j += s.tokens;
    }
    cpu::masked_softmax(s_.data(), all, ctx, valid_.data());
    j = 0;
    for (const auto& s : spans) {
      cpu::bf16_weighted_values(s_.data(), m_.kv_heads, rq, ctx, j, s.data, s.tokens, bpt, KV, uint32_t(hd),
                                og_.data());
      j += s.tokens;
    }
    for (uint32_t g = 0; g < m_.kv_heads; ++g)
      for (uint64_t row = 0; row < rq; ++row)
        std::memcpy(&attn_[(row0_[r] + row % n) * Q + (g * group + row / n) * hd], &og_[(g * rq + row) * hd],
                    hd * sizeof(float));
  }

  const dense_model& d_;
  const model_spec& m_;
  std::vector<prefill_item> items_;
  std::vector<uint64_t> row0_;
  std::vector<uint32_t> pos_;
  uint64_t rows_ = 0;
  std::vector<float> x_, xn_, qkv_, attn_, gu_, act_, kf_, vf_, qg_, og_, s_;
  std::vector<uint32_t> valid_;
};

class cpu_backend : public compute_backend {
 public:
  explicit cpu_backend(dense_model d) : d_(std::move(d)) {}
  const model_spec& model() const override { return d_.spec; }
  backend_kind kind() const override { return backend_kind::cpu; }

  std::unique_ptr<prefill_pass> begin_prefill(std::vector<prefill_item> items) override {
    return std::make_unique<batched_pass<cpu_batch>>(d_.spec.layers, d_, std::move(items));
  }

  std::vector<int32_t> decode_step(std::vector<decode_item>& items) override {
    return decode_as_prefill<cpu_batch>(d_.spec, items, d_);
  }

  flops_fit fit() const override {
    std::call_once(fit_once_, [this] { fit_ = calibrate(); });
    return fit_;
  }

 private:
  // Times two prefill passes of different sizes and fits seconds = fixed + flops·slope through them.
  flops_fit calibrate() const {
    // Warm-up with the small pass: pages in the weights and starts the BLAS threads.
    const flops_fit f = fit_prefill_time<cpu_batch>(d_.spec, 16, 128, 16, 1e-15, d_);
    spdlog::debug("cpu backend fit for {}: {:.1f} GFLOP/s marginal, {:.2f} ms fixed", d_.spec.name,
                  1e-9 / f.seconds_per_flop, f.fixed_s * 1e3);
    return f;
  }

  dense_model d_;
  mutable std::once_flag fit_once_;
  mutable flops_fit fit_;
};

}  // namespace

std::unique_ptr<compute_backend> make_cpu_backend(dense_model model) {
  return std::make_unique<cpu_backend>(std::move(model));
}

}  // namespace dualpath::gpu
