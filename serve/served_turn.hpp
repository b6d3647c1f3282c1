#pragma once
// One request's turn as the HTTP thread that answers it sees it (docs/design.md §18): asked of a serving
// client, its tokens taken as the engines make them, its result, or its cancellation when the client hangs up
// or the deadline passes. Not thread-safe: one HTTP thread owns it.
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "actors/vocabulary.hpp"
#include "protocol/request_ids.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::serve {

class served_turn {
 public:
  // Asks `client` (free, taken from the pool) to run `ask`: its prompt, tokens to generate, stream, stop ids.
  served_turn(caf::actor_system& sys, actors::serve_client_actor client, protocol::turn_payload ask);
  ~served_turn();  // cancels the turn if it is not done
  served_turn(const served_turn&) = delete;
  served_turn& operator=(const served_turn&) = delete;

  // Waits at most `wait` for news (tokens or the end); false when none came.
  bool next(std::chrono::milliseconds wait);
  // Generated tokens that arrived since the last call, in order (for a turn not streamed: all at the end).
  std::vector<int32_t> take_tokens();
  // Every generated token that arrived so far, in order (taken or not).
  const std::vector<int32_t>& tokens() const { return got_; }
  bool done() const { return result_.has_value(); }
  const protocol::turn_result& result() const { return *result_; }
  // Hit blocks the PE loaded intact, known from the first token on (the result has them too).
  uint32_t valid_hit_blocks() const { return result_ ? result_->valid_hit_blocks : valid_hit_blocks_; }
  bool started() const { return !got_.empty() || done(); }
  // The client gave up: the turn is cancelled wherever it is (its buffer slots and HBM go back).
  void cancel();
  // A turn run again after a node was lost (docs/design.md §18) sends its tokens from the first: those the
  // client already has are compared, not taken again. How many were, and how many differed.
  uint64_t rechecked() const { return rechecked_; }
  uint64_t recheck_differed() const { return recheck_differed_; }
  // Run again after a node loss: its result came from a later attempt, or tokens were made twice.
  bool rerun() const { return (result_ && protocol::attempt_of(result_->request) > 0) || rechecked_ > 0; }

 private:
  void on_tokens(const protocol::turn_tokens& t);
  // Takes tokens [first, first + tokens.size()) where they extend got_ (first <= got_.size()).
  void extend(uint32_t first, const std::vector<int32_t>& tokens);
  caf::scoped_actor self_;
  actors::serve_client_actor client_;
  std::vector<int32_t> got_;  // tokens [0, got_.size()) in order
  size_t taken_ = 0;
  std::map<uint32_t, std::vector<int32_t>> ahead_;  // arrived before the tokens in front of them
  std::optional<protocol::turn_result> result_;
  bool cancelled_ = false;
  uint32_t valid_hit_blocks_ = 0;
  uint64_t rechecked_ = 0, recheck_differed_ = 0;
};

}  // namespace dualpath::serve
