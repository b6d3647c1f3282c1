#include "cluster/calibration.hpp"

#include <spdlog/spdlog.h>

#include "storage/read_rate.hpp"

namespace dualpath::cluster {

namespace {

// The SNIC rate α stands for (docs/design.md §7.1): the cap, or, uncapped, the store's read rate measured now
// with a few real block reads. The oracle reads no file, so it keeps the 2 GB/s default (α orders nothing
// there: its read queues stay empty).
double snic_rate(const run_base& base, const cluster_config& c, const run_mode& mode) {
  if (c.snic_gb_per_s > 0) return c.snic_gb_per_s * 1e9;
  const double fallback = schedule::calibration_input{}.snic_bytes_per_s;
  if (mode.bypass()) return fallback;
  const auto r = storage::measure_read_rate(*base.store);
  if (!r.ok()) {
    spdlog::warn("scheduler: store read rate not measured ({}); alpha assumes {:.2f} GB/s", r.error().message(),
                 fallback / 1e9);
    return fallback;
  }
  spdlog::info("scheduler: uncapped SNIC, store read rate {:.2f} GB/s ({} blocks, {} bytes in {:.1f} ms)",
               r.value().bytes_per_s / 1e9, r.value().blocks, r.value().bytes, r.value().seconds * 1e3);
  return r.value().bytes_per_s;
}

}  // namespace

// α and β from the hardware and the compute fit (docs/design.md §7.2), unless the cluster file sets them.
// β is calibrated at the workload's own mean turn (its hit context and append), since attention time grows
// with the context; a workload without turns falls back to four cached blocks and one appended.
schedule::policy_params scheduler_params(const run_base& base, const cluster_config& c, const mean_turn& turn,
                                         const run_mode& mode) {
  const auto fit = base.first->fit();
  auto in = schedule::calibration_input_of(c, base.spec, {fit.fixed_s, fit.seconds_per_flop}, base.geometry, turn);
  in.snic_bytes_per_s = snic_rate(base, c, mode);
  const auto cal = schedule::calibrate(in);
  spdlog::info(
      "scheduler: alpha {} tokens at {:.3g} GB/s, beta {} tokens (at a mean turn of {} cached + {} appended "
      "tokens)",
      cal.params.alpha_tokens, in.snic_bytes_per_s / 1e9, cal.params.beta_tokens, cal.cached, cal.append);
  auto params = cal.params;
  // The groups of docs/design.md §7.2/§7.3: decode node ids start after the prefill nodes (§3).
  params.groups = {c.pe_group_nodes, c.de_group_nodes, c.prefill_nodes};
  return params;
}

}  // namespace dualpath::cluster
