#pragma once
// The `[schedule]` section of a cluster file:
//   [schedule]
//   policy = "dualpath"        # dualpath | basic | round_robin | split
//   alpha_tokens = 3750000     # optional: overrides α from the hardware profile
//   beta_tokens = 100000       # optional: overrides β from the compute fit
//   z_slack = 1.05
//   quota_ms = 300             # PE compute quota per forward pass (§7.6)
//   [[schedule.switch]]        # scripted policy switches, seconds after start
//   at_s = 30
//   policy = "basic"
#include <optional>
#include <string>
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule {

struct policy_switch {
  double at_s = 0;
  std::string policy;
};

struct schedule_config {
  std::string policy = "dualpath";
  std::optional<uint64_t> alpha_tokens, beta_tokens;  // unset: calibrate (calibration.hpp)
  double z_slack = 1.05;
  double quota_s = 0.3;
  std::vector<policy_switch> switches;  // sorted by at_s

  // α/β from the hardware numbers unless the file overrides them.
  policy_params params(double snic_bytes_per_s, uint64_t kv_bytes_per_token, double prefill_tokens_per_s) const;
};

// Parses the `[schedule]` table of a TOML document (absent table: defaults). `where` names the file in
// errors. Throws user_error naming the key for a bad value or an unknown policy (with the known names).
schedule_config parse_schedule_config(const std::string& toml_text, const std::string& where);

}  // namespace dualpath::schedule
