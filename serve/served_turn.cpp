#include "serve/served_turn.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace dualpath::serve {

served_turn::served_turn(caf::actor_system& sys, actors::serve_client_actor client, protocol::turn_payload ask)
    : self_(sys), client_(std::move(client)) {
  self_->send(client_, atom::ask_v, protocol::encode(ask));
}

served_turn::~served_turn() {
  if (!done()) cancel();
}

bool served_turn::next(std::chrono::milliseconds wait) {
  if (done()) return false;
  bool news = false;
  self_->receive(
      [&](atom::tokens, const protocol::envelope<schema::TurnTokens>& e) {
        on_tokens(protocol::decode(e));
        news = true;
      },
      [&](atom::result, const protocol::envelope<schema::TurnResult>& e) {
        result_ = protocol::decode(e);
        news = true;
      },
      caf::after(wait) >> [] {});
  if (result_ && result_->error.empty()) {
    // The result has every token: those not streamed (or still on their way) are taken from it.
    const auto& all = result_->generated;
    if (!std::equal(got_.begin(), got_.begin() + std::min(got_.size(), all.size()), all.begin()))
      spdlog::error("serve: request {:x}: streamed tokens differ from its result", result_->request);
    extend(0, all);
  }
  return news;
}

// Tokens of one turn come from its PE (the first) and its DE (the rest): two senders, so they may arrive out
// of order; a re-sent range (a turn run again) is taken only where it extends what arrived.
void served_turn::on_tokens(const protocol::turn_tokens& t) {
  valid_hit_blocks_ = t.valid_hit_blocks;
  if (t.first > got_.size()) {
    ahead_[t.first] = t.tokens;
    return;
  }
  // A range that starts inside what arrived is a re-run's (docs/design.md §18): its overlap is compared.
  for (size_t i = t.first; i < std::min<size_t>(got_.size(), t.first + t.tokens.size()); ++i) {
    ++rechecked_;
    if (got_[i] != t.tokens[i - t.first]) ++recheck_differed_;
  }
  extend(t.first, t.tokens);
  for (auto it = ahead_.begin(); it != ahead_.end() && it->first <= got_.size(); it = ahead_.erase(it))
    extend(it->first, it->second);
}

void served_turn::extend(uint32_t first, const std::vector<int32_t>& tokens) {
  const size_t skip = got_.size() - first;
  if (skip < tokens.size()) got_.insert(got_.end(), tokens.begin() + ptrdiff_t(skip), tokens.end());
}

std::vector<int32_t> served_turn::take_tokens() {
  std::vector<int32_t> out(got_.begin() + taken_, got_.end());
  taken_ = got_.size();
  return out;
}

void served_turn::cancel() {
  if (cancelled_ || done()) return;
  cancelled_ = true;
  self_->send(client_, atom::cancel_v);
}

}  // namespace dualpath::serve
