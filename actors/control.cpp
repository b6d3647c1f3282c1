// The scheduler's control port actor: checks the proof of the cluster's secret, then forwards `policy
// set|get` and `stats` to the scheduler (docs/design.md §7.5, §13).
#include "actors/control.hpp"
#include "protocol/errors.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "protocol/scheduler_codec.hpp"

namespace dualpath::actors {

namespace {

// Ok, or the error a refused command gets; the refusal is logged (never the proof) and counted.
caf::error admit(control_actor::pointer self, const control_gate& gate, const std::string& proof, const char* what) {
  if (proof_matches(gate.proof, proof)) return {};
  const auto n = ++gate.refused->commands;
  const auto sender = self->current_sender();
  spdlog::warn("control port: refused '{}' from {}: wrong cluster secret ({} refused so far)", what,
               sender ? caf::to_string(sender->node()) : std::string("an anonymous peer"), n);
  return make_failure(errc::bad_input, "control port: wrong cluster secret");
}

control_actor::behavior_type control(control_actor::pointer self, const scheduler_actor& scheduler,
                                     const control_gate& gate) {
  self->link_to(scheduler);  // no control port outlives its scheduler (and the other way round)
  using status_reply = caf::result<envelope<schema::PolicyStatus>>;
  return {
      [=](atom::policy, atom::set, const std::string& proof, const std::string& name) -> status_reply {
        if (auto e = admit(self, gate, proof, "policy set")) return e;
        return self->delegate(scheduler, atom::policy_v, atom::set_v, name);
      },
      [=](atom::policy, atom::get, const std::string& proof) -> status_reply {
        if (auto e = admit(self, gate, proof, "policy get")) return e;
        return self->delegate(scheduler, atom::policy_v, atom::get_v);
      },
      [=](atom::stats, const std::string& proof) -> caf::result<envelope<schema::SchedulerStats>> {
        if (auto e = admit(self, gate, proof, "stats")) return e;
        // The scheduler's counters plus this port's refusals, which only the port knows.
        auto rp = self->make_response_promise<envelope<schema::SchedulerStats>>();
        self->request(scheduler, gate.scheduler_wait, atom::stats_v)
            .then(
                [=](const envelope<schema::SchedulerStats>& e) mutable {
                  auto c = decode(e);
                  c.refused_commands = gate.refused->commands.load();
                  rp.deliver(encode(c));
                },
                [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
  };
}

}  // namespace

control_actor spawn_control(caf::actor_system& sys, const scheduler_actor& scheduler, control_gate gate) {
  return sys.spawn(control, scheduler, std::move(gate));
}

}  // namespace dualpath::actors
