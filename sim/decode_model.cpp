// The decode engines in the simulator (docs/design.md §4, §17): FIFO admission under HBM, one event per
// decode step over the held batch, write-back of every filled block through the node's SNIC.
#include <algorithm>
#include <cmath>

#include "core/roofline.hpp"
#include "sim/step_run.hpp"
#include "sim/model.hpp"

namespace dualpath::sim {

void simulator::handoff(uint32_t id) {
  agent_state& a = agents_[id];
  a.handoff = now_;
  auto& de = de_of(a.asg.de);
  de.waiting.push_back(id);
  unpromise(id);
  // What the engine reports from now on: the whole turn (prompt + generation), constant until it ends.
  de.tok += a.prompt + a.gen;
  de.seq += 1;
  admit(a.asg.de);
}

void simulator::admit(uint32_t engine) {
  auto& de = de_of(engine);
  while (!de.waiting.empty()) {
    agent_state& a = agents_[de.waiting.front()];
    const uint64_t bytes = uint64_t(geo_.blocks_for(a.prompt + a.gen)) * geo_.block_bytes();
    if (bytes > de.hbm_free) break;  // the submission check guarantees it fits an empty arena
    de.hbm_free -= bytes;
    a.de_hbm = bytes;
    // DE buffer -> HBM over the engine's own CNIC (loopback), one Full Block per prompt block.
    const uint64_t copy = uint64_t(geo_.blocks_for(a.prompt)) * geo_.block_bytes();
    events_.push(now_ + cnic_seconds(copy), event_kind::admitted, de.waiting.front());
    de.waiting.pop_front();
  }
}

void simulator::admitted(uint32_t id) {
  agent_state& a = agents_[id];
  a.in_hbm = now_;
  release_slots(a.asg.de_node, a.de_slots);
  a.de_slots = 0;
  // The prompt's full blocks that were not hits are persisted now; the first token is already generated.
  const uint64_t fresh = std::max<uint64_t>(a.prompt / geo_.block_tokens, a.hit) - a.hit;
  if (fresh) a.writes_done = std::max(a.writes_done, write(a.asg.de_node, fresh * file_bytes_));
  a.written_blocks += fresh;
  a.generated = 1;
  a.position = a.prompt;
  if (a.gen == 1) {
    a.last_token = a.first_token;
    finish(id);
    return;
  }
  de_of(a.asg.de).active.push_back(id);
  join_steps(a.asg.de);
  try_step(a.asg.de);
}

// The next steps of the batch, as one event: up to the first step after which an item finishes, and
// never past a DSA item reaching top_k (where its cost stops growing), so each step's work is linear in
// the step index and the run's time is a closed-form sum.
void simulator::try_step(uint32_t engine) {
  auto& de = de_of(engine);
  if (de.stepping || de.active.empty()) return;
  de.step_items = std::min<size_t>(de.active.size(), cfg_.max_decode_batch);
  uint64_t steps = UINT64_MAX;
  std::vector<uint64_t> positions;
  positions.reserve(de.step_items);
  const bool dsa = model_.attention == attention_kind::dsa;
  for (size_t k = 0; k < de.step_items; ++k) {
    const agent_state& a = agents_[de.active[k]];
    steps = std::min<uint64_t>(steps, a.gen - a.generated);
    const uint64_t ctx = a.position + 1;
    if (dsa && ctx < model_.dsa_top_k) steps = std::min<uint64_t>(steps, model_.dsa_top_k - ctx);
    positions.push_back(a.position);
  }
  de.run = step_run::of(model_, roof_, positions);
  de.steps = std::max<uint64_t>(1, steps);
  de.start = now_;
  de.stepping = true;
  ++de.version;
  events_.push(now_ + de.run.seconds(de.steps), event_kind::step_done, engine, uint32_t(de.version));
}

void simulator::step_done(uint32_t engine, uint32_t version) {
  auto& de = de_of(engine);
  if (version != uint32_t(de.version)) return;  // cut short by an admission; a later event stands
  de.stepping = false;
  counters_.decode_steps += de.steps;
  const uint32_t node = de.node;
  const double second = de.start + de.run.seconds(1);
  size_t kept = 0;
  for (size_t k = 0; k < de.active.size(); ++k) {
    const uint32_t id = de.active[k];
    agent_state& a = agents_[id];
    if (k < de.step_items) {
      if (a.generated == 1) a.second_token = second;
      // Blocks the steps completed are written back (at the end of the run of steps).
      const uint64_t filled = (a.position + de.steps) / geo_.block_tokens - a.position / geo_.block_tokens;
      for (uint64_t b = 0; b < filled; ++b) a.writes_done = std::max(a.writes_done, write(node, file_bytes_));
      a.written_blocks += filled;
      a.position += de.steps;
      a.generated += uint32_t(de.steps);
      if (a.generated >= a.gen) {
        a.last_token = now_;
        finish(id);
        continue;
      }
    }
    de.active[kept++] = id;
  }
  de.active.resize(kept);
  try_step(engine);
}

// A request admitted while steps run joins at the next step boundary: the run in flight is cut after the
// step now executing.
void simulator::join_steps(uint32_t engine) {
  auto& de = de_of(engine);
  if (!de.stepping || de.step_items >= cfg_.max_decode_batch) return;
  uint64_t lo = 0, hi = de.steps;  // the smallest n with start + seconds(n) >= now
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (de.start + de.run.seconds(mid) >= now_) hi = mid;
    else lo = mid + 1;
  }
  const uint64_t n = std::max<uint64_t>(1, lo);
  if (n >= de.steps) return;
  de.steps = n;
  ++de.version;
  events_.push(de.start + de.run.seconds(n), event_kind::step_done, engine, uint32_t(de.version));
}

// The last token: HBM is freed at once, the answer goes out when the turn's writes are done.
void simulator::finish(uint32_t id) {
  agent_state& a = agents_[id];
  auto& de = de_of(a.asg.de);
  de.hbm_free += a.de_hbm;
  a.de_hbm = 0;
  de.tok -= a.prompt + a.gen;
  de.seq -= 1;
  if (a.gen > 1) window_tpot_sum_ += (a.last_token - a.first_token) / double(a.gen - 1), ++window_tpot_n_;
  events_.push(std::max(now_, a.writes_done), event_kind::turn_done, id);
  admit(a.asg.de);
  want_round();
}

}  // namespace dualpath::sim
