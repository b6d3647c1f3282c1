#pragma once
// One fuzz harness per decoder of bytes that arrive from outside the process (docs/design.md §16,
// "Fuzzing"): the Cap'n Proto envelopes of protocol/, the fabric directory among them, the trace readers
// and the cluster file of core/, the request readers of api/, and the block header check of storage/.
//
// A harness feeds its bytes to the real decoder and swallows only the error that decoder documents
// (kj::Exception for an envelope, user_error for a trace line or a cluster file; the block check returns
// its fault). It returns 0 when the decoder accepted the bytes and 1 when it refused them; any other
// exception escapes on purpose, so that the drivers count it as a bug. The same harnesses run under the
// seeded replay test (tests/fuzz/replay_test.cpp) and under libFuzzer (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace dualpath::storage {
struct block_format;
}

namespace dualpath::fuzz {

inline constexpr int accepted = 0;
inline constexpr int refused = 1;

// protocol/scheduler_codec.hpp
int fuzz_request(const uint8_t* data, size_t size);
int fuzz_group_report(const uint8_t* data, size_t size);
int fuzz_fetch(const uint8_t* data, size_t size);
int fuzz_assignments(const uint8_t* data, size_t size);
int fuzz_policy_status(const uint8_t* data, size_t size);
int fuzz_scheduler_stats(const uint8_t* data, size_t size);
// protocol/runtime_codec.hpp
int fuzz_turn_payload(const uint8_t* data, size_t size);
int fuzz_handoff(const uint8_t* data, size_t size);
int fuzz_turn_result(const uint8_t* data, size_t size);
int fuzz_load_blocks(const uint8_t* data, size_t size);
int fuzz_load_result(const uint8_t* data, size_t size);
int fuzz_slots(const uint8_t* data, size_t size);
int fuzz_copy_batch(const uint8_t* data, size_t size);
// protocol/deployment_codec.hpp
int fuzz_node_setup(const uint8_t* data, size_t size);
int fuzz_fabric_directory(const uint8_t* data, size_t size);
int fuzz_node_counters(const uint8_t* data, size_t size);
// core/trace.hpp: the bytes are a JSONL file, split into lines as jsonl_lines splits them
int fuzz_trajectory_trace(const uint8_t* data, size_t size);
int fuzz_mooncake_trace(const uint8_t* data, size_t size);
// core/cluster_config.hpp
int fuzz_cluster_file(const uint8_t* data, size_t size);
// api/: the body of a request to `dualpath serve`
int fuzz_chat_request(const uint8_t* data, size_t size);
int fuzz_completion_request(const uint8_t* data, size_t size);
int fuzz_responses_request(const uint8_t* data, size_t size);
// storage/block_format.hpp: the bytes are a block file read back from the store
int fuzz_block_header(const uint8_t* data, size_t size);
// The layout the block harness expects (the reader's own, trusted); its seeds are built with it.
const storage::block_format& fuzz_block_layout();

using harness_fn = int (*)(const uint8_t* data, size_t size);

struct harness {
  const char* name;  // "request", "fabric_directory", ...: fuzz_<name>
  harness_fn run;
  bool text;  // the decoder reads text: the mutators also insert its syntax tokens
};

const std::vector<harness>& all_harnesses();
const harness* find_harness(std::string_view name);  // nullptr when unknown

}  // namespace dualpath::fuzz
