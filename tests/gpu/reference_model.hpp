#pragma once
// A plain, obviously correct Llama/Qwen2 forward pass: one token at a time, double accumulation, no batching,
// no caching tricks. The only deliberate detail shared with the backends is that K and V are rounded to bf16,
// because that is how the model stores its KV.
#include <cmath>
#include <vector>

#include "gpu/bf16.hpp"
#include "gpu/model_weights.hpp"

namespace reference {

using dualpath::gpu::layer_tensor;
using dualpath::gpu::model_weights;

// y = W x (+ b), W is [out][in]
inline std::vector<double> matvec(const std::vector<float>& W, const std::vector<double>& x, size_t out,
                                  const std::vector<float>* b = nullptr) {
  const size_t in = x.size();
  std::vector<double> y(out);
  for (size_t o = 0; o < out; ++o) {
    double s = b ? (*b)[o] : 0.0;
    for (size_t i = 0; i < in; ++i) s += double(W[o * in + i]) * x[i];
    y[o] = s;
  }
  return y;
}

inline std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

// Rotate-half RoPE on each head of `v` at `pos`.
inline void rope(std::vector<double>& v, size_t heads, size_t hd, size_t pos, double theta) {
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < hd / 2; ++i) {
      const double angle = double(pos) / std::pow(theta, 2.0 * double(i) / double(hd));
      const double a = v[h * hd + i], b = v[h * hd + i + hd / 2];
      v[h * hd + i] = a * std::cos(angle) - b * std::sin(angle);
      v[h * hd + i + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
    }
}

struct result {
  std::vector<float> logits;                          // of the last position
  std::vector<std::vector<std::vector<float>>> k, v;  // [layer][position][kv_heads*head_dim], bf16-rounded
};

inline result forward(const model_weights& w, const std::vector<int32_t>& tokens) {
  const auto& m = w.spec;
  const size_t H = m.hidden, hd = m.head_dim, nh = m.heads, nkv = m.kv_heads, I = m.intermediate, T = tokens.size();
  std::vector<std::vector<double>> x(T, std::vector<double>(H));
  const auto& emb = w.get("model.embed_tokens.weight");
  for (size_t t = 0; t < T; ++t)
    for (size_t i = 0; i < H; ++i) x[t][i] = emb[size_t(tokens[t]) * H + i];
  result res;
  for (uint32_t l = 0; l < m.layers; ++l) {
    auto L = [&](const char* s) -> const std::vector<float>& { return w.get(layer_tensor(l, s)); };
    const std::vector<float>* bq = m.qkv_bias ? &L("self_attn.q_proj.bias") : nullptr;
    const std::vector<float>* bk = m.qkv_bias ? &L("self_attn.k_proj.bias") : nullptr;
    const std::vector<float>* bv = m.qkv_bias ? &L("self_attn.v_proj.bias") : nullptr;
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (size_t t = 0; t < T; ++t) {
      const auto xn = rmsnorm(x[t], L("input_layernorm.weight"), m.rms_eps);
      q[t] = matvec(L("self_attn.q_proj.weight"), xn, nh * hd, bq);
      k[t] = matvec(L("self_attn.k_proj.weight"), xn, nkv * hd, bk);
      v[t] = matvec(L("self_attn.v_proj.weight"), xn, nkv * hd, bv);
      rope(q[t], nh, hd, t, m.rope_theta);
      rope(k[t], nkv, hd, t, m.rope_theta);
      for (auto& e : k[t]) e = dualpath::gpu::round_bf16(float(e));
      for (auto& e : v[t]) e = dualpath::gpu::round_bf16(float(e));
    }
    res.k.emplace_back();
    res.v.emplace_back();
    for (size_t t = 0; t < T; ++t) {
      res.k.back().emplace_back(k[t].begin(), k[t].end());
      res.v.back().emplace_back(v[t].begin(), v[t].end());
    }
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> attn(nh * hd, 0.0);
      for (size_t h = 0; h < nh; ++h) {
        const size_t g = h / (nh / nkv);
        std::vector<double> score(t + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          double s = 0;
          for (size_t i = 0; i < hd; ++i) s += q[t][h * hd + i] * k[j][g * hd + i];
          score[j] = s / std::sqrt(double(hd));
          mx = std::max(mx, score[j]);
        }
        double sum = 0;
        for (auto& s : score) sum += (s = std::exp(s - mx));
        for (size_t j = 0; j <= t; ++j)
          for (size_t i = 0; i < hd; ++i) attn[h * hd + i] += score[j] / sum * v[j][g * hd + i];
      }
      const auto o = matvec(L("self_attn.o_proj.weight"), attn, H);
      for (size_t i = 0; i < H; ++i) x[t][i] += o[i];
      const auto xn = rmsnorm(x[t], L("post_attention_layernorm.weight"), m.rms_eps);
      const auto gate = matvec(L("mlp.gate_proj.weight"), xn, I);
      const auto up = matvec(L("mlp.up_proj.weight"), xn, I);
      std::vector<double> act(I);
      for (size_t i = 0; i < I; ++i) act[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      const auto down = matvec(L("mlp.down_proj.weight"), act, H);
      for (size_t i = 0; i < H; ++i) x[t][i] += down[i];
    }
  }
  const auto xn = rmsnorm(x[T - 1], w.get("model.norm.weight"), m.rms_eps);
  const auto logits = matvec(w.get("lm_head.weight"), xn, m.vocab);
  res.logits.assign(logits.begin(), logits.end());
  return res;
}

}  // namespace reference
