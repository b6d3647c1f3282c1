#include "actors/agent_client.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <random>

#include "actors/engines.hpp"
#include "protocol/runtime_codec.hpp"
#include "storage/block_store.hpp"

namespace dualpath::actors {

namespace {

struct client_state {
  static inline const char* name = "agent_client";
  client_actor::pointer self = nullptr;
  cluster_view_ptr view;
  agent_script script;
  caf::actor collector;
  uint32_t turn = 0;
  std::vector<int32_t> context;  // previous prompt + kept generation
  turn_payload current;
  bool in_flight = false;

  void start_turn() {
    if (turn >= script.turns.size()) {
      caf::anon_send(collector, atom::finish_v, script.agent);
      return;
    }
    const auto& shape = script.turns[turn];
    const auto& g = view->geometry;
    std::vector<int32_t> prompt;
    if (script.fixed_prompt) {
      prompt = *script.fixed_prompt;
    } else {
      prompt = context;
      if (prompt.size() > shape.hit_candidates) prompt.resize(shape.hit_candidates);
      std::mt19937_64 rng(script.seed * 0x9e3779b97f4a7c15ull ^ (uint64_t(script.agent) << 32) ^ turn);
      std::uniform_int_distribution<int32_t> pick(0, int32_t(view->vocab) - 1);
      while (prompt.size() < shape.prompt) prompt.push_back(pick(rng));
    }
    const auto keys = block_keys(prompt, g.block_tokens);
    const uint32_t hit = uint32_t(view->store->lookup(keys));
    current = {};
    current.request = cluster_view::request_id(script.agent, turn);
    current.agent = script.agent;
    current.turn = turn;
    current.tokens = std::move(prompt);
    current.gen = std::max<uint32_t>(1, shape.gen);
    current.hit_blocks = std::min<uint32_t>(hit, uint32_t((current.tokens.size() - 1) / g.block_tokens));
    current.times.submitted = now_ns();
    in_flight = true;

    schedule::request_info info;
    info.id = current.request;
    info.hit_blocks = current.hit_blocks;
    info.hit_tokens = uint64_t(current.hit_blocks) * g.block_tokens;
    info.append_tokens = current.tokens.size() - info.hit_tokens;
    info.hit_bytes = uint64_t(current.hit_blocks) * g.block_bytes();
    info.len = current.tokens.size() + current.gen;
    info.kv_bytes = uint64_t(g.blocks_for(info.len)) * g.block_bytes();
    if (info.kv_bytes + view->model_traffic_bytes() > view->hbm_bytes()) {
      // No decode engine could ever hold this turn: fail it now rather than let it wait in the queue.
      self->send(self, atom::result_v,
                 encode(failed_turn(current, "turn " + std::to_string(turn) + " of agent " +
                                                 std::to_string(script.agent) + " needs " +
                                                 std::to_string(info.kv_bytes) + " bytes of decode HBM; an engine has " +
                                                 std::to_string(view->hbm_bytes()) + " (hardware.hbm_gb)")));
      return;
    }
    self->request(view->scheduler, std::chrono::seconds(10), atom::submit_v, encode(info))
        .then([](uint64_t) {},
              [this](caf::error& err) {
                spdlog::error("agent {}: scheduler refused turn {}: {}", script.agent, turn, caf::to_string(err));
              });
  }

  envelope<schema::TurnPayload> serve(uint64_t request) {
    if (!in_flight || request != current.request) {
      turn_payload none;
      none.request = request;
      return encode(none);
    }
    return encode(current);
  }

  void on_result(const envelope<schema::TurnResult>& e) {
    auto r = decode(e);
    if (!in_flight || r.request != current.request) return;
    in_flight = false;
    const auto& shape = script.turns[turn];
    const bool verify = script.verify_every > 0 && (turn % script.verify_every) == 0;
    turn_payload sent = current;
    if (!verify) sent.tokens.clear();
    caf::anon_send(collector, atom::result_v, e, encode(sent));
    context = std::move(current.tokens);
    const size_t keep = std::min<size_t>(shape.keep, r.generated.size());
    context.insert(context.end(), r.generated.begin(), r.generated.begin() + keep);
    ++turn;
    if (!r.error.empty()) {
      caf::anon_send(collector, atom::finish_v, script.agent);
      return;
    }
    const uint32_t tool_ms = script.replay_tool_time ? shape.tool_ms : 0;
    if (tool_ms > 0) self->delayed_send(self, std::chrono::milliseconds(tool_ms), atom::start_v);
    else start_turn();
  }
};

client_actor::behavior_type agent_client(client_actor::stateful_pointer<client_state> self, cluster_view_ptr view,
                                         agent_script script, caf::actor collector) {
  auto& st = self->state;
  st.self = self;
  st.view = std::move(view);
  st.script = std::move(script);
  st.collector = std::move(collector);
  return {
      [=](atom::turn, uint64_t request) { return self->state.serve(request); },
      [=](atom::result, const envelope<schema::TurnResult>& e) { self->state.on_result(e); },
      [=](atom::start) { self->state.start_turn(); },
  };
}

}  // namespace

client_actor spawn_agent_client(caf::actor_system& sys, cluster_view_ptr view, agent_script script,
                                caf::actor collector) {
  return sys.spawn(agent_client, std::move(view), std::move(script), std::move(collector));
}

std::vector<int32_t> mooncake_tokens(const mooncake_request& r, uint32_t vocab) {
  std::vector<int32_t> tokens;
  tokens.reserve(r.input_length);
  for (uint64_t id : r.hash_ids) {
    std::mt19937_64 rng(id * 0x9e3779b97f4a7c15ull + 17);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
    for (uint32_t i = 0; i < mooncake_block_tokens && tokens.size() < r.input_length; ++i) tokens.push_back(pick(rng));
  }
  std::mt19937_64 rng(r.timestamp_ms * 31 + r.input_length);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
  while (tokens.size() < r.input_length) tokens.push_back(pick(rng));
  if (tokens.empty()) tokens.push_back(0);
  return tokens;
}

}  // namespace dualpath::actors
