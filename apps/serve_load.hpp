#pragma once
// `dualpath bench serve` (docs/guide/serve.md, "Load"): a load generator over HTTP in the style of aiperf.
// Each agent of a workload (a trajectory, a Mooncake request, a preset) is a conversation: turn after turn a
// streamed text completion of the turn's token ids (core/turn_tokens.hpp, the same ids `run`'s in-process
// clients send), its generated ids carried into the next prompt, tool time slept between turns when asked.
// What the client saw becomes a run summary in `run`'s report shape: TTFT, TPOT, inter-token and end-to-end
// latency, cached tokens, errors by status, goodput under the SLO.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "apps/workload.hpp"
#include "report/run_report.hpp"

namespace dualpath::cli {

struct load_target {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string api_key;       // sent as Bearer when set
  uint32_t concurrency = 0;  // conversations at once (0: every agent at its arrival)
  double request_timeout_s = 300;
  report::serving_slo slo;  // goodput: requests within both
  // Added to the workload's seed for the prompt ids only: a later run against the same server (a sweep's next
  // rate) sends new prompts, so the blocks the server stored for the runs before it are not hits.
  uint64_t token_seed = 0;
  // This share of turns (a seeded draw per agent and turn) is first sent and hung up on after its first
  // token, as a user who stops a generation, then sent again whole: the server must give back what it held.
  double cancel_share = 0;
};

// What one run of a workload against the server measured.
struct load_result {
  report::run_summary summary;
  std::map<int, uint64_t> errors_by_status;  // 0: the connection failed or the stream ended without [DONE]
  double requests_per_s = 0, output_tokens_per_s = 0, goodput_rps = 0;
  uint64_t cached_tokens = 0, prompt_tokens = 0;
  uint64_t hung_up = 0;          // requests hung up on after their first token (cancel_share)
  nlohmann::json extra() const;  // what the report adds to the run's object
};

// The served model's name and vocabulary, from GET /v1/models (user_error naming the address if it does not
// answer, or answers with no model).
struct served_model_info {
  std::string name;
  uint32_t vocab = 0;
};
served_model_info ask_model(const load_target& t);

// Replays `agents` against the server at `t` and reports; `label` names the run. Every request is bounded by
// the target's timeout, and a conversation ends at its first failed turn (as a run's agent does).
// `on_progress(done, total, failed)` is called about once a second.
load_result run_load(const load_target& t, const served_model_info& model, const std::vector<workload_agent>& agents,
                     const workload_options& w, const std::string& label,
                     const std::function<void(uint64_t, uint64_t, uint64_t)>& on_progress);

}  // namespace dualpath::cli
