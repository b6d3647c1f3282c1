#pragma once
// The start-up messages of a multi-process run (docs/design.md §13) and their Cap'n Proto envelopes
// (schema/runtime.capnp): a node's run, the fabric directory, a node's counters.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/type_ids.hpp"
#include "runtime/node_io.hpp"

namespace dualpath::protocol {

struct node_counters {
  uint32_t node = 0;
  uint64_t snic_bytes = 0, persisted_blocks = 0;
  uint64_t store_read_bytes = 0, snic_write_bytes = 0;
  std::vector<runtime::snic_sample> snic_samples;
  uint64_t persist_errors = 0;               // write-backs that persisted nothing
  uint32_t slots_free = 0, slots_total = 0;  // DRAM buffer slots now
  std::vector<uint64_t> hbm_free;            // free KV bytes of each engine of the node now, by local index
  uint64_t prefill_busy_ns = 0;  // engine-time its prefill engines spent in passes so far (docs/design.md §7.9)
};

// Cluster-file text plus policy; the endpoints of one node or of all; a node's counters.
envelope<schema::NodeSetup> encode_setup(const std::string& cluster_file, const std::string& policy);
std::pair<std::string, std::string> decode(const envelope<schema::NodeSetup>& e);
envelope<schema::FabricDirectory> encode(const std::vector<runtime::endpoint_entry>& entries);
std::vector<runtime::endpoint_entry> decode(const envelope<schema::FabricDirectory>& e);
envelope<schema::NodeCounters> encode(const node_counters& x);
node_counters decode(const envelope<schema::NodeCounters>& e);

}  // namespace dualpath::protocol
