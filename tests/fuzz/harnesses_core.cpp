// The text and file harnesses: the trace readers and the cluster file of core/, the block header check of
// storage/; and the list of every harness.
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/cluster_config.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"
#include "storage/block_format.hpp"
#include "tests/fuzz/harnesses.hpp"

namespace dualpath::fuzz {

namespace {

volatile uint64_t sink = 0;
void use(uint64_t v) { sink = sink + v; }

// Feeds every non-blank line of `data` to `parse_line(text, where)` as jsonl_lines would (core/trace.hpp:
// std::getline on '\n', lines of only " \t\r" skipped); the first user_error refuses the whole file.
template <class Parse>
int each_line(const uint8_t* data, size_t size, Parse&& parse_line) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t line = 0;
  try {
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string one = text.substr(start, end - start);
      ++line;
      start = end + 1;
      if (one.find_first_not_of(" \t\r") == std::string::npos) continue;
      parse_line(one, "fuzz.jsonl:" + std::to_string(line));
    }
    return accepted;
  } catch (const user_error&) {
    return refused;
  }
}

}  // namespace

int fuzz_trajectory_trace(const uint8_t* data, size_t size) {
  trajectory_stats_builder stats;
  return each_line(data, size, [&](const std::string& text, const std::string& where) {
    const trajectory t = parse_trajectory_line(text, where);
    stats.add(t);  // what `trace stats` and the workload builder do with every trajectory read
    use(t.turns().size() + stats.result().turns);
  });
}

int fuzz_mooncake_trace(const uint8_t* data, size_t size) {
  mooncake_stats_builder stats;
  return each_line(data, size, [&](const std::string& text, const std::string& where) {
    const mooncake_request r = parse_mooncake_line(text, where);
    stats.add(r);
    use(r.hash_ids.size() + stats.result().requests);
  });
}

int fuzz_cluster_file(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cluster_config c;
  try {
    c = parse_cluster_config(text, "fuzz.toml");
  } catch (const user_error&) {
    return refused;
  }
  // An accepted file is a validated one (docs/design.md §13): every number finite, and what the launcher
  // hands its node processes (format_cluster_config) parses back, on the node, to the same file. A
  // user_error or logic_error from here on escapes: it is a bug, not a refusal.
  for (double v : {c.mfu, c.snic_gb_per_s, c.cnic_gb_per_s, c.dram_buffer_gb, c.hbm_gb, c.prefill_hbm_gb, c.kv_share,
                   c.capacity_gb, c.alpha_s, c.beta_s, c.z_slack, c.quota_ms, c.timeout_s})
    if (!std::isfinite(v)) throw std::logic_error("cluster file accepted a number that is not finite");
  for (const auto& s : c.switches)
    if (!std::isfinite(s.at_s)) throw std::logic_error("cluster file accepted a switch time that is not finite");
  const std::string formatted = format_cluster_config(c);
  const cluster_config back = parse_cluster_config(formatted, "formatted");
  if (format_cluster_config(back) != formatted)
    throw std::logic_error("cluster file does not survive format and parse:\n" + formatted);
  use(c.total_nodes());
  return accepted;
}

const storage::block_format& fuzz_block_layout() {
  // Small, so a seed block is 8 KiB: 3 layers of 4 tokens of 16 bytes.
  static const storage::block_format f{0x5eed5eedf00dull, 3, 4, 16};
  return f;
}

int fuzz_block_header(const uint8_t* data, size_t size) {
  // The expected layout and key are the reader's own (trusted); only the image comes from the disk.
  const auto& expected = fuzz_block_layout();
  const block_key key = 42;
  const auto* image = reinterpret_cast<const std::byte*>(data);
  storage::block_header header;
  const auto head = storage::check_header(image, size, expected, key, &header);
  const auto whole = storage::check_block(image, size, expected, key);
  if (whole.ok() && !head.ok()) throw std::logic_error("block passes check_block but not check_header");
  if (head.ok()) {
    if (header.layer_checksums.size() != expected.layers) throw std::logic_error("header with the wrong layer count");
    // The read path checks each layer slice that arrived (storage/block_reads.cpp).
    for (uint32_t l = 0; l < expected.layers; ++l) {
      const uint64_t end = expected.header_bytes() + (l + 1) * expected.layer_bytes();
      if (end <= size) use(storage::check_layer(header, l, image + end - expected.layer_bytes()));
    }
  }
  use(whole.message.size());
  return whole.ok() ? accepted : refused;
}

const std::vector<harness>& all_harnesses() {
  static const std::vector<harness> list{
      {"request", fuzz_request, false},
      {"group_report", fuzz_group_report, false},
      {"fetch", fuzz_fetch, false},
      {"assignments", fuzz_assignments, false},
      {"policy_status", fuzz_policy_status, false},
      {"scheduler_stats", fuzz_scheduler_stats, false},
      {"turn_payload", fuzz_turn_payload, false},
      {"handoff", fuzz_handoff, false},
      {"turn_result", fuzz_turn_result, false},
      {"load_blocks", fuzz_load_blocks, false},
      {"load_result", fuzz_load_result, false},
      {"slots", fuzz_slots, false},
      {"copy_batch", fuzz_copy_batch, false},
      {"node_setup", fuzz_node_setup, false},
      {"fabric_directory", fuzz_fabric_directory, false},
      {"node_counters", fuzz_node_counters, false},
      {"trajectory_trace", fuzz_trajectory_trace, true},
      {"mooncake_trace", fuzz_mooncake_trace, true},
      {"cluster_file", fuzz_cluster_file, true},
      {"chat_request", fuzz_chat_request, true},
      {"completion_request", fuzz_completion_request, true},
      {"responses_request", fuzz_responses_request, true},
      {"block_header", fuzz_block_header, false},
  };
  return list;
}

const harness* find_harness(std::string_view name) {
  for (const auto& h : all_harnesses())
    if (name == h.name) return &h;
  return nullptr;
}

}  // namespace dualpath::fuzz
