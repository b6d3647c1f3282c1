#include "core/bounds.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "core/status.hpp"
#include "core/names.hpp"

namespace dualpath {

const char* to_string(bound_kind k) {
  return name_of(k, {{bound_kind::fixed, "fixed"}, {bound_kind::lower, "lower"}, {bound_kind::upper, "upper"}});
}

namespace {

void require_positive(double v, const char* what) {
  if (!std::isfinite(v) || v <= 0)
    throw user_error(fmt::format("bounds: {} must be a positive number, got {}", what, v));
}

// Per-link load as a function of x = P/D, in GB/s, from T_p = Bs/(D·g²) and T_c = Bs/(P·g²).
struct row_def {
  bound_link id;
  const char* name;
  const char* link;
  const char* load;
  const char* condition;
  bound_kind kind;
  bool dram;  // capacity is M (node DRAM) rather than B (one CNIC)
  double (*load_at)(double x, double g, double s, double B);
  double (*limit)(double g, double s, double B, double M);  // P/D bound; fixed rows: unused
};

const row_def rows[] = {
    {bound_link::pe_cnic_read, "pe_cnic_read", "PE CNIC, read (PE path steps 3, 5)", "2·T_p·D·g = 2·B·s/g", "s <= g/2",
     bound_kind::fixed, false, [](double, double g, double s, double B) { return 2 * B * s / g; }, nullptr},
    {bound_link::pe_cnic_write, "pe_cnic_write", "PE CNIC, write (PE step 4, DE step 5)", "(T_p+T_c)·D·g",
     "P/D >= s/(g-s)", bound_kind::lower, false,
     [](double x, double g, double s, double B) { return B * s / g * (1 + 1 / x); },
     [](double g, double s, double, double) { return s / (g - s); }},
    {bound_link::de_cnic_read, "de_cnic_read", "DE CNIC, read (DE steps 3, 6; PE step 8)", "(T_p+2·T_c)·P·g",
     "P/D <= (g-2s)/s", bound_kind::upper, false,
     [](double x, double g, double s, double B) { return B * s / g * (x + 2); },
     [](double g, double s, double, double) { return (g - 2 * s) / s; }},
    {bound_link::de_cnic_write, "de_cnic_write", "DE CNIC, write (PE steps 7, 9; DE step 7)", "(2·T_p+T_c)·P·g",
     "P/D <= (g-s)/(2s)", bound_kind::upper, false,
     [](double x, double g, double s, double B) { return B * s / g * (2 * x + 1); },
     [](double g, double s, double, double) { return (g - s) / (2 * s); }},
    {bound_link::pe_dram, "pe_dram", "PE node DRAM", "2·s·B", "2·s·B <= M", bound_kind::fixed, true,
     [](double, double, double s, double B) { return 2 * s * B; }, nullptr},
    {bound_link::de_dram, "de_dram", "DE node DRAM", "(3 + 2·P/D)·s·B", "P/D <= (M/(s·B) - 3)/2", bound_kind::upper,
     true, [](double x, double, double s, double B) { return (3 + 2 * x) * s * B; },
     [](double, double s, double B, double M) { return (M / (s * B) - 3) / 2; }},
};

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

}  // namespace

bounds_report evaluate_bounds(const bounds_input& in) {
  require_positive(in.gpus_per_node, "--gpus-per-node (g)");
  if (in.gpus_per_node != std::floor(in.gpus_per_node)) {
    throw user_error(fmt::format("bounds: --gpus-per-node (g) must be a whole number, got {}", in.gpus_per_node));
  }
  require_positive(in.snic_ratio, "--snic-ratio (s)");
  require_positive(in.cnic_gb_per_s, "--cnic-gb-per-s (B)");
  require_positive(in.dram_gb_per_s, "--dram-gb-per-s (M)");
  if (in.prefill_nodes.has_value() != in.decode_nodes.has_value()) {
    throw user_error("bounds: give both --prefill-nodes and --decode-nodes, or neither");
  }
  if (in.prefill_nodes && (*in.prefill_nodes == 0 || *in.decode_nodes == 0)) {
    throw user_error("bounds: --prefill-nodes and --decode-nodes must be at least 1");
  }
  const double g = in.gpus_per_node, s = in.snic_ratio, B = in.cnic_gb_per_s, M = in.dram_gb_per_s;

  bounds_report rep;
  rep.input = in;
  rep.pd_min = 0;
  rep.pd_max = std::numeric_limits<double>::infinity();
  if (in.prefill_nodes) rep.pd = double(*in.prefill_nodes) / double(*in.decode_nodes);

  for (const auto& def : rows) {
    bound_row r;  // what the table says of the row; the rest is computed below
    std::tie(r.id, r.name, r.link, r.load, r.condition, r.kind) =
        std::make_tuple(def.id, def.name, def.link, def.load, def.condition, def.kind);
    r.capacity_gb_per_s = def.dram ? M : B;
    if (def.kind == bound_kind::fixed) {
      // Independent of P/D: evaluate at any ratio.
      r.holds = def.load_at(1, g, s, B) <= r.capacity_gb_per_s * (1 + 1e-12);
    } else {
      r.limit = def.limit(g, s, B, M);
      if (def.kind == bound_kind::lower) {
        // s >= g makes the lower bound meaningless (no ratio lets the PE CNIC keep up).
        r.holds = s < g;
        if (!r.holds) r.limit = std::numeric_limits<double>::infinity();
        rep.pd_min = std::max(rep.pd_min, r.limit);
      } else {
        r.holds = r.limit > 0;
        rep.pd_max = std::min(rep.pd_max, r.limit);
      }
    }
    if (rep.pd) {
      r.load_gb_per_s = def.load_at(*rep.pd, g, s, B);
      r.headroom = 1 - *r.load_gb_per_s / r.capacity_gb_per_s;
    }
    if (!r.holds) rep.feasible_hardware = false;
    rep.rows.push_back(std::move(r));
  }
  if (rep.pd_min > rep.pd_max) rep.feasible_hardware = false;
  for (auto& r : rep.rows) {
    const double end = r.kind == bound_kind::lower ? rep.pd_min : rep.pd_max;
    if (r.kind != bound_kind::fixed && r.holds && close(r.limit, end)) {
      r.binding = true;
      rep.binding.push_back(r.name);
    }
  }
  if (rep.pd) {
    const double x = *rep.pd;
    bool ok = rep.feasible_hardware && x >= rep.pd_min * (1 - 1e-12) && x <= rep.pd_max * (1 + 1e-12);
    rep.feasible = ok;
    rep.pe_read_gb_per_s = double(*in.prefill_nodes) * s * B;
    rep.dual_read_gb_per_s = double(*in.prefill_nodes + *in.decode_nodes) * s * B;
  }
  return rep;
}

std::string bounds_report::infeasibility() const {
  std::string why;
  const double g = input.gpus_per_node, s = input.snic_ratio, B = input.cnic_gb_per_s, M = input.dram_gb_per_s;
  for (const auto& r : rows) {
    if (r.holds) continue;
    if (!why.empty()) why += "; ";
    if (r.id == bound_link::pe_cnic_read) {
      why += fmt::format(
          "s = {} exceeds g/2 = {}: a PE CNIC would have to read 2·s·B/g = {:.4g} GB/s but carries B = {} GB/s", s,
          g / 2, 2 * s * B / g, B);
    } else if (r.id == bound_link::pe_dram) {
      why += fmt::format("PE DRAM needs 2·s·B = {:.4g} GB/s but M = {} GB/s", 2 * s * B, M);
    } else {
      why += fmt::format("{} ({}) cannot hold for any P/D", r.name, r.condition);
    }
  }
  if (why.empty() && pd_min > pd_max) {
    why = fmt::format("the rows leave no P/D: need P/D >= {} and P/D <= {}", as_fraction(pd_min), as_fraction(pd_max));
  }
  return why;
}

std::string as_fraction(double v) {
  if (!std::isfinite(v)) return v > 0 ? "inf" : "-inf";
  for (int den = 1; den <= 1000; ++den) {
    const double num = std::round(v * den);
    if (std::fabs(num / den - v) <= 1e-9 * std::max(1.0, std::fabs(v))) {
      return den == 1 ? fmt::format("{}", int64_t(num)) : fmt::format("{}/{}", int64_t(num), den);
    }
  }
  return fmt::format("{:.4g}", v);
}

}  // namespace dualpath
