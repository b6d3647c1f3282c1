// The scheduler actor: handlers are one line each; the work is in scheduler_state and schedule/.
#include "actors/scheduler.hpp"

#include <caf/all.hpp>
#include <kj/exception.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "core/errors.hpp"
#include "schema/scheduler.capnp.h"

namespace dualpath::actors {

namespace sch = dualpath::schedule;

// ---- envelopes ----

envelope<schema::Request> encode(const sch::request_info& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::Request>();
  b.setId(r.id);
  b.setHitTokens(r.hit_tokens);
  b.setAppendTokens(r.append_tokens);
  b.setHitBytes(r.hit_bytes);
  b.setLen(r.len);
  b.setKvBytes(r.kv_bytes);
  b.setHitBlocks(r.hit_blocks);
  return to_envelope<schema::Request>(m);
}

namespace {

sch::request_info read_request(schema::Request::Reader r) {
  sch::request_info out;
  out.id = r.getId();
  out.hit_tokens = r.getHitTokens();
  out.append_tokens = r.getAppendTokens();
  out.hit_bytes = r.getHitBytes();
  out.len = r.getLen();
  out.kv_bytes = r.getKvBytes();
  out.hit_blocks = r.getHitBlocks();
  return out;
}

void write_request(schema::Request::Builder b, const sch::request_info& r) {
  b.setId(r.id);
  b.setHitTokens(r.hit_tokens);
  b.setAppendTokens(r.append_tokens);
  b.setHitBytes(r.hit_bytes);
  b.setLen(r.len);
  b.setKvBytes(r.kv_bytes);
  b.setHitBlocks(r.hit_blocks);
}

schema::ReadPath to_schema(sch::read_path p) {
  switch (p) {
    case sch::read_path::pe: return schema::ReadPath::PE;
    case sch::read_path::de: return schema::ReadPath::DE;
    case sch::read_path::split: return schema::ReadPath::SPLIT;
  }
  return schema::ReadPath::PE;
}

sch::read_path from_schema(schema::ReadPath p) {
  switch (p) {
    case schema::ReadPath::PE: return sch::read_path::pe;
    case schema::ReadPath::DE: return sch::read_path::de;
    case schema::ReadPath::SPLIT: return sch::read_path::split;
  }
  return sch::read_path::pe;
}

}  // namespace

sch::request_info decode(const envelope<schema::Request>& e) {
  envelope_reader<schema::Request> reader(e);
  return read_request(reader.root());
}

envelope<schema::GroupReport> encode_report(sch::role kind, const sch::node_snapshot& node) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::GroupReport>();
  b.setRole(kind == sch::role::prefill ? schema::Role::PREFILL : schema::Role::DECODE);
  auto s = b.initStats();
  s.setNode(node.node);
  s.setReadQ(node.read_q);
  auto list = s.initEngines(unsigned(node.engines.size()));
  for (unsigned i = 0; i < node.engines.size(); ++i) {
    const auto& e = node.engines[i];
    auto x = list[i];
    x.setEngine(e.engine);
    x.setNode(node.node);
    x.setSeqE(e.seq);
    x.setTokE(e.tok);
    x.setFreeHbm(e.free_hbm);
  }
  return to_envelope<schema::GroupReport>(m);
}

envelope<schema::Fetch> encode_fetch(uint32_t node) {
  capnp::MallocMessageBuilder m;
  m.initRoot<schema::Fetch>().setNode(node);
  return to_envelope<schema::Fetch>(m);
}

namespace {
envelope<schema::Assignments> encode(const std::vector<sch::assignment>& list) {
  capnp::MallocMessageBuilder m;
  auto items = m.initRoot<schema::Assignments>().initItems(unsigned(list.size()));
  for (unsigned i = 0; i < list.size(); ++i) {
    const auto& a = list[i];
    auto x = items[i];
    write_request(x.initRequest(), a.request);
    x.setPe(a.pe);
    x.setPeNode(a.pe_node);
    x.setDe(a.de);
    x.setDeNode(a.de_node);
    x.setPath(to_schema(a.path));
    x.setPeBlocks(a.pe_blocks);
  }
  return to_envelope<schema::Assignments>(m);
}
}  // namespace

std::vector<sch::assignment> decode(const envelope<schema::Assignments>& e) {
  envelope_reader<schema::Assignments> reader(e);
  std::vector<sch::assignment> out;
  for (auto x : reader.root().getItems()) {
    sch::assignment a;
    a.request = read_request(x.getRequest());
    a.pe = x.getPe();
    a.pe_node = x.getPeNode();
    a.de = x.getDe();
    a.de_node = x.getDeNode();
    a.path = from_schema(x.getPath());
    a.pe_blocks = x.getPeBlocks();
    out.push_back(a);
  }
  return out;
}

policy_status decode(const envelope<schema::PolicyStatus>& e) {
  envelope_reader<schema::PolicyStatus> reader(e);
  auto r = reader.root();
  policy_status out;
  out.ok = r.getOk();
  out.active = r.getActive();
  for (auto n : r.getKnown()) out.known.emplace_back(n.cStr());
  out.message = r.getMessage();
  return out;
}

scheduler_counters decode(const envelope<schema::SchedulerStats>& e) {
  envelope_reader<schema::SchedulerStats> reader(e);
  auto r = reader.root();
  scheduler_counters c;
  c.policy = r.getPolicy();
  c.waiting = r.getWaiting();
  c.submitted = r.getSubmitted();
  c.assigned = r.getAssigned();
  c.fetches = r.getFetches();
  c.switches = r.getSwitches();
  c.prefill_engines = r.getPrefillEngines();
  c.decode_engines = r.getDecodeEngines();
  c.assigned_pe = r.getAssignedPe();
  c.assigned_de = r.getAssignedDe();
  c.assigned_split = r.getAssignedSplit();
  return c;
}

// ---- state ----

namespace {

// Runs `f`; a malformed envelope or another bad input becomes an error reply, not a dead scheduler.
template <class F>
auto guarded(const char* what, F f) -> caf::result<decltype(f())> {
  try {
    return f();
  } catch (const kj::Exception& e) {
    spdlog::warn("scheduler: malformed {}: {}", what, e.getDescription().cStr());
    return caf::make_error(caf::sec::invalid_argument, std::string("malformed ") + what);
  } catch (const std::exception& e) {
    spdlog::warn("scheduler: bad {}: {}", what, e.what());
    return caf::make_error(caf::sec::invalid_argument, e.what());
  }
}

struct scheduler_state {
  static inline const char* name = "scheduler";

  sch::cluster_snapshot snap;
  std::deque<sch::request_info> waiting;
  std::unique_ptr<sch::policy> active;
  sch::policy_params params;
  std::vector<policy_switch> switches;
  scheduler_counters counters;

  void init(scheduler_options opts) {
    active = sch::make_policy(opts.policy);
    params = opts.params;
    switches = std::move(opts.switches);
  }

  uint64_t submit(const envelope<schema::Request>& e) {
    waiting.push_back(decode(e));
    ++counters.submitted;
    return waiting.size();
  }

  void report(const envelope<schema::GroupReport>& e) {
    try {
      envelope_reader<schema::GroupReport> reader(e);
      auto r = reader.root();
      const auto kind = r.getRole() == schema::Role::PREFILL ? sch::role::prefill : sch::role::decode;
      auto stats = r.getStats();
      auto& node = snap.upsert(stats.getNode(), kind);
      node.read_q = stats.getReadQ();
      node.engines.clear();
      for (auto x : stats.getEngines())
        node.engines.push_back({x.getEngine(), stats.getNode(), x.getSeqE(), x.getTokE(), x.getFreeHbm()});
    } catch (const kj::Exception& ex) {
      spdlog::warn("scheduler: malformed group report dropped: {}", ex.getDescription().cStr());
    }
  }

  envelope<schema::Assignments> fetch(const envelope<schema::Fetch>& e) {
    envelope_reader<schema::Fetch> reader(e);
    const uint32_t node = reader.root().getNode();
    ++counters.fetches;
    const auto out = active->assign(snap, node, waiting, params);
    counters.assigned += out.size();
    for (const auto& a : out) {
      auto& n = a.path == sch::read_path::pe   ? counters.assigned_pe
                : a.path == sch::read_path::de ? counters.assigned_de
                                               : counters.assigned_split;
      ++n;
    }
    return encode(out);
  }

  envelope<schema::PolicyStatus> set_policy(const std::string& name) {
    if (name == active->name()) return status(true, "");
    try {
      active = sch::make_policy(name);
      ++counters.switches;
      spdlog::info("scheduler: policy switched to {} ({} requests waiting)", name, waiting.size());
      return status(true, "");
    } catch (const user_error& e) {
      return status(false, e.what());  // the running policy stays
    }
  }

  envelope<schema::PolicyStatus> status(bool ok, const std::string& message) const {
    capnp::MallocMessageBuilder m;
    auto b = m.initRoot<schema::PolicyStatus>();
    b.setOk(ok);
    b.setActive(std::string(active->name()));
    const auto& names = sch::policy_names();
    auto known = b.initKnown(unsigned(names.size()));
    for (unsigned i = 0; i < names.size(); ++i) known.set(i, names[i]);
    b.setMessage(message);
    return to_envelope<schema::PolicyStatus>(m);
  }

  envelope<schema::SchedulerStats> stats() const {
    capnp::MallocMessageBuilder m;
    auto b = m.initRoot<schema::SchedulerStats>();
    b.setPolicy(std::string(active->name()));
    b.setWaiting(waiting.size());
    b.setSubmitted(counters.submitted);
    b.setAssigned(counters.assigned);
    b.setFetches(counters.fetches);
    b.setSwitches(counters.switches);
    b.setPrefillEngines(uint32_t(snap.engine_count(sch::role::prefill)));
    b.setDecodeEngines(uint32_t(snap.engine_count(sch::role::decode)));
    b.setAssignedPe(counters.assigned_pe);
    b.setAssignedDe(counters.assigned_de);
    b.setAssignedSplit(counters.assigned_split);
    return to_envelope<schema::SchedulerStats>(m);
  }

  void apply_switch(uint32_t index) {
    if (index < switches.size()) set_policy(switches[index].policy);
  }
};

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         scheduler_options opts) {
  self->state.init(std::move(opts));
  const auto& sw = self->state.switches;
  for (uint32_t i = 0; i < sw.size(); ++i) {
    const auto delay = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(sw[i].at_s));
    self->delayed_send(caf::actor_cast<scheduler_actor>(self), delay, atom::scripted_v, i);
  }
  return {
      [=](atom::submit, const envelope<schema::Request>& e) {
        return guarded("request", [&] { return self->state.submit(e); });
      },
      [=](atom::report, const envelope<schema::GroupReport>& e) { self->state.report(e); },
      [=](atom::fetch, const envelope<schema::Fetch>& e) {
        return guarded("fetch", [&] { return self->state.fetch(e); });
      },
      [=](atom::policy, atom::set, const std::string& name) { return self->state.set_policy(name); },
      [=](atom::policy, atom::get) { return self->state.status(true, ""); },
      [=](atom::stats) { return self->state.stats(); },
      [=](atom::scripted, uint32_t index) { self->state.apply_switch(index); },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options options) {
  sch::make_policy(options.policy);  // throws user_error with the known names
  for (const auto& s : options.switches) {
    if (!sch::is_policy_name(s.policy)) sch::make_policy(s.policy);  // throws with the known names
    if (!(s.at_s >= 0)) throw user_error("schedule.switch: at_s must be ≥ 0 seconds, got " + std::to_string(s.at_s));
  }
  std::stable_sort(options.switches.begin(), options.switches.end(),
                   [](const policy_switch& a, const policy_switch& b) { return a.at_s < b.at_s; });
  return sys.spawn(scheduler, std::move(options));
}

}  // namespace dualpath::actors
