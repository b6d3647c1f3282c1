#include "core/cluster_config.hpp"
#include "core/modes.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <variant>
#include <toml++/toml.h>

#include "core/names.hpp"
#include "core/read_file.hpp"
#include "core/status.hpp"

namespace dualpath {

namespace {
constexpr const char* quota_scopes[] = {"layer", "attention", "forward"};
}  // namespace

const std::vector<std::string>& quota_scope_names() { return name_list<quota_scopes>(); }
constexpr const char* de_fetches[] = {"push", "pull", "auto"};
const char* to_string(de_fetch_kind k) { return de_fetches[int(k)]; }
result<de_fetch_kind> parse_de_fetch(std::string_view name) {
  return parse_enum<de_fetch_kind, de_fetches>(name, "decode-node fetch");
}
// Across processes a push's message a layer is a trip between processes and a pull needs none; in one
// process the message is cheap and the decode nodes' threads move their part beside the prefill node's
// (docs/experiments.md, "Pulled DE-path fetches").
de_fetch_kind resolve_de_fetch(de_fetch_kind k, bool node_processes) {
  if (k != de_fetch_kind::automatic) return k;
  return node_processes ? de_fetch_kind::pull : de_fetch_kind::push;
}

const char* to_string(quota_scope_kind k) { return quota_scopes[int(k)]; }

result<quota_scope_kind> parse_quota_scope(std::string_view name) {
  return parse_enum<quota_scope_kind, quota_scopes>(name, "quota scope");
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
// was meant; in a multi-line string) it reaches code marked unreachable (found by fuzzing, docs/design.md
// §16). Telling strings apart in a malformed file is toml++'s job, so non-ASCII is kept out of everything it
// has to parse. A comment line is one whose first character is '#' outside any string: a '#' line inside a
// multi-line string is string text (libFuzzer found one that let non-ASCII through to toml++).
void check_ascii(const std::string& text, const std::string& origin) {
  // Where the scan is: in TOML outside strings, in a comment (a comment line, where any byte may stand, or
  // one after a value, which stays ASCII) or in one of the four kinds of string.
  enum class in : uint8_t { code, comment_line, comment, basic, literal, ml_basic, ml_literal };
  in s = in::code;
  bool escape = false, blank = true;  // blank: only spaces and tabs since the line began
  uint32_t line = 1;
  size_t line_start = 0;
  auto at = [&](size_t i, const char* three) { return text.compare(i, 3, three) == 0; };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line, line_start = i + 1, blank = true, escape = false;
      if (s != in::ml_basic && s != in::ml_literal) s = in::code;  // the others end with their line
      continue;
    }
    if (s == in::comment_line) continue;
    if (static_cast<unsigned char>(c) >= 0x80)
      throw user_error(
          fmt::format("{}:{}:{}: byte 0x{:02x}: a cluster file is ASCII (other text only on comment "
                      "lines)",
                      origin, line, i - line_start + 1, static_cast<unsigned char>(c)));
    const bool first = blank && c != ' ' && c != '\t';
    if (c != ' ' && c != '\t') blank = false;
    if (escape) {
      escape = false;
      continue;
    }
    switch (s) {
      case in::code:
        if (c == '#') s = first ? in::comment_line : in::comment;
        else if (at(i, "\"\"\"")) s = in::ml_basic, i += 2;
        else if (at(i, "\'\'\'")) s = in::ml_literal, i += 2;
        else if (c == '"') s = in::basic;
        else if (c == '\'') s = in::literal;
        break;
      case in::basic:
      case in::ml_basic:
        if (c == '\\') escape = true;
        else if (s == in::basic && c == '"') s = in::code;
        else if (s == in::ml_basic && at(i, "\"\"\"")) s = in::code, i += 2;
        break;
      case in::literal:
        if (c == '\'') s = in::code;
        break;
      case in::ml_literal:
        if (at(i, "\'\'\'")) s = in::code, i += 2;
        break;
      case in::comment_line:
      case in::comment: break;
    }
  }
}

// Every plain key of the cluster file, once: its section, name and field. The parser, each section's list of
// known keys and the formatter all read this table, so a key cannot be known to one and missing in another.
using field = std::variant<std::string cluster_config::*, bool cluster_config::*, double cluster_config::*,
                           uint32_t cluster_config::*, uint64_t cluster_config::*>;
struct key_def {
  const char* section;
  const char* name;
  field member;
};
using C = cluster_config;
const key_def plain_keys[] = {
    {"model", "name", &C::model},
    {"model", "gpu", &C::gpu},
    {"model", "mfu", &C::mfu},
    {"model", "seed", &C::seed},
    {"cluster", "prefill_nodes", &C::prefill_nodes},
    {"cluster", "decode_nodes", &C::decode_nodes},
    {"cluster", "engines_per_node", &C::engines_per_node},
    {"cluster", "block_tokens", &C::block_tokens},
    {"cluster", "pe_group_nodes", &C::pe_group_nodes},
    {"cluster", "de_group_nodes", &C::de_group_nodes},
    {"cluster", "ep_sync", &C::ep_sync},
    {"hardware", "snic_gb_per_s", &C::snic_gb_per_s},
    {"hardware", "cnic_gb_per_s", &C::cnic_gb_per_s},
    {"hardware", "dram_buffer_gb", &C::dram_buffer_gb},
    {"hardware", "hbm_gb", &C::hbm_gb},
    {"hardware", "prefill_hbm_gb", &C::prefill_hbm_gb},
    {"hardware", "provider", &C::provider},
    {"hardware", "kv_share", &C::kv_share},
    {"hardware", "isolation", &C::isolation},
    {"storage", "dir", &C::store_dir},
    {"storage", "capacity_gb", &C::capacity_gb},
    {"storage", "fsync", &C::fsync},
    {"storage", "write_queue_gb", &C::write_queue_gb},
    {"schedule", "policy", &C::policy},
    {"schedule", "alpha_s", &C::alpha_s},
    {"schedule", "beta_s", &C::beta_s},
    {"schedule", "alpha_tokens", &C::alpha_tokens},
    {"schedule", "beta_tokens", &C::beta_tokens},
    {"schedule", "z_slack", &C::z_slack},
    {"schedule", "quota_ms", &C::quota_ms},
    {"runtime", "prefetch_layers", &C::prefetch_layers},
    {"runtime", "spare_staging_layers", &C::spare_staging_layers},
    {"runtime", "max_decode_batch", &C::max_decode_batch},
    {"runtime", "timeout_s", &C::timeout_s},
    {"runtime", "model_traffic_kb", &C::model_traffic_kb},
    {"serve", "max_requests", &C::serve_max_requests},
    {"serve", "max_waiting", &C::serve_max_waiting},
    {"serve", "max_queued_tokens", &C::serve_max_queued_tokens},
    {"planner", "adaptive", &C::adaptive},
    {"planner", "window_s", &C::planner_window_s},
    {"planner", "switch_s", &C::planner_switch_s},
    {"planner", "cooldown_s", &C::planner_cooldown_s},
    {"planner", "sustain", &C::planner_sustain},
    {"planner", "high", &C::planner_high},
    {"planner", "low", &C::planner_low},
    {"planner", "tpot_slo_s", &C::planner_tpot_slo_s},
};
// Every section of a cluster file, with its keys read by hand below: an enum, another name of a key, an array
// of tables, and the secret, which is never written back.
const std::pair<const char*, std::vector<const char*>> special_keys[] = {
    {"model", {"backend"}},
    {"cluster", {"gpus_per_node"}},
    {"schedule", {"quota_scope", "switch"}},
    {"hardware", {"de_fetch"}},
    {"storage", {}},
    {"runtime", {"secret"}},
    {"serve", {}},
    {"planner", {}},
};

std::set<std::string> known_keys(const std::string& section) {
  std::set<std::string> known;
  for (const auto& k : plain_keys)
    if (k.section == section) known.insert(k.name);
  for (const auto& [sec, names] : special_keys)
    if (sec == section) known.insert(names.begin(), names.end());
  return known;
}

std::vector<policy_switch> read_switches(const reader& r, const toml::node& sw) {
  std::vector<policy_switch> out;
  const toml::array* arr = sw.as_array();
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
    out.push_back(s);
  }
  return out;
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
  std::map<std::string, const toml::table*> sections;
  for (const auto& [name, keys] : special_keys) sections[name] = r.section(name, known_keys(name));
  for (const auto& [k, v] : root)
    if (!sections.count(std::string(k.str()))) r.fail(std::string(k.str()), "unknown section");

  cluster_config c;
  for (const auto& k : plain_keys)
    std::visit([&](auto member) { r.get(sections[k.section], k.section, k.name, c.*member); }, k.member);

  const auto* model = sections["model"];
  std::string backend = to_string(c.backend);
  r.get(model, "model", "backend", backend);
  if (auto k = parse_backend_kind(backend)) c.backend = *k;
  else r.fail("model.backend", "must be cpu, cuda or modeled (got '" + backend + "')");
  // One engine per GPU: a paper-scale cluster file may say gpus_per_node (g of docs/design.md §5) instead.
  const auto* cluster = sections["cluster"];
  if (cluster && cluster->contains("gpus_per_node")) {
    if (cluster->contains("engines_per_node"))
      r.fail("cluster.gpus_per_node", "is another name of engines_per_node; give only one of them");
    r.get(cluster, "cluster", "gpus_per_node", c.engines_per_node);
  }
  const auto* sc = sections["schedule"];
  if (!parse_run_mode(c.policy).ok())
    r.fail("schedule.policy", unknown_name("run policy", c.policy, run_policy_names()));
  std::string scope = to_string(c.quota_scope);
  r.get(sc, "schedule", "quota_scope", scope);
  if (auto k = parse_quota_scope(scope)) c.quota_scope = *k;
  else r.fail("schedule.quota_scope", "must be layer, attention or forward (got '" + scope + "')");
  if (const toml::node* sw = sc ? sc->get("switch") : nullptr) c.switches = read_switches(r, *sw);
  std::string fetch = to_string(c.de_fetch);
  r.get(sections["hardware"], "hardware", "de_fetch", fetch);
  if (auto k = parse_de_fetch(fetch)) c.de_fetch = *k;
  else r.fail("hardware.de_fetch", "must be push, pull or auto (got '" + fetch + "')");
  r.get(sections["runtime"], "runtime", "secret", c.secret);
  validate_cluster_config(c, origin);
  return c;
}

void validate_cluster_config(const cluster_config& c, const std::string& origin) {
  auto fail = [&](const std::string& key, const std::string& why) {
    throw user_error(fmt::format("{}: key '{}': {}", origin, key, why));
  };
  if (c.mfu <= 0 || c.mfu > 1) fail("model.mfu", "must be in (0, 1]");
  if (c.prefill_nodes < 1) fail("cluster.prefill_nodes", "must be at least 1");
  if (c.serve_max_requests < 1 || c.serve_max_requests > 1024) fail("serve.max_requests", "must be in 1..1024");
  if (c.serve_max_waiting > c.serve_max_requests)
    fail("serve.max_waiting", "must be at most serve.max_requests (0: as many)");
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
  if (c.write_queue_gb < 0) fail("storage.write_queue_gb", "must not be negative");
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
  if (c.planner_window_s <= 0) fail("planner.window_s", "must be positive");
  if (c.planner_switch_s < 0) fail("planner.switch_s", "must not be negative");
  if (c.planner_cooldown_s < 0) fail("planner.cooldown_s", "must not be negative");
  if (c.planner_sustain < 1) fail("planner.sustain", "must be at least 1 window");
  if (!(c.planner_low > 0 && c.planner_low < c.planner_high))
    fail("planner.low", fmt::format("must be in (0, planner.high = {})", c.planner_high));
  if (c.planner_tpot_slo_s <= 0) fail("planner.tpot_slo_s", "must be positive");
  // A node that changes role leaves its group: adaptive P/D moves single-node groups only.
  if (c.adaptive && (c.pe_group_nodes > 1 || c.de_group_nodes > 1))
    fail("planner.adaptive", "needs pe_group_nodes = de_group_nodes = 1 (a node moves alone)");
  if (c.adaptive && c.ep_sync) fail("planner.adaptive", "cannot be combined with cluster.ep_sync (a node moves alone)");
  for (const auto& s : c.switches)
    if (s.at_s < 0) fail("schedule.switch.at_s", "must not be negative");
}

std::string format_cluster_config(const cluster_config& c) {
  toml::table root;
  auto section = [&root](const char* name) -> toml::table& {
    if (!root.contains(name)) root.insert(name, toml::table{});
    return *root.get_as<toml::table>(name);
  };
  for (const auto& k : plain_keys) {
    std::visit(
        [&](auto member) {
          const auto& v = c.*member;
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
            section(k.section).insert(k.name, int64_t(v));
          else section(k.section).insert(k.name, v);
        },
        k.member);
  }
  section("model").insert("backend", to_string(c.backend));
  section("schedule").insert("quota_scope", to_string(c.quota_scope));
  section("hardware").insert("de_fetch", to_string(c.de_fetch));
  if (!c.switches.empty()) {
    toml::array switches;
    for (const auto& s : c.switches) switches.push_back(toml::table{{"at_s", s.at_s}, {"policy", s.policy}});
    section("schedule").insert("switch", std::move(switches));
  }
  // Strings escaped to ASCII (\uXXXX): a path given with escapes stays a file the parser takes back
  // (check_ascii), as every node process re-reads it. And always single-line basic strings: toml++ writes a
  // string with a line break and a quote as a multi-line literal ('''...'''), which a ''' inside it ends
  // early, so the node would not parse what it was handed (libFuzzer, tests/fuzz/seeds.cpp).
  const auto flags = toml::toml_formatter::default_flags & ~toml::format_flags::allow_unicode_strings &
                     ~toml::format_flags::allow_literal_strings & ~toml::format_flags::allow_multi_line_strings;
  std::ostringstream out;
  out << toml::toml_formatter{root, flags} << "\n";
  return out.str();
}

cluster_config load_cluster_config(const std::string& path) {
  const auto text = read_file(path);
  if (!text) throw user_error(fmt::format("cluster file '{}' cannot be opened", path));
  return parse_cluster_config(*text, path);
}

}  // namespace dualpath
