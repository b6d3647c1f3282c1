// The decode engines in the simulator (docs/design.md §4, §17): FIFO admission under HBM, one event per
// decode step over the held batch, write-back of every filled block through the node's SNIC.
#include <algorithm>

#include "core/cost_model.hpp"
#include "sim/model.hpp"

namespace dualpath::sim {

void simulator::handoff(uint32_t id) {
  agent_state& a = agents_[id];
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
  release_slots(a.asg.de_node, a.de_slots);
  a.de_slots = 0;
  // The prompt's full blocks that were not hits are persisted now; the first token is already generated.
  const uint64_t fresh = std::max<uint64_t>(a.prompt / geo_.block_tokens, a.hit) - a.hit;
  if (fresh) a.writes_done = std::max(a.writes_done, write(a.asg.de_node, fresh * geo_.file_bytes));
  a.written_blocks += fresh;
  a.generated = 1;
  a.position = a.prompt;
  if (a.gen == 1) {
    a.last_token = a.first_token;
    finish(id);
    return;
  }
  de_of(a.asg.de).active.push_back(id);
  try_step(a.asg.de);
}

void simulator::try_step(uint32_t engine) {
  auto& de = de_of(engine);
  if (de.stepping || de.active.empty()) return;
  de.step_items = std::min<size_t>(de.active.size(), cfg_.max_decode_batch);
  double flops = 0;
  for (size_t k = 0; k < de.step_items; ++k) flops += flops_per_token(model_, agents_[de.active[k]].position + 1);
  de.stepping = true;
  ++counters_.decode_steps;
  events_.push(now_ + fit_.seconds(flops), event_kind::step_done, engine);
}

void simulator::step_done(uint32_t engine) {
  auto& de = de_of(engine);
  de.stepping = false;
  const uint32_t node = de.node;
  size_t kept = 0;
  for (size_t k = 0; k < de.active.size(); ++k) {
    const uint32_t id = de.active[k];
    agent_state& a = agents_[id];
    if (k < de.step_items) {
      ++a.position;
      ++a.generated;
      if (a.generated == 2) a.second_token = now_;
      if (a.position % geo_.block_tokens == 0) {  // the step completed a block: it is written back
        a.writes_done = std::max(a.writes_done, write(node, geo_.file_bytes));
        ++a.written_blocks;
      }
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

// The last token: HBM is freed at once, the answer goes out when the turn's writes are done.
void simulator::finish(uint32_t id) {
  agent_state& a = agents_[id];
  auto& de = de_of(a.asg.de);
  de.hbm_free += a.de_hbm;
  a.de_hbm = 0;
  de.tok -= a.prompt + a.gen;
  de.seq -= 1;
  events_.push(std::max(now_, a.writes_done), event_kind::turn_done, id);
  admit(a.asg.de);
  want_round();
}

}  // namespace dualpath::sim
