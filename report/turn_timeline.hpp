#pragma once
// A run's turns one by one, as JSON lines (`dualpath sim --timeline FILE`): where each turn's time went and
// which engines served it. The summary says how a policy did on average; a makespan is often one agent's
// chain, and this is what shows which of its turns waited where (docs/experiments.md, "Policy arena").
#include <ostream>
#include <string>
#include <vector>

#include "report/run_report.hpp"

namespace dualpath::report {

// One line (no newline) for turn `r` of a run labelled `run`: agent, turn, engines, read path, tokens and the
// stamps since the run's start (start_s, first_token_s, done_s) with the wait of each stage in between.
std::string timeline_line(const std::string& run, const turn_record& r);

// Every turn of a run, in the order they finished, a line each, written as it goes (a paper-scale run has
// hundreds of thousands of turns: no whole-file string).
void write_timeline(std::ostream& out, const std::string& run, const std::vector<turn_record>& turns);

}  // namespace dualpath::report
