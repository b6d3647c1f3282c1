#pragma once
// Bandwidth limits of the two read paths (docs/design.md §5): which prefill/decode node ratios P/D let
// storage reads run at full rate over every SNIC without a CNIC or DRAM becoming the bottleneck.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dualpath {

struct bounds_input {
  double gpus_per_node = 8;               // g
  double snic_ratio = 1;                  // s: SNIC bandwidth per node = s·B
  double cnic_gb_per_s = 50;              // B: CNIC bandwidth per GPU
  double dram_gb_per_s = 500;             // M: DRAM bandwidth per node
  std::optional<uint32_t> prefill_nodes;  // P, with decode_nodes: evaluate this layout too
  std::optional<uint32_t> decode_nodes;   // D
};

enum class bound_kind {
  fixed,  // independent of P/D: holds or not for the hardware
  lower,  // P/D >= limit
  upper,  // P/D <= limit
};
const char* to_string(bound_kind k);

// The links of docs/design.md §5, one row each.
enum class bound_link : uint8_t { pe_cnic_read, pe_cnic_write, de_cnic_read, de_cnic_write, pe_dram, de_dram };

struct bound_row {
  bound_link id = bound_link::pe_cnic_read;
  std::string name;       // e.g. "de_cnic_write"
  std::string link;       // human name of the link and direction
  std::string load;       // load formula as in docs/design.md §5
  std::string condition;  // the condition the row imposes
  bound_kind kind = bound_kind::fixed;
  double limit = 0;      // lower/upper: the P/D bound; fixed: unused
  bool holds = true;     // fixed rows: the hardware satisfies it; lower/upper: the interval it allows is non-empty
  bool binding = false;  // its limit is the interval's end (lower or upper)
  double capacity_gb_per_s = 0;  // of the link (B for a CNIC, M for DRAM)
  // When a layout is given: load on the link at that P/D and the share of capacity left.
  std::optional<double> load_gb_per_s;
  std::optional<double> headroom;  // 1 - load/capacity; negative = overloaded
};

struct bounds_report {
  bounds_input input;
  std::vector<bound_row> rows;
  double pd_min = 0;
  double pd_max = 0;
  bool feasible_hardware = true;  // every fixed row holds and pd_min <= pd_max
  std::vector<std::string> binding;
  std::optional<double> pd;      // P/D of the given layout
  std::optional<bool> feasible;  // the given layout is inside the interval and every row holds
  // Aggregate storage read bandwidth of the layout: PE path only vs both paths (docs/design.md §1).
  std::optional<double> pe_read_gb_per_s;
  std::optional<double> dual_read_gb_per_s;

  // Why the hardware admits no layout (empty when feasible_hardware).
  std::string infeasibility() const;
};

// Throws user_error for zero, negative or non-finite inputs and for a half-given layout.
bounds_report evaluate_bounds(const bounds_input& in);

// "1/7", "7/2", "6": the simplest fraction within 1e-9 of v (denominator <= 1000), else "%.4g".
std::string as_fraction(double v);

}  // namespace dualpath
