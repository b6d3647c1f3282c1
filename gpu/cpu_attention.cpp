#include "gpu/cpu_attention.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "gpu/cpu_bf16_rows.hpp"
#include "gpu/cpu_kernels.hpp"
#include "gpu/cpu_tile.hpp"

namespace dualpath::gpu {

namespace {

constexpr uint64_t query_tile = 128;  // query rows per attention task
constexpr uint64_t key_block = 512;   // keys per score block: 128 rows x 2 heads x 512 floats = 512 KiB of L2
// Up to this many new tokens (decode) attention reads the bf16 KV in place instead of gathering it to fp32
// for sgemm: each key is used by only a few queries, so the gather would cost more than the math.
constexpr uint64_t direct_max_queries = 2;
// Keys per block of that direct attention: 64 rows of KV stay in L2 between the key and the value sweep.
constexpr uint64_t direct_block = 64;
// A decode-sized request's keys are cut into at most this many chunks of at least chunk_min_keys (whole blocks),
// each with a softmax of its own, merged in order at the end: so a step of fewer requests than threads still
// gives every thread whole KV rows to stream. The cut depends on the request's keys alone, never on the batch or
// the team, so a token decoded in a batch of any size on any number of threads has the same bits.
constexpr uint64_t max_chunks = 16, chunk_min_keys = 512;

uint64_t chunk_keys(uint64_t keys) {
  const uint64_t even = (keys + max_chunks - 1) / max_chunks;
  return std::max(chunk_min_keys, (even + direct_block - 1) / direct_block * direct_block);
}
// Prefill attention of fewer multiply-adds than this runs on the calling thread alone (waking the team costs
// more). Decode attention streams its KV and is sized by bytes instead (cpu_team.hpp).
constexpr uint64_t min_work_parallel = 1 << 21;

void scaled_row(const float* in, float scale, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) out[i] = in[i] * scale;
}

}  // namespace

cpu_attention::cpu_attention(const model_spec& m, cpu_team& team)
    : m_(m),
      team_(team),
      scratch_(team.size()),
      tile_kernels_(cpu::tile_kernels_usable(m.head_dim)),
      ask_split_(cpu::bf16_ask_split(m.head_dim)) {}

void cpu_attention::run(const float* qkv, float* attn, const std::vector<attention_request>& requests) {
  // Decode-sized requests, all in one run: their chunks (chunk_keys) in request order, cut into runs of whole
  // chunks of about equal keys, a run a task, two a thread so that a slow thread is helped (four, each stream
  // restarting more often, took 3-5% longer at one and three requests; one a thread the same as two). A task
  // reads whole KV rows, one after another (the prefetcher's best case: at 8 requests and 4K tokens 0.65-0.67 of
  // the bandwidth, against 0.50 reading two heads' slices of each row and 0.40 one head's). Before the chunks, a
  // step of fewer requests than threads split its last requests by KV heads: one request at 4.6K tokens took
  // 1.75x as long as now, three 1.24x (docs/experiments.md).
  small_.clear();
  chunks_.clear();
  uint64_t small_keys = 0;
  for (const auto& r : requests) {
    if (r.n == 0 || r.n > direct_max_queries) continue;
    const uint64_t keys = r.cached + r.n, step = chunk_keys(keys);
    small_.push_back({&r, chunks_.size(), 0, false});
    for (uint64_t k0 = 0; k0 < keys; k0 += step) chunks_.push_back({small_.size() - 1, k0, std::min(keys, k0 + step)});
    small_.back().chunks = chunks_.size() - small_.back().first;
    small_keys += keys;
  }
  if (!small_.empty()) {
    const uint64_t rows_all = uint64_t(m_.heads) * direct_max_queries;
    part_o_.resize(chunks_.size() * rows_all * m_.head_dim);
    part_max_.resize(chunks_.size() * rows_all);
    part_sum_.resize(chunks_.size() * rows_all);
    const uint64_t small_bytes = small_keys * m_.kv_bytes_per_token_layer;  // KV read
    const bool parallel = small_bytes >= min_stream_bytes_per_thread * team_.size();
    const uint64_t runs = parallel ? std::min<uint64_t>(chunks_.size(), 2 * team_.size()) : 1;
    std::vector<size_t> cut{0};  // run t: chunks [cut[t], cut[t + 1])
    uint64_t seen = 0;
    for (size_t c = 0; c < chunks_.size(); ++c) {
      if (cut.size() < runs && seen * runs >= cut.size() * small_keys) cut.push_back(c);
      seen += chunks_[c].k1 - chunks_[c].k0;
    }
    cut.push_back(chunks_.size());
    for (size_t t = 1; t + 1 < cut.size(); ++t) {  // a cut inside a request's chunks: merged after the runs
      small_request& q = small_[chunks_[cut[t]].request];
      if (cut[t] != q.first) q.split = true;
    }
    team_.run(
        cut.size() - 1, [&](size_t t, unsigned member) { direct(qkv, attn, cut[t], cut[t + 1], scratch_[member]); },
        parallel);
    for (const auto& q : small_)
      if (q.split) merge(q, attn);
  }
  // The others one at a time (their fp32 K and V may be large): gather, then (KV head, tile) tasks, the
  // longest tiles (latest queries, most keys) first.
  for (const auto& r : requests) {
    if (r.n <= direct_max_queries) continue;
    const bool parallel = 2 * r.n * (r.cached + r.n) * m_.heads * m_.head_dim >= min_work_parallel;
    gather(r, parallel);
    const uint64_t tiles = (r.n + query_tile - 1) / query_tile;
    team_.run(
        tiles * m_.kv_heads,
        [&](size_t t, unsigned member) {
          const uint64_t tile_index = tiles - 1 - t / m_.kv_heads;
          tile(qkv, attn, r, uint32_t(t % m_.kv_heads), tile_index * query_tile, scratch_[member]);
        },
        parallel);
  }
}

void cpu_attention::gather(const attention_request& r, bool parallel) {
  const uint64_t hd = m_.head_dim, KV = uint64_t(m_.kv_heads) * hd, ctx = r.cached + r.n,
                 bpt = m_.kv_bytes_per_token_layer, G = cpu::tile_keys;
  key_stride_ = (ctx + G - 1) / G * G;  // whole key groups per KV head
  kf_.resize(KV * key_stride_);
  vf_.resize(ctx * KV);
  // The keys past ctx are zero: each head's last key group is cleared and the gather below writes its keys
  // over it (in either layout that group is the head's last G·hd floats). Clearing the whole buffer was a
  // serial pass over every key of every layer before the parallel gather wrote them all again.
  for (uint32_t g = 0; g < m_.kv_heads; ++g) std::fill_n(&kf_[(g * key_stride_ + key_stride_ - G) * hd], G * hd, 0.0f);
  std::vector<const std::byte*> rows;  // token t's KV row
  rows.reserve(ctx);
  for (const auto& s : r.spans)
    for (uint32_t i = 0; i < s.tokens; ++i) rows.push_back(s.data + uint64_t(i) * bpt);
  const uint32_t heads = m_.kv_heads;
  team_.split(
      rows.size(),
      [&](size_t b, size_t e, unsigned) {
        for (size_t t = b; t < e; ++t) {
          const auto* src = reinterpret_cast<const uint16_t*>(rows[t]);
          for (uint32_t g = 0; g < heads; ++g) {
            const uint16_t* k = src + g * hd;
            if (tile_kernels_) {  // key groups of [dimension][key] (cpu_tile.hpp)
              float* kg = &kf_[(g * key_stride_ + t / G * G) * hd + t % G];
              for (uint64_t d = 0; d < hd; ++d) {
                const uint32_t u = uint32_t(k[d]) << 16;
                std::memcpy(kg + d * G, &u, 4);
              }
            } else {
              cpu::bf16_to_f32(k, &kf_[(g * key_stride_ + t) * hd], hd);
            }
            cpu::bf16_to_f32(src + KV + g * hd, &vf_[(g * ctx + t) * hd], hd);
          }
        }
      },
      parallel ? 1 : rows.size());
}

// Query rows [t0, t0 + nt) of KV head g's group over the keys they may see, a key block at a time so the
// scores stay in this core's cache: S = scale·Q·Kᵀ, online causal softmax, O = O·rescale + S·V, and O / sum
// at the end. The two products run the tile kernels (AVX-512 or AVX2) where they are usable (rows padded to their
// row group, keys to their key group), else sgemm.
void cpu_attention::tile(const float* qkv, float* attn, const attention_request& r, uint32_t g, uint64_t t0,
                         scratch& w) const {
  const uint64_t hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd, W = Q + 2 * KV,
                 group = m_.heads / m_.kv_heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  const uint64_t nt = std::min<uint64_t>(query_tile, r.n - t0), keys = r.cached + t0 + nt, rq = group * nt;
  const uint64_t rows = tile_kernels_ ? (rq + cpu::tile_rows - 1) / cpu::tile_rows * cpu::tile_rows : rq,
                 s_stride = tile_kernels_ ? std::min(key_stride_, key_block) : std::min(keys, key_block);
  w.q.assign(rows * hd, 0.0f);
  w.o.assign(rows * hd, 0.0f);
  w.s.resize(rows * s_stride);
  w.valid.resize(rq);
  w.block_valid.resize(rq);
  w.max.assign(rq, -INFINITY);
  w.sum.assign(rq, 0.0f);
  w.rescale.resize(rq);
  for (uint64_t hh = 0; hh < group; ++hh)
    for (uint64_t i = 0; i < nt; ++i) {
      // The scale multiplies each dot product, as the decode path's does, not the query before it.
      std::memcpy(&w.q[(hh * nt + i) * hd], &qkv[(r.row0 + t0 + i) * W + (g * group + hh) * hd], hd * sizeof(float));
      w.valid[hh * nt + i] = uint32_t(r.cached + t0 + i + 1);
    }
  for (uint64_t k0 = 0; k0 < keys; k0 += key_block) {
    const uint64_t kb = std::min(key_block, keys - k0);
    for (uint64_t row = 0; row < rq; ++row) w.block_valid[row] = w.valid[row] > k0 ? uint32_t(w.valid[row] - k0) : 0;
    // Columns of this block's scores: kb, or kb rounded up to the kernels' key group (the padding is
    // beyond every row's valid keys, so the softmax zeroes it).
    const uint64_t cols = tile_kernels_ ? (kb + cpu::tile_keys - 1) / cpu::tile_keys * cpu::tile_keys : kb;
    const float* k = &kf_[(g * key_stride_ + k0) * hd];  // the block's keys and values, head g's
    const float* v = &vf_[(g * (r.cached + r.n) + k0) * hd];
    if (tile_kernels_) cpu::tile_scores(w.q.data(), rows, uint32_t(hd), k, cols, scale, w.s.data(), cols);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rq), int(kb), int(hd), scale, w.q.data(), int(hd), k,
                  int(hd), 0.0f, w.s.data(), int(kb));
    cpu::online_exp(w.s.data(), rq, cols, w.block_valid.data(), w.max.data(), w.sum.data(), w.rescale.data());
    if (k0 > 0)
      for (uint64_t row = 0; row < rq; ++row)
        if (w.rescale[row] != 1.0f) scaled_row(&w.o[row * hd], w.rescale[row], hd, &w.o[row * hd]);
    if (tile_kernels_) cpu::tile_values(w.s.data(), cols, rows, kb, v, hd, uint32_t(hd), w.o.data());
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rq), int(hd), int(kb), 1.0f, w.s.data(), int(kb), v,
                  int(hd), k0 > 0 ? 1.0f : 0.0f, w.o.data(), int(hd));
  }
  for (uint64_t hh = 0; hh < group; ++hh)
    for (uint64_t i = 0; i < nt; ++i) {
      const uint64_t row = hh * nt + i;
      scaled_row(&w.o[row * hd], 1.0f / w.sum[row], hd, &attn[(r.row0 + t0 + i) * Q + (g * group + hh) * hd]);
    }
}

// Chunks [c0, c1) of the decode-sized requests, every KV head, straight over the bf16 spans, a block of keys at a
// time through an online softmax: a block's keys, then at once its values, so each KV row is read in one sweep
// (reading every key before any value made the hardware prefetcher fetch each row twice). Each chunk's softmax
// starts afresh and ends unnormalized in the partials, for merge().
void cpu_attention::direct(const float* qkv, float* attn, size_t c0, size_t c1, scratch& w) {
  const uint64_t hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, KV = uint64_t(m_.kv_heads) * hd, W = Q + 2 * KV,
                 group = m_.heads / m_.kv_heads, bpt = m_.kv_bytes_per_token_layer,
                 rows_all = uint64_t(m_.heads) * direct_max_queries;
  const uint32_t heads = m_.kv_heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  // Blocks of direct_block keys by their position in the request, whichever spans hold them: a block's
  // scores come from each piece of a span it covers (at the piece's columns), then one softmax step, then the
  // values piece by piece in key order. The sums then do not depend on how the KV is cut into spans, so a
  // decode engine's KV in pages gives the bits of a recompute's KV in one span. (Blocks taken span by span
  // gave pages of 16 tokens blocks of 16: other roundings, and a sampled token of a served answer that
  // differed from its recompute, docs/design.md §10.)
  struct piece {
    const std::byte* rows;
    uint32_t tokens, column;
    cpu::rows_ahead ahead;  // the rows rows_ahead_keys keys on, asked for while this piece is read
  };
  std::array<piece, direct_block> pieces;  // a block covers at most one piece per key
  for (size_t c = c0; c < c1;) {
    const size_t index = chunks_[c].request;
    const attention_request& r = *small_[index].r;
    const uint64_t n = r.n, rq = group * n, all = heads * rq;
    w.s.resize(all * direct_block);
    w.valid.resize(all);
    w.block_valid.resize(all);
    w.rescale.resize(all);
    w.max.resize(all);
    w.sum.resize(all);
    w.o.resize(all * hd);
    w.q.resize(all * hd);
    // Query rows packed [KV head][head in group, token]; row validity is causal over the new tokens.
    for (uint64_t i = 0; i < all; ++i) {
      std::memcpy(&w.q[i * hd], &qkv[(r.row0 + i % n) * W + head_of(i, n) * hd], hd * sizeof(float));
      w.valid[i] = uint32_t(r.cached + i % n + 1);
    }
    // Two walks over the spans by key position: the block's own keys, and the keys rows_ahead_keys on, which go
    // on from one chunk into the next of this run. A decode engine's KV is a page per Full Block, so the next
    // block's rows are usually in another span; asking only within the span (as before) left a paged step's
    // attention with nothing asked ahead, 1.5× as long as over one buffer (docs/experiments.md).
    span_cursor here(r.spans, bpt), ahead(r.spans, bpt);
    const uint64_t run_end = chunks_[c1 - 1].request == index ? chunks_[c1 - 1].k1 : here.keys();
    for (; c < c1 && chunks_[c].request == index; ++c) {
      const uint64_t k0 = chunks_[c].k0, k1 = chunks_[c].k1;
      // The chunk's softmax runs in this thread's scratch and is copied to its partials at the end: run there,
      // the two threads wrote the maxima and sums of neighbouring chunks in one cache line at every block.
      float *o = w.o.data(), *max = w.max.data(), *sum = w.sum.data();
      std::fill_n(max, all, -INFINITY);
      std::fill_n(sum, all, 0.0f);
      std::fill_n(o, all * hd, 0.0f);
      for (uint64_t j = k0; j < k1; j += direct_block) {
        const uint32_t nb = uint32_t(std::min<uint64_t>(direct_block, k1 - j));
        size_t count = 0;
        for (uint32_t filled = 0; filled < nb;) {
          const uint64_t next_key = j + cpu::rows_ahead_keys + filled;
          const span_cursor::place at = here.at(j + filled),
                                   next = next_key < run_end ? ahead.at(next_key) : span_cursor::place{};
          const uint32_t take = std::min(nb - filled, at.rows);
          pieces[count++] = {at.row, take, filled, {next.row, next.rows}};
          filled += take;
        }
        for (size_t p = 0; p < count; ++p)
          cpu::bf16_scores(w.q.data(), heads, rq, uint32_t(hd), pieces[p].rows, pieces[p].tokens, bpt, 0, scale,
                           w.s.data(), nb, pieces[p].column, pieces[p].ahead);
        for (uint64_t i = 0; i < all; ++i) w.block_valid[i] = w.valid[i] > j ? uint32_t(w.valid[i] - j) : 0;
        // A row at a time, so that the softmax asks its share of the next block's rows as it goes.
        cpu::rows::softmax_asks asks(ask_split_, bpt, all);
        for (size_t p = 0; p < count; ++p) asks.add(pieces[p].ahead, pieces[p].tokens);
        for (uint64_t i = 0; i < all; ++i) {
          cpu::online_exp(w.s.data() + i * nb, 1, nb, &w.block_valid[i], max + i, sum + i, &w.rescale[i]);
          asks.row();
        }
        for (uint64_t i = 0; i < all; ++i)
          if (w.rescale[i] != 1.0f) scaled_row(&o[i * hd], w.rescale[i], hd, &o[i * hd]);
        for (size_t p = 0; p < count; ++p)
          cpu::bf16_weighted_values(w.s.data(), heads, rq, nb, pieces[p].column, pieces[p].rows, pieces[p].tokens, bpt,
                                    KV, uint32_t(hd), o, pieces[p].ahead);
      }
      std::copy_n(o, all * hd, &part_o_[c * rows_all * hd]);
      std::copy_n(max, all, &part_max_[c * rows_all]);
      std::copy_n(sum, all, &part_sum_[c * rows_all]);
    }
    // A request whose chunks are all in this run is merged here; the others once every run is done.
    if (!small_[index].split) merge(small_[index], attn);
  }
}

// One decode-sized request's chunks merged in their order: each row's largest max, each chunk's sum and values
// scaled to it, summed into the row's place in attn and normalized there. With one chunk the scale is exp(0) = 1:
// the bits of a single online softmax.
void cpu_attention::merge(const small_request& q, float* attn) const {
  const attention_request& r = *q.r;
  const uint64_t hd = m_.head_dim, Q = uint64_t(m_.heads) * hd, n = r.n, all = uint64_t(m_.heads) * n,
                 rows_all = uint64_t(m_.heads) * direct_max_queries;
  for (uint64_t i = 0; i < all; ++i) {
    float top = -INFINITY;
    for (size_t c = q.first; c < q.first + q.chunks; ++c) top = std::max(top, part_max_[c * rows_all + i]);
    float sum = 0.0f;
    float* o = &attn[(r.row0 + i % n) * Q + head_of(i, n) * hd];
    std::fill_n(o, hd, 0.0f);
    for (size_t c = q.first; c < q.first + q.chunks; ++c) {
      const float m = part_max_[c * rows_all + i];
      if (m == -INFINITY) continue;  // no key of this chunk is visible to the row
      const float f = m == top ? 1.0f : std::exp(m - top);
      sum += part_sum_[c * rows_all + i] * f;
      const float* po = &part_o_[(c * rows_all + i) * hd];
      for (uint64_t d = 0; d < hd; ++d) o[d] += po[d] * f;
    }
    scaled_row(o, 1.0f / sum, hd, o);
  }
}

// Query row i of a decode-sized request of n new tokens, packed [KV head][head in group, token]: its head.
uint64_t cpu_attention::head_of(uint64_t i, uint64_t n) const {
  const uint64_t group = m_.heads / m_.kv_heads, rq = group * n;
  return (i / rq) * group + (i % rq) / n;
}

}  // namespace dualpath::gpu
