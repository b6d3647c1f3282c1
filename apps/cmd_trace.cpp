// `dualpath trace gen|stats`: synthetic agent trajectories and statistics of trajectory or Mooncake files.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"

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

void print_trajectory_stats(const std::string& file, bool as_json) {
  trajectory_reader reader(file);
  trajectory_stats_builder b;
  trajectory t;
  while (reader.next(t)) b.add(t);
  const auto s = b.result();
  if (s.agents == 0) throw user_error(file + ": no trajectories");
  if (as_json) {
    nlohmann::ordered_json j;
    j["format"] = "trajectory";
    j["agents"] = s.agents;
    j["turns"] = s.turns;
    j["turns_mean"] = s.turns_mean;
    j["turns_max"] = s.turns_max;
    j["append_mean"] = s.append_mean;
    j["gen_mean"] = s.gen_mean;
    j["context_mean"] = s.context_mean;
    j["context_max"] = s.context_max;
    j["prompt_max"] = s.prompt_max;
    j["final_mean"] = s.final_mean;
    j["hit_rate"] = s.hit_rate;
    j["resets"] = s.resets;
    cli::print(j.dump(2) + "\n");
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
  mooncake_reader reader(file);
  mooncake_stats_builder b;
  mooncake_request r;
  while (reader.next(r)) b.add(r);
  const auto s = b.result();
  if (as_json) {
    nlohmann::ordered_json j;
    j["format"] = "mooncake";
    j["requests"] = s.requests;
    j["blocks"] = s.blocks;
    j["reused_blocks"] = s.reused_blocks;
    j["reuse_rate"] = s.reuse_rate;
    j["input_mean"] = s.input_mean;
    j["input_max"] = s.input_max;
    j["output_mean"] = s.output_mean;
    j["duration_s"] = s.duration_s;
    cli::print(j.dump(2) + "\n");
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
