#include "bench/schedule_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "core/status.hpp"
#include "core/model_catalog.hpp"
#include "schedule/calibration.hpp"
#include "schedule/policy.hpp"

namespace dualpath::bench {

namespace sch = dualpath::schedule;

namespace {

struct cluster {
  sch::cluster_snapshot snap;
  std::vector<uint32_t> prefill_nodes, decode_nodes;
};

cluster make_cluster(uint32_t engines) {
  cluster c;
  const uint32_t nodes = engines / engines_per_node;
  const uint32_t prefill = std::max<uint32_t>(1, nodes / 3);
  for (uint32_t n = 0; n < nodes; ++n) {
    const auto kind = n < prefill ? sch::role::prefill : sch::role::decode;
    (kind == sch::role::prefill ? c.prefill_nodes : c.decode_nodes).push_back(n);
    auto& node = c.snap.upsert(n, kind);
    for (uint32_t i = 0; i < engines_per_node; ++i)
      node.engines.push_back({n * engines_per_node + i, n, 0, 0, hbm_per_engine});
  }
  return c;
}

}  // namespace

sch::request_info synthetic_request(uint64_t id, std::mt19937_64& rng, uint64_t kv_per_token, uint32_t block) {
  std::uniform_int_distribution<uint64_t> hit(8192, 57344), append(128, 768);
  sch::request_info r;
  r.id = id;
  r.hit_tokens = hit(rng) / block * block;
  r.append_tokens = append(rng);
  r.len = r.hit_tokens + r.append_tokens;
  r.hit_blocks = uint32_t(r.hit_tokens / block);
  r.hit_bytes = r.hit_tokens * kv_per_token;
  r.kv_bytes = r.len * kv_per_token;
  return r;
}

sch::policy_params paper_scale_params() {
  const auto& model = find_model("deepseek-v3.2");
  sch::policy_params params;
  params.kv_bytes_per_token = model.kv_bytes_per_token();
  params.alpha_tokens = sch::alpha_tokens(50e9, params.kv_bytes_per_token);  // 400 Gbps SNIC, 3 s
  params.beta_tokens = sch::beta_tokens(20000);                              // ~20K tokens/s of prefill per GPU, 5 s
  return params;
}

namespace {

// What leaders would report between fetches: prefill engines drained some tokens, SNICs read some
// bytes, decode engines finished some requests and freed their HBM.
void progress(cluster& c, size_t pe_index, size_t de_index, uint64_t pe_drain, uint64_t q_drain) {
  auto& pe = *c.snap.find(c.prefill_nodes[pe_index]);
  for (auto& e : pe.engines) {
    e.tok -= std::min(e.tok, pe_drain);
    e.seq = e.tok ? std::max<uint32_t>(1, e.seq / 2) : 0;
  }
  pe.read_q -= std::min(pe.read_q, q_drain);
  auto& de = *c.snap.find(c.decode_nodes[de_index]);
  for (auto& e : de.engines) {
    e.tok /= 2;
    e.seq /= 2;
    e.free_hbm += (hbm_per_engine - e.free_hbm) / 2;
  }
  de.read_q -= std::min(de.read_q, q_drain);
}

struct one_run {
  double seconds = 0;
  uint64_t fetches = 0, pe = 0, de = 0, split = 0;
};

one_run run_once(const schedule_bench_options& o, const sch::policy_params& params, uint64_t kv_per_token,
                 uint32_t block) {
  cluster c = make_cluster(o.engines);
  auto pol = sch::make_policy(o.policy);
  std::mt19937_64 rng(o.seed);
  std::deque<sch::request_info> waiting;
  for (uint64_t i = 0; i < o.requests; ++i) waiting.push_back(synthetic_request(i, rng, kv_per_token, block));
  one_run r;
  size_t pe_i = 0, de_i = 0;
  const uint64_t q_drain = uint64_t(50e9 * 0.05);  // a 50 GB/s SNIC over 50 ms between reports
  uint64_t idle = 0;
  while (!waiting.empty()) {
    // A leader fetches when its engines have room for about two more average requests.
    progress(c, pe_i, de_i, 2 * 448, q_drain);
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = pol->assign(c.snap, c.prefill_nodes[pe_i], waiting, params);
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++r.fetches;
    for (const auto& a : out) (a.path == sch::read_path::pe ? r.pe : a.path == sch::read_path::de ? r.de : r.split)++;
    idle = out.empty() ? idle + 1 : 0;
    if (idle > 100000) throw std::runtime_error("schedule bench: the synthetic cluster stopped taking work");
    pe_i = (pe_i + 1) % c.prefill_nodes.size();
    de_i = (de_i + 1) % c.decode_nodes.size();
  }
  return r;
}

}  // namespace

schedule_bench_result run_schedule_bench(const schedule_bench_options& o) {
  if (o.engines < 3 * engines_per_node)
    throw user_error("bench schedule: --engines must be at least " + std::to_string(3 * engines_per_node) +
                     " (one prefill and two decode nodes of 8), got " + std::to_string(o.engines));
  if (o.requests == 0) throw user_error("bench schedule: --requests must be positive");
  if (o.repeats == 0) throw user_error("bench schedule: --repeats must be positive");
  sch::make_policy(o.policy);  // unknown name: user_error with the known names

  const auto& model = find_model("deepseek-v3.2");
  const sch::policy_params params = paper_scale_params();

  std::vector<double> us;
  one_run last;
  for (uint32_t i = 0; i < o.repeats; ++i) {
    last = run_once(o, params, params.kv_bytes_per_token, model.block_tokens);
    us.push_back(last.seconds * 1e6 / double(o.requests));
  }
  std::sort(us.begin(), us.end());

  schedule_bench_result r;
  r.policy = o.policy;
  r.engines = o.engines / engines_per_node * engines_per_node;
  r.prefill_nodes = std::max<uint32_t>(1, o.engines / engines_per_node / 3);
  r.decode_nodes = o.engines / engines_per_node - r.prefill_nodes;
  r.requests = o.requests;
  r.fetches = last.fetches;
  r.us_per_request = us[us.size() / 2];
  r.us_per_fetch = r.us_per_request * double(o.requests) / double(std::max<uint64_t>(1, last.fetches));
  r.path_pe = last.pe;
  r.path_de = last.de;
  r.path_split = last.split;
  return r;
}

std::string schedule_bench_result::to_json() const {
  nlohmann::ordered_json j;
  j["policy"] = policy;
  j["engines"] = engines;
  j["prefill_nodes"] = prefill_nodes;
  j["decode_nodes"] = decode_nodes;
  j["requests"] = requests;
  j["fetches"] = fetches;
  j["us_per_request"] = us_per_request;
  j["us_per_fetch"] = us_per_fetch;
  j["goal_us_per_request"] = 5.0;
  j["paths"] = {{"pe", path_pe}, {"de", path_de}, {"split", path_split}};
  return j.dump(2) + "\n";
}

std::string schedule_bench_result::to_text() const {
  return fmt::format(
      "policy {}: {} engines ({} prefill + {} decode nodes of 8), {} requests in {} fetches\n"
      "  {:.3f} µs per request (goal ≤ 5), {:.2f} µs per fetch (median of repeats, one core)\n"
      "  read paths: pe {}, de {}, split {}\n",
      policy, engines, prefill_nodes, decode_nodes, requests, fetches, us_per_request, us_per_fetch, path_pe, path_de,
      path_split);
}

}  // namespace dualpath::bench
