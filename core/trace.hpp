#pragma once
// Agent traces (docs/design.md §11): our trajectory JSONL (one agent per line) and Mooncake request traces.
//
// Trajectory line: {"id": "a0", "rounds": [{"append": n, "gen": m, "keep": k, "tool_ms": t, "reset": c}, ...]}
//   append   tokens appended to the prompt this turn (tool output, user message; after a
//            compaction also the summary that replaces the dropped history)            required
//   gen      tokens generated this turn                                                 required
//   keep     of `gen`, the leading tokens carried into the next prompt (the rest is reasoning that
//            the agent framework drops)                                                 default: gen
//   tool_ms  tool time after this turn, before the next                                 default: 0
//   reset    before this turn the framework cut the context back to its first `reset` tokens
//            (a rollback to an earlier state, or a compaction that keeps only the task) default: none
// Turn r's prompt = the surviving prefix of (turn r-1's prompt + its kept generation) + append.
// Without keep/reset this is docs/design.md §11's "all earlier prompts and generations + append".
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/status.hpp"

namespace dualpath {

struct trace_round {
  uint32_t append = 0;
  uint32_t gen = 0;
  uint32_t keep = 0;  // <= gen
  uint32_t tool_ms = 0;
  std::optional<uint64_t> reset;  // surviving prefix of the previous context, when cut back
};

// What one turn asks of the system, derived from the rounds up to it.
struct turn_shape {
  uint64_t prompt = 0;          // prompt tokens of this turn
  uint64_t hit_candidates = 0;  // leading prompt tokens that were in turn r-1's prompt + kept
                                // generation (their KV was computed before and can be in storage)
  uint64_t append = 0;          // prompt - hit_candidates: tokens this turn must prefill
  uint32_t gen = 0;             // tokens to generate
  uint32_t keep = 0;            // leading generated tokens that the next prompt carries
  uint32_t tool_ms = 0;
  bool reset = false;  // this turn starts from a context cut back by `reset`
};

// The mean turn of a workload: hit candidates and appended tokens per turn, over every turn given.
// What the scheduler's β is calibrated at (docs/design.md §7.2): attention grows with the context.
struct mean_turn {
  double hit = 0, append = 0;
  uint64_t turns = 0;
  void add(const turn_shape& t) {
    hit += (double(t.hit_candidates) - hit) / double(++turns);
    append += (double(t.append) - append) / double(turns);
  }
};

struct trajectory {
  std::string id;
  std::vector<trace_round> rounds;

  // Shape of turn r (0-based); O(r). Throws std::out_of_range past the last round.
  turn_shape turn(size_t r) const;
  // Shapes of every turn, in order; O(rounds).
  std::vector<turn_shape> turns() const;
};

// One JSONL line (no trailing newline). Fields equal to their default are omitted.
std::string to_json_line(const trajectory& t);
// Parses one line; `where` ("file:line") prefixes any user_error, which also names the field.
trajectory parse_trajectory_line(const std::string& text, const std::string& where);

// The non-blank lines of a JSONL file, counted so that errors can name "FILE:LINE".
class jsonl_lines {
 public:
  jsonl_lines(const std::string& path, const char* what);  // user_error "PATH: cannot open WHAT: why"
  bool next(std::string& text);                            // false at end of file
  std::string where() const;                               // "FILE:LINE" of the line last returned
  size_t line() const { return line_; }

 private:
  std::string path_;
  std::ifstream in_;
  size_t line_ = 0;
};

// Streams records from a JSONL file, one line at a time, parsed by `parse`; blank lines are skipped.
template <class T, T (*parse)(const std::string& text, const std::string& where)>
class jsonl_reader {
 public:
  jsonl_reader(const std::string& path, const char* what) : lines_(path, what) {}
  bool next(T& out) {  // false at end of file
    std::string text;
    if (!lines_.next(text)) return false;
    out = parse(text, lines_.where());
    return true;
  }
  size_t line() const { return lines_.line(); }

 private:
  jsonl_lines lines_;
};

// Malformed input throws user_error "FILE:LINE: field 'rounds[3].gen': why".
class trajectory_reader : public jsonl_reader<trajectory, parse_trajectory_line> {
 public:
  explicit trajectory_reader(const std::string& path) : jsonl_reader(path, "trajectory file") {}
};

std::vector<trajectory> read_trajectories(const std::string& path);

class trajectory_writer {
 public:
  explicit trajectory_writer(const std::string& path);  // user_error when it cannot be created
  void write(const trajectory& t);
  void close();  // flushes; user_error on a write failure

 private:
  std::string path_;
  std::ofstream out_;
};

void write_trajectories(const std::string& path, const std::vector<trajectory>& agents);

// ---- Mooncake traces: {"timestamp" ms, "input_length", "output_length", "hash_ids"} per line ----

inline constexpr uint32_t mooncake_block_tokens = 512;

struct mooncake_request {
  uint64_t timestamp_ms = 0;
  uint64_t input_length = 0;
  uint64_t output_length = 0;
  std::vector<uint64_t> hash_ids;  // chained: equal id at equal position = equal 512-token prefix
};

mooncake_request parse_mooncake_line(const std::string& text, const std::string& where);

class mooncake_reader : public jsonl_reader<mooncake_request, parse_mooncake_line> {
 public:
  explicit mooncake_reader(const std::string& path) : jsonl_reader(path, "Mooncake trace") {}
};

enum class trace_format { trajectory, mooncake };
const char* to_string(trace_format f);
// Looks at the first non-blank line: "rounds" means trajectory, "hash_ids"/"input_length" Mooncake.
trace_format detect_trace_format(const std::string& path);

// ---- Synthetic trajectories that reproduce the paper's datasets ----

struct trace_preset {
  std::string name;         // "32k", "48k", "64k"
  uint32_t max_len = 0;     // no prompt exceeds this
  double turns_mean = 0;    // paper: turns per agent
  double append_mean = 0;   // paper: appended tokens per turn
  double gen_mean = 0;      // generated tokens per turn
  double context_mean = 0;  // paper: hit tokens per turn (0 = not published)
};

const std::vector<trace_preset>& trace_presets();
const trace_preset& find_trace_preset(const std::string& name);  // user_error listing known names

// Deterministic: the same preset, agent count and seed give the same trajectories on every platform.
std::vector<trajectory> generate_trajectories(const trace_preset& preset, uint32_t agents, uint64_t seed);

// A trace made smaller or reshaped for one machine (docs/design.md §11): the paper's contexts of tens of
// thousands of tokens divided by `divide`, keeping every turn, reset and tool pause, so the hit rate stays
// what it was; `append` and `gen` then multiply the appended and generated tokens (the append and
// generation sweeps). Every turn keeps at least one appended and one generated token.
struct trace_scale {
  double divide = 1;
  double append = 1;
  double gen = 1;
};
// bad_input naming the option when a factor is not a positive number.
status check_trace_scale(const trace_scale& s);
trajectory scale_trajectory(const trajectory& t, const trace_scale& s);

// ---- Statistics ----

struct trajectory_stats {
  uint64_t agents = 0;
  uint64_t turns = 0;
  double turns_mean = 0;
  uint64_t turns_max = 0;
  double append_mean = 0;  // per turn: prompt tokens not in the previous prompt + kept generation
  double gen_mean = 0;
  double context_mean = 0;  // per turn: hit candidates ("context" in the paper's tables)
  uint64_t context_max = 0;
  uint64_t prompt_max = 0;
  double final_mean = 0;  // per agent: prompt length of the last turn
  double hit_rate = 0;    // sum(hit candidates) / sum(prompt)
  uint64_t resets = 0;    // turns that start from a cut-back context
};

class trajectory_stats_builder {
 public:
  void add(const trajectory& t);
  trajectory_stats result() const;

 private:
  trajectory_stats s_;
  double append_sum_ = 0, gen_sum_ = 0, hit_sum_ = 0, prompt_sum_ = 0, final_sum_ = 0;
};

struct mooncake_stats {
  uint64_t requests = 0;
  uint64_t blocks = 0;         // hash ids over all requests
  uint64_t reused_blocks = 0;  // hash ids seen in an earlier request
  double reuse_rate = 0;       // reused_blocks / blocks
  double input_mean = 0;
  double output_mean = 0;
  uint64_t input_max = 0;
  double duration_s = 0;  // last timestamp - first
};

class mooncake_stats_builder {
 public:
  void add(const mooncake_request& r);
  mooncake_stats result() const;

 private:
  mooncake_stats s_;
  double input_sum_ = 0, output_sum_ = 0;
  uint64_t first_ts_ = 0, last_ts_ = 0;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace dualpath
