#include "actors/node_actors.hpp"

#include <caf/all.hpp>

#include "actors/runtime_messages.hpp"

namespace dualpath::actors {

namespace {

struct traffic_queue_state {
  static inline const char* name = "traffic_queue";
  runtime::node_io* io = nullptr;
};

traffic_queue_actor::behavior_type traffic_queue(traffic_queue_actor::stateful_pointer<traffic_queue_state> self,
                                                 runtime::node_io* io) {
  self->state.io = io;
  // node_io completes on its progress thread; a response promise may be delivered from there.
  return {
      [=](atom::load, const envelope<schema::LoadBlocks>& keys) {
        auto rp = self->make_response_promise<envelope<schema::LoadResult>>();
        io->load(decode(keys), [rp](runtime::load_result r) mutable { rp.deliver(encode(r)); });
        return rp;
      },
      [=](atom::reserve, uint32_t count) {
        auto rp = self->make_response_promise<envelope<schema::Slots>>();
        io->reserve(count, [rp, count](std::vector<uint32_t> slots, std::string error) mutable {
          rp.deliver(encode(slot_list{std::move(slots), count, std::move(error)}));
        });
        return rp;
      },
      [=](atom::release, const envelope<schema::Slots>& slots) { io->release(decode(slots).slots); },
      [=](atom::copy, const envelope<schema::CopyBatch>& batch) {
        auto rp = self->make_response_promise<std::string>();
        auto b = decode(batch);
        io->copy(std::move(b.ops), b.kv_class ? transport::traffic_class::kv : transport::traffic_class::model,
                 [rp](std::string error) mutable { rp.deliver(std::move(error)); });
        return rp;
      },
  };
}

struct compute_state {
  static inline const char* name = "compute_worker";
  std::shared_ptr<gpu::compute_backend> backend;

  // Exceptions from a backend (e.g. a refused allocation) become error replies, never a dead worker.
  template <class F>
  std::string guarded(F&& f) {
    try {
      f();
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

compute_actor::behavior_type compute_worker(compute_actor::stateful_pointer<compute_state> self,
                                            std::shared_ptr<gpu::compute_backend> backend) {
  self->state.backend = std::move(backend);
  auto& st = self->state;
  return {
      [&st](atom::start, prefill_job_ptr job) {
        return st.guarded([&] { job->pass = st.backend->begin_prefill(job->items); });
      },
      [&st](atom::layer, prefill_job_ptr job, layer_inputs_ptr in) {
        return st.guarded([&] { job->pass->run_layer(in->layer, in->cached, in->new_kv); });
      },
      [&st](atom::finish, prefill_job_ptr job) {
        return st.guarded([&] { job->tokens = job->pass->finish(); });
      },
      [&st](atom::decode, decode_job_ptr job) {
        return st.guarded([&] { job->tokens = st.backend->decode_step(job->items); });
      },
  };
}

}  // namespace

traffic_queue_actor spawn_traffic_queue(caf::actor_system& sys, runtime::node_io& io) {
  return sys.spawn(traffic_queue, &io);
}

compute_actor spawn_compute_worker(caf::actor_system& sys, std::shared_ptr<gpu::compute_backend> backend) {
  return sys.spawn<caf::detached>(compute_worker, std::move(backend));
}

}  // namespace dualpath::actors
