// Storage, DRAM slots and the prefill engines in the simulator (docs/design.md §4, §9, §17).
#include <algorithm>

#include "core/cost_model.hpp"
#include "core/roofline.hpp"
#include "sim/model.hpp"

namespace dualpath::sim {

// ---- storage NICs and DRAM buffers ----

// A SNIC is a FIFO at a fixed rate: a read submitted now completes when everything queued before it and
// its own bytes have passed. Uncapped, a read takes no simulated time (the store is not modeled).
double simulator::read(uint32_t node, uint64_t bytes) {
  auto& n = nodes_[node];
  n.read_bytes += bytes;
  if (snic_rate_ <= 0 || mode_.bypass() || bytes == 0) return now_;
  n.read_free_at = std::max(n.read_free_at, now_) + double(bytes) / snic_rate_;
  return n.read_free_at;
}

// Writes leave through the other direction of the same SNIC (full duplex): their own FIFO at the SNIC rate.
double simulator::write(uint32_t node, uint64_t bytes) {
  auto& n = nodes_[node];
  n.write_bytes += bytes;
  if (snic_rate_ <= 0 || o_.writes == write_back::free || bytes == 0) return now_;
  n.write_free_at = std::max(n.write_free_at, now_) + double(bytes) / snic_rate_;
  return n.write_free_at;
}

// Bytes committed to the node's SNIC: what is left of its FIFO at its rate, and the reads of loads still
// waiting for DRAM slots.
uint64_t simulator::read_q(uint32_t node) const {
  const auto& n = nodes_[node];
  const uint64_t queued = snic_rate_ > 0 && n.read_free_at > now_ ? uint64_t((n.read_free_at - now_) * snic_rate_) : 0;
  return queued + n.waiting_read_bytes;
}

// A load takes all its slots at once, in FIFO order per node, then its reads enter the SNIC's FIFO.
void simulator::take_slots(uint32_t node, uint32_t agent, uint32_t blocks, uint64_t read_bytes) {
  nodes_[node].slot_waiters.push_back({agent, blocks, read_bytes});
  nodes_[node].waiting_read_bytes += read_bytes;
  grant_slots(node);
}

void simulator::grant_slots(uint32_t node) {
  auto& n = nodes_[node];
  while (!n.slot_waiters.empty() && n.slot_waiters.front().blocks <= n.slots_free) {
    const auto w = n.slot_waiters.front();
    n.slot_waiters.pop_front();
    n.waiting_read_bytes -= w.read_bytes;
    n.slots_free -= w.blocks;
    agent_state& a = agents_[w.agent];
    (node == a.asg.pe_node ? a.pe_slots : a.de_slots) += w.blocks;
    events_.push(read(node, w.read_bytes), event_kind::load_done, w.agent);
  }
}

void simulator::release_slots(uint32_t node, uint32_t blocks) {
  if (!blocks) return;
  nodes_[node].slots_free += blocks;
  grant_slots(node);
}

// ---- prefill engines ----

void simulator::load_done(uint32_t id) {
  agent_state& a = agents_[id];
  if (--a.pending) return;
  a.kv_ready = now_;
  const uint64_t cached = uint64_t(a.hit) * geo_.block_tokens;
  auto& pe = pes_[a.asg.pe];
  pe.ready.push_back({id, cached, a.prompt - cached});
  if (lockstep_) try_group(pe.node);
  else try_pass(a.asg.pe);
}

// The next batch of engine `e` under the quota and within its free HBM (new KV of requests starting their
// first pass and `depth` layers of staged hit KV), as the runtime's batcher picks it; a head that does not
// fit an empty arena fails. False when nothing can run now.
bool simulator::plan_pass(uint32_t e) {
  auto& pe = pes_[e];
  while (!pe.ready.empty()) {
    const auto saved = pe.ready;
    const uint32_t depth = mode_.loading == kv_loading::layerwise ? cfg_.prefetch_layers : geo_.layers;
    auto need = [&](const std::vector<schedule::batch_entry>& batch, uint64_t& staging) {
      uint64_t fresh = 0, hit_blocks = 0;
      for (const auto& b : batch) {
        const agent_state& a = agents_[b.request];
        if (!a.new_kv)
          fresh += (a.prompt - uint64_t(a.hit) * geo_.block_tokens) * geo_.layers * geo_.bytes_per_token_layer;
        hit_blocks += a.hit;
      }
      staging = std::max<uint64_t>(1, hit_blocks * geo_.layer_bytes() * std::min(depth, geo_.layers));
      return fresh + staging;
    };
    uint64_t staging = 0;
    // As the runtime's engine: the batch stops before its new KV and staging exceed the free HBM.
    const schedule::hbm_budget budget{
        pe.hbm_free, [&](const schedule::prefill_work& w) {
          const agent_state& a = agents_[w.request];
          const uint64_t fresh =
              a.new_kv ? 0
                       : (a.prompt - uint64_t(a.hit) * geo_.block_tokens) * geo_.layers * geo_.bytes_per_token_layer;
          return fresh + std::max<uint64_t>(1, uint64_t(a.hit) * geo_.layer_bytes() * std::min(depth, geo_.layers));
        }};
    auto batch = batcher_->next_batch(pe.ready, &budget);
    if (need(batch, staging) > pe.hbm_free && batch.size() > 1) {
      pe.ready = saved;
      std::deque<schedule::prefill_work> head{pe.ready.front()};
      batch = batcher_->next_batch(head);
      if (head.empty()) pe.ready.pop_front();
      else pe.ready.front() = head.front();
    }
    if (need(batch, staging) <= pe.hbm_free) {
      for (const auto& b : batch) {
        agent_state& a = agents_[b.request];
        if (!a.new_kv) {
          a.new_kv = (a.prompt - uint64_t(a.hit) * geo_.block_tokens) * geo_.layers * geo_.bytes_per_token_layer;
          pe.hbm_free -= a.new_kv;
        }
        if (a.prefill_start < 0) a.prefill_start = now_;
      }
      pe.staging = staging;
      pe.hbm_free -= staging;
      pe.batch = std::move(batch);
      return true;
    }
    pe.ready = saved;
    bool holds = false;
    for (const auto& w : pe.ready) holds = holds || agents_[w.request].new_kv;
    if (holds || pe.hbm_free < prefill_hbm_bytes_) return false;  // waits for HBM to be freed
    const uint32_t id = uint32_t(pe.ready.front().request);
    pe.ready.pop_front();
    agent_state& a = agents_[id];
    pe.tok -= a.asg.request.append_tokens;
    pe.seq -= 1;
    unpromise(id);
    release_slots(a.asg.pe_node, a.pe_slots);
    release_slots(a.asg.de_node, a.de_slots);
    fail(id, "request does not fit in the HBM of engine " + std::to_string(e) + " (" +
                 std::to_string(prefill_hbm_bytes_) + " bytes)");
  }
  return false;
}

// The layer-wise pass in closed form: layer l computes once its hit KV is staged (x per layer through the
// CNIC) and is forwarded (f per layer) while the next computes, so the pass takes one fetch, the slowest of
// compute, fetch and forward for every further layer, and the last layer's compute and forward.
double simulator::pass_seconds(const prefill_engine& pe) const {
  std::vector<prefill_chunk> chunks;
  chunks.reserve(pe.batch.size());
  uint64_t staged = 0, forward = 0;
  for (const auto& b : pe.batch) {
    const agent_state& a = agents_[b.request];
    chunks.push_back({b.cached, b.bsz});
    staged += uint64_t(a.hit) * geo_.layer_bytes();
    forward += b.bsz * geo_.bytes_per_token_layer;
    if (!a.hit_forwarded) forward += uint64_t(std::min(a.asg.pe_blocks, a.hit)) * geo_.layer_bytes();
  }
  const double layers = geo_.layers;
  const double c = prefill_layer_seconds(model_, roof_, chunks);
  const double x = cnic_seconds(staged), f = cnic_seconds(forward);
  return x + (layers - 1) * std::max({c, x, f}) + c + f;
}

void simulator::try_pass(uint32_t e) {
  auto& pe = pes_[e];
  if (pe.busy || !plan_pass(e)) return;
  pe.busy = true;
  ++counters_.passes;
  const double s = pass_seconds(pe);
  window_busy_s_ += s;
  events_.push(now_ + s, event_kind::pass_done, e);
}

// Expert-parallel lockstep: the engines of a node run a pass together and all wait for the slowest.
void simulator::try_group(uint32_t node) {
  const uint32_t g = cfg_.engines_per_node, first = node * g;
  for (uint32_t i = 0; i < g; ++i)
    if (pes_[first + i].busy) return;
  double longest = 0, sum = 0;
  uint32_t running = 0;
  for (uint32_t i = 0; i < g; ++i) {
    auto& pe = pes_[first + i];
    pe.pass_s = 0;
    if (!plan_pass(first + i)) continue;
    pe.pass_s = pass_seconds(pe);
    longest = std::max(longest, pe.pass_s);
    sum += pe.pass_s;
    ++running;
  }
  if (!running) return;
  lockstep_ratio_sum_ += longest / (sum / g);
  ++lockstep_rounds_;
  for (uint32_t i = 0; i < g; ++i) {
    auto& pe = pes_[first + i];
    if (pe.batch.empty()) continue;
    pe.busy = true;
    ++counters_.passes;
    window_busy_s_ += longest;
    events_.push(now_ + longest, event_kind::pass_done, first + i);
  }
}

void simulator::pass_done(uint32_t e) {
  auto& pe = pes_[e];
  pe.busy = false;
  pe.hbm_free += pe.staging;
  pe.staging = 0;
  for (const auto& b : pe.batch) {
    agent_state& a = agents_[b.request];
    a.hit_forwarded = true;
    if (b.cached + b.bsz < a.prompt) continue;  // chunked: the batcher keeps it at the head
    a.first_token = now_;
    pe.hbm_free += a.new_kv;
    a.new_kv = 0;
    pe.tok -= a.asg.request.append_tokens;
    pe.seq -= 1;
    release_slots(a.asg.pe_node, a.pe_slots);
    a.pe_slots = 0;
    handoff(uint32_t(b.request));
  }
  pe.batch.clear();
  if (lockstep_) try_group(pe.node);
  else try_pass(e);
  want_round();
}

}  // namespace dualpath::sim
