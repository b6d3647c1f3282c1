#pragma once
// The scheduler protocol's plain C++ views and their Cap'n Proto envelopes (schema/scheduler.capnp), used
// by the scheduler, leaders, clients, the control port and tests. Decoders throw kj::Exception on garbage.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/type_ids.hpp"
#include "schedule/fresh_view.hpp"
#include "schedule/policy.hpp"

namespace dualpath::protocol {

struct policy_status {
  bool ok = false;
  std::string active;
  std::vector<std::string> known;
  std::string message;
};

// One node in the scheduler's stats: the view's numbers and the turns in flight there (PE or DE).
struct node_load {
  schedule::node_snapshot node;
  uint32_t in_flight = 0;
};

struct scheduler_counters {
  std::string policy;
  uint64_t waiting = 0, submitted = 0, assigned = 0, fetches = 0;
  uint32_t switches = 0, prefill_engines = 0, decode_engines = 0;
  uint64_t assigned_pe = 0, assigned_de = 0, assigned_split = 0;
  uint64_t pending_charges = 0, expired_charges = 0;  // the fresh view's (docs/design.md §7.1)
  uint64_t refused_commands = 0;                      // filled by the control port: wrong secret (docs/design.md §13)
  std::vector<node_load> nodes;                       // sorted by node id
};

envelope<schema::Request> encode(const schedule::request_info& r);
schedule::request_info decode(const envelope<schema::Request>& e);
envelope<schema::GroupReport> encode(const schedule::group_report& r);
// A report that acknowledges no request (every charge of the scheduler's view stays).
envelope<schema::GroupReport> encode_report(schedule::role kind, const schedule::node_snapshot& node);
schedule::group_report decode(const envelope<schema::GroupReport>& e);
envelope<schema::Fetch> encode_fetch(uint32_t node);
uint32_t decode(const envelope<schema::Fetch>& e);  // the fetching node
envelope<schema::Assignments> encode(const std::vector<schedule::assignment>& list);
std::vector<schedule::assignment> decode(const envelope<schema::Assignments>& e);
envelope<schema::PolicyStatus> encode(const policy_status& x);
policy_status decode(const envelope<schema::PolicyStatus>& e);
envelope<schema::SchedulerStats> encode(const scheduler_counters& x);
scheduler_counters decode(const envelope<schema::SchedulerStats>& e);

}  // namespace dualpath::protocol
