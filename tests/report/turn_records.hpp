#pragma once
// Finished turns for the report's tests: the facts a summary reads, the rest left at their defaults.
#include <cstdint>
#include <string>

#include "report/run_report.hpp"

namespace dualpath::test {

// Turn `turn` of `agent`, submitted at `start_s` and done at `done_s` (seconds since the run's start).
inline report::turn_record finished_turn(uint32_t agent, uint32_t turn, double start_s, double done_s,
                                         uint32_t prompt_tokens = 0, uint32_t generated_tokens = 0,
                                         std::string error = "") {
  report::turn_record r;
  r.agent = agent;
  r.turn = turn;
  r.start_s = start_s;
  r.done_s = done_s;
  r.prompt_tokens = prompt_tokens;
  r.generated_tokens = generated_tokens;
  r.error = std::move(error);
  return r;
}

}  // namespace dualpath::test
