#include "core/modes.hpp"

#include <algorithm>

#include "core/names.hpp"

namespace dualpath {

namespace {

struct mode_row {
  run_policy policy;
  const char* name;
  const char* scheduler;
  bool de_read;
  kv_loading loading;
  io_mode io;
  bool compute_quota;
};

// The one table of run policies: name -> scheduler policy, data path and batching (docs/design.md §7.7).
constexpr mode_row modes[] = {
    {run_policy::basic, "basic", "rr_pe", false, kv_loading::whole, io_mode::real, false},
    {run_policy::layerwise, "layerwise", "rr_pe", false, kv_loading::layerwise, io_mode::real, false},
    {run_policy::dualpath_nosched, "dualpath_nosched", "rr_alternate", true, kv_loading::layerwise, io_mode::real,
     false},
    {run_policy::dualpath, "dualpath", "balanced", true, kv_loading::layerwise, io_mode::real, true},
    {run_policy::round_robin, "round_robin", "rr_queue", true, kv_loading::layerwise, io_mode::real, true},
    {run_policy::split, "split", "balanced_split", true, kv_loading::layerwise, io_mode::real, true},
    {run_policy::oracle, "oracle", "balanced_pe", false, kv_loading::layerwise, io_mode::bypass, true},
    // Beyond the paper (§7.8): the decode engine and the read path chosen together, by read queue.
    {run_policy::queue_aware, "queue_aware", "balanced_rq", true, kv_loading::layerwise, io_mode::real, true},
};

constexpr const char* backends[] = {"cpu", "cuda", "modeled"};

}  // namespace

const char* to_string(run_policy p) { return modes[int(p)].name; }

const char* run_mode::name() const { return to_string(policy); }

const std::vector<std::string>& run_policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& m : modes) out.emplace_back(m.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& scheduler_policy_names() {
  static const std::vector<std::string> names{"balanced",     "balanced_pe", "balanced_split", "rr_queue",
                                              "rr_alternate", "rr_pe",       "balanced_rq"};
  return names;
}

bool is_scheduler_policy(std::string_view name) {
  const auto& n = scheduler_policy_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string unknown_scheduler_policy(std::string_view name) {
  std::string text = unknown_name("scheduler policy", name, scheduler_policy_names());
  for (const auto& m : modes)
    if (name == m.name)
      text += std::string("; '") + m.name + "' is a run policy, which schedules with '" + m.scheduler + "'";
  return text;
}

result<run_mode> parse_run_mode(std::string_view name) {
  for (const auto& m : modes) {
    if (name != m.name) continue;
    return run_mode{m.policy, m.scheduler, m.de_read, m.loading, m.io, m.compute_quota};
  }
  return status(errc::bad_input, unknown_name("policy", name, run_policy_names()));
}

run_mode run_mode_of(std::string_view name) { return value_or_throw(parse_run_mode(name)); }

const std::vector<std::string>& backend_names() { return name_list<backends>(); }

const char* to_string(backend_kind k) { return backends[int(k)]; }

result<backend_kind> parse_backend_kind(std::string_view name) {
  return parse_enum<backend_kind, backends>(name, "compute backend");
}

}  // namespace dualpath
