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
// it); when both are loaded neither gives a node away. One move at most doubles the receiving role: the
// pressures are one window's, and at a large scale the rule would otherwise move most of the cluster at once
// on them (144 nodes: 128 of 132 prefill nodes to decode in one move, then back, node by node).
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
  double max_growth = 1.0;   // one move adds at most this many times the receiving role's nodes (at least 1)
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

// One move of adaptive P/D: decided, drained (the node finished what it held), serving in its new role.
// Seconds since the run's start (simulated or wall).
struct role_switch {
  uint32_t node = 0;
  bool to_prefill = false;
  double decided_s = 0, drained_s = 0, done_s = 0;
  std::string why;  // the window's loads (describe)
};

// When a window's plan is carried out, shared by the simulator and the runtime: not before a full wave of
// turns has finished (at the start of an offline run decode is empty while every first turn waits for
// prefill, and its load says nothing of what it will need), not while a move is in progress or cooling down,
// and only once `sustain` windows in a row call for the same move (a transient is not a new mix).
class role_driver {
 public:
  role_driver(const planner_params& p, uint32_t sustain, double cooldown_s)
      : params_(p), sustain_(sustain), cooldown_s_(cooldown_s) {}
  // The move to start now (none if nothing), given this window's load and the turns finished and in flight.
  role_plan step(double now_s, const role_load& l, uint64_t done, uint64_t in_flight);
  // `nodes` of the move started by step() are under way; each calls switched() once it serves in its new
  // role, and the cooldown runs from the last of them. A node whose move is given up counts as switched.
  void started(uint32_t nodes) { moving_ += nodes; }
  void switched(double now_s);
  bool moving() const { return moving_ > 0; }
  const planner_params& params() const { return params_; }

 private:
  planner_params params_;
  uint32_t sustain_ = 1;
  double cooldown_s_ = 0;
  double cooldown_until_ = 0;
  uint32_t moving_ = 0;
  role_move last_ = role_move::none;
  uint32_t sustained_ = 0;
};

// "2P4D: prefill 1.31 (busy 0.97, backlog 0.34), decode 0.22 (...)": why, for the log and the report.
std::string describe(const role_load& l, const planner_params& p);

}  // namespace dualpath::schedule
