#include "tests/fuzz/seeds.hpp"

#include <stdexcept>

#include "core/cluster_config.hpp"
#include "core/trace.hpp"
#include "protocol/deployment_codec.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "storage/block_format.hpp"
#include "tests/fuzz/harnesses.hpp"

namespace dualpath::fuzz {

namespace {

template <class Schema>
bytes raw(const protocol::envelope<Schema>& e) {
  return e.bytes;
}

bytes text(const std::string& s) { return bytes(s.begin(), s.end()); }

protocol::turn_times sample_times() { return {1000, 2000, 3000, 4000, 5000, 6000, 7000, 6500}; }

protocol::turn_payload sample_payload() {
  return {(uint64_t(1) << 56) | (3u << 24) | 5u, 3, 5, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 4, 2, sample_times()};
}

schedule::node_snapshot sample_node() {
  return {1, schedule::role::decode, 4096, {{2, 1, 3, 700, 1 << 20}, {3, 1, 0, 0, 1 << 21}}};
}

std::vector<bytes> envelope_seeds(std::string_view name) {
  using namespace protocol;
  const schedule::request_info req{77, 512, 64, 1 << 20, 576, 1 << 21, 8};
  if (name == "request") return {raw(encode(req)), raw(encode(schedule::request_info{}))};
  if (name == "group_report") {
    schedule::group_report r{sample_node(), {{77, 78}, {}}, {77}};
    return {raw(encode(r)), raw(encode_report(schedule::role::prefill, sample_node()))};
  }
  if (name == "fetch") return {raw(encode_fetch(0)), raw(encode_fetch(7))};
  if (name == "assignments") {
    const std::vector<schedule::assignment> list{{req, 0, 0, 2, 1, schedule::read_path::split, 3},
                                                 {req, 1, 0, 3, 1, schedule::read_path::de, 0}};
    return {raw(encode(list)), raw(encode(std::vector<schedule::assignment>{}))};
  }
  if (name == "policy_status") {
    return {raw(encode(policy_status{true, "dualpath", {"basic", "dualpath", "oracle"}, ""})),
            raw(encode(policy_status{false, "basic", {"basic"}, "unknown policy 'x'"}))};
  }
  if (name == "scheduler_stats") {
    scheduler_counters c;  // member by member: the struct grows (new counters), the seed stays valid
    c.policy = "dualpath";
    c.waiting = 1, c.submitted = 2, c.assigned = 3, c.fetches = 4, c.switches = 5;
    c.prefill_engines = 6, c.decode_engines = 7, c.assigned_pe = 8, c.assigned_de = 9, c.assigned_split = 10;
    c.pending_charges = 11, c.expired_charges = 12, c.refused_commands = 13;
    return {raw(encode(c)), raw(encode(scheduler_counters{}))};
  }
  if (name == "turn_payload") return {raw(encode(sample_payload())), raw(encode(turn_payload{}))};
  if (name == "handoff") {
    return {raw(encode(handoff_info{sample_payload(), 17, {4, 5}, 2, schedule::read_path::de, 1, 6, 0})),
            raw(encode(handoff_info{}))};
  }
  if (name == "turn_result") {
    return {raw(encode(turn_result{9, 3, 5, {10, 11, 12}, sample_times(), schedule::read_path::pe, 2, 0, 6, 0, "", 9})),
            raw(encode(failed_turn(sample_payload(), "no decode engine remains")))};
  }
  if (name == "load_blocks") return {raw(encode_load({0x1111, 0x2222, 0x3333}, 77)), raw(encode_load({}))};
  if (name == "load_result") {
    runtime::load_result ok{{1, 2, 3}, 3, 3 * 8192, {}};
    runtime::load_result bad{{1, 2}, 1, 8192, status(errc::corrupt, "layer 2 checksum")};
    return {raw(encode(ok)), raw(encode(bad))};
  }
  if (name == "slots") return {raw(encode(slot_list{{0, 1, 2, 3}, 4})), raw(encode(slot_list{{}, 2}))};
  if (name == "copy_batch") {
    copy_batch b;
    b.ops.push_back({0, runtime::region_kind::buffer, 0, 2, runtime::region_kind::hbm, 4096, 8192});
    b.ops.push_back({1, runtime::region_kind::hbm, 8192, 3, runtime::region_kind::buffer, 0, 512});
    copy_batch model;
    model.traffic = transport::traffic_class::model;
    return {raw(encode(b)), raw(encode(model))};
  }
  if (name == "node_setup") {
    return {raw(encode_setup(format_cluster_config(cluster_config{}), "dualpath")), raw(encode_setup("", ""))};
  }
  if (name == "fabric_directory") {
    std::vector<runtime::endpoint_entry> list(2);
    for (uint32_t i = 0; i < 2; ++i) {
      list[i].engine = i;
      list[i].node = i;
      list[i].address = {0x02, 0x00, uint8_t(0x10 + i), 0x7f, 0, 0, 1, 0};
      list[i].buffer = {0x7f0000000000ull + i, 0xabc + i, 64 << 20};
      list[i].hbm = {0x7e0000000000ull + i, 0xdef + i, 128 << 20};
    }
    return {raw(encode(list)), raw(encode(std::vector<runtime::endpoint_entry>{}))};
  }
  if (name == "node_counters") {
    node_counters c;
    c.node = 2;
    c.snic_bytes = 1 << 20;
    c.persisted_blocks = 5;
    c.store_read_bytes = 1 << 19;
    c.snic_write_bytes = 1 << 18;
    c.snic_samples = {{100, 0, 0}, {200, 4096, 8192}, {300, 8192, 0}};
    c.slots_free = 3000;  // and the buffers a serving launcher samples
    c.slots_total = 3125;
    c.hbm_free = {64000000, 1 << 20};
    return {raw(encode(c)), raw(encode(node_counters{}))};
  }
  return {};
}

std::vector<bytes> trace_seeds(std::string_view name) {
  if (name == "trajectory_trace") {
    trajectory a{"a0", {{100, 20, 20, 0, {}}, {30, 10, 4, 250, {}}, {5, 8, 8, 0, uint64_t(60)}}};
    trajectory b{"agent-1", {{16, 1, 1, 0, {}}}};
    std::string file = to_json_line(a) + "\n" + to_json_line(b) + "\n";
    // A few generated agents of the paper's smallest preset, scaled down, as `trace gen` writes them.
    std::string generated;
    for (const auto& t : generate_trajectories(find_trace_preset("32k"), 2, 7))
      generated += to_json_line(scale_trajectory(t, {64, 1, 1})) + "\n";
    return {text(file), text(to_json_line(a)), text(generated),
            text("\n{\"id\": 7, \"rounds\": [{\"append\": 1, \"gen\": 0}]}\r\n")};
  }
  if (name == "mooncake_trace") {
    return {text("{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 30, \"hash_ids\": [1, 2, 3]}\n"
                 "{\"timestamp\": 27, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [1, 2, 4, 5]}\n"),
            text("{\"timestamp\": 12.0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": []}")};
  }
  return {};
}

std::vector<bytes> cluster_file_seeds() {
  cluster_config c;
  c.backend = backend_kind::modeled;
  c.prefill_nodes = 2;
  c.decode_nodes = 4;
  c.engines_per_node = 8;
  c.pe_group_nodes = 2;
  c.snic_gb_per_s = 0.004;
  c.switches = {{1.5, "balanced_pe"}, {3.0, "balanced"}};
  c.secret = "0123456789abcdef0123";
  const std::string hand = R"(# a hand-written file: comments, inline tables, the paper's key name
[model]
name = "tiny"
seed = 7
[cluster]
prefill_nodes = 1
decode_nodes = 2
gpus_per_node = 1
block_tokens = 16
[hardware]
snic_gb_per_s = 4e-3
dram_buffer_gb = 0.0625
hbm_gb = 0.0625
provider = 'tcp'
[storage]
dir = "/tmp/dualpath fuzz"
[runtime]
secret = "a secret of many chars"
timeout_s = 30
[[schedule.switch]]
at_s = 0
policy = "balanced_pe"
)";
  return {text(format_cluster_config(cluster_config{})), text(format_cluster_config(c)), text(hand), text("")};
}

std::vector<bytes> block_seeds() {
  const auto& f = fuzz_block_layout();
  std::vector<std::byte> payload(f.payload_bytes());
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 31 + 7);
  const auto first = storage::build_block(f, 42, 0, payload.data());
  const auto chained = storage::build_block(f, 42, 41, payload.data());
  auto as_bytes = [](const std::vector<std::byte>& b) {
    return bytes(reinterpret_cast<const uint8_t*>(b.data()), reinterpret_cast<const uint8_t*>(b.data()) + b.size());
  };
  // The exact image without its alignment padding is a whole block too (a file cut at the payload's end).
  bytes unpadded = as_bytes(first);
  unpadded.resize(f.header_bytes() + f.payload_bytes());
  return {as_bytes(first), as_bytes(chained), unpadded};
}

}  // namespace

// Request bodies as clients send them (docs/guide/serve.md).
std::vector<bytes> request_seeds(std::string_view name) {
  if (name == "chat_request")
    return {text(R"({"model": "tiny", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", )"
                 R"("content": "hi"}], "max_tokens": 8, "stream": true, "stream_options": {"include_usage": true}})"),
            text(R"({"model": "tiny", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}, )"
                 R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", )"
                 R"("function": {"name": "f", "arguments": "{\"x\": 1}"}}]}, {"role": "tool", "tool_call_id": "c", )"
                 R"("content": "<think>x</think>y"}], "tools": [{"type": "function", "function": {"name": "f", )"
                 R"("parameters": {"type": "object"}}}], "stop": ["\n"], "chat_template_kwargs": )"
                 R"({"enable_thinking": false}})")};
  if (name == "completion_request")
    return {text(R"({"model": "tiny", "prompt": "def f():", "max_tokens": 4})"),
            text(R"({"model": "tiny", "prompt": [[1, 2, 3]], "stream": true})")};
  return {text(R"({"model": "tiny", "instructions": "Be an agent.", "input": [{"type": "message", "role": "user", )"
               R"("content": [{"type": "input_text", "text": "ls"}]}, {"type": "function_call", "call_id": "c", )"
               R"("name": "shell", "arguments": "{}"}, {"type": "function_call_output", "call_id": "c", "output": )"
               R"("a.rs"}], "tools": [{"type": "function", "name": "shell"}], "store": false, "stream": true})"),
          text(R"({"model": "tiny", "input": "hi", "max_output_tokens": 3})")};
}

std::vector<bytes> seeds_for(std::string_view name) {
  if (name == "chat_request" || name == "completion_request" || name == "responses_request") return request_seeds(name);
  if (name == "cluster_file") return cluster_file_seeds();
  if (name == "block_header") return block_seeds();
  if (name == "trajectory_trace" || name == "mooncake_trace") return trace_seeds(name);
  auto s = envelope_seeds(name);
  if (s.empty()) throw std::invalid_argument("no seeds for fuzz harness '" + std::string(name) + "'");
  return s;
}

std::vector<std::string> tokens_for(std::string_view name) {
  if (name == "chat_request" || name == "completion_request" || name == "responses_request") {
    // JSON's syntax and odd values (the traces' tokens), then the API's field names and the templates' tags.
    auto tokens = tokens_for("trajectory_trace");
    for (const char* t : {"\"\xff\"",          "false",           "\"role\":",  "\"content\":",    "\"messages\":",
                          "\"input\":",        "\"prompt\":",     "\"tools\":", "\"tool_calls\":", "\"function\":",
                          "\"arguments\":",    "\"type\":",       "\"text\"",   "\"assistant\"",   "\"tool\"",
                          "\"function_call\"", "\"max_tokens\":", "\"stop\":",  "\"stream\":",     "<think>",
                          "</think>",          "<tool_call>",     "[[[[",       "{\"a\":{"})
      tokens.emplace_back(t);
    return tokens;
  }
  if (name == "trajectory_trace" || name == "mooncake_trace") {
    return {"{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\n",
            "null",
            "true",
            "-1",
            "0",
            "1e400",
            "-0.0",
            "1.5",
            "18446744073709551615",
            "18446744073709551616",
            "4294967296",
            "\"\\u0000\"",
            "\"\\ud800\"",
            "\"id\":",
            "\"rounds\":",
            "\"append\":",
            "\"gen\":",
            "\"keep\":",
            "\"tool_ms\":",
            "\"reset\":",
            "\"timestamp\":",
            "\"input_length\":",
            "\"output_length\":",
            "\"hash_ids\":",
            "[[[[",
            "{\"a\":{"};
  }
  if (name == "cluster_file") {
    return {"[",
            "]",
            "[[",
            "]]",
            "=",
            "\"",
            "'",
            "'''",
            "\"\"\"",
            "\n",
            "#",
            ".",
            ",",
            "{",
            "}",
            "nan",
            "inf",
            "-inf",
            "+nan",
            "1e400",
            "-1",
            "0",
            "4294967296",
            "9223372036854775807",
            "9223372036854775808",
            "0x7fffffff",
            "true",
            "1979-05-27T07:32:00Z",
            "[model]",
            "[cluster]",
            "[hardware]",
            "[storage]",
            "[schedule]",
            "[runtime]",
            "[[schedule.switch]]",
            "prefill_nodes",
            "engines_per_node",
            "timeout_s",
            "mfu",
            "secret",
            "policy",
            "at_s",
            "\\u0000",
            "\\U0010FFFF"};
  }
  return {};
}

namespace {

// A flat Cap'n Proto message (one segment) whose root struct's only pointer is a list of `count`
// zero-sized structs: 32 bytes that claim `count` elements (the list's words are all in its tag).
bytes amplified_list(uint32_t count) {
  const uint64_t words[] = {
      uint64_t(3) << 32,        // segment table: 1 segment of 3 words
      uint64_t(1) << 48,        // root: struct pointer, offset 0, no data, 1 pointer
      1 | (uint64_t(7) << 32),  // that pointer: list, offset 0, inline composite of 0 words
      uint64_t(count) << 2,     // the list's tag: `count` elements of no data and no pointers
  };
  const auto* p = reinterpret_cast<const uint8_t*>(words);
  return bytes(p, p + sizeof words);
}

bytes with_tail(bytes b, size_t extra) {
  b.resize(b.size() + extra, 0xab);
  return b;
}

}  // namespace

std::vector<regression> regressions() {
  const int refuse = refused;
  std::vector<regression> out{
      // Found by the replay (20,000 mutants per decoder): a 32-byte envelope claiming 4 Mi list elements
      // decoded every one of them (Cap'n Proto's default traversal limit is 8 Mi words), seconds and GBs.
      {"assignments", "amplified list of zero-sized structs", amplified_list(4u << 20), refuse},
      {"copy_batch", "amplified list of zero-sized structs", amplified_list(4u << 20), refuse},
      {"fabric_directory", "amplified list of zero-sized structs", amplified_list(4u << 20), refuse},
      {"group_report", "amplified list of zero-sized structs", amplified_list(4u << 20), refuse},
      // The same message with a short list is well-formed: the refusals above are the size bound's.
      {"assignments", "a short list of zero-sized structs", amplified_list(16), accepted},
      {"fabric_directory", "a short list of zero-sized structs", amplified_list(16), accepted},
      // Found by review: a partial last word was read from uninitialised memory.
      {"request", "envelope that is not whole words", with_tail(seeds_for("request")[0], 4), refuse},
      {"fabric_directory", "envelope that is not whole words", with_tail(seeds_for("fabric_directory")[0], 7), refuse},
      // Found by the replay: nlohmann's out_of_range.406 (a number beyond a double) escaped parse_object.
      {"trajectory_trace", "a number too large for a double", text("1e400"), refuse},
      {"mooncake_trace", "a number too large for a double",
       text("{\"timestamp\": 1e400, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}"), refuse},
      // Found by review, each accepted before its fix: TOML's nan and inf passed every range check (the
      // harness now refuses an accepted non-finite number), and an integer past its field's type was cut.
      {"cluster_file", "nan passed the range check", text("[model]\nmfu = nan\n"), refuse},
      {"cluster_file", "inf passed the range check", text("[runtime]\ntimeout_s = inf\n"), refuse},
      {"cluster_file", "an integer cut to 32 bits", text("[cluster]\nprefill_nodes = 4294967297\n"), refuse},
      // Found by libFuzzer + UBSan: a whole-number double past 2^64 was converted to uint64_t (undefined).
      {"mooncake_trace", "a float timestamp past 2^64",
       text("{\"timestamp\": 1e040, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}"), refuse},
      {"trajectory_trace", "a float count past 2^64",
       text("{\"id\": 1, \"rounds\": [{\"append\": 1, \"gen\": 1, \"reset\": 1.8446744073709552e19}]}"), refuse},
      // Found by libFuzzer: toml++'s own debug assertion (parser.inl parse_key) aborts on a bad first key
      // character; our Release build (NDEBUG) refuses the file with a parse error, checked here.
      {"cluster_file", "toml++ parse_key assertion", text("[?runtime]\ntimeout_ sat_s= inf\n"), refuse},
      // libFuzzer: toml++ reached code it marks unreachable on a non-ASCII byte in a table header; refused
      // before toml++ sees it (core/cluster_config.cpp, check_ascii: ASCII but for comment lines).
      {"cluster_file", "toml++ unreachable on U+FEFB in a header", text("[[0\xef\xbb\xbb"), refuse},
      {"cluster_file", "toml++ unreachable on non-ASCII after a value", text("ll= 21\"\"\"-4\xc9\x8ao\"\"\"- \nHH_p_b"),
       refuse},
      // libFuzzer: a string with a line break and ''' was formatted as a multi-line literal string that the
      // ''' inside ended early, so the file handed to node processes did not parse back.
      {"cluster_file", "''' in a string with a line break", text("[model]\nname = \"a'''@b\\nc\"\n"), accepted},
      // libFuzzer + UBSan: a '#' line inside a multi-line string passed for a comment line, so non-ASCII in it
      // reached toml++'s unreachable code.
      {"cluster_file", "non-ASCII on a '#' line inside a multi-line string", text("\"\"\"Y\n# \"9Y37[[\\\xef\xaf\xbf"),
       refuse},
  };
  return out;
}

}  // namespace dualpath::fuzz
