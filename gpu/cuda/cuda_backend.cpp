// The cuda backend: the cpu backend's layer-wise prefill and decode on one GPU. Weights and GEMM inputs are
// bf16 (cuBLAS, fp32 accumulation), the residual stream fp32, KV bf16. KV spans may live in host or device
// memory: device spans are read in place through a per-token row table (paged), host spans are uploaded.
#ifndef DUALPATH_SIMT_EMULATION  // tests build this file over a SIMT emulator that supplies both (tests/gpu/)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/status.hpp"
#include "gpu/batched_pass.hpp"
#include "gpu/bf16.hpp"
#include "gpu/cuda/check.hpp"
#include "gpu/cuda/kernels.cuh"
#include "gpu/cuda_backend.hpp"

namespace dualpath::gpu {

namespace {

using cuda_status::check;
#define CK(x) check((x), #x)

// A grow-only device buffer.
template <typename T>
class dbuf {
 public:
  dbuf() = default;
  dbuf(const dbuf&) = delete;
  dbuf& operator=(const dbuf&) = delete;
  ~dbuf() {
    if (p_) cudaFree(p_);
  }
  T* get(uint64_t n) {
    if (n > cap_) {
      if (p_) CK(cudaFree(p_));
      p_ = nullptr;
      CK(cudaMalloc(&p_, std::max<uint64_t>(n, 1) * sizeof(T)));
      cap_ = n;
    }
    return p_;
  }
  T* data() const { return p_; }

 private:
  T* p_ = nullptr;
  uint64_t cap_ = 0;
};

template <typename T>
void upload(dbuf<T>& d, const std::vector<T>& h, cudaStream_t s) {
  CK(cudaMemcpyAsync(d.get(h.size()), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}

void upload_bf16(dbuf<uint16_t>& d, const std::vector<float>& h, cudaStream_t s) {
  std::vector<uint16_t> b(h.size());
  for (size_t i = 0; i < h.size(); ++i) b[i] = float_to_bf16(h[i]);
  upload(d, b, s);
  CK(cudaStreamSynchronize(s));  // `b` dies here
}

struct device_layer {
  dbuf<float> attn_norm, bqkv, mlp_norm;
  dbuf<uint16_t> wqkv, wo, wgu, wdown;
};

struct device_model {
  model_spec spec;
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  dbuf<uint16_t> embed, lm_head;
  dbuf<float> final_norm;
  std::vector<std::unique_ptr<device_layer>> layers;

  ~device_model() {
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
  }

  // y[rows, out] (fp32) = x[rows, in] (bf16) · w[out, in]^T (bf16) + beta·y
  void gemm(const uint16_t* x, const uint16_t* w, float* y, uint32_t rows, uint32_t in, uint32_t out, float beta) {
    if (!rows) return;
    const float alpha = 1.0f;
    CK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, int(out), int(rows), int(in), &alpha, w, CUDA_R_16BF, int(in), x,
                    CUDA_R_16BF, int(in), &beta, y, CUDA_R_32F, int(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
};

// Scratch shared by every pass of a backend (one pass at a time).
struct workspace {
  dbuf<int32_t> tokens;
  dbuf<uint32_t> pos, emit_rows;
  dbuf<float> x, qkv, attn, gu, last, logits, partial;
  dbuf<uint16_t> xn, kvnew, act, staging;
  dbuf<const uint16_t*> key_table;
  dbuf<cuda::kv_run> runs;
  dbuf<cuda::attn_item> items;
};

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear: plain host memory on old runtimes
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

class cuda_batch {
 public:
  cuda_batch(device_model& dm, workspace& ws, std::vector<prefill_item> items)
      : dm_(dm), ws_(ws), m_(dm.spec), items_(std::move(items)) {
    std::vector<int32_t> tokens;
    std::vector<uint32_t> pos;
    for (const auto& it : items_) {
      row0_.push_back(rows_);
      for (size_t i = 0; i < it.tokens.size(); ++i) {
        if (it.tokens[i] < 0 || uint32_t(it.tokens[i]) >= m_.vocab)
          throw std::invalid_argument(fmt::format("request {}: token {} outside the vocabulary (0..{})", it.request_id,
                                                  it.tokens[i], m_.vocab - 1));
        tokens.push_back(it.tokens[i]);
        pos.push_back(uint32_t(it.cached + i));
      }
      rows_ += uint32_t(it.tokens.size());
      max_new_ = std::max<uint32_t>(max_new_, uint32_t(it.tokens.size()));
      max_splits_ = std::max(max_splits_, cuda::decode_splits(uint32_t(it.cached + it.tokens.size())));
      all_single_ = all_single_ && it.tokens.size() == 1;
    }
    if (!rows_) return;
    const uint32_t H = m_.hidden;
    upload(ws_.tokens, tokens, dm_.stream);
    upload(ws_.pos, pos, dm_.stream);
    cuda::embed(dm_.embed.data(), ws_.tokens.data(), ws_.x.get(uint64_t(rows_) * H), rows_, H, dm_.stream);
    CK(cudaStreamSynchronize(dm_.stream));  // the host vectors above die here
  }

  const std::vector<prefill_item>& items() const { return items_; }

  void layer(uint32_t l, const std::vector<const std::vector<kv_span>*>& cached,
             const std::vector<std::byte*>& new_kv) {
    if (!rows_) return;
    const device_layer& L = *dm_.layers.at(l);
    const uint32_t H = m_.hidden, hd = m_.head_dim, Q = m_.heads * hd, KV = m_.kv_heads * hd, W = Q + 2 * KV,
                   I = m_.intermediate;
    const uint64_t bpt = m_.kv_bytes_per_token_layer;
    cudaStream_t s = dm_.stream;
    float* x = ws_.x.data();
    uint16_t* xn = ws_.xn.get(uint64_t(rows_) * std::max({H, Q, I}));
    float* qkv = ws_.qkv.get(uint64_t(rows_) * W);
    uint16_t* kvnew = ws_.kvnew.get(uint64_t(rows_) * 2 * KV);

    // Key table: per request, one pointer per token to its KV row (cached spans, then the new tokens).
    uint64_t host_bytes = 0;
    resident_.clear();
    for (size_t r = 0; r < items_.size(); ++r) {
      if (span_tokens(*cached[r]) != items_[r].cached)
        throw std::invalid_argument(fmt::format("request {} layer {}: cached spans cover {} tokens, expected {}",
                                                items_[r].request_id, l, span_tokens(*cached[r]), items_[r].cached));
      for (const auto& sp : *cached[r]) {
        resident_.push_back(on_device(sp.data));
        if (!resident_.back()) host_bytes += sp.tokens * bpt;
      }
    }
    auto* staging = reinterpret_cast<std::byte*>(ws_.staging.get(host_bytes / 2 + 1));
    runs_.clear();
    attn_items_.clear();
    uint64_t staged = 0;
    uint32_t keys = 0;
    size_t span = 0;
    bool aligned = bpt % 16 == 0 && hd % 8 == 0;  // every key row starts on 16 bytes: vector loads
    auto add_run = [&](const void* base, uint32_t tokens) {
      runs_.push_back({static_cast<const uint16_t*>(base), tokens, keys});
      aligned = aligned && reinterpret_cast<uintptr_t>(base) % 16 == 0;
      keys += tokens;
    };
    for (size_t r = 0; r < items_.size(); ++r) {
      const auto& it = items_[r];
      attn_items_.push_back({row0_[r], uint32_t(it.tokens.size()), it.cached, keys});
      for (const auto& sp : *cached[r]) {
        const std::byte* base = sp.data;
        if (!resident_[span++]) {
          CK(cudaMemcpyAsync(staging + staged, sp.data, sp.tokens * bpt, cudaMemcpyHostToDevice, s));
          base = staging + staged;
          staged += sp.tokens * bpt;
        }
        if (sp.tokens) add_run(base, sp.tokens);
      }
      if (!it.tokens.empty()) add_run(kvnew + uint64_t(row0_[r]) * 2 * KV, uint32_t(it.tokens.size()));
    }
    // The key table (a pointer per key, paged attention's view) is expanded on the GPU from one run per span:
    // a long context is thousands of keys but a few dozen spans to send.
    upload(ws_.runs, runs_, s);
    cuda::expand_key_table(ws_.runs.data(), uint32_t(runs_.size()), ws_.key_table.get(std::max(keys, 1u)),
                           uint32_t(bpt / 2), s);
    upload(ws_.items, attn_items_, s);

    cuda::rmsnorm_bf16(x, L.attn_norm.data(), xn, rows_, H, float(m_.rms_eps), s);
    dm_.gemm(xn, L.wqkv.data(), qkv, rows_, H, W, 0.0f);
    cuda::bias_rope_store(qkv, L.bqkv.data(), ws_.pos.data(), kvnew, rows_, m_.heads, m_.kv_heads, hd, m_.rope_theta,
                          s);
    float* attn = ws_.attn.get(uint64_t(rows_) * Q);
    if (all_single_) {
      const uint32_t splits = max_splits_;
      float* partial = splits > 1
                           ? ws_.partial.get(cuda::decode_partial_floats(uint32_t(items_.size()), m_.heads, hd, splits))
                           : nullptr;
      cuda::decode_attention(qkv, ws_.key_table.data(), ws_.items.data(), uint32_t(items_.size()), splits, partial,
                             attn, m_.heads, m_.kv_heads, hd, aligned, true, s);
    } else
      cuda::prefill_attention(qkv, ws_.key_table.data(), ws_.items.data(), uint32_t(items_.size()), max_new_, attn,
                              m_.heads, m_.kv_heads, hd, aligned, s);
    CK(cudaGetLastError());
    cuda::to_bf16(attn, xn, uint64_t(rows_) * Q, s);
    dm_.gemm(xn, L.wo.data(), x, rows_, Q, H, 1.0f);  // residual: x += attn · Wo^T
    cuda::rmsnorm_bf16(x, L.mlp_norm.data(), xn, rows_, H, float(m_.rms_eps), s);
    float* gu = ws_.gu.get(uint64_t(rows_) * 2 * I);
    dm_.gemm(xn, L.wgu.data(), gu, rows_, H, 2 * I, 0.0f);
    uint16_t* act = ws_.act.get(uint64_t(rows_) * I);
    cuda::silu_mul_bf16(gu, act, rows_, I, s);
    dm_.gemm(act, L.wdown.data(), x, rows_, I, H, 1.0f);

    for (size_t r = 0; r < items_.size(); ++r)
      if (!items_[r].tokens.empty())
        CK(cudaMemcpyAsync(new_kv[r], kvnew + uint64_t(row0_[r]) * 2 * KV, items_[r].tokens.size() * bpt,
                           cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));  // new KV is in place when the layer returns; host tables may be reused
    CK(cudaGetLastError());
  }

  std::vector<int32_t> finish() {
    std::vector<int32_t> out(items_.size(), -1);
    std::vector<uint32_t> emit_rows;
    std::vector<size_t> emit;
    for (size_t r = 0; r < items_.size(); ++r)
      if (items_[r].emit_token && !items_[r].tokens.empty()) {
        emit.push_back(r);
        emit_rows.push_back(uint32_t(row0_[r] + items_[r].tokens.size() - 1));
      }
    if (emit.empty()) return out;
    const uint32_t H = m_.hidden, V = m_.vocab, E = uint32_t(emit.size());
    cudaStream_t s = dm_.stream;
    upload(ws_.emit_rows, emit_rows, s);
    float* last = ws_.last.get(uint64_t(E) * H);
    cuda::gather_rows(ws_.x.data(), ws_.emit_rows.data(), last, E, H, s);
    uint16_t* normed = ws_.xn.get(uint64_t(std::max(rows_, E)) * H);
    cuda::rmsnorm_bf16(last, dm_.final_norm.data(), normed, E, H, float(m_.rms_eps), s);
    float* logits = ws_.logits.get(uint64_t(E) * V);
    dm_.gemm(normed, dm_.lm_head.data(), logits, E, H, V, 0.0f);
    std::vector<float> host(uint64_t(E) * V);
    CK(cudaMemcpyAsync(host.data(), logits, host.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (size_t e = 0; e < emit.size(); ++e) {
      const float* lg = &host[e * V];
      const auto& item = items_[emit[e]];
      out[emit[e]] = pick_token(lg, V, item.sample, item.next_position());
      if (auto* dst = items_[emit[e]].logits) dst->assign(lg, lg + V);
    }
    return out;
  }

 private:
  device_model& dm_;
  workspace& ws_;
  const model_spec& m_;
  std::vector<prefill_item> items_;
  std::vector<uint32_t> row0_;
  uint32_t rows_ = 0, max_new_ = 0, max_splits_ = 0;  // max_splits_: over the items, for decode
  bool all_single_ = true;
  std::vector<bool> resident_;  // per cached span of the layer: already in device memory
  std::vector<cuda::kv_run> runs_;
  std::vector<cuda::attn_item> attn_items_;
};

class cuda_backend : public compute_backend {
 public:
  cuda_backend(const dense_model& d, int device) {
    dm_.spec = d.spec;
    dm_.device = device;
    CK(cudaSetDevice(device));
    CK(cudaStreamCreateWithFlags(&dm_.stream, cudaStreamNonBlocking));
    check(cublasCreate(&dm_.blas), "cublasCreate");
    check(cublasSetStream(dm_.blas, dm_.stream), "cublasSetStream");
    check(cublasSetMathMode(dm_.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    upload_bf16(dm_.embed, d.embed, dm_.stream);
    upload_bf16(dm_.lm_head, d.lm_head, dm_.stream);
    upload(dm_.final_norm, d.final_norm, dm_.stream);
    for (const auto& L : d.layers) {
      auto dl = std::make_unique<device_layer>();
      upload(dl->attn_norm, L.attn_norm, dm_.stream);
      upload(dl->bqkv, L.bqkv, dm_.stream);
      upload(dl->mlp_norm, L.mlp_norm, dm_.stream);
      upload_bf16(dl->wqkv, L.wqkv, dm_.stream);
      upload_bf16(dl->wo, L.wo, dm_.stream);
      upload_bf16(dl->wgu, L.wgu, dm_.stream);
      upload_bf16(dl->wdown, L.wdown, dm_.stream);
      dm_.layers.push_back(std::move(dl));
    }
    CK(cudaStreamSynchronize(dm_.stream));
#ifndef DUALPATH_SIMT_EMULATION  // an emulator's timing means nothing, and the large calibration pass is slow there
    fit_ = calibrate();          // milliseconds on a GPU; done now so no pass can ever share the workspace with it
#endif
  }

  const model_spec& model() const override { return dm_.spec; }
  backend_kind kind() const override { return cuda_backend_kind; }

  std::unique_ptr<prefill_pass> begin_prefill(std::vector<prefill_item> items) override {
    CK(cudaSetDevice(dm_.device));
    return std::make_unique<batched_pass<cuda_batch>>(dm_.spec.layers, dm_, ws_, std::move(items));
  }

  std::vector<int32_t> decode_step(std::vector<decode_item>& items) override {
    CK(cudaSetDevice(dm_.device));
    return decode_as_prefill<cuda_batch>(dm_.spec, items, dm_, ws_);
  }

  flops_fit fit() const override { return fit_; }
  uint64_t decode_weight_bytes() const override { return linear_weight_count(dm_.spec) * sizeof(uint16_t); }

  std::shared_ptr<std::byte> resident_copy(const std::byte* host, uint64_t bytes) const override {
    CK(cudaSetDevice(dm_.device));
    std::byte* d = nullptr;
    CK(cudaMalloc(&d, std::max<uint64_t>(bytes, 1)));
    std::shared_ptr<std::byte> copy(d, [](std::byte* p) { cudaFree(p); });
    if (bytes) CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return copy;
  }

 private:
  // Warm-up with the big pass: loads the kernels and sizes the workspace. A pass of a GPU is mostly its fixed
  // cost below a few thousand tokens (64 and 1,024 tokens took the same time on an H200), so the two passes
  // are far apart and each the fastest of three.
  flops_fit calibrate() { return fit_prefill_time<cuda_batch>(dm_.spec, 256, 4096, 4096, 3, 1e-18, dm_, ws_); }

  device_model dm_;
  workspace ws_;
  flops_fit fit_;
};

}  // namespace

bool cuda_available() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  return n == 0 ? "no CUDA device visible" : "";
}

std::unique_ptr<compute_backend> make_cuda_backend(dense_model model, int device) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n) {
    cudaGetLastError();
    throw user_error(fmt::format("cuda backend: device {} not present ({} visible)", device, n));
  }
  if (model.spec.head_dim > 256) throw user_error("cuda backend: head_dim above 256 is not supported");
  return std::make_unique<cuda_backend>(model, device);
}

}  // namespace dualpath::gpu
