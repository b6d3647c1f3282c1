// The compute worker ("GPU actor") of an engine: runs prefill layers and decode steps on its backend, on a
// thread of its own because kernels block.
#include <caf/all.hpp>

#include "actors/node_actors.hpp"
#include "core/faults.hpp"
#include "core/progress.hpp"
#include "protocol/errors.hpp"

namespace dualpath::actors {

namespace {

struct compute_state {
  static inline const char* name = "compute_worker";
  std::shared_ptr<gpu::compute_backend> backend;

  // Runs one piece of backend work. Exceptions (a refused allocation, a kernel error) and the compute_step
  // fault seam become error replies, never a dead worker.
  template <class F>
  caf::result<uint32_t> guarded(F&& f) {
    try {
      if (faults::fire(faults::point::compute_step)) throw std::runtime_error("injected compute fault");
      return f();
    } catch (const std::exception& e) {
      return make_failure(errc::compute, e.what());
    }
  }

  uint32_t start(prefill_job& job) {
    job.pass = backend->begin_prefill(job.items);
    return uint32_t(job.items.size());
  }
  uint32_t layer(prefill_job& job, const layer_inputs& in) {
    job.pass->run_layer(in.layer, in.cached, in.new_kv);
    progress::count_work();
    return in.layer;
  }
  uint32_t finish(prefill_job& job) {
    job.tokens = job.pass->finish();
    return uint32_t(job.tokens.size());
  }
  uint32_t decode(decode_job& job) {
    job.tokens = backend->decode_step(job.items);
    progress::count_work();
    return uint32_t(job.tokens.size());
  }
};

compute_actor::behavior_type compute_worker(compute_actor::stateful_pointer<compute_state> self,
                                            std::shared_ptr<gpu::compute_backend> backend) {
  self->state.backend = std::move(backend);
  auto& st = self->state;
  return {
      [&st](atom::start, prefill_job_ptr job) { return st.guarded([&] { return st.start(*job); }); },
      [&st](atom::layer, prefill_job_ptr job, layer_inputs_ptr in) {
        return st.guarded([&] { return st.layer(*job, *in); });
      },
      [&st](atom::finish, prefill_job_ptr job) { return st.guarded([&] { return st.finish(*job); }); },
      [&st](atom::decode, decode_job_ptr job) { return st.guarded([&] { return st.decode(*job); }); },
  };
}

}  // namespace

compute_actor spawn_compute_worker(caf::actor_system& sys, std::shared_ptr<gpu::compute_backend> backend) {
  return sys.spawn<caf::detached>(compute_worker, std::move(backend));
}

}  // namespace dualpath::actors
