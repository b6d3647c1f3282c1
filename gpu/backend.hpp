#pragma once
// The compute interface behind the GPU actor (docs/design.md §4, §10): a prefill pass driven layer by layer over
// cached KV supplied as Layer Blocks, and decode steps over paged Layer Blocks. Three backends implement it:
// `cpu` (real math, the reference), `cuda` (same kernels on a GPU) and `modeled` (sleeps for the time the
// cost model predicts on a chosen GPU, emits deterministic KV bytes).
//
// KV layout: one token of one layer is K then V for all KV heads (`model_spec::kv_bytes_per_token_layer`
// bytes; bf16 for the cpu/cuda backends), so a Layer Block of `block_tokens` tokens is one contiguous range
// and `layers` Layer Blocks concatenated are one Full Block.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model_catalog.hpp"
#include "core/modes.hpp"
#include "gpu/sampling.hpp"

namespace dualpath::gpu {

// `tokens` tokens of ONE layer, contiguous: [tokens][kv_bytes_per_token_layer]. Host memory for cpu and
// modeled; the cuda backend accepts host or device pointers (it copies with unified addressing).
struct kv_span {
  const std::byte* data = nullptr;
  uint32_t tokens = 0;
};

// The tokens a layer's spans hold: what a backend checks against the cached length it was told.
inline uint64_t span_tokens(const std::vector<kv_span>& spans) {
  uint64_t n = 0;
  for (const auto& s : spans) n += s.tokens;
  return n;
}

// Finds keys of a request's spans by their position, moving forward only: at(pos), for positions that do not
// decrease, is where key `pos` sits (its row in its span) and how many keys follow it in that span, counting it;
// {nullptr, 0} past the last key. The decode attention walks its blocks' keys with one, and with another the rows
// of its next block, which in a decode engine's pages sit in another span (cpu_attention.cpp).
class span_cursor {
 public:
  struct place {
    const std::byte* row = nullptr;  // key pos's row
    uint32_t rows = 0;               // rows from it to the end of its span
  };
  span_cursor(const std::vector<kv_span>& spans, uint64_t bytes_per_token)
      : spans_(spans), bpt_(bytes_per_token), keys_(span_tokens(spans)) {}
  uint64_t keys() const { return keys_; }  // keys in all the spans
  place at(uint64_t pos) {
    if (pos >= keys_ || pos < pos_) return {};
    while (pos - pos_ >= spans_[span_].tokens - row_) {  // past this span (or it is empty)
      pos_ += spans_[span_].tokens - row_;
      ++span_;
      row_ = 0;
    }
    row_ += uint32_t(pos - pos_);
    pos_ = pos;
    return {spans_[span_].data + uint64_t(row_) * bpt_, spans_[span_].tokens - row_};
  }

 private:
  const std::vector<kv_span>& spans_;
  uint64_t bpt_, keys_;
  size_t span_ = 0;
  uint32_t row_ = 0;  // spans_[span_] holds key pos_ at this row
  uint64_t pos_ = 0;
};

// Layer `layer` of a Full Block laid out [layers][block_tokens][bytes] (docs/design.md §2): a contiguous span of its
// first `tokens` tokens (tokens <= block_tokens; a partly filled block keeps the same layer stride).
inline kv_span layer_block(const std::byte* full_block, const model_spec& m, uint32_t layer, uint32_t tokens) {
  return kv_span{full_block + uint64_t(layer) * m.layer_block_bytes(), tokens};
}

struct prefill_item {
  uint64_t request_id = 0;
  uint32_t cached = 0;                   // tokens whose KV is supplied per layer (hits + earlier chunks)
  std::vector<int32_t> tokens;           // new tokens computed in this pass (positions cached .. cached+size-1)
  bool emit_token = false;               // prompt complete after this chunk: produce the next token
  std::vector<float>* logits = nullptr;  // optional, emit_token only: receives the last position's logits
                                         // (cpu/cuda; left untouched by `modeled`)
  sampling sample{};                     // how the next token is picked (cpu/cuda; `modeled` makes its own)
  // The position of the token emitted: what the sampling draw depends on.
  uint64_t next_position() const { return uint64_t(cached) + tokens.size(); }
};

// One forward pass over a batch, driven layer by layer: run_layer(0), run_layer(1), ..., then finish().
// Layers must come in order; the cached KV of layer i is not read after run_layer(i) returns. A pass must not
// outlive the backend that began it; a backend runs one pass or decode step at a time (the GPU actor's loop).
class prefill_pass {
 public:
  virtual ~prefill_pass() = default;
  // cached[r]: spans covering exactly items[r].cached tokens of `layer`, in position order.
  // new_kv[r]: receives items[r].tokens.size() * kv_bytes_per_token_layer bytes: the new KV of this layer.
  virtual void run_layer(uint32_t layer, const std::vector<std::vector<kv_span>>& cached,
                         const std::vector<std::byte*>& new_kv) = 0;
  // Next token per item (-1 where !emit_token); valid after the last layer, callable once.
  virtual std::vector<int32_t> finish() = 0;
};

struct decode_item {
  uint64_t request_id = 0;
  int32_t token = 0;                     // the token to feed
  uint32_t position = 0;                 // tokens before `token` (its KV is in `kv`)
  std::vector<std::vector<kv_span>> kv;  // per layer: spans covering exactly `position` tokens
  std::byte* new_kv = nullptr;           // out: [layers][kv_bytes_per_token_layer], the KV of `token`
  std::vector<float>* logits = nullptr;  // optional out (cpu/cuda): logits of this step
  sampling sample{};                     // how the step's token is picked
};

// FLOPs -> seconds for a forward pass: seconds = fixed_s + flops * seconds_per_flop.
struct flops_fit {
  double fixed_s = 0;
  double seconds_per_flop = 0;
  double seconds(double flops) const { return fixed_s + flops * seconds_per_flop; }
  double flops_within(double seconds) const {  // inverse, for the batcher's quota
    return seconds <= fixed_s || seconds_per_flop <= 0 ? 0 : (seconds - fixed_s) / seconds_per_flop;
  }
};

// Weights of a model's linear layers and its LM head: what a decode step reads once.
uint64_t linear_weight_count(const model_spec& m);

class compute_backend {
 public:
  virtual ~compute_backend() = default;
  virtual const model_spec& model() const = 0;
  virtual backend_kind kind() const = 0;
  virtual std::unique_ptr<prefill_pass> begin_prefill(std::vector<prefill_item> items) = 0;
  virtual std::vector<int32_t> decode_step(std::vector<decode_item>& items) = 0;  // next token per item
  // FLOPs -> seconds: measured for cpu (a short calibration run on first call, then cached) and cuda (at
  // construction), given by the GPU profile and MFU for modeled. Safe to call from any thread.
  virtual flops_fit fit() const = 0;
  // A copy of `bytes` bytes of host KV in the memory this backend reads in place, as an engine's HBM holds it:
  // device memory for cuda (freed with the last handle), host memory otherwise. What a benchmark hands a
  // pass so that it times the kernels, not a host-to-device upload per layer.
  virtual std::shared_ptr<std::byte> resident_copy(const std::byte* host, uint64_t bytes) const;
  // Seconds the passes and steps run so far spent in their linear layers and in their attention (cpu backend;
  // zeros where a backend does not time its parts), so that a benchmark can say where a step's time goes.
  // Read it from the thread that runs the passes.
  struct part_times {
    double linear_s = 0, attention_s = 0;
  };
  virtual part_times parts() const { return {}; }
  // Bytes of weights a decode step streams: every linear layer and the LM head, in the format this backend holds
  // them (bf16 on cuda; bf16 or fp32 per matrix on cpu, cpu_gemm.hpp); fp32 where a backend does not say.
  virtual uint64_t decode_weight_bytes() const { return linear_weight_count(model()) * sizeof(float); }
};

struct backend_options {
  backend_kind kind = backend_kind::cpu;
  std::string model = "tiny";        // catalog name, or a model directory (config.json + safetensors; cpu/cuda)
  std::string gpu_profile = "h800";  // modeled: see gpu/gpu_profile.hpp
  double mfu = 0.4;                  // modeled: fraction of the profile's peak FLOP/s achieved
  uint64_t seed = 1;                 // catalog-name cpu/cuda: weights generated from this seed
                                     // (identical to `dualpath model init --seed` then loading the directory)
  int device = 0;                    // cuda: device ordinal
};

// Builds a backend; throws user_error naming the bad option (unknown kind, model, profile, unrunnable model,
// cuda without a GPU or without CUDA support in this build).
std::unique_ptr<compute_backend> make_backend(const backend_options& options);

// Modeled KV: deterministic bytes for (layer, position, token id) so anything downstream can verify a
// Layer Block without the model. Writes exactly bytes_per_token_layer bytes. `words`: how many 8-byte words
// are computed at once, 0 the most this CPU can (8 with AVX-512, 4 with AVX2, else 1); 4 or 1 ask for a
// narrower form (tests compare every form on one machine). Every form writes the same bytes.
void modeled_kv_fill(uint32_t layer, uint32_t position, int32_t token, std::byte* dst, uint32_t bytes_per_token_layer,
                     uint32_t words = 0);

// True when `data` holds exactly the modeled KV of `count` tokens of `layer` whose first is at `first_position`
// (token ids `tokens[0..count)`): how a receiver verifies a Layer Block of the modeled backend. `words` as above.
bool modeled_kv_matches(uint32_t layer, uint32_t first_position, const int32_t* tokens, uint32_t count,
                        const std::byte* data, uint32_t bytes_per_token_layer, uint32_t words = 0);

// Modeled next token: a deterministic function of the last token and its position.
int32_t modeled_next_token(int32_t last_token, uint32_t position, uint32_t vocab);

}  // namespace dualpath::gpu
