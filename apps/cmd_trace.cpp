// `dualpath trace gen|stats`: synthetic agent trajectories and statistics of trajectory or Mooncake files.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"

namespace dualpath {
// The statistics' JSON, field by field (found by ADL, so beside the types).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(trajectory_stats, agents, turns, turns_mean, turns_max, append_mean, gen_mean,
                                   context_mean, context_max, prompt_max, final_mean, hit_rate, resets)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(mooncake_stats, requests, blocks, reused_blocks, reuse_rate, input_mean, output_mean,
                                   input_max, duration_s)
}  // namespace dualpath

namespace {

using namespace dualpath;

struct gen_options {
  std::string preset = "64k";
  uint32_t agents = 500;
  uint64_t seed = 1;
  trace_scale scale;
  std::string output;
};

struct stats_options {
  std::string file;
  bool json = false;
};

void run_gen(const gen_options& o) {
  const auto& preset = find_trace_preset(o.preset);
  throw_if_error(check_trace_scale(o.scale));
  auto agents = generate_trajectories(preset, o.agents, o.seed);
  for (auto& t : agents) t = scale_trajectory(t, o.scale);
  write_trajectories(o.output, agents);
  trajectory_stats_builder b;
  for (const auto& t : agents) b.add(t);
  const auto s = b.result();
  cli::print(
      fmt::format("wrote {} agents, {} turns to {} (turns {:.1f}, append {:.0f}, context {:.0f}, hit rate {:.2f}%)\n",
                  s.agents, s.turns, o.output, s.turns_mean, s.append_mean, s.context_mean, 100 * s.hit_rate));
}

// `trace stats --json`: the format first, then every field of the statistics under its own name.
template <class Stats>
std::string stats_json(const char* format, const Stats& s) {
  nlohmann::ordered_json j{{"format", format}};
  const nlohmann::json fields = s;
  for (const auto& [key, value] : fields.items()) j[key] = value;
  return j.dump(2) + "\n";
}

// Every record of `file` through a statistics builder.
template <class Reader, class Builder, class Record>
auto read_stats(const std::string& file) {
  Reader reader(file);
  Builder b;
  Record r;
  while (reader.next(r)) b.add(r);
  return b.result();
}

void print_trajectory_stats(const std::string& file, bool as_json) {
  const auto s = read_stats<trajectory_reader, trajectory_stats_builder, trajectory>(file);
  if (s.agents == 0) throw user_error(file + ": no trajectories");
  if (as_json) {
    cli::print(stats_json("trajectory", s));
    return;
  }
  std::string out = fmt::format("{}: trajectory format\n", file);
  out += fmt::format("  agents          {}\n", s.agents);
  out += fmt::format("  turns           {} (mean {:.1f}, max {})\n", s.turns, s.turns_mean, s.turns_max);
  out += fmt::format("  appended/turn   {:.1f}\n", s.append_mean);
  out += fmt::format("  generated/turn  {:.1f}\n", s.gen_mean);
  out += fmt::format("  context (hit)   mean {:.0f}, max {}\n", s.context_mean, s.context_max);
  out += fmt::format("  prompt          max {}, final mean {:.0f}\n", s.prompt_max, s.final_mean);
  out += fmt::format("  hit rate        {:.2f}%\n", 100 * s.hit_rate);
  out += fmt::format("  context resets  {} (rollbacks and compactions)\n", s.resets);
  cli::print(out);
}

void print_mooncake_stats(const std::string& file, bool as_json) {
  const auto s = read_stats<mooncake_reader, mooncake_stats_builder, mooncake_request>(file);
  if (as_json) {
    cli::print(stats_json("mooncake", s));
    return;
  }
  std::string out = fmt::format("{}: Mooncake format ({}-token blocks)\n", file, mooncake_block_tokens);
  out += fmt::format("  requests        {} over {:.1f} s\n", s.requests, s.duration_s);
  out += fmt::format("  input tokens    mean {:.1f}, max {}\n", s.input_mean, s.input_max);
  out += fmt::format("  output tokens   mean {:.1f}\n", s.output_mean);
  out += fmt::format("  blocks          {} ({} seen before)\n", s.blocks, s.reused_blocks);
  out += fmt::format("  prefix reuse    {:.2f}%\n", 100 * s.reuse_rate);
  cli::print(out);
}

void setup(CLI::App& root) {
  auto& trace = cli::group(root, "trace", "Agent traces: generate and inspect");

  auto gen = std::make_shared<gen_options>();
  auto* g = trace.add_subcommand("gen", "Generate synthetic agent trajectories with the paper's statistics");
  g->add_option("--preset", gen->preset, "Dataset to reproduce: 32k, 48k or 64k")->capture_default_str();
  g->add_option("--agents", gen->agents, "Number of agents (trajectories)")->capture_default_str();
  g->add_option("--seed", gen->seed, "Random seed; the same seed gives the same file")->capture_default_str();
  g->add_option("--scale", gen->scale.divide,
                "Divide contexts, appends and generations by K, keeping every turn (the hit rate stays)")
      ->capture_default_str();
  g->add_option("--append-scale", gen->scale.append, "Then multiply appended tokens (append sweep)")
      ->capture_default_str();
  g->add_option("--gen-scale", gen->scale.gen, "Then multiply generated tokens (generation sweep)")
      ->capture_default_str();
  g->add_option("-o,--output", gen->output, "Output JSONL file")->required();
  g->callback([gen] { run_gen(*gen); });

  auto stats = std::make_shared<stats_options>();
  auto* s = trace.add_subcommand("stats", "Statistics of a trajectory or Mooncake trace (format detected)");
  s->add_option("file", stats->file, "Trace file (JSONL)")->required();
  s->add_flag("--json", stats->json, "Print JSON");
  s->callback([stats] {
    if (detect_trace_format(stats->file) == trace_format::trajectory) {
      print_trajectory_stats(stats->file, stats->json);
    } else {
      print_mooncake_stats(stats->file, stats->json);
    }
  });
}

}  // namespace

DUALPATH_COMMAND(setup);
