#include "core/trace.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/status.hpp"

namespace dualpath {

using json = nlohmann::json;

// ---- turn shapes ----

namespace {

// Advances the context by one round; `context` is turn r-1's prompt + kept generation on entry
// and turn r's on exit. Returns the shape of turn r.
turn_shape advance(uint64_t& context, const trace_round& round, bool first) {
  turn_shape s;
  uint64_t base = first ? 0 : context;
  if (round.reset) {
    base = std::min(base, *round.reset);
    s.reset = true;
  }
  s.hit_candidates = base;
  s.append = round.append;
  s.prompt = base + round.append;
  s.gen = round.gen;
  s.keep = round.keep;
  s.tool_ms = round.tool_ms;
  context = s.prompt + round.keep;
  return s;
}

}  // namespace

turn_shape trajectory::turn(size_t r) const {
  if (r >= rounds.size()) {
    throw std::out_of_range(fmt::format("trajectory '{}' has {} rounds, asked for round {}", id, rounds.size(), r));
  }
  uint64_t context = 0;
  turn_shape s;
  for (size_t i = 0; i <= r; ++i) s = advance(context, rounds[i], i == 0);
  return s;
}

std::vector<turn_shape> trajectory::turns() const {
  std::vector<turn_shape> out;
  out.reserve(rounds.size());
  uint64_t context = 0;
  for (size_t i = 0; i < rounds.size(); ++i) out.push_back(advance(context, rounds[i], i == 0));
  return out;
}

// ---- JSONL ----

std::string to_json_line(const trajectory& t) {
  // Written by hand so the field order is fixed and files diff cleanly.
  std::string out = "{\"id\":" + json(t.id).dump() + ",\"rounds\":[";
  for (size_t i = 0; i < t.rounds.size(); ++i) {
    const auto& r = t.rounds[i];
    if (i) out += ',';
    out += fmt::format("{{\"append\":{},\"gen\":{}", r.append, r.gen);
    if (r.keep != r.gen) out += fmt::format(",\"keep\":{}", r.keep);
    if (r.tool_ms) out += fmt::format(",\"tool_ms\":{}", r.tool_ms);
    if (r.reset) out += fmt::format(",\"reset\":{}", *r.reset);
    out += '}';
  }
  out += "]}";
  return out;
}

namespace {

[[noreturn]] void bad_field(const std::string& where, const std::string& field, const std::string& why) {
  throw user_error(fmt::format("{}: field '{}': {}", where, field, why));
}

uint64_t get_uint(const json& obj, const char* key, const std::string& where, const std::string& field,
                  uint64_t max = std::numeric_limits<uint64_t>::max()) {
  const json& v = obj.at(key);
  uint64_t out = 0;
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    bad_field(where, field, fmt::format("must not be negative (got {})", v.dump()));
  } else if (v.is_number_float()) {
    // Timestamps in some traces are written as floats; accept whole, non-negative values.
    const double d = v.get<double>();
    // Range first: converting a double of 2^64 or more to uint64_t is undefined (libFuzzer + UBSan found
    // "timestamp": 1e040, docs/design.md §16 "Fuzzing").
    if (!(d >= 0 && d < 18446744073709551616.0) || d != double(uint64_t(d)))
      bad_field(where, field, fmt::format("expected a whole number, got {}", v.dump()));
    out = uint64_t(d);
  } else {
    bad_field(where, field, fmt::format("expected a non-negative integer, got {}", v.dump()));
  }
  if (out > max) bad_field(where, field, fmt::format("{} is larger than {}", out, max));
  return out;
}

json parse_object(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line 1, column N: ...".
    // Not only parse_error: a number too large for a double ("1e400") is out_of_range.406, which the
    // fuzz replay found escaping as an internal error (docs/design.md §16, "Fuzzing").
    std::string what = e.what();
    const auto pos = what.find("column");
    throw user_error(fmt::format("{}: not valid JSON ({})", where, pos == std::string::npos ? what : what.substr(pos)));
  }
  if (!j.is_object()) throw user_error(fmt::format("{}: expected a JSON object, got {}", where, j.type_name()));
  return j;
}

void require(const json& obj, const char* key, const std::string& where, const std::string& field) {
  if (!obj.contains(key)) bad_field(where, field, "missing");
}

void reject_unknown(const json& obj, std::initializer_list<const char*> known, const std::string& where,
                    const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      bad_field(where, prefix + it.key(), "unknown field");
    }
  }
}

constexpr uint64_t u32_max = std::numeric_limits<uint32_t>::max();

}  // namespace

trajectory parse_trajectory_line(const std::string& text, const std::string& where) {
  const json j = parse_object(text, where);
  reject_unknown(j, {"id", "rounds"}, where, "");
  trajectory t;
  require(j, "id", where, "id");
  if (j["id"].is_string()) {
    t.id = j["id"].get<std::string>();
  } else if (j["id"].is_number_integer()) {
    t.id = j["id"].dump();
  } else {
    bad_field(where, "id", "expected a string or an integer, got " + j["id"].dump());
  }
  require(j, "rounds", where, "rounds");
  const json& rounds = j["rounds"];
  if (!rounds.is_array()) bad_field(where, "rounds", "expected an array of rounds");
  if (rounds.empty()) bad_field(where, "rounds", "a trajectory needs at least one round");
  uint64_t context = 0;
  for (size_t i = 0; i < rounds.size(); ++i) {
    const json& r = rounds[i];
    const std::string prefix = fmt::format("rounds[{}].", i);
    if (!r.is_object()) bad_field(where, fmt::format("rounds[{}]", i), "expected an object");
    reject_unknown(r, {"append", "gen", "keep", "tool_ms", "reset"}, where, prefix);
    trace_round round;
    require(r, "append", where, prefix + "append");
    require(r, "gen", where, prefix + "gen");
    round.append = uint32_t(get_uint(r, "append", where, prefix + "append", u32_max));
    round.gen = uint32_t(get_uint(r, "gen", where, prefix + "gen", u32_max));
    round.keep = r.contains("keep") ? uint32_t(get_uint(r, "keep", where, prefix + "keep", u32_max)) : round.gen;
    if (round.keep > round.gen) {
      bad_field(where, prefix + "keep", fmt::format("keeps {} of only {} generated tokens", round.keep, round.gen));
    }
    if (r.contains("tool_ms")) round.tool_ms = uint32_t(get_uint(r, "tool_ms", where, prefix + "tool_ms", u32_max));
    if (r.contains("reset")) {
      const uint64_t reset = get_uint(r, "reset", where, prefix + "reset");
      if (i == 0) bad_field(where, prefix + "reset", "the first round has no earlier context to cut back");
      if (reset > context) {
        bad_field(where, prefix + "reset",
                  fmt::format("cuts back to {} tokens but the context has only {}", reset, context));
      }
      round.reset = reset;
    }
    advance(context, round, i == 0);
    t.rounds.push_back(round);
  }
  if (t.turns().front().prompt == 0) bad_field(where, "rounds[0].append", "the first prompt is empty");
  return t;
}

jsonl_lines::jsonl_lines(const std::string& path, const char* what) : path_(path), in_(path) {
  if (!in_) throw user_error(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
}

bool jsonl_lines::next(std::string& text) {
  while (std::getline(in_, text)) {
    ++line_;
    if (text.find_first_not_of(" \t\r") != std::string::npos) return true;
  }
  if (in_.bad()) throw user_error(fmt::format("{}:{}: read error", path_, line_ + 1));
  return false;
}

std::string jsonl_lines::where() const { return fmt::format("{}:{}", path_, line_); }

std::vector<trajectory> read_trajectories(const std::string& path) {
  trajectory_reader reader(path);
  std::vector<trajectory> out;
  trajectory t;
  while (reader.next(t)) out.push_back(std::move(t));
  return out;
}

trajectory_writer::trajectory_writer(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw user_error(fmt::format("{}: cannot create trajectory file", path));
}

void trajectory_writer::write(const trajectory& t) { out_ << to_json_line(t) << '\n'; }

void trajectory_writer::close() {
  out_.flush();
  if (!out_) throw user_error(fmt::format("{}: write failed", path_));
  out_.close();
}

void write_trajectories(const std::string& path, const std::vector<trajectory>& agents) {
  trajectory_writer w(path);
  for (const auto& t : agents) w.write(t);
  w.close();
}

// ---- Mooncake ----

mooncake_request parse_mooncake_line(const std::string& text, const std::string& where) {
  const json j = parse_object(text, where);
  mooncake_request r;
  for (const char* key : {"timestamp", "input_length", "output_length", "hash_ids"}) require(j, key, where, key);
  r.timestamp_ms = get_uint(j, "timestamp", where, "timestamp");
  r.input_length = get_uint(j, "input_length", where, "input_length");
  r.output_length = get_uint(j, "output_length", where, "output_length");
  const json& ids = j["hash_ids"];
  if (!ids.is_array()) bad_field(where, "hash_ids", "expected an array of block ids");
  r.hash_ids.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_unsigned()) {
      bad_field(where, fmt::format("hash_ids[{}]", i), "expected a non-negative integer, got " + ids[i].dump());
    }
    r.hash_ids.push_back(ids[i].get<uint64_t>());
  }
  const uint64_t blocks = (r.input_length + mooncake_block_tokens - 1) / mooncake_block_tokens;
  if (r.hash_ids.size() > blocks) {
    bad_field(where, "hash_ids",
              fmt::format("{} blocks of {} tokens exceed input_length {}", r.hash_ids.size(), mooncake_block_tokens,
                          r.input_length));
  }
  return r;
}

const char* to_string(trace_format f) { return f == trace_format::trajectory ? "trajectory" : "mooncake"; }

trace_format detect_trace_format(const std::string& path) {
  jsonl_lines lines(path, "trace");
  std::string text;
  if (!lines.next(text)) throw user_error(path + ": empty trace");
  const json j = parse_object(text, lines.where());
  if (j.contains("rounds")) return trace_format::trajectory;
  if (j.contains("hash_ids") || j.contains("input_length")) return trace_format::mooncake;
  throw user_error(lines.where() + ": neither a trajectory (\"rounds\") nor a Mooncake request (\"hash_ids\")");
}

// ---- statistics ----

void trajectory_stats_builder::add(const trajectory& t) {
  const auto turns = t.turns();
  ++s_.agents;
  s_.turns += turns.size();
  s_.turns_max = std::max<uint64_t>(s_.turns_max, turns.size());
  for (const auto& turn : turns) {
    append_sum_ += double(turn.append);
    gen_sum_ += double(turn.gen);
    hit_sum_ += double(turn.hit_candidates);
    prompt_sum_ += double(turn.prompt);
    s_.context_max = std::max(s_.context_max, turn.hit_candidates);
    s_.prompt_max = std::max(s_.prompt_max, turn.prompt);
    if (turn.reset) ++s_.resets;
  }
  if (!turns.empty()) final_sum_ += double(turns.back().prompt);
}

trajectory_stats trajectory_stats_builder::result() const {
  trajectory_stats s = s_;
  if (s.agents) {
    s.turns_mean = double(s.turns) / double(s.agents);
    s.final_mean = final_sum_ / double(s.agents);
  }
  if (s.turns) {
    s.append_mean = append_sum_ / double(s.turns);
    s.gen_mean = gen_sum_ / double(s.turns);
    s.context_mean = hit_sum_ / double(s.turns);
  }
  if (prompt_sum_ > 0) s.hit_rate = hit_sum_ / prompt_sum_;
  return s;
}

void mooncake_stats_builder::add(const mooncake_request& r) {
  if (s_.requests == 0) first_ts_ = r.timestamp_ms;
  first_ts_ = std::min(first_ts_, r.timestamp_ms);
  last_ts_ = std::max(last_ts_, r.timestamp_ms);
  ++s_.requests;
  input_sum_ += double(r.input_length);
  output_sum_ += double(r.output_length);
  s_.input_max = std::max(s_.input_max, r.input_length);
  for (uint64_t id : r.hash_ids) {
    ++s_.blocks;
    if (!seen_.insert(id).second) ++s_.reused_blocks;
  }
}

mooncake_stats mooncake_stats_builder::result() const {
  mooncake_stats s = s_;
  if (s.requests) {
    s.input_mean = input_sum_ / double(s.requests);
    s.output_mean = output_sum_ / double(s.requests);
    s.duration_s = double(last_ts_ - first_ts_) / 1000.0;
  }
  if (s.blocks) s.reuse_rate = double(s.reused_blocks) / double(s.blocks);
  return s;
}

}  // namespace dualpath
