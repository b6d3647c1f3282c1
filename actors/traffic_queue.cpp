// The traffic queue of a node: its handlers hand the work to the node's data plane (runtime/node_doors.hpp). The data plane finishes on
// its own threads; each completion comes back here as a message, so response promises are delivered on
// this actor's thread.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <set>

#include "actors/node_actors.hpp"
#include "actors/slot_holders.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

namespace {

struct traffic_queue_state {
  static inline const char* name = "traffic_queue";
  runtime::data_plane* io = nullptr;
  traffic_queue_actor handle;            // this actor, for completions sent from the data plane's threads
  slot_holders<caf::actor_addr> remote;  // slots engines of other processes hold here
  std::set<caf::node_id> lost;           // processes of lost nodes: what they are handed from now on goes back

  // The sender of the message being handled, when it lives in another process (its slots are recorded).
  // Asked before make_response_promise, which takes the sender from the message.
  static caf::actor_addr remote_sender(traffic_queue_actor::pointer self) {
    const auto& s = self->current_sender();
    return s && s->node() != self->node() ? caf::actor_cast<caf::actor_addr>(s) : caf::actor_addr{};
  }
  // Slots a load or reservation got for `holder`. One that finishes after its holder's node was lost (a
  // storage read takes a while) gives them straight back: no one will use or release them.
  void hold(const std::vector<uint32_t>& slots, const caf::actor_addr& holder) {
    if (!holder) return;
    if (lost.count(holder.node()) == 0) return remote.hold(slots, holder);
    spdlog::warn("traffic queue: {} buffer slots given back for an engine of a lost node", slots.size());
    io->release(slots);
  }
  // A lost node's process (docs/design.md §13): what its engines still held here goes back to the buffer. Told
  // by the launcher, not by CAF: between node processes messages may travel through the launcher's process, and
  // then nothing here sees the dead process's connection close.
  void node_lost(const caf::node_id& process) {
    lost.insert(process);
    const auto slots = remote.reclaim_if([&](const caf::actor_addr& a) { return a.node() == process; });
    if (slots.empty()) return;
    spdlog::warn("traffic queue: {} buffer slots taken back from the engines of a lost node", slots.size());
    io->release(slots);
  }

  // Runs `f` on the actor `me` (this one) once the data plane calls back. The callbacks hold the handle, not
  // the state: a completion that arrives after the actor stopped is dropped, never run on freed state.
  template <class F>
  static void back_on(const traffic_queue_actor& me, F f) {
    caf::anon_send(me, atom::complete_v, std::make_shared<std::function<void()>>(std::move(f)));
  }

  caf::typed_response_promise<envelope<schema::LoadResult>> load(traffic_queue_actor::pointer self,
                                                                 const envelope<schema::LoadBlocks>& keys) {
    const auto holder = remote_sender(self);
    auto rp = self->make_response_promise<envelope<schema::LoadResult>>();
    io->load(
        decode(keys),
        [me = handle, rp, holder, self, st = this](runtime::load_result r) mutable {
          back_on(me, [rp, r = std::move(r), holder, self, st]() mutable {
            // No slots at all: the read could not start (the request is larger than the buffer, or the wait
            // for slots timed out). Otherwise the valid prefix is data, whatever ended it.
            if (r.slots.empty() && !r.status.ok()) {
              rp.deliver(to_error(r.status));
              return;
            }
            st->hold(r.slots, holder);
            rp.deliver(encode(r));
          });
        },
        load_request(keys));
    return rp;
  }

  caf::typed_response_promise<envelope<schema::Slots>> reserve(traffic_queue_actor::pointer self, uint32_t count) {
    const auto holder = remote_sender(self);
    auto rp = self->make_response_promise<envelope<schema::Slots>>();
    io->reserve(count, [me = handle, rp, count, holder, self, st = this](result<std::vector<uint32_t>> slots) mutable {
      back_on(me, [rp, count, slots = std::move(slots), holder, self, st]() mutable {
        if (!slots.ok()) {
          rp.deliver(to_error(slots.error()));
          return;
        }
        st->hold(slots.value(), holder);
        rp.deliver(encode(slot_list{std::move(slots).value(), count}));
      });
    });
    return rp;
  }

  caf::typed_response_promise<uint64_t> copy(traffic_queue_actor::pointer self, const envelope<schema::CopyBatch>& e) {
    auto rp = self->make_response_promise<uint64_t>();
    auto batch = decode(e);
    uint64_t bytes = 0;
    for (const auto& op : batch.ops) bytes += op.length;
    io->copy(std::move(batch.ops), batch.traffic, [me = handle, rp, bytes](status s) mutable {
      back_on(me, [rp, bytes, s = std::move(s)]() mutable {
        if (!s.ok()) rp.deliver(to_error(s));
        else rp.deliver(bytes);
      });
    });
    return rp;
  }
};

traffic_queue_actor::behavior_type traffic_queue(traffic_queue_actor::stateful_pointer<traffic_queue_state> self,
                                                 runtime::data_plane* io) {
  auto& st = self->state;
  st.io = io;
  st.handle = caf::actor_cast<traffic_queue_actor>(self);
  return {
      [self](atom::load, const envelope<schema::LoadBlocks>& keys) { return self->state.load(self, keys); },
      [self](atom::reserve, uint32_t count) { return self->state.reserve(self, count); },
      [self](atom::release, const envelope<schema::Slots>& e) {
        const auto slots = decode(e).slots;
        self->state.remote.release(slots);
        self->state.io->release(slots);
      },
      [self](atom::adopt, const envelope<schema::Slots>& e, const caf::actor_addr& from) {
        return self->state.remote.adopt(decode(e).slots, from);
      },
      [self](atom::lost, const caf::node_id& lost) { self->state.node_lost(lost); },
      [self](atom::copy, const envelope<schema::CopyBatch>& batch) { return self->state.copy(self, batch); },
      [](atom::complete, const completion_ptr& f) { (*f)(); },
  };
}

}  // namespace

traffic_queue_actor spawn_traffic_queue(caf::actor_system& sys, runtime::data_plane& io) {
  return sys.spawn(traffic_queue, &io);
}

}  // namespace dualpath::actors
