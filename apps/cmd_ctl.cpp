// `dualpath ctl`: talk to a running scheduler's control port (switch the policy, read counters), and
// `dualpath ctl serve`: a standalone scheduler with a control port, for trying ctl and scripted switches.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/modes.hpp"
#include "core/names.hpp"
#include "protocol/system_config.hpp"
#include "actors/scheduler.hpp"
#include "cluster/control_client.hpp"
#include "apps/command_registry.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "schedule/policy.hpp"

namespace {

using namespace dualpath;

struct ctl_options {
  std::string connect;
  int timeout_ms = 3000;
  std::string secret;  // --secret; else DUALPATH_SECRET
  std::string policy_name;
  // serve
  std::string listen = "127.0.0.1:0";
  std::string policy = "balanced";
  std::vector<std::string> switches;  // "AT_S:POLICY"
  double seconds = 60;
};

// The cluster's secret (docs/design.md §13): both sides of the control port need it.
std::string needed_secret(const ctl_options& o, const char* what) {
  std::string secret = given_secret(o.secret);
  if (secret.empty())
    throw user_error(std::string(what) + ": the cluster's secret is needed: --secret or " + secret_env);
  return secret;
}

template <class F>
void with_client(const ctl_options& o, F f) {
  if (o.connect.empty()) throw user_error("ctl: --connect HOST:PORT is required (the scheduler's control port)");
  if (o.timeout_ms <= 0) throw user_error("ctl: --timeout-ms must be positive");
  const auto [host, port] = cluster::parse_host_port(o.connect, "ctl --connect");
  protocol::system_config cfg;
  caf::actor_system sys{cfg};
  cluster::control_client client(sys, host, port, needed_secret(o, "ctl"), std::chrono::milliseconds(o.timeout_ms));
  f(client);
}

void print_status(const protocol::policy_status& st) {
  cli::print(fmt::format("policy: {}\nknown: {}\n", st.active, join_names(st.known)));
}

void policy_set(const ctl_options& o) {
  with_client(o, [&](cluster::control_client& c) {
    const auto st = c.set_policy(o.policy_name);
    if (!st.ok) throw user_error("ctl policy set: " + st.message + "; the scheduler keeps " + st.active);
    print_status(st);
  });
}

void policy_get(const ctl_options& o) {
  with_client(o, [&](cluster::control_client& c) { print_status(c.get_policy()); });
}

void stats(const ctl_options& o) {
  with_client(o, [&](cluster::control_client& c) {
    const auto s = c.stats();
    cli::print(fmt::format(
        "policy: {}\nwaiting: {}\nsubmitted: {}\nassigned: {}\nfetches: {}\nswitches: {}\n"
        "prefill engines: {}\ndecode engines: {}\nread paths: pe {}, de {}, split {}\nrefused commands: {}\n",
        s.policy, s.waiting, s.submitted, s.assigned, s.fetches, s.switches, s.prefill_engines, s.decode_engines,
        s.assigned_pe, s.assigned_de, s.assigned_split, s.refused_commands));
  });
}

actors::policy_switch parse_switch(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw user_error("ctl serve --switch: expected AT_S:POLICY, got '" + text + "'");
  actors::policy_switch s;
  try {
    size_t used = 0;
    s.at_s = std::stod(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw user_error("ctl serve --switch: '" + text.substr(0, colon) + "' in '" + text + "' is not seconds");
  }
  s.policy = text.substr(colon + 1);
  return s;
}

void serve(const ctl_options& o) {
  const auto [host, port] = cluster::parse_host_port(o.listen, "ctl serve --listen", true);
  if (!(o.seconds > 0)) throw user_error("ctl serve --seconds must be positive");
  actors::control_gate gate{secret_proof(needed_secret(o, "ctl serve"), secret_purpose::control)};
  actors::scheduler_options so;
  so.policy = o.policy;
  for (const auto& s : o.switches) so.switches.push_back(parse_switch(s));
  protocol::system_config cfg;
  caf::actor_system sys{cfg};
  auto sched = actors::spawn_scheduler(sys, so);
  uint16_t bound = 0;
  try {
    bound = cluster::publish_control(sys, sched, port, host, gate);
  } catch (...) {
    caf::anon_send_exit(sched, caf::exit_reason::user_shutdown);
    throw;
  }
  cli::print(
      fmt::format("scheduler control port {}:{} (policy {}), serving for {} s\n", host, bound, o.policy, o.seconds));
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  caf::anon_send_exit(sched, caf::exit_reason::user_shutdown);
}

void setup(CLI::App& root) {
  auto* ctl = root.add_subcommand("ctl", "Control a running scheduler over its control port");
  ctl->require_subcommand(1);
  auto o = std::make_shared<ctl_options>();
  ctl->add_option("--connect", o->connect, "The scheduler's control port, HOST:PORT");
  ctl->add_option("--timeout-ms", o->timeout_ms, "Deadline for connecting and for each answer")->capture_default_str();
  ctl->add_option("--secret", o->secret,
                  "The cluster's secret (default: $DUALPATH_SECRET, which keeps it out of `ps`)");

  auto* policy = ctl->add_subcommand("policy", "Read or switch the active scheduling policy");
  policy->require_subcommand(1);
  auto* set = policy->add_subcommand("set", "Switch the policy for requests not yet assigned");
  set->add_option("name", o->policy_name, join_names(scheduler_policy_names(), " | "))->required();
  set->callback([o] { policy_set(*o); });
  policy->add_subcommand("get", "Print the active policy and the known ones")->callback([o] { policy_get(*o); });
  ctl->add_subcommand("stats", "Print the scheduler's queue length and counters")->callback([o] { stats(*o); });

  auto* srv = ctl->add_subcommand("serve", "Run a standalone scheduler with a control port (to try ctl)");
  srv->add_option("--listen", o->listen, "HOST:PORT to publish the control port on (port 0: any free)")
      ->capture_default_str();
  srv->add_option("--policy", o->policy, "Initial policy")->capture_default_str();
  srv->add_option("--switch", o->switches, "Scripted switch AT_S:POLICY (repeatable)");
  srv->add_option("--seconds", o->seconds, "How long to serve")->capture_default_str();
  srv->callback([o] { serve(*o); });
}

}  // namespace

DUALPATH_COMMAND(setup);
