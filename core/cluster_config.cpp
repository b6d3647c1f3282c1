#include "core/cluster_config.hpp"
#include "core/modes.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "core/names.hpp"
#include "core/status.hpp"

namespace dualpath {

namespace {
constexpr const char* quota_scopes[] = {"layer", "attention", "forward"};
}  // namespace

const std::vector<std::string>& quota_scope_names() {
  static const std::vector<std::string> names(std::begin(quota_scopes), std::end(quota_scopes));
  return names;
}

const char* to_string(quota_scope_kind k) { return quota_scopes[int(k)]; }

result<quota_scope_kind> parse_quota_scope(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (name == quota_scopes[i]) return quota_scope_kind(i);
  return status(errc::bad_input, unknown_name("quota scope", name, quota_scope_names()));
}

namespace {

class reader {
 public:
  reader(const toml::table& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw user_error(fmt::format("{}: key '{}': {}", origin_, key, why));
  }

  // Refuses keys of `section` that are not in `known` (typos must not silently fall back to defaults).
  const toml::table* section(const std::string& name, const std::set<std::string>& known) const {
    const toml::node* node = root_.get(name);
    if (!node) return nullptr;
    const toml::table* t = node->as_table();
    if (!t) fail(name, "must be a table");
    for (const auto& [k, v] : *t) {
      if (!known.count(std::string(k.str()))) fail(name + "." + std::string(k.str()), "unknown key");
    }
    return t;
  }

  template <class T>
  void get(const toml::table* t, const std::string& sec, const std::string& key, T& out) const {
    if (!t) return;
    const toml::node* n = t->get(key);
    if (!n) return;
    const std::string full = sec + "." + key;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!n->is_string()) fail(full, "must be a string");
      out = n->as_string()->get();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!n->is_boolean()) fail(full, "must be true or false");
      out = n->as_boolean()->get();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (n->is_integer()) out = static_cast<T>(n->as_integer()->get());
      else if (n->is_floating_point()) out = static_cast<T>(n->as_floating_point()->get());
      else fail(full, "must be a number");
      // TOML has nan and inf; every range check below is false for nan, so `mfu = nan` or
      // `timeout_s = inf` passed validation (docs/design.md §16, "Fuzzing") and reached casts to integers.
      if (!std::isfinite(out)) fail(full, "must be a finite number");
    } else {
      if (!n->is_integer()) fail(full, "must be an integer");
      const int64_t v = n->as_integer()->get();
      if (v < 0) fail(full, "must not be negative");
      // A value past the field's type was cut to its low bits (prefill_nodes = 4294967297 ran one node).
      if (uint64_t(v) > uint64_t(std::numeric_limits<T>::max()))
        fail(full, fmt::format("must be at most {}", std::numeric_limits<T>::max()));
      out = static_cast<T>(v);
    }
  }

  const toml::table& root() const { return root_; }

 private:
  const toml::table& root_;
  std::string origin_;
};

// A cluster file is ASCII but for lines that are comments. Checked before toml++ sees the text: on some
// non-ASCII bytes where its parser does not expect them (in a table header; after a value, where a string
// was meant) it reaches code marked unreachable (found by fuzzing, docs/design.md §16). Telling strings
// apart in a malformed file is toml++'s job, so non-ASCII is kept out of everything it has to parse.
void check_ascii(const std::string& text, const std::string& origin) {
  uint32_t line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t", start);
    const bool comment = first < end && text[first] == '#';
    for (size_t i = start; i < end && !comment; ++i)
      if (static_cast<unsigned char>(text[i]) >= 0x80)
        throw user_error(
            fmt::format("{}:{}:{}: byte 0x{:02x}: a cluster file is ASCII (other text only on comment "
                        "lines)",
                        origin, line, i - start + 1, static_cast<unsigned char>(text[i])));
    start = end + 1;
    ++line;
  }
}

}  // namespace

cluster_config parse_cluster_config(const std::string& text, const std::string& origin) {
  check_ascii(text, origin);
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& pos = e.source().begin;
    throw user_error(fmt::format("{}:{}:{}: {}", origin, pos.line, pos.column, e.description()));
  }
  reader r(root, origin);
  for (const auto& [k, v] : root) {
    static const std::set<std::string> sections{"model", "cluster", "hardware", "storage", "schedule", "runtime"};
    if (!sections.count(std::string(k.str()))) r.fail(std::string(k.str()), "unknown section");
  }
  cluster_config c;
  const auto* model = r.section("model", {"name", "backend", "gpu", "mfu", "seed"});
  r.get(model, "model", "name", c.model);
  std::string backend = to_string(c.backend);
  r.get(model, "model", "backend", backend);
  if (auto k = parse_backend_kind(backend)) c.backend = *k;
  else r.fail("model.backend", "must be cpu, cuda or modeled (got '" + backend + "')");
  r.get(model, "model", "gpu", c.gpu);
  r.get(model, "model", "mfu", c.mfu);
  r.get(model, "model", "seed", c.seed);
  const auto* cluster = r.section("cluster", {"prefill_nodes", "decode_nodes", "engines_per_node", "gpus_per_node",
                                              "block_tokens", "pe_group_nodes", "de_group_nodes", "ep_sync"});
  r.get(cluster, "cluster", "prefill_nodes", c.prefill_nodes);
  r.get(cluster, "cluster", "decode_nodes", c.decode_nodes);
  r.get(cluster, "cluster", "engines_per_node", c.engines_per_node);
  // One engine per GPU: a paper-scale cluster file may say gpus_per_node (g of docs/design.md §5) instead.
  if (cluster && cluster->contains("gpus_per_node")) {
    if (cluster->contains("engines_per_node"))
      r.fail("cluster.gpus_per_node", "is another name of engines_per_node; give only one of them");
    r.get(cluster, "cluster", "gpus_per_node", c.engines_per_node);
  }
  r.get(cluster, "cluster", "block_tokens", c.block_tokens);
  r.get(cluster, "cluster", "pe_group_nodes", c.pe_group_nodes);
  r.get(cluster, "cluster", "de_group_nodes", c.de_group_nodes);
  r.get(cluster, "cluster", "ep_sync", c.ep_sync);
  const auto* hw = r.section("hardware", {"snic_gb_per_s", "cnic_gb_per_s", "dram_buffer_gb", "hbm_gb",
                                          "prefill_hbm_gb", "provider", "kv_share", "isolation"});
  r.get(hw, "hardware", "snic_gb_per_s", c.snic_gb_per_s);
  r.get(hw, "hardware", "cnic_gb_per_s", c.cnic_gb_per_s);
  r.get(hw, "hardware", "dram_buffer_gb", c.dram_buffer_gb);
  r.get(hw, "hardware", "hbm_gb", c.hbm_gb);
  r.get(hw, "hardware", "prefill_hbm_gb", c.prefill_hbm_gb);
  r.get(hw, "hardware", "provider", c.provider);
  r.get(hw, "hardware", "kv_share", c.kv_share);
  r.get(hw, "hardware", "isolation", c.isolation);
  const auto* st = r.section("storage", {"dir", "capacity_gb", "fsync"});
  r.get(st, "storage", "dir", c.store_dir);
  r.get(st, "storage", "capacity_gb", c.capacity_gb);
  r.get(st, "storage", "fsync", c.fsync);
  const auto* sc = r.section("schedule", {"policy", "alpha_s", "beta_s", "alpha_tokens", "beta_tokens", "z_slack",
                                          "quota_ms", "quota_scope", "switch"});
  r.get(sc, "schedule", "policy", c.policy);
  if (!parse_run_mode(c.policy).ok())
    r.fail("schedule.policy", unknown_name("run policy", c.policy, run_policy_names()));
  r.get(sc, "schedule", "alpha_s", c.alpha_s);
  r.get(sc, "schedule", "beta_s", c.beta_s);
  r.get(sc, "schedule", "alpha_tokens", c.alpha_tokens);
  r.get(sc, "schedule", "beta_tokens", c.beta_tokens);
  r.get(sc, "schedule", "z_slack", c.z_slack);
  r.get(sc, "schedule", "quota_ms", c.quota_ms);
  std::string scope = to_string(c.quota_scope);
  r.get(sc, "schedule", "quota_scope", scope);
  if (auto k = parse_quota_scope(scope)) c.quota_scope = *k;
  else r.fail("schedule.quota_scope", "must be layer, attention or forward (got '" + scope + "')");
  if (sc) {
    if (const toml::node* sw = sc->get("switch")) {
      const toml::array* arr = sw->as_array();
      if (!arr) r.fail("schedule.switch", "must be an array of tables ([[schedule.switch]])");
      for (size_t i = 0; i < arr->size(); ++i) {
        const toml::table* t = (*arr)[i].as_table();
        const std::string name = fmt::format("schedule.switch[{}]", i);
        if (!t) r.fail(name, "must be a table with at_s and policy");
        for (const auto& [k, v] : *t) {
          if (k.str() != "at_s" && k.str() != "policy") r.fail(name + "." + std::string(k.str()), "unknown key");
        }
        policy_switch s;
        r.get(t, name, "at_s", s.at_s);
        r.get(t, name, "policy", s.policy);
        if (s.policy.empty()) r.fail(name + ".policy", "missing");
        if (!is_scheduler_policy(s.policy)) r.fail(name + ".policy", unknown_scheduler_policy(s.policy));
        c.switches.push_back(s);
      }
    }
  }
  const auto* rt =
      r.section("runtime", {"prefetch_layers", "max_decode_batch", "timeout_s", "model_traffic_kb", "secret"});
  r.get(rt, "runtime", "prefetch_layers", c.prefetch_layers);
  r.get(rt, "runtime", "max_decode_batch", c.max_decode_batch);
  r.get(rt, "runtime", "timeout_s", c.timeout_s);
  r.get(rt, "runtime", "model_traffic_kb", c.model_traffic_kb);
  r.get(rt, "runtime", "secret", c.secret);
  validate_cluster_config(c, origin);
  return c;
}

void validate_cluster_config(const cluster_config& c, const std::string& origin) {
  auto fail = [&](const std::string& key, const std::string& why) {
    throw user_error(fmt::format("{}: key '{}': {}", origin, key, why));
  };
  if (c.mfu <= 0 || c.mfu > 1) fail("model.mfu", "must be in (0, 1]");
  if (c.prefill_nodes < 1) fail("cluster.prefill_nodes", "must be at least 1");
  if (c.decode_nodes < 1) fail("cluster.decode_nodes", "must be at least 1");
  if (c.engines_per_node < 1 || c.engines_per_node > 64) fail("cluster.engines_per_node", "must be in 1..64");
  // A group is whole nodes of one role (docs/design.md §7.2, §7.3): a remainder would be a group of another size.
  if (c.pe_group_nodes < 1) fail("cluster.pe_group_nodes", "must be at least 1");
  if (c.prefill_nodes % c.pe_group_nodes != 0)
    fail("cluster.pe_group_nodes",
         fmt::format("must divide prefill_nodes ({}), got {}", c.prefill_nodes, c.pe_group_nodes));
  if (c.de_group_nodes < 1) fail("cluster.de_group_nodes", "must be at least 1");
  if (c.decode_nodes % c.de_group_nodes != 0)
    fail("cluster.de_group_nodes",
         fmt::format("must divide decode_nodes ({}), got {}", c.decode_nodes, c.de_group_nodes));
  if (c.block_tokens != 0 && (c.block_tokens < 4 || c.block_tokens > 4096))
    fail("cluster.block_tokens", "must be in 4..4096 (or 0 for the model's own)");
  if (c.snic_gb_per_s < 0) fail("hardware.snic_gb_per_s", "must not be negative");
  if (c.cnic_gb_per_s < 0) fail("hardware.cnic_gb_per_s", "must not be negative");
  if (c.dram_buffer_gb <= 0) fail("hardware.dram_buffer_gb", "must be positive");
  if (c.hbm_gb <= 0) fail("hardware.hbm_gb", "must be positive");
  if (c.prefill_hbm_gb < 0) fail("hardware.prefill_hbm_gb", "must not be negative (0: the same as hbm_gb)");
  if (c.kv_share <= 0 || c.kv_share > 1) fail("hardware.kv_share", "must be in (0, 1]");
  if (c.capacity_gb < 0) fail("storage.capacity_gb", "must not be negative");
  if (c.store_dir.empty()) fail("storage.dir", "must not be empty");
  if (c.alpha_s <= 0) fail("schedule.alpha_s", "must be positive");
  if (c.beta_s <= 0) fail("schedule.beta_s", "must be positive");
  if (c.quota_ms <= 0) fail("schedule.quota_ms", "must be positive");
  if (c.z_slack < 1) fail("schedule.z_slack", "must be at least 1");
  if (c.prefetch_layers < 1) fail("runtime.prefetch_layers", "must be at least 1");
  if (c.max_decode_batch < 1) fail("runtime.max_decode_batch", "must be at least 1");
  if (c.timeout_s <= 0) fail("runtime.timeout_s", "must be positive");
  // A short secret is one a stranger can guess; the generated ones are 64 hex digits.
  if (!c.secret.empty() && c.secret.size() < 16) fail("runtime.secret", "must be at least 16 characters");
  for (const auto& s : c.switches)
    if (s.at_s < 0) fail("schedule.switch.at_s", "must not be negative");
}

std::string format_cluster_config(const cluster_config& c) {
  auto integer = [](uint64_t v) { return int64_t(v); };
  toml::table root;
  root.insert("model", toml::table{{"name", c.model},
                                   {"backend", to_string(c.backend)},
                                   {"gpu", c.gpu},
                                   {"mfu", c.mfu},
                                   {"seed", integer(c.seed)}});
  root.insert("cluster", toml::table{{"prefill_nodes", integer(c.prefill_nodes)},
                                     {"decode_nodes", integer(c.decode_nodes)},
                                     {"engines_per_node", integer(c.engines_per_node)},
                                     {"pe_group_nodes", integer(c.pe_group_nodes)},
                                     {"de_group_nodes", integer(c.de_group_nodes)},
                                     {"block_tokens", integer(c.block_tokens)},
                                     {"ep_sync", c.ep_sync}});
  root.insert("hardware", toml::table{{"snic_gb_per_s", c.snic_gb_per_s},
                                      {"cnic_gb_per_s", c.cnic_gb_per_s},
                                      {"dram_buffer_gb", c.dram_buffer_gb},
                                      {"hbm_gb", c.hbm_gb},
                                      {"prefill_hbm_gb", c.prefill_hbm_gb},
                                      {"provider", c.provider},
                                      {"kv_share", c.kv_share},
                                      {"isolation", c.isolation}});
  root.insert("storage", toml::table{{"dir", c.store_dir}, {"capacity_gb", c.capacity_gb}, {"fsync", c.fsync}});
  toml::table schedule{{"policy", c.policy},
                       {"alpha_s", c.alpha_s},
                       {"beta_s", c.beta_s},
                       {"alpha_tokens", integer(c.alpha_tokens)},
                       {"beta_tokens", integer(c.beta_tokens)},
                       {"z_slack", c.z_slack},
                       {"quota_ms", c.quota_ms},
                       {"quota_scope", to_string(c.quota_scope)}};
  if (!c.switches.empty()) {
    toml::array switches;
    for (const auto& s : c.switches) switches.push_back(toml::table{{"at_s", s.at_s}, {"policy", s.policy}});
    schedule.insert("switch", std::move(switches));
  }
  root.insert("schedule", std::move(schedule));
  root.insert("runtime", toml::table{{"prefetch_layers", integer(c.prefetch_layers)},
                                     {"max_decode_batch", integer(c.max_decode_batch)},
                                     {"timeout_s", c.timeout_s},
                                     {"model_traffic_kb", integer(c.model_traffic_kb)}});
  // Strings escaped to ASCII (\uXXXX): a path given with escapes stays a file the parser takes back
  // (check_ascii), as every node process re-reads it.
  std::ostringstream out;
  out << toml::toml_formatter{root, toml::toml_formatter::default_flags & ~toml::format_flags::allow_unicode_strings}
      << "\n";
  return out.str();
}

cluster_config load_cluster_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw user_error(fmt::format("cluster file '{}' cannot be opened", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_cluster_config(ss.str(), path);
}

}  // namespace dualpath
