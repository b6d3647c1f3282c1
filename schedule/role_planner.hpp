#pragma once
// Adaptive P/D (docs/design.md §7.9): which role a node should serve in. A pure function of one window's
// load, shared by the simulator and the runtime, so a planner decision can be tested and replayed.
//
// Each role's pressure is how much of its capacity the window asked for:
//   prefill  the engines' busy fraction plus the prefill work still queued (in seconds of one engine, over
//            the window), so a backlog reads above 1;
//   decode   the largest of the decode HBM in use, the decode batch slots in use, the TPOT against its SLO,
//            plus the requests handed off and waiting for HBM (over the requests decoding), so a backlog reads
//            above 1 too.
// Nodes move from the role under `low` to the role at or above `high` only while the role they leave would
// still be under `low` without them and the other still needs each (at or above `high` with the ones before
// it); when both are loaded neither gives a node away.
#include <cstdint>
#include <string>

namespace dualpath::schedule {

struct role_load {
  uint32_t prefill_nodes = 0, decode_nodes = 0;  // serving now (a draining node counts in neither)
  uint32_t engines_per_node = 1;
  double window_s = 1;
  double prefill_busy_s = 0;     // engine-seconds in passes during the window, over every prefill engine
  double prefill_backlog_s = 0;  // engine-seconds of prefill work assigned to prefill engines, not yet computed
  double decode_hbm = 0;         // fraction of the decode engines' KV HBM in use, [0, 1]
  double decode_slots = 0;       // fraction of the decode batch slots in use, [0, 1]
  double decode_waiting = 0;     // requests waiting for decode HBM (handed off, or unplaced while a prefill
                                 // engine idles), over those decoding
  double tpot_s = 0;             // mean TPOT of the turns finished in the window (0: none)
};

struct planner_params {
  double high = 0.9;         // a role at or above this pressure asks for a node
  double low = 0.5;          // a role gives nodes only while it stays under this without them
  double tpot_slo_s = 0.05;  // decode pressure counts TPOT against this
  uint32_t min_nodes = 1;    // of each role
};

enum class role_move : uint8_t { none, to_prefill, to_decode };
const char* to_string(role_move m);

double prefill_pressure(const role_load& l);
double decode_pressure(const role_load& l, double tpot_slo_s);

struct role_plan {
  role_move move = role_move::none;
  uint32_t nodes = 0;  // how many nodes move (0 with none)
};

// The move the window calls for: decode nodes to prefill, prefill nodes to decode, or none.
role_plan plan_roles(const role_load& l, const planner_params& p);

// "2P4D: prefill 1.31 (busy 0.97, backlog 0.34), decode 0.22 (...)": why, for the log and the report.
std::string describe(const role_load& l, const planner_params& p);

}  // namespace dualpath::schedule
