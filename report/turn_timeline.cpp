#include "report/turn_timeline.hpp"

#include <nlohmann/json.hpp>

namespace dualpath::report {

std::string timeline_line(const std::string& run, const turn_record& r) {
  nlohmann::ordered_json j;
  j["run"] = run;
  j["agent"] = r.agent;
  j["turn"] = r.turn;
  if (!r.error.empty()) {
    j["error"] = r.error;
    j["start_s"] = r.start_s;
    j["done_s"] = r.done_s;
    return j.dump();
  }
  j["pe_engine"] = r.pe_engine;
  j["de_engine"] = r.de_engine;
  j["path"] = schedule::to_string(r.path);
  j["prompt_tokens"] = r.prompt_tokens;
  j["hit_tokens"] = r.hit_tokens;
  j["generated_tokens"] = r.generated_tokens;
  j["start_s"] = r.start_s;
  // The stages of the time to first token, in order: the scheduler's queue, the hit KV's read, the wait for
  // the prefill engine's pass, the pass itself.
  j["queue_s"] = r.queue_s;
  j["kv_read_s"] = r.kv_read_s;
  j["pass_wait_s"] = r.assign_s;
  j["pass_s"] = r.prefill_s;
  j["first_token_s"] = r.start_s + r.ttft_s;
  // After the first token: the hand-off to the decode engine, its KV's load into HBM, and the wait for the
  // turn's write-back after its last token (docs/design.md §4).
  j["handoff_s"] = r.handoff_s;
  j["hbm_load_s"] = r.hbm_load_s;
  j["write_back_s"] = r.write_back_s;
  j["done_s"] = r.done_s;
  return j.dump();
}

void write_timeline(std::ostream& out, const std::string& run, const std::vector<turn_record>& turns) {
  for (const auto& r : turns) out << timeline_line(run, r) << '\n';
}

}  // namespace dualpath::report
