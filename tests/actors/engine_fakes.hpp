#pragma once
// Engine tests under CAF's test coordinator: the real prefill/decode engines against fake neighbours (a
// traffic queue per node, a compute worker per engine, leaders, one agent client, a decode engine). Every
// fake records what it receives and answers as its script says: now, later on command (held), or with an
// error. Held requests are answered from inside the fake (through atom::complete), so the engine sees a
// reply from the right actor; held copies an engine posted to its own node (fake_node) are answered into the
// engine's mailbox, as the node's progress thread would. Nothing sleeps and nothing depends on wall-clock speed.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/engines.hpp"
#include "core/block_key.hpp"
#include "gpu/backend.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"

// Vectors in failure messages as [a, b, c] instead of {?}.
namespace doctest {
template <class T>
struct StringMaker<std::vector<T>> {
  static String convert(const std::vector<T>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::string(toString(v[i]).c_str());
    return String((out + "]").c_str());
  }
};
}  // namespace doctest

namespace engine_test {

using namespace dualpath;
using namespace dualpath::actors;

enum class answer { now, hold, fail };

// ---- traffic queue ----
struct copy_call {
  copy_batch batch;
  caf::typed_response_promise<uint64_t> promise;  // a copy asked of the traffic queue's actor
  std::function<void(status)> local;              // one posted straight to the engine's own node
  bool done = false;                              // answered (at once, or later on command)
  uint64_t posted = 0, answered = 0;              // when, on the queue's event clock

  // Answers it now (`s` ok: the bytes, else the failure), through the node's callback or the queue's promise
  // (then from inside that queue, so the engine sees the reply from the right actor).
  void finish(uint64_t& clock, const status& s);
};

struct tq_script {
  answer copy = answer::now, reserve = answer::now, load = answer::now;
  std::string why = "injected fault";
  uint32_t next_slot = 0;  // slots handed out by reserve and load, counting up
  std::vector<std::vector<block_key>> loads;
  std::vector<uint64_t> load_requests;  // the request each load names
  std::vector<uint32_t> reserves;
  std::vector<uint32_t> released;  // every slot given back, in order
  std::vector<copy_call> copies;
  uint64_t clock = 0;  // counts copies posted and answered

  std::vector<uint32_t> take(size_t n) {
    std::vector<uint32_t> s;
    for (size_t i = 0; i < n; ++i) s.push_back(next_slot++);
    return s;
  }
  // A copy posted (to the queue's actor or straight to the node), answered at once unless copies are held.
  copy_call& record(copy_batch b) {
    copy_call c;
    c.batch = std::move(b);
    c.done = copy != answer::hold;
    c.posted = ++clock;
    if (c.done) c.answered = ++clock;
    copies.push_back(std::move(c));
    return copies.back();
  }
};

inline uint64_t batch_bytes(const copy_batch& b) {
  uint64_t n = 0;
  for (auto& op : b.ops) n += op.length;
  return n;
}

inline void copy_call::finish(uint64_t& clock, const status& s) {
  done = true;
  answered = ++clock;
  if (local) local(s);
  else if (s.ok()) promise.deliver(batch_bytes(batch));
  else promise.deliver(to_error(s));
}

inline traffic_queue_actor::behavior_type fake_traffic_queue(traffic_queue_actor::pointer self,
                                                             std::shared_ptr<tq_script> s) {
  return {
      [=](atom::load, const envelope<schema::LoadBlocks>& e) -> caf::result<envelope<schema::LoadResult>> {
        auto keys = decode(e);
        s->loads.push_back(keys);
        s->load_requests.push_back(load_request(e));
        if (s->load == answer::fail) return make_failure(errc::unavailable, s->why);
        runtime::load_result r;
        r.slots = s->take(keys.size());
        r.valid = uint32_t(keys.size());
        return encode(r);
      },
      [=](atom::reserve, uint32_t n) -> caf::result<envelope<schema::Slots>> {
        s->reserves.push_back(n);
        if (s->reserve == answer::fail) return make_failure(errc::capacity, s->why);
        return encode(slot_list{s->take(n), n});
      },
      [=](atom::release, const envelope<schema::Slots>& e) {
        for (auto x : decode(e).slots) s->released.push_back(x);
      },
      [=](atom::adopt, const envelope<schema::Slots>&, const caf::actor_addr&) { return true; },
      [=](atom::lost, const caf::node_id&) {},
      [=](atom::copy, const envelope<schema::CopyBatch>& e) -> caf::result<uint64_t> {
        auto& c = s->record(decode(e));
        if (s->copy == answer::fail) return make_failure(errc::transfer, s->why);
        if (s->copy == answer::now) return batch_bytes(c.batch);
        c.promise = self->make_response_promise<uint64_t>();
        return c.promise;
      },
      [](atom::complete, completion_ptr f) { (*f)(); },
  };
}

// ---- an engine's own node (runtime/node_doors.hpp) ----
// The real data plane's HBM arenas and write-back; the copies an engine posts straight to its own node are
// scripted as the traffic queue's, into the same script, and answered through the engine's mailbox as the
// real node's would be.
class fake_node final : public runtime::node_services {
 public:
  fake_node(runtime::node_services& real, std::shared_ptr<tq_script> s) : real_(real), s_(std::move(s)) {}
  gpu::hbm_arena& hbm(uint32_t engine) override { return real_.hbm(engine); }
  void persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done) override {
    real_.persist(key, parent, payload, std::move(done));
  }
  runtime::read_queue_report take_read_report() override { return real_.take_read_report(); }
  void copy(std::vector<runtime::copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) override {
    auto& c = s_->record({std::move(ops), tc});
    if (s_->copy == answer::hold) c.local = std::move(done);
    else if (s_->copy == answer::fail) done(status(errc::transfer, s_->why));
    else done(status{});
  }

 private:
  runtime::node_services& real_;
  std::shared_ptr<tq_script> s_;
};

// ---- compute worker ----
enum class work { start, layer, finish, decode };

struct compute_call {
  work kind = work::start;
  uint32_t layer = 0;
  std::vector<uint64_t> ids;  // request of each item
  uint32_t value = 0;         // the answer when it succeeds
  caf::typed_response_promise<uint32_t> promise;
  bool done = false;
};

struct compute_script {
  answer start = answer::now, layer = answer::now, finish = answer::now, decode = answer::now;
  std::string why = "injected kernel fault";
  std::vector<compute_call> calls;

  // The tokens the fake produces: the first token of a request, and a decode step's token at a position.
  static int32_t first_token(uint64_t id) { return int32_t(7000 + id); }
  static int32_t decode_token(uint32_t position) { return int32_t(1000 + position); }
  std::vector<uint32_t> layers() const {
    std::vector<uint32_t> out;
    for (auto& c : calls)
      if (c.kind == work::layer) out.push_back(c.layer);
    return out;
  }
  size_t count(work k) const {
    size_t n = 0;
    for (auto& c : calls) n += c.kind == k;
    return n;
  }
};

// The worker's interface plus a hook to run a closure inside it (to answer a held request).
using fake_compute_actor = compute_actor::extend<caf::reacts_to<atom::complete, completion_ptr>>;

inline fake_compute_actor::behavior_type fake_compute(fake_compute_actor::pointer self,
                                                      std::shared_ptr<compute_script> s) {
  auto reply = [self, s](answer a, compute_call c) -> caf::result<uint32_t> {
    c.done = a != answer::hold;
    if (a == answer::hold) c.promise = self->make_response_promise<uint32_t>();
    s->calls.push_back(c);
    if (a == answer::fail) return make_failure(errc::compute, s->why);
    if (a == answer::now) return c.value;
    return s->calls.back().promise;
  };
  // The call of a job that emits one token per item (finish, decode): the job's tokens come from `token_of`.
  auto emitting_call = [](work kind, auto& job, auto token_of) {
    compute_call c;
    c.kind = kind;
    job.tokens.clear();
    for (auto& it : job.items) {
      c.ids.push_back(it.request_id);
      job.tokens.push_back(token_of(it));
    }
    c.value = uint32_t(job.items.size());
    return c;
  };
  return {
      [=](atom::start, prefill_job_ptr job) {
        compute_call c;
        for (auto& it : job->items) c.ids.push_back(it.request_id);
        c.value = uint32_t(job->items.size());
        return reply(s->start, c);
      },
      [=](atom::layer, prefill_job_ptr job, layer_inputs_ptr in) {
        compute_call c;
        c.kind = work::layer;
        c.layer = in->layer;
        for (auto& it : job->items) c.ids.push_back(it.request_id);
        c.value = in->layer;
        return reply(s->layer, c);
      },
      [=](atom::finish, prefill_job_ptr job) {
        return reply(s->finish, emitting_call(work::finish, *job, [](const auto& it) {
                       return it.emit_token ? compute_script::first_token(it.request_id) : -1;
                     }));
      },
      [=](atom::decode, decode_job_ptr job) {
        return reply(s->decode, emitting_call(work::decode, *job, [](const auto& it) {
                       return compute_script::decode_token(it.position);
                     }));
      },
      [](atom::complete, completion_ptr f) { (*f)(); },
  };
}

// ---- leader, agent client, decode engine: recorders ----
struct engine_report {
  uint32_t engine = 0, seq = 0;
  uint64_t tok = 0, free_hbm = 0;
  std::vector<uint64_t> ids;  // the requests the numbers count
};
struct recorder {
  std::vector<engine_report> reports;
  std::vector<turn_payload> turns;  // what the client hands out, by request id
  std::vector<uint64_t> turn_asks;
  std::vector<turn_result> results;
  std::vector<handoff_info> handoffs;
  std::vector<turn_tokens> streamed;  // tokens of streamed turns, as they came
  std::vector<uint64_t> cancels;      // cancellations a fake engine was sent
};

inline leader_actor::behavior_type fake_leader(std::shared_ptr<recorder> r) {
  return {
      [=](atom::engine_st, uint32_t e, uint32_t seq, uint64_t tok, uint64_t hbm, const std::vector<uint64_t>& ids) {
        r->reports.push_back({e, seq, tok, hbm, ids});
      },
      [](atom::tick) {},
      [](atom::expire) {},
      [](atom::held) { return uint32_t(0); },
  };
}

inline client_actor::behavior_type fake_client(std::shared_ptr<recorder> r) {
  return {
      [=](atom::turn, uint64_t id) -> caf::result<envelope<schema::TurnPayload>> {
        r->turn_asks.push_back(id);
        for (auto& p : r->turns)
          if (p.request == id) return encode(p);
        return make_failure(errc::not_found, "no such turn");
      },
      [=](atom::result, const envelope<schema::TurnResult>& e) { r->results.push_back(decode(e)); },
      [=](atom::tokens, const envelope<schema::TurnTokens>& e) { r->streamed.push_back(decode(e)); },
      [](atom::start) {},
      [](atom::lost, uint32_t, const std::vector<uint64_t>&) {},
      [](atom::expire, uint64_t) {},
  };
}

inline decode_engine_actor::behavior_type fake_decode_engine(std::shared_ptr<recorder> r) {
  return {
      [=](atom::handoff, const envelope<schema::Handoff>& e) { r->handoffs.push_back(decode(e)); },
      [](atom::tick) {},
      [](atom::expire) {},
      [](atom::persisted, uint64_t) {},
      [=](atom::cancel, uint64_t id) { r->cancels.push_back(id); },
  };
}

}  // namespace engine_test
