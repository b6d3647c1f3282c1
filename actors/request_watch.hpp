#pragma once
// An actor's own deadlines for its busiest requests: an engine's and a prefill leader's (docs/design.md §14,
// "Bounded waits").
//
// CAF 0.17 hands every request that has a finite timeout to its clock thread: a push into the clock's queue,
// which wakes that thread whenever the queue was empty, and the timeout is never taken back when the answer
// comes. An engine asks its traffic queue and its compute worker three or four times a layer of a pass and
// twice a decode step; on the scaled 64K experiment that was about half of the clock thread's 50,000 wake-ups
// in an 11-s run, and the thread took 4-5% of the samples of two cores that also compute. So these requests
// go out without a CAF timeout, and the watch keeps their deadlines: one `expire` message to the engine
// itself, armed for the earliest deadline (again only when a new one is earlier than the one armed), fails
// every request past its deadline as the clock would have: the answer is `sec::request_timeout` and the
// request's own error handler runs. An answer takes its request off the watch.
//
// A job an engine posts straight to its own node's data plane (runtime/node_doors.hpp) is watched the same
// way (`local`): it gets a request id, its handlers wait for a response with that id, and whichever thread
// finishes the job puts the answer into the actor's mailbox as that response. So the handlers run on the
// actor's thread, a timeout answers them as for a request, and no actor sits between the engine and the
// job (two hand-offs between threads fewer a copy than through the traffic queue's actor).
#include <caf/actor_control_block.hpp>
#include <caf/behavior.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/detail/type_traits.hpp>
#include <caf/message_id.hpp>
#include <caf/sec.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/atoms.hpp"

namespace dualpath::actors {

// The bookkeeping, apart from any actor: deadlines by answer, and when the next check is due.
class deadline_book {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Notes an answer's deadline. True when no check is armed for that time or earlier: arm one for `deadline`.
  bool add(caf::message_id answer, time_point deadline);
  // The answer came (or failed): it is no longer watched.
  void remove(caf::message_id answer) { pending_.erase(answer); }
  // A check at `now`: removes and returns the answers past their deadline (ties in no particular order), and
  // says when the next check is due, if any answer is still watched and no check is armed for then or earlier.
  std::vector<caf::message_id> take_expired(time_point now, std::optional<time_point>& next_check);
  size_t size() const { return pending_.size(); }

 private:
  std::unordered_map<caf::message_id, time_point> pending_;
  std::optional<time_point> armed_;  // the earliest check on its way
};

// A response handle whose handlers first take the request off the watch.
template <class Handle>
class watched_response {
 public:
  watched_response(Handle h, deadline_book* book) : h_(std::move(h)), book_(book) {}

  template <class F, class OnError>
  void then(F f, OnError e) {
    const auto id = h_.id();
    h_.then(unwatch_first(id, std::move(f)), unwatch_first(id, std::move(e)));
  }

 private:
  template <class F>
  auto unwatch_first(caf::message_id id, F f) {
    return wrap(id, std::move(f), typename caf::detail::get_callable_trait<F>::arg_types{});
  }
  // The same parameter types as the handler's, so CAF checks them against the interface as before.
  template <class F, class... Args>
  auto wrap(caf::message_id id, F f, caf::detail::type_list<Args...>) {
    return [book = book_, id, f = std::move(f)](Args... xs) mutable {
      book->remove(id);
      return f(std::forward<Args>(xs)...);
    };
  }

  Handle h_;
  deadline_book* book_;
};

// Delivers the answer of a local job (see above) into its actor's mailbox, from any thread; delivered once.
class local_answer {
 public:
  local_answer(caf::strong_actor_ptr actor, caf::message_id response) : actor_(std::move(actor)), response_(response) {}
  template <class T>
  void deliver(T&& x) const {
    actor_->enqueue(caf::make_mailbox_element(nullptr, response_, {}, std::forward<T>(x)), nullptr);
  }

 private:
  caf::strong_actor_ptr actor_;
  caf::message_id response_;
};

// The handle of a local job's answer: `then` waits for the response, as a request's handle does.
template <class Self>
class local_handle {
 public:
  local_handle(Self* self, caf::message_id response) : self_(self), response_(response) {}
  caf::message_id id() const { return response_; }
  template <class F, class OnError>
  void then(F f, OnError e) const {
    self_->add_multiplexed_response_handler(response_, caf::behavior{std::move(f), std::move(e)});
  }

 private:
  Self* self_;
  caf::message_id response_;
};

class request_watch {
 public:
  // `self->request(dest, timeout, xs...)`, its deadline kept here instead of by CAF's clock thread.
  template <class Self, class Dest, class... Ts>
  auto request(Self* self, const Dest& dest, caf::timespan timeout, Ts&&... xs) {
    auto h = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
    if (book_.add(h.id(), self->clock().now() + timeout)) self->delayed_send(self, timeout, atom::expire_v);
    return watched_response<decltype(h)>{std::move(h), &book_};
  }

  // A local job (see above): `post` gets the local_answer to deliver the job's result or a caf::error to.
  template <class Self, class Post>
  auto local(Self* self, caf::timespan timeout, Post post) {
    const auto response = self->new_request_id(caf::message_priority::normal).response_id();
    if (book_.add(response, self->clock().now() + timeout)) self->delayed_send(self, timeout, atom::expire_v);
    post(local_answer{caf::strong_actor_ptr{self->ctrl()}, response});
    return watched_response<local_handle<Self>>{{self, response}, &book_};
  }

  // The actor's `expire` handler: each request past its deadline gets `request_timeout` as its answer.
  template <class Self>
  void on_expire(Self* self) {
    const auto now = self->clock().now();
    std::optional<std::chrono::steady_clock::time_point> next;
    for (const auto id : book_.take_expired(now, next))
      self->eq_impl(id, self->ctrl(), self->context(), caf::sec::request_timeout);
    if (next) self->delayed_send(self, *next - now, atom::expire_v);
  }

 private:
  deadline_book book_;
};

}  // namespace dualpath::actors
