#pragma once
// The run modes and backend kinds (docs/design.md §7.7, §10), parsed once from their names. Nothing past
// the parser compares a policy or backend name as a string: code asks the parsed struct.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace dualpath {

// What a run policy names. Each picks a scheduler policy and a data path:
//   basic       the framework's engine choice, PE read path only, every hit layer in HBM before the prefill starts
//   layerwise   PE read path only, layer-wise prefill
//   dualpath    both read paths, the DualPath scheduler (§7.2-7.4)
//   dualpath_nosched  both read paths without DualPath's scheduling: engines in turn, paths alternating
//   round_robin engines round robin, path by shorter read queue
//   split       one request's hit blocks divided between both SNICs
//   oracle      no SNIC and no fabric: hit KV from the blocks persisted in DRAM, no block file read, memcpy
enum class run_policy : uint8_t {
  basic,
  layerwise,
  dualpath_nosched,
  dualpath,
  round_robin,
  split,
  oracle,
  queue_aware
};
enum class kv_loading : uint8_t { whole, layerwise };  // all hit layers in HBM first, or one layer at a time
enum class io_mode : uint8_t { real, bypass };         // SNIC gate + fabric, or direct reads + memcpy

struct run_mode {
  run_policy policy = run_policy::dualpath;
  std::string scheduler_policy = "dualpath";  // a name of schedule::policy_names()
  bool de_read_path = true;                   // the DE node's SNIC may read hit KV
  kv_loading loading = kv_loading::layerwise;
  io_mode io = io_mode::real;
  // Prefill batches under the compute quota (docs/design.md §7.6). The ablation's framework baselines
  // (basic, layerwise, dualpath_nosched) batch as the unmodified framework does: no quota, only HBM bounds a pass.
  bool compute_quota = true;

  const char* name() const;
  bool bypass() const { return io == io_mode::bypass; }
};

const std::vector<std::string>& run_policy_names();
// The scheduler policies (docs/design.md §7): what a run mode's `scheduler_policy`, a cluster file's
// `[[schedule.switch]] policy` and `ctl policy set` name, in the runtime and the simulator alike.
const std::vector<std::string>& scheduler_policy_names();
bool is_scheduler_policy(std::string_view name);
// "unknown scheduler policy 'NAME' (known: ...)"; for a run policy's name, which scheduler policy it uses.
std::string unknown_scheduler_policy(std::string_view name);
const char* to_string(run_policy p);
// The mode a policy name stands for; bad_input naming the known names otherwise.
result<run_mode> parse_run_mode(std::string_view name);
// The same, throwing user_error.
run_mode run_mode_of(std::string_view name);

enum class backend_kind : uint8_t { cpu, cuda, modeled };
// The cuda kind under a name that the SIMT emulator's build of the cuda sources (which renames the token
// `cuda`) leaves alone.
inline constexpr backend_kind cuda_backend_kind = backend_kind::cuda;
const std::vector<std::string>& backend_names();
const char* to_string(backend_kind k);
result<backend_kind> parse_backend_kind(std::string_view name);

}  // namespace dualpath
