// The scheduler's control port actor: forwards `policy set|get` and `stats` to the scheduler.
#include "actors/control.hpp"

#include <caf/all.hpp>

namespace dualpath::actors {

namespace {

control_actor::behavior_type control(control_actor::pointer self, scheduler_actor scheduler) {
  self->link_to(scheduler);  // no control port outlives its scheduler (and the other way round)
  return {
      [=](atom::policy, atom::set, const std::string& name) {
        return self->delegate(scheduler, atom::policy_v, atom::set_v, name);
      },
      [=](atom::policy, atom::get) { return self->delegate(scheduler, atom::policy_v, atom::get_v); },
      [=](atom::stats) { return self->delegate(scheduler, atom::stats_v); },
  };
}

}  // namespace

control_actor spawn_control(caf::actor_system& sys, const scheduler_actor& scheduler) {
  return sys.spawn(control, scheduler);
}

}  // namespace dualpath::actors
